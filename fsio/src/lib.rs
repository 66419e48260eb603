//! The one file-system interface of tsfiled's storage path.
//!
//! Every file operation of the write-ahead log, the TsFile output, the sealer, the seal
//! and schema journals, `.resource` files, CSV checkpoints and MQTT session records goes
//! through [`Fs`]. Production uses [`StdFs`] (plain `std::fs`, one dynamic call per
//! operation); tests use [`sim::SimFs`], an in-memory file system that can fail any single
//! call (`ENOSPC`, `EIO`, a short write, a failed fsync, rename or directory fsync) and
//! simulate a power loss (unsynced bytes and unsynced directory entries dropped or torn).

pub mod sim;

use std::any::Any;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// A shared file-system handle (two handles are equal when they share one file system).
#[derive(Clone)]
pub struct FsRef(Arc<dyn Fs>);

impl FsRef {
    /// A handle on `fs`.
    pub fn new(fs: impl Fs + 'static) -> FsRef {
        FsRef(Arc::new(fs))
    }
}

impl Default for FsRef {
    /// The real file system.
    fn default() -> Self {
        std_fs()
    }
}

impl std::ops::Deref for FsRef {
    type Target = dyn Fs;
    fn deref(&self) -> &(dyn Fs + 'static) {
        &*self.0
    }
}

impl PartialEq for FsRef {
    fn eq(&self, other: &FsRef) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl fmt::Debug for FsRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A file open for writing.
pub trait FsFile: Write + Send + fmt::Debug {
    /// `fsync`: data and metadata durable. After an error the file's unsynced data must
    /// be presumed lost (never retry on the same handle and believe it).
    fn sync_all(&mut self) -> io::Result<()>;
    /// `fdatasync`: data durable (same rule on error as [`FsFile::sync_all`]).
    fn sync_data(&mut self) -> io::Result<()>;
    /// Truncates or extends the file.
    fn set_len(&mut self, len: u64) -> io::Result<()>;
    /// Moves the write position.
    fn seek_to(&mut self, pos: u64) -> io::Result<()>;
}

/// A file open for reading: it stays readable after its name is removed (as an open file
/// descriptor does).
pub trait FsReader: Send + Sync + fmt::Debug {
    /// Reads up to `len` bytes from `offset` (fewer at the end) into `buf`, which it replaces.
    fn read_at(&self, offset: u64, len: usize, buf: &mut Vec<u8>) -> io::Result<()>;
}

/// A directory entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// File name (not the full path).
    pub name: String,
    /// Full path.
    pub path: PathBuf,
    /// A directory.
    pub is_dir: bool,
}

/// File-system operations of the storage path.
pub trait Fs: Send + Sync + fmt::Debug {
    /// Creates or truncates `path` for writing.
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>>;
    /// Creates `path` for writing; fails if it exists.
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn FsFile>>;
    /// Opens an existing file for writing at offset 0, without truncating it.
    fn open_write(&self, path: &Path) -> io::Result<Box<dyn FsFile>>;
    /// Opens `path` for appending, creating it if missing.
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn FsFile>>;
    /// Reads a whole file.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Reads up to `len` bytes of `path` from `offset` (fewer at its end) into `buf`, which
    /// it replaces. By default through [`Fs::read`] (the whole file), so that wrappers need
    /// not forward it.
    fn read_at(&self, path: &Path, offset: u64, len: usize, buf: &mut Vec<u8>) -> io::Result<()> {
        copy_range(&self.read(path)?, offset, len, buf);
        Ok(())
    }
    /// Opens `path` for reading. By default unsupported (callers read by path instead), so
    /// that wrappers need not forward it.
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn FsReader>> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("{}: no open handles on this file system", path.display()),
        ))
    }
    /// Renames a file (replacing `to`).
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Deletes a file.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Creates a directory and its missing parents (not durable until the parents are
    /// synced: see [`create_dir_all_synced`]).
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    /// Fsyncs a directory: creations, renames and deletions in it become durable.
    fn sync_dir(&self, path: &Path) -> io::Result<()>;
    /// Lists a directory (unordered).
    fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>>;
    /// A file's length.
    fn file_len(&self, path: &Path) -> io::Result<u64>;
    /// Whether `path` exists (file or directory).
    fn exists(&self, path: &Path) -> bool;
    /// Takes an exclusive lock on `path` (created if missing), held until the returned
    /// guard is dropped; fails with `WouldBlock` if another process holds it.
    fn lock(&self, path: &Path) -> io::Result<Box<dyn Any + Send + Sync>>;
}

