//! A simulated file system for tests: in memory, with fault injection and power loss.
//!
//! It keeps what is durable apart from what is only written: each file has its current
//! bytes and its synced bytes (updated by `fsync`/`fdatasync`), and the namespace has a
//! live and a durable view (a creation, rename or deletion becomes durable when its
//! directory is fsynced; a directory itself when its parent is). [`SimFs::crash_image`]
//! returns the file system as a power loss would leave it (the LazyFS idea): only durable
//! names survive, and each file's unsynced bytes are dropped, kept, or torn at a random
//! point. A failed fsync loses the file's unsynced bytes at once (as Linux may drop the
//! dirty pages: "fsyncgate"), so code that retries the fsync and believes it is caught.
//!
//! Every call is numbered (from 0); [`SimFs::fail_at`] makes call `k` fail once with a
//! [`Fault`], [`SimFs::crash_at`] makes call `k` and everything after it fail as if the
//! power went off before it.

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::{DirEntry, Fs, FsFile, FsReader};

/// A file-system operation (what a call index names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// `create` / `create_new` / `open_write` / `open_append`.
    Open,
    /// A `write` on an open file.
    Write,
    /// `fsync` / `fdatasync`.
    Sync,
    /// `set_len`.
    SetLen,
    /// Reading a file.
    Read,
    /// Listing a directory.
    ReadDir,
    /// A file's length.
    Len,
    /// `rename`.
    Rename,
    /// `unlink`.
    Remove,
    /// `mkdir -p`.
    CreateDir,
    /// `fsync` of a directory.
    SyncDir,
}

/// What an injected failure does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// `ENOSPC`, nothing done.
    NoSpace,
    /// `EIO`, nothing done.
    Io,
    /// A write that stores the first half of its bytes, then fails with `ENOSPC`.
    ShortWrite,
}

impl Fault {
    /// The faults that make sense for an operation.
    pub fn for_op(op: Op) -> &'static [Fault] {
        match op {
            Op::Write => &[Fault::NoSpace, Fault::ShortWrite, Fault::Io],
            Op::Open | Op::CreateDir | Op::SetLen => &[Fault::NoSpace],
            _ => &[Fault::Io],
        }
    }

    /// The error, as the kernel reports it (a raw `errno`, so callers classify it as
    /// they would a real one).
    fn error(self) -> io::Error {
        match self {
            Fault::NoSpace | Fault::ShortWrite => io::Error::from_raw_os_error(libc::ENOSPC),
            Fault::Io => io::Error::from_raw_os_error(libc::EIO),
        }
    }
}

/// One recorded call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// Its number.
    pub index: u64,
    /// The operation.
    pub op: Op,
    /// The path it concerned.
    pub path: PathBuf,
}

/// How a power loss treats a file's unsynced bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tear {
    /// All unsynced bytes are lost.
    Drop,
    /// All unsynced bytes made it to disk.
    Keep,
    /// A random prefix of the unsynced bytes made it (per file, from the seed).
    Torn(u64),
}

#[derive(Debug, Clone, Default)]
struct Inode {
    data: Vec<u8>,
    synced: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Node {
    File(u64),
    Dir,
}

#[derive(Debug, Default)]
struct State {
    inodes: HashMap<u64, Inode>,
    live: BTreeMap<PathBuf, Node>,
    durable: BTreeMap<PathBuf, Node>,
    next_ino: u64,
    calls: u64,
    fail: Option<(u64, Fault)>,
    crash: Option<u64>,
    crashed: bool,
    record: bool,
    log: Vec<Call>,
    injected: Option<Call>,
}

/// The simulated file system (cheap to clone; clones share the state).
#[derive(Debug, Clone)]
pub struct SimFs {
    st: Arc<Mutex<State>>,
}

impl Default for SimFs {
    fn default() -> Self {
        SimFs::new()
    }
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file or directory", path.display()),
    )
}

fn parent_of(p: &Path) -> Option<&Path> {
    p.parent().filter(|q| !q.as_os_str().is_empty())
}

