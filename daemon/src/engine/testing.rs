//! Helpers of the engine's unit tests: a file system (the real one) with faults put on an
//! operation of a file chosen by name (so the faults do not depend on the order in which
//! the engine and the sealer thread make their calls), and the capture of what is logged.

use std::any::Any;
use std::io::{self, Write};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use tsfiled_fsio::{DirEntry, Fs, FsFile, FsRef};

use super::schema::Registry;
use super::{Engine, EngineOptions, WallClock};
use crate::metrics::Metrics;

/// An operation a fault can be put on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FaultOp {
    /// `fsync` / `fdatasync` of the file.
    Sync,
    /// A rename of the file (as its source).
    Rename,
    /// A write to the file: fails with `ENOSPC` (a full device).
    Write,
}

#[derive(Debug, Default)]
struct Rules {
    fail: Mutex<Vec<(FaultOp, String)>>,
    held: Mutex<Vec<String>>,
    released: Condvar,
}

/// How long a held fsync waits at most for [`FaultFs::release`] (so that a test of code that
/// wrongly waits for a held seal fails instead of hanging).
const HOLD_MAX: Duration = Duration::from_secs(5);

impl Rules {
    fn check(&self, op: FaultOp, path: &Path) -> io::Result<()> {
        let rules = self.fail.lock().unwrap();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if rules.iter().any(|(o, n)| *o == op && n == name) {
            let errno = match op {
                FaultOp::Write => libc::ENOSPC,
                FaultOp::Sync | FaultOp::Rename => libc::EIO,
            };
            return Err(io::Error::from_raw_os_error(errno));
        }
        Ok(())
    }

    /// Waits while the fsync of `path` is held.
    fn wait_if_held(&self, path: &Path) {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let deadline = Instant::now() + HOLD_MAX;
        let mut held = self.held.lock().unwrap();
        while held.iter().any(|n| n == name) {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            held = self.released.wait_timeout(held, deadline - now).unwrap().0;
        }
    }
}

/// The real file system; an operation [`FaultFs::fail`]ed on a file name fails (`EIO`, or
/// `ENOSPC` for writes) every time until [`FaultFs::heal`]; a [`FaultFs::hold`] fsync waits.
#[derive(Debug, Clone, Default)]
pub(super) struct FaultFs {
    rules: Arc<Rules>,
}

impl FaultFs {
    /// The file system to give the engine (shares the faults with `self`).
    pub(super) fn fs(&self) -> FsRef {
        FsRef::new(self.clone())
    }

    /// Makes `op` fail on every file named `file_name`.
    pub(super) fn fail(&self, op: FaultOp, file_name: &str) {
        let mut fail = self.rules.fail.lock().unwrap();
        fail.push((op, file_name.to_string()));
    }

    /// Removes every fault.
    pub(super) fn heal(&self) {
        self.rules.fail.lock().unwrap().clear();
    }

    /// Makes the fsync of every file named `file_name` wait until [`FaultFs::release`] (at
    /// most 5 s).
    pub(super) fn hold(&self, file_name: &str) {
        self.rules.held.lock().unwrap().push(file_name.to_string());
    }

    /// Lets held fsyncs go on.
    pub(super) fn release(&self) {
        self.rules.held.lock().unwrap().clear();
        self.rules.released.notify_all();
    }

    fn wrap(&self, path: &Path, inner: Box<dyn FsFile>) -> Box<dyn FsFile> {
        Box::new(FaultFile {
            inner,
            path: path.to_path_buf(),
            rules: self.rules.clone(),
        })
    }
}

#[derive(Debug)]
struct FaultFile {
    inner: Box<dyn FsFile>,
    path: std::path::PathBuf,
    rules: Arc<Rules>,
}

impl Write for FaultFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.rules.check(FaultOp::Write, &self.path)?;
        self.inner.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl FsFile for FaultFile {
    fn sync_all(&mut self) -> io::Result<()> {
        self.rules.wait_if_held(&self.path);
        self.rules.check(FaultOp::Sync, &self.path)?;
        self.inner.sync_all()
    }
    fn sync_data(&mut self) -> io::Result<()> {
        self.rules.wait_if_held(&self.path);
        self.rules.check(FaultOp::Sync, &self.path)?;
        self.inner.sync_data()
    }
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
    fn seek_to(&mut self, pos: u64) -> io::Result<()> {
        self.inner.seek_to(pos)
    }
}

fn real() -> FsRef {
    tsfiled_fsio::std_fs()
}

impl Fs for FaultFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(self.wrap(path, real().create(path)?))
    }
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(self.wrap(path, real().create_new(path)?))
    }
    fn open_write(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(self.wrap(path, real().open_write(path)?))
    }
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(self.wrap(path, real().open_append(path)?))
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        real().read(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.rules.check(FaultOp::Rename, from)?;
        real().rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        real().remove_file(path)
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        real().create_dir_all(path)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        real().sync_dir(path)
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        real().read_dir(path)
    }
    fn file_len(&self, path: &Path) -> io::Result<u64> {
        real().file_len(path)
    }
    fn exists(&self, path: &Path) -> bool {
        real().exists(path)
    }
    fn lock(&self, path: &Path) -> io::Result<Box<dyn Any + Send + Sync>> {
        real().lock(path)
    }
}

/// What `f` logs.
pub(super) fn logs(f: impl FnOnce()) -> String {
    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buf = Buf::default();
    let w = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || w.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::with_default(subscriber, f);
    let out = buf.0.lock().unwrap().clone();
    String::from_utf8(out).unwrap()
}

/// An engine writing under `dir` on `fs`, its files created at 1000 ms (so named
/// `<millis>-<version>-0.tsfile`, millis counting up from 1000 and the version of the
/// storage group counting up from 1 with each new file and each flush).
pub(super) fn engine(dir: &Path, fs: &FaultFs) -> Engine {
    engine_at(dir, fs, 1000)
}

/// [`engine`] with the clock at `millis`.
pub(super) fn engine_at(dir: &Path, fs: &FaultFs, millis: i64) -> Engine {
    let mut opts = EngineOptions::new("t", dir);
    opts.fs = fs.fs();
    opts.clock = WallClock::new(move || millis);
    let registry = Arc::new(Mutex::new(Registry::in_memory(vec![])));
    Engine::open(opts, registry, Metrics::new()).unwrap()
}
