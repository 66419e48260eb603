//! The data directory: file naming, `.resource` files, the seal journal and
//! start-up recovery.
//!
//! Layout: `<data>/{sequence,unsequence}/<sg>/<partition>/<name>.tsfile` plus `.resource`,
//! where the name is `<createMillis>-<version>-0` for format 000002 (IoTDB 0.10) and
//! `<createMillis>-<version>-0-0` (time, version, inner and cross compaction counts) for
//! TsFile v4 (IoTDB 2.x's `TsFileNameGenerator` form; its `LOAD` orders the files of a
//! directory by the first two parts). An open file is
//! written as `<name>.tsfile.tmp`; only sealed files carry the final name.
//!
//! The `.resource` of a v4 file is IoTDB 2.x's (see [`resource_bytes_v4`]); a data
//! directory may hold both kinds (the format version changed between runs), told apart
//! by the file name.
//!
//! Sealing a storage group partition (its sequence and unsequence file together):
//! 1. close each writer (tail written), `fsync` the `.tsfile.tmp`; write
//!    `.tsfile.resource.tmp`, `fsync`;
//! 2. append a commit line to `<state>/seals.log` and `fsync` it: from here the
//!    seal counts, and recovery rolls the renames forward if they did not happen;
//! 3. rename the `.resource` into place, then the TsFile (last), `fsync` the directory.
//!
//! A commit line also records up to which WAL position the partition's points are all
//! sealed, so replay does not write them twice.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use tsfile::file::writer::DeviceTimeRange;
use tsfile::resource::{DeviceTimeRange as ResourceRange, ResourceV4, TsFileResource};
pub use tsfiled_config::FormatVersion;
pub use tsfiled_fsio::with_suffix;
use tsfiled_fsio::{Fs, FsFile, FsRef};

use crate::wal::Lsn;

/// Sequence or unsequence space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Space {
    /// Points newer than everything flushed for their device.
    Sequence,
    /// Late points.
    Unsequence,
}

impl Space {
    /// Directory name.
    pub fn dir(self) -> &'static str {
        match self {
            Space::Sequence => "sequence",
            Space::Unsequence => "unsequence",
        }
    }
}

/// Final path of a TsFile in `format`.
pub fn tsfile_path(
    data: &Path,
    space: Space,
    sg: &str,
    partition: i64,
    create_millis: i64,
    version: i64,
    format: FormatVersion,
) -> PathBuf {
    let name = match format {
        FormatVersion::V2 => format!("{create_millis}-{version}-0.tsfile"),
        FormatVersion::V4 => format!("{create_millis}-{version}-0-0.tsfile"),
    };
    data.join(space.dir())
        .join(sg)
        .join(partition.to_string())
        .join(name)
}

/// The format a sealed TsFile's name says it has: four `-`-separated parts are IoTDB 2.x's
/// naming (v4), three are IoTDB 0.10's.
pub fn format_of_name(file_name: &str) -> FormatVersion {
    let stem = file_name.strip_suffix(".resource").unwrap_or(file_name);
    let stem = stem.strip_suffix(".tsfile").unwrap_or(stem);
    if stem.split('-').count() == 4 {
        FormatVersion::V4
    } else {
        FormatVersion::V2
    }
}

/// Serializes the `.resource` of a v4 file as IoTDB 2.x does ([`ResourceV4::serialize`]):
/// the device time ranges, no plan index, no modification file, an empty block. A table
/// device (engine key, see [`table`](super::table)) is written as its table-model device id.
pub fn resource_bytes_v4(devices: &[DeviceTimeRange]) -> Vec<u8> {
    let mut out = Vec::with_capacity(32 + devices.len() * 48);
    let ranges = devices
        .iter()
        .map(|d| ResourceRange {
            device: super::table::resource_key(&d.device).to_string(),
            start_time: d.start_time,
            end_time: d.end_time,
        })
        .collect();
    ResourceV4::without_plan_index(ranges).serialize(&mut out);
    out
}

/// Parses a v4 file's `.resource`: its device ranges (a table device as its device id's key,
/// without the database). Only what [`resource_bytes_v4`] writes is taken (a truncated or
/// extended file, a plan index or a modification file is an error).
pub fn parse_resource_v4(data: &[u8]) -> Result<Vec<DeviceTimeRange>, String> {
    let res = ResourceV4::deserialize(data).map_err(|e| e.to_string())?;
    let devices: Vec<DeviceTimeRange> = res
        .devices
        .into_iter()
        .map(|d| DeviceTimeRange {
            device: d.device,
            start_time: d.start_time,
            end_time: d.end_time,
        })
        .collect();
    if resource_bytes_v4(&devices) != data {
        return Err(
            "not a .resource as tsfiled writes it (plan index, modification file, \
                    or bytes missing or extra after the device index)"
                .to_string(),
        );
    }
    Ok(devices)
}