impl State {
    /// Counts a call; returns the fault to apply to it, if any.
    fn call(&mut self, op: Op, path: &Path) -> io::Result<Option<Fault>> {
        let index = self.calls;
        self.calls += 1;
        if self.record {
            self.log.push(Call {
                index,
                op,
                path: path.to_path_buf(),
            });
        }
        if self.crash.is_some_and(|c| index >= c) {
            self.crashed = true;
        }
        if self.crashed {
            return Err(io::Error::other(format!(
                "simulated power loss before {op:?} {}",
                path.display()
            )));
        }
        match self.fail {
            Some((k, fault)) if k == index => {
                self.fail = None;
                self.injected = Some(Call {
                    index,
                    op,
                    path: path.to_path_buf(),
                });
                if fault == Fault::ShortWrite && op == Op::Write {
                    return Ok(Some(fault));
                }
                Err(fault.error())
            }
            _ => Ok(None),
        }
    }

    fn is_dir(&self, p: &Path) -> bool {
        p == Path::new("/") || matches!(self.live.get(p), Some(Node::Dir))
    }

    fn check_parent(&self, p: &Path) -> io::Result<()> {
        match parent_of(p) {
            Some(d) if !self.is_dir(d) => Err(not_found(d)),
            _ => Ok(()),
        }
    }

    fn new_inode(&mut self) -> u64 {
        self.next_ino += 1;
        self.inodes.insert(self.next_ino, Inode::default());
        self.next_ino
    }
}

impl SimFs {
    /// An empty file system (only `/`).
    pub fn new() -> SimFs {
        SimFs {
            st: Arc::new(Mutex::new(State::default())),
        }
    }

    fn lock_state(&self) -> MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Calls made so far.
    pub fn calls(&self) -> u64 {
        self.lock_state().calls
    }

    /// Makes call `index` fail once with `fault`.
    pub fn fail_at(&self, index: u64, fault: Fault) {
        self.lock_state().fail = Some((index, fault));
    }

    /// Cancels a pending [`SimFs::fail_at`] and [`SimFs::crash_at`].
    pub fn clear_faults(&self) {
        let mut st = self.lock_state();
        st.fail = None;
        st.crash = None;
    }

    /// The call a fault was injected into, if one was.
    pub fn injected(&self) -> Option<Call> {
        self.lock_state().injected.clone()
    }

    /// Power goes off just before call `index`: it and every later call fail.
    pub fn crash_at(&self, index: u64) {
        self.lock_state().crash = Some(index);
    }

    /// Whether the simulated power loss happened.
    pub fn crashed(&self) -> bool {
        self.lock_state().crashed
    }

    /// Records every call from now on (see [`SimFs::log`]).
    pub fn record(&self, on: bool) {
        self.lock_state().record = on;
    }

    /// The recorded calls.
    pub fn log(&self) -> Vec<Call> {
        self.lock_state().log.clone()
    }

    /// Every file (live view) with its current bytes, sorted by path.
    pub fn files(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let st = self.lock_state();
        st.live
            .iter()
            .filter_map(|(p, n)| match n {
                Node::File(ino) => Some((p.clone(), st.inodes[ino].data.clone())),
                Node::Dir => None,
            })
            .collect()
    }

    /// Replaces a file's bytes (live and durable) without counting a call: for tests that
    /// corrupt a file.
    pub fn set_file(&self, path: &Path, bytes: Vec<u8>) -> io::Result<()> {
        let mut st = self.lock_state();
        match st.live.get(path) {
            Some(Node::File(ino)) => {
                let ino = *ino;
                let inode = st.inodes.get_mut(&ino).expect("inode of a live file");
                inode.data = bytes.clone();
                inode.synced = bytes;
                Ok(())
            }
            _ => Err(not_found(path)),
        }
    }

    /// Deletes a directory tree (live and durable) without counting a call: for tests
    /// where something outside the daemon removes a directory.
    pub fn remove_tree(&self, dir: &Path) {
        let mut st = self.lock_state();
        st.live.retain(|p, _| !p.starts_with(dir));
        st.durable.retain(|p, _| !p.starts_with(dir));
    }