/// Replaces `buf` with up to `len` bytes of `data` from `offset` (fewer at its end).
pub(crate) fn copy_range(data: &[u8], offset: u64, len: usize, buf: &mut Vec<u8>) {
    let start = usize::try_from(offset)
        .unwrap_or(usize::MAX)
        .min(data.len());
    let end = start.saturating_add(len).min(data.len());
    buf.clear();
    buf.extend_from_slice(&data[start..end]);
}

impl FsReader for File {
    fn read_at(&self, offset: u64, len: usize, buf: &mut Vec<u8>) -> io::Result<()> {
        // Bytes kept from the last read are overwritten: only growth is zeroed.
        buf.resize(len, 0);
        let mut filled = 0;
        while filled < len {
            match FileExt::read_at(self, &mut buf[filled..], offset + filled as u64) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    buf.clear();
                    return Err(e);
                }
            }
        }
        buf.truncate(filled);
        Ok(())
    }
}

/// The real file system (`std::fs`).
#[derive(Debug, Default, Clone, Copy)]
pub struct StdFs;

/// The shared [`StdFs`] handle.
pub fn std_fs() -> FsRef {
    static FS: OnceLock<FsRef> = OnceLock::new();
    FS.get_or_init(|| FsRef::new(StdFs)).clone()
}

impl FsFile for File {
    fn sync_all(&mut self) -> io::Result<()> {
        File::sync_all(self)
    }
    fn sync_data(&mut self) -> io::Result<()> {
        File::sync_data(self)
    }
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        File::set_len(self, len)
    }
    fn seek_to(&mut self, pos: u64) -> io::Result<()> {
        self.seek(SeekFrom::Start(pos)).map(|_| ())
    }
}

impl Fs for StdFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(Box::new(File::create(path)?))
    }
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let f = OpenOptions::new().write(true).create_new(true).open(path)?;
        Ok(Box::new(f))
    }
    fn open_write(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(Box::new(OpenOptions::new().write(true).open(path)?))
    }
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let f = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Box::new(f))
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        fs::read(path)
    }
    fn read_at(&self, path: &Path, offset: u64, len: usize, buf: &mut Vec<u8>) -> io::Result<()> {
        FsReader::read_at(&File::open(path)?, offset, len, buf)
    }
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn FsReader>> {
        Ok(Arc::new(File::open(path)?))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        fs::create_dir_all(path)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        File::open(path)?.sync_all()
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        let mut out = Vec::new();
        for e in fs::read_dir(path)? {
            let e = e?;
            let Ok(name) = e.file_name().into_string() else {
                continue;
            };
            out.push(DirEntry {
                name,
                path: e.path(),
                is_dir: e.file_type()?.is_dir(),
            });
        }
        Ok(out)
    }
    fn file_len(&self, path: &Path) -> io::Result<u64> {
        Ok(fs::metadata(path)?.len())
    }
    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }
    fn lock(&self, path: &Path) -> io::Result<Box<dyn Any + Send + Sync>> {
        use std::os::fd::AsRawFd;
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)?;
        // SAFETY: flock on a file descriptor we own.
        let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if r != 0 {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{} is locked by another process", path.display()),
            ));
        }
        Ok(Box::new(f))
    }
}

