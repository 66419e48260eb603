//! Per-file checkpoints and durable small-file writes.
//!
//! A checkpoint records, for a file being ingested, the position after the last batch the
//! sink made durable, the running counts, the length of the pending error report
//! (`<key>.report`) that belongs to durable batches, and a fingerprint of the file (device,
//! inode, size, mtime and a hash of its first KiB). The key is a hash of the file's path; the
//! path is stored too and checked.
//!
//! `<state_dir>/<key>.ckpt` is a log of checkpoints, one line each: the FNV-1a hash of the
//! JSON (16 hex digits), a space, the JSON (with a `version`), a line break. The last line
//! whose hash matches is the checkpoint. [`Store::save`] replaces the log by one line
//! atomically and durably (temporary file, `fsync`, rename, `fsync` of the directory);
//! [`Store::record`] appends a line to a log it saved, which a restarted process sees at
//! once and which [`CkLog::sync`] makes durable. A line torn by a power loss fails its hash
//! and the line before it counts. A log written before the log form (one JSON object, no
//! hash) is read as that checkpoint.

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tsfiled_fsio::{FsFile, FsRef};

/// Bytes hashed at the start of a file for its fingerprint.
pub const HEAD_BYTES: u64 = 1024;

/// FNV-1a, 64 bits.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Identity and state of a file at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// Device.
    pub dev: u64,
    /// Inode.
    pub ino: u64,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i64,
    /// Bytes hashed (min(size, [`HEAD_BYTES`])).
    pub head_len: u64,
    /// FNV-1a of the first `head_len` bytes.
    pub head_hash: u64,
}

impl Fingerprint {
    /// Takes the fingerprint of an open file (reads its first KiB from the start).
    pub fn of(file: &mut File) -> io::Result<Fingerprint> {
        let m = file.metadata()?;
        let head_len = m.len().min(HEAD_BYTES);
        let head_hash = hash_head(file, head_len)?;
        Ok(Fingerprint {
            dev: m.dev(),
            ino: m.ino(),
            size: m.len(),
            mtime_ns: mtime_ns(&m),
            head_len,
            head_hash,
        })
    }

    /// Whether `file` is still the file this fingerprint was taken of (same device, inode and
    /// first bytes, not shorter); it may have grown.
    pub fn same_file(&self, file: &mut File) -> io::Result<bool> {
        let m = file.metadata()?;
        if m.dev() != self.dev || m.ino() != self.ino || m.len() < self.head_len {
            return Ok(false);
        }
        Ok(hash_head(file, self.head_len)? == self.head_hash)
    }
}

/// Modification time in nanoseconds since the epoch.
pub fn mtime_ns(m: &fs::Metadata) -> i64 {
    m.mtime()
        .saturating_mul(1_000_000_000)
        .saturating_add(m.mtime_nsec())
}

fn hash_head(file: &mut File, len: u64) -> io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; len as usize];
    file.read_exact_at(&mut buf, 0)?;
    Ok(fnv1a(&buf))
}

/// The durable progress of one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Format version (1).
    pub version: u32,
    /// The file.
    pub path: PathBuf,
    /// The file when ingestion started.
    pub fingerprint: Fingerprint,
    /// Byte offset after the last durable batch (decompressed for gzip).
    pub offset: u64,
    /// Line number at `offset`.
    pub line: u64,
    /// Durable rows.
    pub rows: u64,
    /// Rejected rows.
    pub rejected_rows: u64,
    /// Durable points.
    pub points: u64,
    /// Points rejected by the parser or the sink.
    pub rejected_points: u64,
    /// Bytes of the pending report that belong to durable batches.
    pub report_len: u64,
}

/// Length past which [`Store::record`] starts a checkpoint log afresh.
pub const LOG_LIMIT: u64 = 64 * 1024;

/// The open checkpoint log of one file ([`Store::record`]).
#[derive(Debug)]
pub struct CkLog {
    file: Box<dyn FsFile>,
    len: u64,
}

impl CkLog {
    /// Makes the recorded lines durable (`fdatasync`). After an error the log must not be
    /// used again: its unsynced lines are presumed lost.
    pub fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }
}