    /// The file system as a power loss at this moment leaves it: durable names only, each
    /// file's unsynced bytes treated by `tear`. The result has no faults pending.
    pub fn crash_image(&self, tear: Tear) -> SimFs {
        let st = self.lock_state();
        let mut rng = match tear {
            Tear::Torn(seed) => seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            _ => 1,
        };
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut out = State::default();
        let reachable = |p: &Path| {
            let mut cur = parent_of(p);
            while let Some(d) = cur {
                if d != Path::new("/") && !matches!(st.durable.get(d), Some(Node::Dir)) {
                    return false;
                }
                cur = parent_of(d);
            }
            true
        };
        let mut done: HashMap<u64, u64> = HashMap::new();
        for (p, n) in &st.durable {
            if !reachable(p) {
                continue;
            }
            match n {
                Node::Dir => {
                    out.live.insert(p.clone(), Node::Dir);
                }
                Node::File(ino) => {
                    let new_ino = match done.get(ino) {
                        Some(i) => *i,
                        None => {
                            let inode = &st.inodes[ino];
                            let bytes = survive(inode, tear, &mut next);
                            let i = out.new_inode();
                            let ni = out.inodes.get_mut(&i).expect("just made");
                            ni.data = bytes.clone();
                            ni.synced = bytes;
                            done.insert(*ino, i);
                            i
                        }
                    };
                    out.live.insert(p.clone(), Node::File(new_ino));
                }
            }
        }
        out.durable = out.live.clone();
        SimFs {
            st: Arc::new(Mutex::new(out)),
        }
    }

    fn open(
        &self,
        path: &Path,
        create: bool,
        truncate: bool,
        excl: bool,
        append: bool,
    ) -> io::Result<Box<dyn FsFile>> {
        let mut st = self.lock_state();
        st.call(Op::Open, path)?;
        st.check_parent(path)?;
        let ino = match st.live.get(path).copied() {
            Some(Node::Dir) => {
                return Err(io::Error::other(format!(
                    "{} is a directory",
                    path.display()
                )))
            }
            Some(Node::File(_)) if excl => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists", path.display()),
                ))
            }
            Some(Node::File(ino)) => {
                if truncate {
                    st.inodes.get_mut(&ino).expect("inode").data.clear();
                }
                ino
            }
            None if create => {
                let ino = st.new_inode();
                st.live.insert(path.to_path_buf(), Node::File(ino));
                ino
            }
            None => return Err(not_found(path)),
        };
        let pos = if append {
            st.inodes[&ino].data.len() as u64
        } else {
            0
        };
        Ok(Box::new(SimFile {
            fs: self.clone(),
            ino,
            pos,
            append,
            path: path.to_path_buf(),
        }))
    }
}

fn survive(inode: &Inode, tear: Tear, next: &mut impl FnMut() -> u64) -> Vec<u8> {
    let (data, synced) = (&inode.data, &inode.synced);
    if data.len() >= synced.len() && data[..synced.len()] == synced[..] {
        let extra = data.len() - synced.len();
        let keep = match tear {
            Tear::Drop => 0,
            Tear::Keep => extra,
            Tear::Torn(_) => (next() % (extra as u64 + 1)) as usize,
        };
        data[..synced.len() + keep].to_vec()
    } else {
        match tear {
            Tear::Drop => synced.clone(),
            Tear::Keep => data.clone(),
            Tear::Torn(_) => {
                if next().is_multiple_of(2) {
                    synced.clone()
                } else {
                    data.clone()
                }
            }
        }
    }
}

/// A simulated file open for reading: its inode, whatever its name became.
#[derive(Debug)]
struct SimReader {
    st: Arc<Mutex<State>>,
    ino: u64,
}

impl FsReader for SimReader {
    fn read_at(&self, offset: u64, len: usize, buf: &mut Vec<u8>) -> io::Result<()> {
        let st = self.st.lock().unwrap_or_else(|e| e.into_inner());
        if st.crashed {
            return Err(io::Error::other("simulated power loss before a read"));
        }
        let data = st.inodes.get(&self.ino).map_or(&[][..], |i| &i.data[..]);
        crate::copy_range(data, offset, len, buf);
        Ok(())
    }
}