/// Creates `dir` and its missing parents, fsyncing the parent of each directory it
/// created so that the new directories survive a power loss.
pub fn create_dir_all_synced(fs: &dyn Fs, dir: &Path) -> io::Result<()> {
    let mut missing = Vec::new();
    let mut cur = Some(dir);
    while let Some(d) = cur {
        if d.as_os_str().is_empty() || fs.exists(d) {
            break;
        }
        missing.push(d);
        cur = d.parent();
    }
    if missing.is_empty() {
        return Ok(());
    }
    fs.create_dir_all(dir)?;
    for d in missing.iter().rev() {
        if let Some(parent) = d.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs.sync_dir(parent)?;
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` (created or truncated) and fsyncs it.
pub fn write_synced(fs: &dyn Fs, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = fs.create(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// `path` with `suffix` appended to its file name.
pub fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Replaces `path` atomically and durably: `<path>.tmp`, fsync, rename, fsync of the
/// directory. On error the old content (if any) is still in place.
pub fn write_atomic(fs: &dyn Fs, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = with_suffix(path, ".tmp");
    if let Err(e) = write_synced(fs, &tmp, bytes) {
        let _ = fs.remove_file(&tmp);
        return Err(e);
    }
    fs.rename(&tmp, path)?;
    fs.sync_dir(path.parent().unwrap_or(Path::new(".")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file open for reading reads what was written after it was opened, and stays
    /// readable once its name is removed (the real file system and the simulated one).
    #[test]
    fn a_file_open_for_reading_outlives_its_name() {
        let tmp = tempfile::tempdir().unwrap();
        let sim = sim::SimFs::new();
        sim.create_dir_all(Path::new("/d")).unwrap();
        for (fs, p) in [
            (std_fs(), tmp.path().join("f")),
            (FsRef::new(sim), PathBuf::from("/d/f")),
        ] {
            let mut f = fs.create(&p).unwrap();
            f.write_all(b"hell").unwrap();
            let r = fs.open_read(&p).unwrap();
            f.write_all(b"o!").unwrap();
            drop(f);
            fs.remove_file(&p).unwrap();
            assert!(!fs.exists(&p));
            // Parts of "hello!": inside, cut at the end, past the end.
            let mut buf = b"old".to_vec();
            r.read_at(1, 3, &mut buf).unwrap();
            assert_eq!(buf, b"ell");
            r.read_at(3, 10, &mut buf).unwrap();
            assert_eq!(buf, b"lo!");
            r.read_at(9, 2, &mut buf).unwrap();
            assert_eq!(buf, b"");
            assert_eq!(
                fs.open_read(&p).unwrap_err().kind(),
                io::ErrorKind::NotFound
            );
        }
    }

    #[test]
    fn std_fs_round_trip() {
        let tmp = tempfile::tempdir().unwrap();
        let fs = std_fs();
        let d = tmp.path().join("a/b/c");
        create_dir_all_synced(&*fs, &d).unwrap();
        assert!(d.is_dir());
        let p = d.join("x");
        write_atomic(&*fs, &p, b"hello").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"hello");
        assert!(!with_suffix(&p, ".tmp").exists());
        let mut f = fs.open_append(&p).unwrap();
        f.write_all(b" world").unwrap();
        f.sync_data().unwrap();
        assert_eq!(fs.read(&p).unwrap(), b"hello world");
        assert_eq!(fs.file_len(&p).unwrap(), 11);
        let mut f = fs.open_write(&p).unwrap();
        f.set_len(4).unwrap();
        f.seek_to(4).unwrap();
        f.write_all(b"!").unwrap();
        drop(f);
        assert_eq!(std::fs::read(&p).unwrap(), b"hell!");
        // Parts of "hell!": inside, cut at the end, past the end.
        let mut buf = b"old".to_vec();
        fs.read_at(&p, 1, 3, &mut buf).unwrap();
        assert_eq!(buf, b"ell");
        fs.read_at(&p, 3, 10, &mut buf).unwrap();
        assert_eq!(buf, b"l!");
        fs.read_at(&p, 9, 2, &mut buf).unwrap();
        assert_eq!(buf, b"");
        let names: Vec<_> = fs
            .read_dir(&d)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, vec!["x".to_string()]);
        let _g = fs.lock(&d.join("lock")).unwrap();
        let e = fs.lock(&d.join("lock")).err().unwrap();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
    }
}