/// One log line: hash, space, JSON, line break.
fn encode(ck: &Checkpoint) -> io::Result<Vec<u8>> {
    let json = serde_json::to_vec(ck).map_err(io::Error::other)?;
    let mut line = format!("{:016x} ", fnv1a(&json)).into_bytes();
    line.extend_from_slice(&json);
    line.push(b'\n');
    Ok(line)
}

/// The checkpoint a log holds: its last line whose hash matches, or the whole of a log
/// written before the log form (one JSON object); only version 1.
fn decode(bytes: &[u8]) -> Option<Checkpoint> {
    let ck: Checkpoint = if bytes.first() == Some(&b'{') {
        serde_json::from_slice(bytes).ok()?
    } else {
        bytes.rsplit(|&b| b == b'\n').find_map(|line| {
            let (hash, json) = (line.get(..16)?, line.get(17..)?);
            let hash = u64::from_str_radix(std::str::from_utf8(hash).ok()?, 16).ok()?;
            (line[16] == b' ' && hash == fnv1a(json))
                .then(|| serde_json::from_slice::<Checkpoint>(json).ok())
                .flatten()
        })?
    };
    (ck.version == 1).then_some(ck)
}

/// The checkpoint directory of one source (every file operation on `fs`).
#[derive(Debug, Clone)]
pub struct Store {
    fs: FsRef,
    dir: PathBuf,
}