impl Fs for SimFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        self.open(path, true, true, false, false)
    }
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        self.open(path, true, false, true, false)
    }
    fn open_write(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        self.open(path, false, false, false, false)
    }
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        self.open(path, true, false, false, true)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut st = self.lock_state();
        st.call(Op::Read, path)?;
        match st.live.get(path) {
            Some(Node::File(ino)) => Ok(st.inodes[ino].data.clone()),
            Some(Node::Dir) => Err(io::Error::other(format!(
                "{} is a directory",
                path.display()
            ))),
            None => Err(not_found(path)),
        }
    }
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn FsReader>> {
        let mut st = self.lock_state();
        st.call(Op::Open, path)?;
        match st.live.get(path) {
            Some(Node::File(ino)) => Ok(Arc::new(SimReader {
                st: self.st.clone(),
                ino: *ino,
            })),
            Some(Node::Dir) => Err(io::Error::other(format!(
                "{} is a directory",
                path.display()
            ))),
            None => Err(not_found(path)),
        }
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut st = self.lock_state();
        st.call(Op::Rename, from)?;
        st.check_parent(to)?;
        match st.live.get(from).copied() {
            Some(Node::File(ino)) => {
                if matches!(st.live.get(to), Some(Node::Dir)) {
                    return Err(io::Error::other(format!("{} is a directory", to.display())));
                }
                st.live.remove(from);
                st.live.insert(to.to_path_buf(), Node::File(ino));
                Ok(())
            }
            Some(Node::Dir) => Err(io::Error::other("renaming directories is not simulated")),
            None => Err(not_found(from)),
        }
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut st = self.lock_state();
        st.call(Op::Remove, path)?;
        match st.live.get(path) {
            Some(Node::File(_)) => {
                st.live.remove(path);
                Ok(())
            }
            Some(Node::Dir) => Err(io::Error::other(format!(
                "{} is a directory",
                path.display()
            ))),
            None => Err(not_found(path)),
        }
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        let mut st = self.lock_state();
        st.call(Op::CreateDir, path)?;
        let mut cur = Some(path);
        let mut todo = Vec::new();
        while let Some(d) = cur {
            if d == Path::new("/") {
                break;
            }
            match st.live.get(d) {
                Some(Node::Dir) => break,
                Some(Node::File(_)) => {
                    return Err(io::Error::other(format!("{} is a file", d.display())))
                }
                None => todo.push(d.to_path_buf()),
            }
            cur = parent_of(d);
        }
        for d in todo {
            st.live.insert(d, Node::Dir);
        }
        Ok(())
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        let mut st = self.lock_state();
        st.call(Op::SyncDir, path)?;
        if !st.is_dir(path) {
            return Err(not_found(path));
        }
        let child = |p: &Path| parent_of(p) == Some(path);
        let st = &mut *st;
        st.durable.retain(|p, _| !child(p));
        for (p, n) in &st.live {
            if child(p) {
                st.durable.insert(p.clone(), *n);
            }
        }
        Ok(())
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        let mut st = self.lock_state();
        st.call(Op::ReadDir, path)?;
        if !st.is_dir(path) {
            return Err(not_found(path));
        }
        Ok(st
            .live
            .iter()
            .filter(|(p, _)| parent_of(p) == Some(path))
            .map(|(p, n)| DirEntry {
                name: p
                    .file_name()
                    .map(|s| s.to_string_lossy().to_string())
                    .unwrap_or_default(),
                path: p.clone(),
                is_dir: *n == Node::Dir,
            })
            .collect())
    }
    fn file_len(&self, path: &Path) -> io::Result<u64> {
        let mut st = self.lock_state();
        st.call(Op::Len, path)?;
        match st.live.get(path) {
            Some(Node::File(ino)) => Ok(st.inodes[ino].data.len() as u64),
            Some(Node::Dir) => Ok(0),
            None => Err(not_found(path)),
        }
    }
    fn exists(&self, path: &Path) -> bool {
        let st = self.lock_state();
        st.is_dir(path) || st.live.contains_key(path)
    }
    fn lock(&self, _path: &Path) -> io::Result<Box<dyn Any + Send + Sync>> {
        Ok(Box::new(()))
    }
}

/// A file open on a [`SimFs`].
#[derive(Debug)]
pub struct SimFile {
    fs: SimFs,
    ino: u64,
    pos: u64,
    append: bool,
    path: PathBuf,
}

impl Write for SimFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut st = self.fs.lock_state();
        let fault = st.call(Op::Write, &self.path)?;
        let n = match fault {
            Some(Fault::ShortWrite) => buf.len() / 2,
            _ => buf.len(),
        };
        let inode = st.inodes.get_mut(&self.ino).expect("inode of an open file");
        if self.append {
            self.pos = inode.data.len() as u64;
        }
        let at = self.pos as usize;
        if inode.data.len() < at + n {
            inode.data.resize(at + n, 0);
        }
        inode.data[at..at + n].copy_from_slice(&buf[..n]);
        self.pos += n as u64;
        if let Some(f) = fault {
            return Err(f.error());
        }
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl SimFile {
    fn sync(&mut self) -> io::Result<()> {
        let mut st = self.fs.lock_state();
        let r = st.call(Op::Sync, &self.path);
        let inode = st.inodes.get_mut(&self.ino).expect("inode of an open file");
        match r {
            Ok(_) => {
                inode.synced = inode.data.clone();
                Ok(())
            }
            Err(e) => {
                if !st.crashed {
                    // fsyncgate: the dirty pages are gone.
                    let inode = st.inodes.get_mut(&self.ino).expect("inode");
                    inode.data = inode.synced.clone();
                }
                Err(e)
            }
        }
    }
}