/// The `.resource` bytes of a sealed file in `format`, with `version` its version.
pub fn resource_for(devices: &[DeviceTimeRange], version: i64, format: FormatVersion) -> Vec<u8> {
    match format {
        FormatVersion::V2 => resource_bytes(devices, version),
        FormatVersion::V4 => resource_bytes_v4(devices),
    }
}

/// Serializes a `.resource` file (spec §9.2, via the format crate): start times, end
/// times, one historical version (the file's own).
pub fn resource_bytes(devices: &[DeviceTimeRange], version: i64) -> Vec<u8> {
    let res = TsFileResource {
        devices: devices
            .iter()
            .map(|d| ResourceRange {
                device: d.device.clone(),
                start_time: d.start_time,
                end_time: d.end_time,
            })
            .collect(),
        historical_versions: Some(vec![version]),
        mod_file: None,
    };
    // Only lengths beyond i32::MAX can fail, which device paths never reach.
    res.to_bytes().unwrap_or_default()
}

/// Parses a `.resource` file's device ranges (the part this daemon needs).
pub fn parse_resource(data: &[u8]) -> Result<Vec<DeviceTimeRange>, String> {
    let res = TsFileResource::deserialize(data).map_err(|e| e.to_string())?;
    Ok(res
        .devices
        .into_iter()
        .map(|d| DeviceTimeRange {
            device: d.device,
            start_time: d.start_time,
            end_time: d.end_time,
        })
        .collect())
}

/// One commit line of the seal journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealEntry {
    /// Storage group.
    pub sg: String,
    /// Time partition.
    pub partition: i64,
    /// Every point of this partition in a WAL record before this LSN is sealed.
    pub covered: Lsn,
    /// Largest version used in the storage group so far.
    pub max_version: i64,
    /// Final TsFile paths, relative to the data directory.
    pub files: Vec<String>,
}

impl SealEntry {
    fn to_line(&self) -> String {
        let mut body = format!(
            "S\t{}\t{}\t{}\t{}",
            self.sg, self.partition, self.covered, self.max_version
        );
        for f in &self.files {
            body.push('\t');
            body.push_str(f);
        }
        let crc = crc32fast::hash(body.as_bytes());
        format!("{body}\t{crc:08x}\n")
    }

    fn from_line(line: &str) -> Option<SealEntry> {
        let line = line.strip_suffix('\n')?;
        let (body, crc) = line.rsplit_once('\t')?;
        if u32::from_str_radix(crc, 16).ok()? != crc32fast::hash(body.as_bytes()) {
            return None;
        }
        let mut cols = body.split('\t');
        if cols.next()? != "S" {
            return None;
        }
        Some(SealEntry {
            sg: cols.next()?.to_string(),
            partition: cols.next()?.parse().ok()?,
            covered: cols.next()?.parse().ok()?,
            max_version: cols.next()?.parse().ok()?,
            files: cols.map(str::to_string).collect(),
        })
    }
}

/// The append-only seal journal.
///
/// A failed append or fsync leaves the file untrusted (its unsynced bytes are presumed
/// lost, and a torn line may sit in it): the next commit first rewrites the journal from
/// the entries known in memory (temporary file, fsync, rename) and appends after that.
pub struct SealJournal {
    fs: FsRef,
    path: PathBuf,
    file: Option<Box<dyn FsFile>>,
}