impl Store {
    /// Opens (creates) the directory.
    pub fn open(fs: FsRef, dir: &Path) -> io::Result<Store> {
        tsfiled_fsio::create_dir_all_synced(&*fs, dir)?;
        Ok(Store {
            fs,
            dir: dir.to_path_buf(),
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn key(path: &Path) -> String {
        use std::os::unix::ffi::OsStrExt;
        format!("{:016x}", fnv1a(path.as_os_str().as_bytes()))
    }

    fn ckpt_path(&self, path: &Path) -> PathBuf {
        self.dir.join(format!("{}.ckpt", Self::key(path)))
    }

    /// Where the pending report of `path` is kept.
    pub fn report_path(&self, path: &Path) -> PathBuf {
        self.dir.join(format!("{}.report", Self::key(path)))
    }

    /// The checkpoint of `path`, if any (an unreadable or foreign one counts as none).
    pub fn load(&self, path: &Path) -> Option<Checkpoint> {
        let bytes = self.fs.read(&self.ckpt_path(path)).ok()?;
        decode(&bytes).filter(|ck| ck.path == path)
    }

    /// Every readable checkpoint.
    pub fn all(&self) -> io::Result<Vec<Checkpoint>> {
        let mut out = Vec::new();
        for e in self.fs.read_dir(&self.dir)? {
            let p = e.path;
            if p.extension().is_some_and(|x| x == "ckpt") {
                if let Some(ck) = self.fs.read(&p).ok().and_then(|b| decode(&b)) {
                    out.push(ck);
                }
            }
        }
        Ok(out)
    }

    /// Writes the checkpoint atomically and durably (the log becomes this one line).
    pub fn save(&self, ck: &Checkpoint) -> io::Result<()> {
        tsfiled_fsio::write_atomic(&*self.fs, &self.ckpt_path(&ck.path), &encode(ck)?)
    }

    /// Records `ck` in `log`, the open log of its file: when there is none yet (or the log
    /// has grown past [`LOG_LIMIT`]) the checkpoint is [saved](Store::save) and the new log
    /// opened, and `Ok(false)` says it is durable already; otherwise the line is appended, a
    /// restarted process reads it at once, and `Ok(true)` says that it becomes durable only
    /// with [`CkLog::sync`]. On error `log` is closed (the next record saves).
    pub fn record(&self, log: &mut Option<CkLog>, ck: &Checkpoint) -> io::Result<bool> {
        let line = encode(ck)?;
        if let Some(l) = log
            .as_mut()
            .filter(|l| l.len + line.len() as u64 <= LOG_LIMIT)
        {
            return match l.file.write_all(&line) {
                Ok(()) => {
                    l.len += line.len() as u64;
                    Ok(true)
                }
                Err(e) => {
                    *log = None;
                    Err(e)
                }
            };
        }
        *log = None;
        let path = self.ckpt_path(&ck.path);
        tsfiled_fsio::write_atomic(&*self.fs, &path, &line)?;
        *log = Some(CkLog {
            file: self.fs.open_append(&path)?,
            len: line.len() as u64,
        });
        Ok(false)
    }

    /// Removes the checkpoint and the pending report of `path`.
    pub fn remove(&self, path: &Path) -> io::Result<()> {
        for p in [self.ckpt_path(path), self.report_path(path)] {
            match self.fs.remove_file(&p) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        Ok(())
    }

    /// Opens the pending report of `path` for appending, cut back to `len` bytes (the part
    /// that belongs to durable batches).
    pub fn open_report(&self, path: &Path, len: u64) -> io::Result<Box<dyn FsFile>> {
        let mut f = self.fs.open_append(&self.report_path(path))?;
        f.set_len(len)?;
        Ok(f)
    }

    /// Reads the pending report of `path` (its first `len` bytes).
    pub fn read_report(&self, path: &Path, len: u64) -> io::Result<Vec<u8>> {
        match self.fs.read(&self.report_path(path)) {
            Ok(mut b) => {
                b.truncate(len.min(b.len() as u64) as usize);
                Ok(b)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_load_remove_and_report() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::open(tsfiled_fsio::std_fs(), &d.path().join("state")).unwrap();
        let src = d.path().join("a.csv");
        fs::write(&src, b"Time,root.a.b.c\n1,2\n").unwrap();
        let fp = Fingerprint::of(&mut File::open(&src).unwrap()).unwrap();
        assert_eq!(fp.size, 20);
        assert_eq!(fp.head_len, 20);
        let ck = Checkpoint {
            version: 1,
            path: src.clone(),
            fingerprint: fp,
            offset: 16,
            line: 2,
            rows: 0,
            rejected_rows: 0,
            points: 0,
            rejected_points: 0,
            report_len: 3,
        };
        assert_eq!(store.load(&src), None);
        store.save(&ck).unwrap();
        assert_eq!(store.load(&src), Some(ck.clone()));
        assert_eq!(store.all().unwrap(), vec![ck.clone()]);
        assert_eq!(store.load(&d.path().join("b.csv")), None);

        let mut r = store.open_report(&src, 0).unwrap();
        r.write_all(b"abcdef").unwrap();
        drop(r);
        let mut r = store.open_report(&src, 3).unwrap();
        r.write_all(b"XY").unwrap();
        drop(r);
        assert_eq!(store.read_report(&src, 5).unwrap(), b"abcXY");

        // Growing keeps the identity; replacing the content does not.
        let mut f = std::fs::OpenOptions::new().append(true).open(&src).unwrap();
        std::io::Write::write_all(&mut f, b"2,3\n").unwrap();
        assert!(fp.same_file(&mut File::open(&src).unwrap()).unwrap());
        fs::write(&src, b"Time,root.a.b.d\n1,2\n").unwrap();
        assert!(!fp.same_file(&mut File::open(&src).unwrap()).unwrap());

        store.remove(&src).unwrap();
        assert_eq!(store.load(&src), None);
        assert!(store.read_report(&src, 5).unwrap().is_empty());
        store.remove(&src).unwrap();
    }

    fn ck(offset: u64) -> Checkpoint {
        Checkpoint {
            version: 1,
            path: PathBuf::from("/in/a.csv"),
            fingerprint: Fingerprint {
                dev: 1,
                ino: 2,
                size: 1000,
                mtime_ns: 3,
                head_len: 1000,
                head_hash: 4,
            },
            offset,
            line: offset / 10,
            rows: offset / 10,
            rejected_rows: 0,
            points: offset / 5,
            rejected_points: 0,
            report_len: 0,
        }
    }

    /// Every call of a checkpoint save failing once (each fault that fits the call), and a
    /// power loss before every call: the checkpoint read back is the old or the new one,
    /// never none or garbage; a save that returned `Ok` survives a power loss.
    #[test]
    fn a_save_survives_any_single_failure_and_any_power_loss() {
        use tsfiled_fsio::sim::{Fault, SimFs, Tear};
        let setup = || {
            let fs = SimFs::new();
            let store =
                Store::open(tsfiled_fsio::FsRef::new(fs.clone()), Path::new("/state")).unwrap();
            store.save(&ck(10)).unwrap();
            (fs, store)
        };
        let (old, new) = (Some(ck(10)), Some(ck(20)));
        let (fs, store) = setup();
        fs.record(true);
        let base = fs.calls();
        store.save(&ck(20)).unwrap();
        let calls = fs.log();
        assert!(
            calls.len() >= 4,
            "tmp create, write, fsync, rename, dir fsync: {calls:?}"
        );
        let mut runs = 0;
        for c in &calls {
            for &fault in Fault::for_op(c.op) {
                let (fs, store) = setup();
                fs.fail_at(c.index - base + fs.calls(), fault);
                let r = store.save(&ck(20));
                assert!(fs.injected().is_some());
                let what = format!("{fault:?} on {c:?}");
                match r {
                    Ok(()) => panic!("{what}: the save reported success"),
                    Err(_) => {
                        let now = store.load(Path::new("/in/a.csv"));
                        assert!(now == old || now == new, "{what}: {now:?}");
                        for tear in [Tear::Drop, Tear::Keep, Tear::Torn(c.index)] {
                            let img = Store::open(
                                tsfiled_fsio::FsRef::new(fs.crash_image(tear)),
                                Path::new("/state"),
                            )
                            .unwrap();
                            let got = img.load(Path::new("/in/a.csv"));
                            assert!(got == old || got == new, "{what}, {tear:?}: {got:?}");
                        }
                    }
                }
                // A retry succeeds and is durable.
                store.save(&ck(20)).unwrap();
                let img = Store::open(
                    tsfiled_fsio::FsRef::new(fs.crash_image(Tear::Drop)),
                    Path::new("/state"),
                )
                .unwrap();
                assert_eq!(img.load(Path::new("/in/a.csv")), new, "{what}: retry");
                runs += 1;
            }
            let (fs, store) = setup();
            fs.crash_at(c.index - base + fs.calls());
            assert!(store.save(&ck(20)).is_err());
            for tear in [Tear::Drop, Tear::Keep, Tear::Torn(c.index)] {
                let img = Store::open(
                    tsfiled_fsio::FsRef::new(fs.crash_image(tear)),
                    Path::new("/state"),
                )
                .unwrap();
                let got = img.load(Path::new("/in/a.csv"));
                assert!(
                    got == old || got == new,
                    "power loss before {c:?}, {tear:?}: {got:?}"
                );
            }
        }
        assert!(runs >= calls.len());
    }

    /// The JSON of `ck(70)` written out by hand, and its FNV-1a hash computed apart (Python,
    /// the 64-bit FNV-1a constants).
    const CK70: &str = r#"{"version":1,"path":"/in/a.csv","fingerprint":{"dev":1,"ino":2,"size":1000,"mtime_ns":3,"head_len":1000,"head_hash":4},"offset":70,"line":7,"rows":7,"rejected_rows":0,"points":14,"rejected_points":0,"report_len":0}"#;
    const CK70_HASH: &str = "0aee70ec8a6fae21";

    #[test]
    fn a_log_reads_as_its_last_whole_line_and_an_old_checkpoint_as_itself() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::open(tsfiled_fsio::std_fs(), &d.path().join("state")).unwrap();
        let a = Path::new("/in/a.csv");
        let file = store.ckpt_path(a);
        let line70 = format!("{CK70_HASH} {CK70}\n");
        assert_eq!(encode(&ck(70)).unwrap(), line70.as_bytes());
        // A checkpoint written before the log form: one JSON object.
        fs::write(&file, CK70).unwrap();
        assert_eq!(store.load(a), Some(ck(70)));
        assert_eq!(store.all().unwrap(), vec![ck(70)]);
        // A log: the last line whose hash matches counts.
        let line80 = String::from_utf8(encode(&ck(80)).unwrap()).unwrap();
        fs::write(&file, format!("{line70}{line80}")).unwrap();
        assert_eq!(store.load(a), Some(ck(80)));
        // A torn last line (any cut), or one whose hash does not match, does not count.
        for cut in 0..line80.len() - 1 {
            fs::write(&file, format!("{line70}{}", &line80[..cut])).unwrap();
            assert_eq!(store.load(a), Some(ck(70)), "cut at {cut}");
        }
        let forged = line80.replacen(&line80[..16], CK70_HASH, 1);
        fs::write(&file, format!("{line70}{forged}")).unwrap();
        assert_eq!(store.load(a), Some(ck(70)));
        // The line break is not needed for a whole line; garbage after it is skipped.
        fs::write(&file, format!("{line70}{}", line80.trim_end())).unwrap();
        assert_eq!(store.load(a), Some(ck(80)));
        fs::write(&file, format!("{line80}\0\0\0\0")).unwrap();
        assert_eq!(store.load(a), Some(ck(80)));
        // Another file's checkpoint under this key is none.
        assert_eq!(store.load(Path::new("/in/b.csv")), None);
        fs::write(&file, CK70.replace("\"version\":1", "\"version\":2")).unwrap();
        assert_eq!(store.load(a), None);
    }

    /// Records of 10 (saved), 20 and 30 (appended) with a sync after each append, and a power
    /// loss before every file-system call of that sequence: what survives is never older than
    /// the last record that returned durable (`Ok(false)`) or was synced, never newer than the
    /// last one written, and never none once one was durable.
    #[test]
    fn recorded_checkpoints_survive_a_power_loss_once_synced() {
        use tsfiled_fsio::sim::{SimFs, Tear};
        let a = Path::new("/in/a.csv");
        let setup = || {
            let fs = SimFs::new();
            let store =
                Store::open(tsfiled_fsio::FsRef::new(fs.clone()), Path::new("/state")).unwrap();
            (fs, store)
        };
        // The sequence; returns (last durable, last written) offsets reached.
        let run = |store: &Store| -> (Option<u64>, Option<u64>) {
            let (mut durable, mut written) = (None, None);
            let mut log = None;
            for off in [10, 20, 30] {
                // A record that fails may still have been written.
                written = Some(off);
                match store.record(&mut log, &ck(off)) {
                    Ok(false) => durable = Some(off),
                    Ok(true) => {}
                    Err(_) => return (durable, written),
                }
                if let Some(l) = log.as_mut() {
                    if l.sync().is_err() {
                        return (durable, written);
                    }
                }
                durable = Some(off);
            }
            (durable, written)
        };
        let (fs, store) = setup();
        fs.record(true);
        let base = fs.calls();
        assert_eq!(run(&store), (Some(30), Some(30)));
        let calls = fs.log();
        // First record: tmp create, write, fsync, rename, dir fsync, open; then write, sync twice.
        assert!(calls.len() >= 8, "{calls:?}");
        assert_eq!(store.load(a), Some(ck(30)));
        let mut losses = 0;
        for c in &calls {
            let (fs, store) = setup();
            fs.crash_at(c.index - base + fs.calls());
            let (durable, written) = run(&store);
            assert!(fs.crashed());
            for tear in [Tear::Drop, Tear::Keep, Tear::Torn(c.index)] {
                let img = Store::open(
                    tsfiled_fsio::FsRef::new(fs.crash_image(tear)),
                    Path::new("/state"),
                )
                .unwrap();
                let got = img.load(a).map(|ck| ck.offset);
                let what = format!("power loss before {c:?}, {tear:?}");
                assert!(got >= durable && got <= written, "{what}: {got:?}");
                if durable.is_some() {
                    assert!(got.is_some(), "{what}");
                }
                losses += 1;
            }
        }
        assert_eq!(losses, 3 * calls.len());
    }

    #[test]
    fn a_log_past_its_limit_is_saved_afresh_as_one_line() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::open(tsfiled_fsio::std_fs(), &d.path().join("state")).unwrap();
        let a = Path::new("/in/a.csv");
        let line = encode(&ck(70)).unwrap().len() as u64;
        let mut log = None;
        assert!(!store.record(&mut log, &ck(70)).unwrap());
        // Lines of the same length fit while the log stays within the limit.
        let fit = LOG_LIMIT / line;
        for i in 1..fit {
            assert!(store.record(&mut log, &ck(70)).unwrap(), "line {i}");
        }
        assert_eq!(fs::metadata(store.ckpt_path(a)).unwrap().len(), fit * line);
        assert!(!store.record(&mut log, &ck(80)).unwrap());
        assert_eq!(
            fs::read(store.ckpt_path(a)).unwrap(),
            encode(&ck(80)).unwrap()
        );
        assert!(store.record(&mut log, &ck(90)).unwrap());
        assert_eq!(store.load(a), Some(ck(90)));
    }
}