impl FsFile for SimFile {
    fn sync_all(&mut self) -> io::Result<()> {
        self.sync()
    }
    fn sync_data(&mut self) -> io::Result<()> {
        self.sync()
    }
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        let mut st = self.fs.lock_state();
        st.call(Op::SetLen, &self.path)?;
        let inode = st.inodes.get_mut(&self.ino).expect("inode of an open file");
        inode.data.resize(len as usize, 0);
        Ok(())
    }
    fn seek_to(&mut self, pos: u64) -> io::Result<()> {
        self.pos = pos;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{create_dir_all_synced, write_atomic};

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    #[test]
    fn unsynced_bytes_and_names_do_not_survive_a_power_loss() {
        let fs = SimFs::new();
        create_dir_all_synced(&fs, &p("/d/sub")).unwrap();
        let mut f = fs.create(&p("/d/sub/a")).unwrap();
        f.write_all(b"synced").unwrap();
        f.sync_data().unwrap();
        f.write_all(b"+lost").unwrap();
        // The name of `a` was never made durable: the file is gone.
        let img = fs.crash_image(Tear::Keep);
        assert!(!img.exists(&p("/d/sub/a")));
        assert!(img.exists(&p("/d/sub")));
        fs.sync_dir(&p("/d/sub")).unwrap();
        assert_eq!(
            fs.crash_image(Tear::Drop).read(&p("/d/sub/a")).unwrap(),
            b"synced"
        );
        assert_eq!(
            fs.crash_image(Tear::Keep).read(&p("/d/sub/a")).unwrap(),
            b"synced+lost"
        );
        let mut seen = std::collections::HashSet::new();
        for seed in 0..64 {
            let b = fs
                .crash_image(Tear::Torn(seed))
                .read(&p("/d/sub/a"))
                .unwrap();
            assert!(b"synced+lost".starts_with(&b) && b.len() >= 6);
            seen.insert(b.len());
        }
        assert!(seen.len() > 3, "tears at several points: {seen:?}");
        // A rename is not durable until the directory is synced.
        fs.rename(&p("/d/sub/a"), &p("/d/sub/b")).unwrap();
        let img = fs.crash_image(Tear::Keep);
        assert!(img.exists(&p("/d/sub/a")) && !img.exists(&p("/d/sub/b")));
        fs.sync_dir(&p("/d/sub")).unwrap();
        let img = fs.crash_image(Tear::Keep);
        assert!(!img.exists(&p("/d/sub/a")) && img.exists(&p("/d/sub/b")));
        // A directory created without syncing its parent is lost with its files.
        fs.create_dir_all(&p("/d/new")).unwrap();
        write_atomic(&fs, &p("/d/new/x"), b"1").unwrap();
        assert!(!fs.crash_image(Tear::Keep).exists(&p("/d/new/x")));
    }

    #[test]
    fn faults_are_injected_once_at_the_numbered_call() {
        let fs = SimFs::new();
        fs.create_dir_all(&p("/d")).unwrap();
        let base = fs.calls();
        fs.fail_at(base + 2, Fault::ShortWrite);
        let mut f = fs.create(&p("/d/a")).unwrap(); // base
        f.write_all(b"abcd").unwrap(); // base + 1
        let e = f.write_all(b"efgh").unwrap_err(); // base + 2: half written
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC));
        assert_eq!(fs.read(&p("/d/a")).unwrap(), b"abcdef");
        assert_eq!(fs.injected().unwrap().op, Op::Write);
        // fsyncgate: a failed fsync loses the unsynced bytes; the next one succeeds.
        fs.fail_at(fs.calls() + 1, Fault::Io);
        f.write_all(b"gh").unwrap();
        assert!(f.sync_data().is_err());
        f.sync_data().unwrap();
        assert_eq!(fs.read(&p("/d/a")).unwrap(), b"");
        // A crash point: that call and all later ones fail.
        fs.crash_at(fs.calls() + 1);
        fs.create(&p("/d/b")).unwrap();
        assert!(fs.create(&p("/d/c")).is_err());
        assert!(fs.read(&p("/d/a")).is_err());
        assert!(fs.crashed());
    }
}