impl SealJournal {
    /// Reads the journal (stopping at the first bad line, which is cut) and opens it
    /// for appending.
    pub fn open(fs: FsRef, path: &Path) -> io::Result<(SealJournal, Vec<SealEntry>)> {
        let mut entries = Vec::new();
        let mut good = 0u64;
        let existed = match fs.read(path) {
            Ok(data) => {
                for line in data.split_inclusive(|&b| b == b'\n') {
                    let parsed = std::str::from_utf8(line)
                        .ok()
                        .and_then(SealEntry::from_line);
                    match parsed {
                        Some(e) => {
                            entries.push(e);
                            good += line.len() as u64;
                        }
                        None => {
                            tracing::warn!(journal = %path.display(), offset = good, "seal journal: cutting a torn line");
                            break;
                        }
                    }
                }
                Some(data.len() as u64)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let mut file = fs.open_append(path)?;
        match existed {
            None => {
                if let Some(dir) = path.parent() {
                    fs.sync_dir(dir)?;
                }
            }
            Some(len) if len > good => {
                file.set_len(good)?;
                file.sync_all()?;
            }
            Some(_) => {}
        }
        let j = SealJournal {
            fs,
            path: path.to_path_buf(),
            file: Some(file),
        };
        Ok((j, entries))
    }

    /// Appends and fsyncs one entry: the commit point of a seal. `known` are the entries
    /// the journal must hold besides it (what compaction keeps), used to rewrite the
    /// journal if an earlier append or fsync failed.
    pub fn commit(&mut self, e: &SealEntry, known: &[SealEntry]) -> io::Result<()> {
        if self.file.is_none() {
            self.compact(known)?;
        }
        let f = self
            .file
            .as_mut()
            .ok_or_else(|| io::Error::other("seal journal closed"))?;
        let r = f
            .write_all(e.to_line().as_bytes())
            .and_then(|_| f.sync_data());
        if r.is_err() {
            // Never trust this handle again.
            self.file = None;
        }
        r
    }

    /// Rewrites the journal with only `keep` (tmp + fsync + rename).
    pub fn compact(&mut self, keep: &[SealEntry]) -> io::Result<()> {
        let mut body = String::new();
        for e in keep {
            body.push_str(&e.to_line());
        }
        self.file = None;
        tsfiled_fsio::write_atomic(&*self.fs, &self.path, body.as_bytes())?;
        self.file = Some(self.fs.open_append(&self.path)?);
        Ok(())
    }
}

/// Renames a committed file's temporaries into place if a crash interrupted it.
pub fn roll_forward(fs: &dyn Fs, data: &Path, rel: &str) -> io::Result<bool> {
    let fin = data.join(rel);
    let tmp = with_suffix(&fin, ".tmp");
    let res = with_suffix(&fin, ".resource");
    let res_tmp = with_suffix(&res, ".tmp");
    let mut did = false;
    if fs.exists(&res_tmp) {
        fs.rename(&res_tmp, &res)?;
        did = true;
    }
    if fs.exists(&tmp) {
        fs.rename(&tmp, &fin)?;
        did = true;
    }
    if did {
        if let Some(dir) = fin.parent() {
            fs.sync_dir(dir)?;
        }
    }
    Ok(did)
}

/// What the data directory holds after recovery.
#[derive(Debug, Default)]
pub struct DataDirState {
    /// Per (storage group, partition): the newest end time per device in sequence files.
    pub latest_flushed: HashMap<(String, i64), HashMap<String, i64>>,
    /// Largest version per storage group (file names and journal).
    pub max_version: HashMap<String, i64>,
    /// Temporary files removed.
    pub removed_tmp: Vec<PathBuf>,
    /// Largest creation time (ms, the first part of a file name) of any TsFile.
    pub max_create_millis: i64,
}

/// Scans the data directory: removes uncommitted temporaries, reads sequence
/// `.resource` files for the newest time per device, and the largest versions.
pub fn scan_data_dir(fs: &dyn Fs, data: &Path) -> io::Result<DataDirState> {
    let mut st = DataDirState::default();
    for space in [Space::Sequence, Space::Unsequence] {
        let root = data.join(space.dir());
        let Ok(sgs) = fs.read_dir(&root) else {
            continue;
        };
        for sg in sgs.into_iter().filter(|e| e.is_dir) {
            let sg_name = sg.name.clone();
            let Ok(parts) = fs.read_dir(&sg.path) else {
                continue;
            };
            for part in parts.into_iter().filter(|e| e.is_dir) {
                let Ok(pid) = part.name.parse::<i64>() else {
                    continue;
                };
                let Ok(files) = fs.read_dir(&part.path) else {
                    continue;
                };
                let mut removed = false;
                for f in files {
                    let name = f.name.clone();
                    if name.ends_with(".tmp") {
                        fs.remove_file(&f.path)?;
                        st.removed_tmp.push(f.path.clone());
                        removed = true;
                        continue;
                    }
                    if let Some(stem) = name.strip_suffix(".tsfile") {
                        let mut parts = stem.split('-');
                        if let Some(m) = parts.next().and_then(|m| m.parse::<i64>().ok()) {
                            st.max_create_millis = st.max_create_millis.max(m);
                        }
                        if let Some(v) = parts.next().and_then(|v| v.parse::<i64>().ok()) {
                            let e = st.max_version.entry(sg_name.clone()).or_insert(v);
                            *e = (*e).max(v);
                        }
                    }
                    if space == Space::Sequence && name.ends_with(".tsfile.resource") {
                        let bytes = fs.read(&f.path)?;
                        let parsed = match format_of_name(&name) {
                            FormatVersion::V2 => parse_resource(&bytes),
                            FormatVersion::V4 => parse_resource_v4(&bytes),
                        };
                        match parsed {
                            Ok(devs) => {
                                let m =
                                    st.latest_flushed.entry((sg_name.clone(), pid)).or_default();
                                for d in devs {
                                    let key = super::table::from_resource_key(&sg_name, d.device);
                                    let e = m.entry(key).or_insert(d.end_time);
                                    *e = (*e).max(d.end_time);
                                }
                            }
                            Err(e) => {
                                tracing::warn!(file = %f.path.display(), error = %e, "unreadable .resource")
                            }
                        }
                    }
                }
                if removed {
                    fs.sync_dir(&part.path)?;
                }
            }
        }
    }
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_round_trip_and_layout() {
        let devs = vec![
            DeviceTimeRange {
                device: "root.sg.d1".into(),
                start_time: 1,
                end_time: 10,
            },
            DeviceTimeRange {
                device: "root.sg.d2".into(),
                start_time: -5,
                end_time: 7,
            },
        ];
        let b = resource_bytes(&devs, 3);
        // 4 + 2*(4+10+8) + 4 + 2*(4+10+8) + 4 + 8
        assert_eq!(b.len(), 4 + 44 + 4 + 44 + 12);
        assert_eq!(&b[..4], &[0, 0, 0, 2]);
        assert_eq!(&b[b.len() - 12..], &[0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3]);
        assert_eq!(parse_resource(&b).unwrap(), devs);
        for cut in 0..b.len() - 12 {
            assert!(parse_resource(&b[..cut]).is_err());
        }
    }

    #[test]
    fn journal_cuts_torn_lines() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("seals.log");
        let e = SealEntry {
            sg: "root.sg".into(),
            partition: 0,
            covered: 12345,
            max_version: 9,
            files: vec!["sequence/root.sg/0/1-2-0.tsfile".into()],
        };
        let fs = tsfiled_fsio::std_fs();
        {
            let (mut j, es) = SealJournal::open(fs.clone(), &p).unwrap();
            assert!(es.is_empty());
            j.commit(&e, &[]).unwrap();
            j.commit(&e, &[]).unwrap();
        }
        let mut data = std::fs::read(&p).unwrap();
        let len = data.len();
        data[len - 3] ^= 1; // corrupt the second line's checksum
        std::fs::write(&p, &data).unwrap();
        let (mut j, es) = SealJournal::open(fs.clone(), &p).unwrap();
        assert_eq!(es, vec![e.clone()]);
        j.commit(&e, &[]).unwrap();
        drop(j);
        let (_j, es) = SealJournal::open(fs, &p).unwrap();
        assert_eq!(es.len(), 2);
    }

    /// The IoTDB 2.x layout written out by hand from `TsFileResource.serializeTo`,
    /// `ArrayDeviceTimeIndex.serialize` and `StringArrayDeviceID.serialize`.
    #[test]
    fn resource_v4_layout() {
        let devs = vec![
            DeviceTimeRange {
                device: "root.sg.d1".into(),
                start_time: 1,
                end_time: 10,
            },
            DeviceTimeRange {
                device: "root.a.b.c.d".into(),
                start_time: -5,
                end_time: 7,
            },
        ];
        let b = resource_bytes_v4(&devs);
        let mut want: Vec<u8> = vec![1, 3, 0, 0, 0, 2];
        for t in [1i64, 10, -5, 7] {
            want.extend_from_slice(&t.to_be_bytes());
        }
        // root.sg.d1: 2 segments "root.sg" (7 bytes: zigzag 14) and "d1" (zigzag 4)
        want.extend_from_slice(&[2, 14]);
        want.extend_from_slice(b"root.sg");
        want.extend_from_slice(&[4]);
        want.extend_from_slice(b"d1");
        want.extend_from_slice(&[0, 0, 0, 0]);
        // root.a.b.c.d: "root.a.b" (zigzag 16), "c", "d" (zigzag 2)
        want.extend_from_slice(&[3, 16]);
        want.extend_from_slice(b"root.a.b");
        want.extend_from_slice(&[2, b'c', 2, b'd']);
        want.extend_from_slice(&[0, 0, 0, 1]);
        want.extend_from_slice(&i64::MIN.to_be_bytes());
        want.extend_from_slice(&i64::MAX.to_be_bytes());
        want.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0]);
        assert_eq!(b, want);
        assert_eq!(parse_resource_v4(&b).unwrap(), devs);
        for cut in 0..b.len() {
            assert!(parse_resource_v4(&b[..cut]).is_err(), "cut at {cut}");
        }
        // the 0.10 layout is not taken for a v4 one
        assert!(parse_resource_v4(&resource_bytes(&devs, 3)).is_err());
    }

    #[test]
    fn names() {
        let p = tsfile_path(
            Path::new("/d"),
            Space::Unsequence,
            "root.sg",
            3,
            100,
            7,
            FormatVersion::V2,
        );
        assert_eq!(p, Path::new("/d/unsequence/root.sg/3/100-7-0.tsfile"));
        assert_eq!(format_of_name("100-7-0.tsfile"), FormatVersion::V2);
        let p4 = tsfile_path(
            Path::new("/d"),
            Space::Sequence,
            "root.sg",
            0,
            100,
            7,
            FormatVersion::V4,
        );
        assert_eq!(p4, Path::new("/d/sequence/root.sg/0/100-7-0-0.tsfile"));
        assert_eq!(
            format_of_name("100-7-0-0.tsfile.resource"),
            FormatVersion::V4
        );
        assert_eq!(
            with_suffix(&p, ".resource"),
            Path::new("/d/unsequence/root.sg/3/100-7-0.tsfile.resource")
        );
    }

    /// A seal journal that exists but cannot be read (EIO) fails the open: it is not taken for
    /// an absent journal (which would drop every committed seal from recovery).
    #[test]
    fn a_seal_journal_that_cannot_be_read_is_an_error() {
        use std::path::Path;
        use tsfiled_fsio::sim::{Fault, SimFs};
        use tsfiled_fsio::FsRef;
        let sim = SimFs::new();
        let fs = FsRef::new(sim.clone());
        let p = Path::new("/state/seals.log");
        fs.create_dir_all(Path::new("/state")).unwrap();
        let e = SealEntry {
            sg: "root.sg".into(),
            partition: 0,
            covered: 7,
            max_version: 1,
            files: vec!["sequence/root.sg/0/1-1-0.tsfile".into()],
        };
        {
            let (mut j, entries) = SealJournal::open(fs.clone(), p).unwrap();
            assert!(entries.is_empty());
            j.commit(&e, &[]).unwrap();
        }
        sim.fail_at(sim.calls(), Fault::Io);
        let err = SealJournal::open(fs.clone(), p).err().unwrap();
        assert_eq!(err.raw_os_error(), Some(libc::EIO));
        assert_eq!(SealJournal::open(fs, p).unwrap().1, vec![e]);
    }

    /// Recovery's scan of the data directory: uncommitted temporaries go, the largest version and
    /// creation time come from the file names (`<millis>-<version>-0.tsfile`), the newest time per
    /// device from the sequence files' `.resource` only.
    #[test]
    fn the_data_directory_scan_reads_names_and_sequence_resources() {
        use tsfile::file::writer::DeviceTimeRange;
        let tmp = tempfile::tempdir().unwrap();
        let seq = tmp.path().join("sequence/root.sg/3");
        let unseq = tmp.path().join("unsequence/root.sg/3");
        std::fs::create_dir_all(&seq).unwrap();
        std::fs::create_dir_all(&unseq).unwrap();
        let range = |end: i64| {
            vec![DeviceTimeRange {
                device: "root.sg.d1".into(),
                start_time: 1,
                end_time: end,
            }]
        };
        std::fs::write(seq.join("1000-7-0.tsfile"), b"").unwrap();
        std::fs::write(
            seq.join("1000-7-0.tsfile.resource"),
            resource_bytes(&range(100), 7),
        )
        .unwrap();
        std::fs::write(seq.join("2000-9-0.tsfile.tmp"), b"partial").unwrap();
        std::fs::write(unseq.join("1500-8-0.tsfile"), b"").unwrap();
        std::fs::write(
            unseq.join("1500-8-0.tsfile.resource"),
            resource_bytes(&range(500), 8),
        )
        .unwrap();
        let st = scan_data_dir(&*tsfiled_fsio::std_fs(), tmp.path()).unwrap();
        assert_eq!(st.removed_tmp, vec![seq.join("2000-9-0.tsfile.tmp")]);
        assert!(!seq.join("2000-9-0.tsfile.tmp").exists());
        assert_eq!(st.max_version.get("root.sg"), Some(&8));
        assert_eq!(st.max_create_millis, 1500);
        let latest = &st.latest_flushed[&("root.sg".to_string(), 3)];
        assert_eq!(latest.get("root.sg.d1"), Some(&100));
        assert_eq!(st.latest_flushed.len(), 1);
    }
}
