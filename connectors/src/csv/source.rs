//! The watch-directory source: finds complete files, ingests each exactly once through the
//! [`BatchSink`], and moves it to `done/` or `error/`.
//!
//! # Which files, and when
//! Files whose name matches a pattern and no ignore glob, directly in a watched directory (or
//! below it with `recursive`), outside the done and error directories. A file is taken when it
//! is complete:
//! - it was renamed into the directory (inotify `IN_MOVED_TO`) — the recommended contract for
//!   writers: write elsewhere (or as `*.tmp`/`*.part`/a dotfile) and rename;
//! - it was closed after writing (`IN_CLOSE_WRITE`) and ends with a line break (or is gzip),
//!   unless [`CsvRun::close_write_completes`] is off;
//! - its size and mtime have not changed for `settle` (checked on every scan tick; a file last
//!   modified more than `settle` ago is taken at first sight, e.g. at startup).
//!
//! The directories are scanned at start, every `rescan_interval`, and in full whenever notify
//! reports lost events (`Flag::Rescan`, queue overflow) or an error, so missed inotify events
//! only delay a file. Events of new subdirectories trigger a scan of them.
//!
//! # Exactly once
//! Rows go to the sink in bounded batches, one at a time; after each batch the sink made
//! durable, the file's checkpoint (byte offset, line, counts, fingerprint) is appended to its
//! checkpoint log before the next batch is handed on, and synced while that batch becomes
//! durable (a pass's first checkpoint is saved atomically and durably; see
//! [`checkpoint`](super::checkpoint)). A restart resumes every file at its checkpoint:
//! acknowledged rows are not read again, unacknowledged ones are. (A process crash between the
//! sink's acknowledgement and the checkpoint write can repeat one batch, a power loss up to two,
//! as the last checkpoint may not be synced yet; IoTDB overwrites points with the same
//! timestamp, so a repeat is harmless.) A file is moved
//! (or deleted) only after all its rows are durable. If a file grows while it is read, the
//! rows read so far are kept, the incomplete last line is not, and the file is taken again
//! when it is complete, from its checkpoint.
//!
//! # Results
//! - No bad row: moved to the done directory (or deleted with [`OnSuccess::Delete`]).
//! - Bad rows (or points the sink rejected): the good rows are ingested; the file goes to the
//!   error directory with `<name>.report` beside it, one line per bad row
//!   (`line 17: invalid_time: ...`).
//! - A file that cannot be read as a whole (no or bad header, broken gzip): error directory
//!   with the reason in its report.
//! - Name clashes in the destination get `.1`, `.2`, … suffixes. Moves are renames; across
//!   filesystems a copy that is fsynced before the source is removed. If a move fails the file
//!   stays (its rows are durable and are not read again) and the move is retried later.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use notify::event::{AccessKind, AccessMode, CreateKind, ModifyKind, RenameMode};
use notify::{EventKind, RecursiveMode, Watcher};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::checkpoint::{mtime_ns, Checkpoint, CkLog, Fingerprint, Store};
use super::files::{delete_file, move_file, unique_name, write_report};
use super::metrics::{CsvMetrics, FileResult};
use super::options::{CsvParseOptions, CsvRun, CsvSourceConfig, OnSuccess};
use super::parser::{is_gzip, Chunk, CsvParser, FileContext, ParseSummary, ResumePoint};
use super::records::Input;
use crate::error::Error;
use crate::model::Location;
use crate::sink::{BatchSink, SinkError, SinkOutcome};

/// Runs a CSV source until `shutdown` is cancelled.
///
/// Validates the options (patterns, time format and zone, template), checks that the watched
/// directories exist, opens the state directory, then watches and ingests. On shutdown it
/// stops taking files, lets each file in progress finish the batch being submitted and write
/// its checkpoint, and returns. Returns [`Error::SinkClosed`] when the sink closed.
pub async fn run(
    opts: CsvSourceConfig,
    run: CsvRun,
    sink: Arc<dyn BatchSink>,
    shutdown: CancellationToken,
    metrics: Arc<dyn CsvMetrics>,
) -> Result<(), Error> {
    let parser = CsvParser::new(&CsvParseOptions {
        max_batch_points: run.max_batch_points,
        max_record_bytes: run.max_record_bytes,
        ..opts.parse_options(run.stored_unit)
    })?;
    if opts.patterns.is_empty() {
        return Err(Error::CsvOption {
            key: "patterns",
            message: "at least one file pattern is required".into(),
        });
    }
    if opts.directories.is_empty() {
        return Err(Error::CsvOption {
            key: "directories",
            message: "at least one directory is required".into(),
        });
    }
    let mut roots = Vec::new();
    for d in &opts.directories {
        match std::fs::metadata(d) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(Error::CsvOption {
                    key: "directories",
                    message: format!("{} is not a directory", d.display()),
                })
            }
            Err(e) => return Err(Error::io(format!("watched directory {}", d.display()), &e)),
        }
        roots.push(Root {
            dir: d.clone(),
            done: d.join(&opts.done_dir),
            error: d.join(&opts.error_dir),
        });
    }
    let store = Store::open(run.fs.clone(), &run.state_dir)
        .map_err(|e| Error::io(format!("state directory {}", run.state_dir.display()), &e))?;
    // Checkpoints of files that are gone were finished (moved) just before a crash.
    let stale = store.all().unwrap_or_default();
    for ck in stale {
        if std::fs::symlink_metadata(&ck.path).is_err() {
            let _ = store.remove(&ck.path);
        }
    }
    let stop = shutdown.child_token();
    let shared = Arc::new(Shared {
        parser,
        store,
        sink,
        metrics,
        stop: stop.clone(),
        max_in_flight: opts.max_concurrent_files.max(1) as usize,
        close_write_completes: run.close_write_completes,
        opts,
    });
    let mut s = Scheduler {
        shared: shared.clone(),
        roots,
        pending: HashMap::new(),
        ready: VecDeque::new(),
        queued: HashSet::new(),
        running: HashSet::new(),
        retry: HashMap::new(),
        tasks: JoinSet::new(),
        sink_closed: false,
    };
    s.run().await
}

#[derive(Debug, Clone)]
struct Root {
    dir: PathBuf,
    done: PathBuf,
    error: PathBuf,
}

struct Shared {
    opts: CsvSourceConfig,
    close_write_completes: bool,
    parser: CsvParser,
    store: Store,
    sink: Arc<dyn BatchSink>,
    metrics: Arc<dyn CsvMetrics>,
    stop: CancellationToken,
    max_in_flight: usize,
}

#[derive(Debug)]
struct Candidate {
    root: usize,
    size: u64,
    mtime_ns: i64,
    stable_since: Instant,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hint {
    /// Found by a scan or a plain change event.
    Seen,
    /// Closed after writing.
    ClosedWrite,
    /// Renamed into the directory.
    MovedIn,
}

/// How processing a file ended.
#[derive(Debug)]
enum Outcome {
    Finished(FileResult),
    /// Still being written: take it again once it is complete (from its checkpoint).
    Growing,
    Vanished,
    /// Try again later (move failed, I/O error): the reason.
    Stuck(String),
    /// Shutdown.
    Stopped,
    SinkClosed,
}

struct Scheduler {
    shared: Arc<Shared>,
    roots: Vec<Root>,
    pending: HashMap<PathBuf, Candidate>,
    ready: VecDeque<(PathBuf, usize)>,
    queued: HashSet<PathBuf>,
    running: HashSet<PathBuf>,
    retry: HashMap<PathBuf, Instant>,
    tasks: JoinSet<(PathBuf, usize, Outcome)>,
    sink_closed: bool,
}

const EVENT_QUEUE: usize = 4096;

impl Scheduler {
    async fn run(&mut self) -> Result<(), Error> {
        let sh = self.shared.clone();
        let (tx, mut rx) = mpsc::channel::<notify::Result<notify::Event>>(EVENT_QUEUE);
        let overflow = Arc::new(AtomicBool::new(false));
        let ov = overflow.clone();
        let watcher = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
            if tx.try_send(ev).is_err() {
                ov.store(true, Ordering::Relaxed);
            }
        });
        let mut watcher = match watcher {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::warn!(error = %e, "csv: cannot create a file watcher; relying on rescans");
                None
            }
        };
        if let Some(w) = watcher.as_mut() {
            let mode = if sh.opts.recursive {
                RecursiveMode::Recursive
            } else {
                RecursiveMode::NonRecursive
            };
            for r in &self.roots {
                if let Err(e) = w.watch(&r.dir, mode) {
                    tracing::warn!(dir = %r.dir.display(), error = %e, "csv: cannot watch; relying on rescans");
                }
            }
        }
        self.full_scan(false);
        let tick_every =
            (sh.opts.settle / 4).clamp(Duration::from_millis(20), Duration::from_millis(500));
        let mut tick = tokio::time::interval(tick_every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut rescan = tokio::time::interval_at(
            tokio::time::Instant::now() + sh.opts.rescan_interval,
            sh.opts.rescan_interval.max(Duration::from_millis(10)),
        );
        rescan.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            self.start_tasks();
            tokio::select! {
                biased;
                _ = sh.stop.cancelled() => break,
                Some(res) = self.tasks.join_next(), if !self.tasks.is_empty() => {
                    self.task_done(res);
                    if self.sink_closed {
                        sh.stop.cancel();
                        break;
                    }
                }
                Some(ev) = rx.recv() => self.event(ev),
                _ = tick.tick() => {
                    if overflow.swap(false, Ordering::Relaxed) {
                        self.full_scan(true);
                    }
                    self.check_pending();
                }
                _ = rescan.tick() => self.full_scan(false),
            }
        }
        drop(watcher);
        while let Some(res) = self.tasks.join_next().await {
            self.task_done(res);
        }
        if self.sink_closed {
            Err(Error::SinkClosed)
        } else {
            Ok(())
        }
    }

    fn report_queue(&self) {
        self.shared.metrics.queue_length(self.ready.len());
        self.shared.metrics.in_progress(self.running.len());
    }

    fn start_tasks(&mut self) {
        while self.tasks.len() < self.shared.max_in_flight && !self.shared.stop.is_cancelled() {
            let Some((path, root)) = self.ready.pop_front() else {
                break;
            };
            self.queued.remove(&path);
            self.running.insert(path.clone());
            let sh = self.shared.clone();
            let r = self.roots[root].clone();
            self.tasks.spawn(async move {
                let out = process_file(&sh, &path, &r).await;
                (path, root, out)
            });
        }
        self.report_queue();
    }

    fn task_done(&mut self, res: Result<(PathBuf, usize, Outcome), tokio::task::JoinError>) {
        let (path, root, out) = match res {
            Ok(x) => x,
            Err(e) => {
                tracing::error!(error = %e, "csv: a file task failed");
                return;
            }
        };
        self.running.remove(&path);
        let m = &self.shared.metrics;
        match out {
            Outcome::Finished(r) => m.file_finished(r),
            Outcome::Growing => self.add_pending(path, root),
            Outcome::Vanished | Outcome::Stopped => {}
            Outcome::Stuck(why) => {
                tracing::warn!(file = %path.display(), reason = %why, "csv: file left in place; retrying later");
                m.file_finished(FileResult::Stuck);
                self.retry
                    .insert(path, Instant::now() + self.shared.opts.rescan_interval);
            }
            Outcome::SinkClosed => self.sink_closed = true,
        }
        self.report_queue();
    }

    fn add_pending(&mut self, path: PathBuf, root: usize) {
        if let Ok(m) = std::fs::metadata(&path) {
            self.pending.insert(
                path,
                Candidate {
                    root,
                    size: m.len(),
                    mtime_ns: mtime_ns(&m),
                    stable_since: Instant::now(),
                },
            );
        }
    }

    fn excluded(&self, path: &Path) -> bool {
        let state = self.shared.store.dir();
        path.starts_with(state)
            || self
                .roots
                .iter()
                .any(|r| path.starts_with(&r.done) || path.starts_with(&r.error))
    }

    fn root_of(&self, path: &Path) -> Option<usize> {
        let parent = path.parent()?;
        let recursive = self.shared.opts.recursive;
        self.roots
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                if recursive {
                    parent.starts_with(&r.dir)
                } else {
                    parent == r.dir
                }
            })
            .max_by_key(|(_, r)| r.dir.as_os_str().len())
            .map(|(i, _)| i)
    }

    fn accepts(&self, path: &Path) -> bool {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            return false;
        };
        let o = &self.shared.opts;
        o.patterns.iter().any(|g| g.matches(name)) && !o.ignore.iter().any(|g| g.matches(name))
    }

    fn event(&mut self, ev: notify::Result<notify::Event>) {
        let ev = match ev {
            Ok(ev) => ev,
            Err(e) => {
                tracing::warn!(error = %e, "csv: watcher error; rescanning");
                self.full_scan(true);
                return;
            }
        };
        if ev.need_rescan() {
            self.full_scan(true);
        }
        match ev.kind {
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => {
                for p in &ev.paths {
                    self.observe(p, Hint::ClosedWrite);
                }
            }
            EventKind::Modify(ModifyKind::Name(RenameMode::To)) => {
                for p in &ev.paths {
                    self.moved_in(p);
                }
            }
            EventKind::Modify(ModifyKind::Name(RenameMode::Both)) => {
                if let Some(p) = ev.paths.last() {
                    self.moved_in(p);
                }
                if let Some(p) = ev.paths.first() {
                    self.pending.remove(p);
                }
            }
            EventKind::Modify(ModifyKind::Name(RenameMode::From)) | EventKind::Remove(_) => {
                for p in &ev.paths {
                    self.pending.remove(p);
                }
            }
            EventKind::Create(CreateKind::Folder) => {
                for p in &ev.paths {
                    self.scan_new_dir(p);
                }
            }
            EventKind::Create(_) | EventKind::Modify(_) => {
                for p in &ev.paths {
                    self.observe(p, Hint::Seen);
                }
            }
            _ => {}
        }
    }

    fn moved_in(&mut self, p: &Path) {
        if std::fs::metadata(p).is_ok_and(|m| m.is_dir()) {
            self.scan_new_dir(p);
        } else {
            self.observe(p, Hint::MovedIn);
        }
    }

    fn scan_new_dir(&mut self, p: &Path) {
        if self.shared.opts.recursive && !self.excluded(p) {
            let mut found = Vec::new();
            walk(p, true, &mut found);
            for f in found {
                self.observe(&f, Hint::Seen);
            }
        }
    }

    fn observe(&mut self, path: &Path, hint: Hint) {
        if self.running.contains(path) || self.queued.contains(path) {
            return;
        }
        if let Some(t) = self.retry.get(path) {
            if Instant::now() < *t {
                return;
            }
            self.retry.remove(path);
        }
        if !self.accepts(path) || self.excluded(path) {
            return;
        }
        let Some(root) = self.root_of(path) else {
            return;
        };
        let meta = match std::fs::metadata(path) {
            Ok(m) if m.is_file() => m,
            _ => {
                self.pending.remove(path);
                return;
            }
        };
        let complete = match hint {
            Hint::MovedIn => true,
            Hint::ClosedWrite => {
                self.shared.close_write_completes && (is_gzip(path) || ends_with_newline(path))
            }
            Hint::Seen => false,
        };
        let (size, mt) = (meta.len(), mtime_ns(&meta));
        if complete {
            self.pending.remove(path);
            self.make_ready(path.to_path_buf(), root);
            return;
        }
        let now = Instant::now();
        match self.pending.get_mut(path) {
            Some(c) => {
                if c.size != size || c.mtime_ns != mt {
                    c.size = size;
                    c.mtime_ns = mt;
                    c.stable_since = now;
                }
            }
            None => {
                let settle = self.shared.opts.settle;
                if wall_age(mt) >= settle {
                    self.make_ready(path.to_path_buf(), root);
                } else {
                    self.pending.insert(
                        path.to_path_buf(),
                        Candidate {
                            root,
                            size,
                            mtime_ns: mt,
                            stable_since: now,
                        },
                    );
                }
            }
        }
    }

    fn make_ready(&mut self, path: PathBuf, root: usize) {
        if self.queued.insert(path.clone()) {
            self.ready.push_back((path, root));
        }
    }

    fn check_pending(&mut self) {
        let settle = self.shared.opts.settle;
        let now = Instant::now();
        let due: Vec<PathBuf> = self
            .pending
            .iter()
            .filter(|(_, c)| now.duration_since(c.stable_since) >= settle)
            .map(|(p, _)| p.clone())
            .collect();
        for p in due {
            let Some(c) = self.pending.get_mut(&p) else {
                continue;
            };
            match std::fs::metadata(&p) {
                Ok(m) if m.is_file() => {
                    if m.len() == c.size && mtime_ns(&m) == c.mtime_ns {
                        let root = c.root;
                        self.pending.remove(&p);
                        self.make_ready(p, root);
                    } else {
                        c.size = m.len();
                        c.mtime_ns = mtime_ns(&m);
                        c.stable_since = now;
                    }
                }
                _ => {
                    self.pending.remove(&p);
                }
            }
        }
        self.report_queue();
    }

    fn full_scan(&mut self, event_loss: bool) {
        self.shared.metrics.rescan(event_loss);
        let mut found = Vec::new();
        for r in &self.roots {
            walk(&r.dir, self.shared.opts.recursive, &mut found);
        }
        // Oldest first, so files are ingested roughly in the order they were written.
        let mut found: Vec<(i64, PathBuf)> = found
            .into_iter()
            .filter(|p| !self.excluded(p))
            .map(|p| {
                let t = std::fs::metadata(&p).map(|m| mtime_ns(&m)).unwrap_or(0);
                (t, p)
            })
            .collect();
        found.sort();
        let present: HashSet<&PathBuf> = found.iter().map(|(_, p)| p).collect();
        self.pending.retain(|p, _| present.contains(p));
        for (_, p) in &found {
            self.observe(p, Hint::Seen);
        }
    }
}

/// Files below `dir` (recursively if asked), skipping unreadable directories.
fn walk(dir: &Path, recursive: bool, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => {
                if recursive {
                    walk(&p, true, out);
                }
            }
            Ok(_) => out.push(p),
            Err(_) => {}
        }
    }
}

fn wall_age(mtime_ns: i64) -> Duration {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0);
    Duration::from_nanos(u64::try_from(now.saturating_sub(mtime_ns)).unwrap_or(0))
}

fn ends_with_newline(path: &Path) -> bool {
    use std::os::unix::fs::FileExt;
    let Ok(f) = File::open(path) else {
        return false;
    };
    let Ok(m) = f.metadata() else {
        return false;
    };
    if m.len() == 0 {
        return false;
    }
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, m.len() - 1).is_ok() && b[0] == b'\n'
}

/// A file read up to the size it had when it was taken, counting bytes; at its end it says
/// whether the file is unchanged (so a last line without a line break is complete).
struct CountingFile {
    file: File,
    pos: u64,
    limit: u64,
    mtime_ns: i64,
    bytes: Arc<AtomicU64>,
}

impl Read for CountingFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.limit.saturating_sub(self.pos);
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        if want == 0 {
            return Ok(0);
        }
        let n = self.file.read(&mut buf[..want])?;
        self.pos += n as u64;
        self.bytes.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

impl Input for CountingFile {
    fn skip_bytes(&mut self, n: u64) -> io::Result<u64> {
        let to = self.pos.saturating_add(n).min(self.limit);
        self.file.seek(SeekFrom::Start(to))?;
        let skipped = to - self.pos;
        self.pos = to;
        Ok(skipped)
    }

    fn complete_at_eof(&mut self) -> bool {
        self.file
            .metadata()
            .is_ok_and(|m| m.len() == self.limit && mtime_ns(&m) == self.mtime_ns)
    }
}

enum Msg {
    Chunk(Chunk, Instant),
    End(Result<ParseSummary, Error>),
}

enum Stop {
    Cancelled,
    Failed(Error),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Stop {
        Stop::Failed(e)
    }
}

/// What one pass over a file ended with.
enum Pass {
    Done(Outcome),
    /// Wait (the sink's `retry_after`, or an exponential backoff for `None`), then read
    /// again from the last durable batch.
    Retry(Option<Duration>),
}

/// Per-file state carried across passes.
struct FileState {
    ck: Checkpoint,
    report: Arc<std::sync::Mutex<Box<dyn tsfiled_fsio::FsFile>>>,
    /// The file's checkpoint log while no sync of it runs.
    log: Option<CkLog>,
    /// The sync of the last recorded checkpoint, which runs while the next batch goes to the
    /// sink; it hands the log back.
    syncing: Option<tokio::task::JoinHandle<(CkLog, io::Result<()>)>>,
}

/// Waits for the sync of the last recorded checkpoint. After an error the log is closed, so
/// the next checkpoint is saved afresh.
async fn settle(st: &mut FileState) -> io::Result<()> {
    let Some(h) = st.syncing.take() else {
        return Ok(());
    };
    match h.await {
        Ok((log, Ok(()))) => {
            st.log = Some(log);
            Ok(())
        }
        Ok((_, Err(e))) => Err(e),
        Err(_) => Err(io::Error::other("the checkpoint sync failed")),
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    tokio::task::spawn_blocking(f).await.ok()
}

async fn process_file(sh: &Arc<Shared>, path: &Path, root: &Root) -> Outcome {
    let mut io_backoff = Duration::from_millis(200);
    loop {
        match pass(sh, path, root).await {
            Pass::Done(o) => return o,
            Pass::Retry(wait) => {
                let wait = match wait {
                    Some(w) => w,
                    None => {
                        let w = io_backoff;
                        io_backoff = (io_backoff * 2).min(Duration::from_secs(30));
                        w
                    }
                };
                tokio::select! {
                    _ = sh.stop.cancelled() => return Outcome::Stopped,
                    _ = tokio::time::sleep(wait) => {}
                }
            }
        }
    }
}

/// Opens the file, checks its checkpoint, and prepares the pending report.
fn start(sh: &Shared, path: &Path) -> io::Result<(File, Fingerprint, FileState)> {
    let mut file = File::open(path)?;
    let fp = Fingerprint::of(&mut file)?;
    let ck = match sh.store.load(path) {
        // A plain file shorter than its checkpoint was truncated: not the same content.
        Some(ck)
            if ck.fingerprint.same_file(&mut file)? && (is_gzip(path) || fp.size >= ck.offset) =>
        {
            ck
        }
        Some(_) => {
            // Another file under the same name: its checkpoint is stale.
            sh.store.remove(path)?;
            fresh(path, fp)
        }
        None => fresh(path, fp),
    };
    let report = Arc::new(std::sync::Mutex::new(
        sh.store.open_report(path, ck.report_len)?,
    ));
    Ok((
        file,
        fp,
        FileState {
            ck,
            report,
            log: None,
            syncing: None,
        },
    ))
}

fn fresh(path: &Path, fp: Fingerprint) -> Checkpoint {
    Checkpoint {
        version: 1,
        path: path.to_path_buf(),
        fingerprint: fp,
        offset: 0,
        line: 0,
        rows: 0,
        rejected_rows: 0,
        points: 0,
        rejected_points: 0,
        report_len: 0,
    }
}

/// One pass: read from the checkpoint, submit every chunk, checkpoint each durable one, and
/// finish the file at its end.
async fn pass(sh: &Arc<Shared>, path: &Path, root: &Root) -> Pass {
    let p = path.to_path_buf();
    let s2 = sh.clone();
    let started = match blocking(move || start(&s2, &p)).await {
        Some(Ok(x)) => x,
        Some(Err(e)) if e.kind() == io::ErrorKind::NotFound => {
            return Pass::Done(Outcome::Vanished)
        }
        Some(Err(e)) => return Pass::Done(Outcome::Stuck(format!("opening: {e}"))),
        None => return Pass::Done(Outcome::Stuck("opening failed".into())),
    };
    let (file, fp, mut st) = started;
    let resume = (st.ck.offset > 0).then_some(ResumePoint {
        offset: st.ck.offset,
        line: st.ck.line,
    });

    let bytes = Arc::new(AtomicU64::new(0));
    let (tx, mut rx) = mpsc::channel::<Msg>(1);
    let parser_sh = sh.clone();
    let parser_path = path.to_path_buf();
    let counter = bytes.clone();
    let parser = tokio::task::spawn_blocking(move || {
        let input = CountingFile {
            file,
            pos: 0,
            limit: fp.size,
            mtime_ns: fp.mtime_ns,
            bytes: counter,
        };
        let ctx = FileContext::from_path(&parser_path);
        let on_chunk = |c: Chunk| {
            tx.blocking_send(Msg::Chunk(c, Instant::now()))
                .map_err(|_| Stop::Cancelled)
        };
        let res = if is_gzip(&parser_path) {
            let gz = flate2::bufread::MultiGzDecoder::new(BufReader::with_capacity(1 << 16, input));
            parser_sh.parser.parse(gz, &ctx, resume, on_chunk)
        } else {
            parser_sh.parser.parse(input, &ctx, resume, on_chunk)
        };
        let res = match res {
            Ok(s) => Ok(s),
            Err(Stop::Cancelled) => return,
            Err(Stop::Failed(e)) => Err(e),
        };
        let _ = tx.blocking_send(Msg::End(res));
    });

    let mut reported = 0u64;
    let result = loop {
        let Some(msg) = rx.recv().await else {
            break Pass::Done(Outcome::Stuck("the parser stopped unexpectedly".into()));
        };
        let n = bytes.load(Ordering::Relaxed);
        sh.metrics.bytes_read(n - reported);
        reported = n;
        match msg {
            Msg::Chunk(mut chunk, received) => {
                if sh.stop.is_cancelled() {
                    break Pass::Done(Outcome::Stopped);
                }
                let batch = std::mem::take(&mut chunk.batch);
                match sh.sink.submit(batch, received).await {
                    Ok(out) => {
                        if let Err(e) = durable(sh, &mut st, chunk, out).await {
                            break Pass::Done(Outcome::Stuck(format!(
                                "writing the checkpoint: {e}"
                            )));
                        }
                    }
                    Err(SinkError::Full { retry_after, .. }) => {
                        sh.metrics.backpressure();
                        break Pass::Retry(Some(retry_after));
                    }
                    Err(SinkError::Io(m)) => {
                        tracing::warn!(file = %path.display(), error = %m, "csv: the sink failed; retrying");
                        break Pass::Retry(None);
                    }
                    Err(SinkError::Closed) => break Pass::Done(Outcome::SinkClosed),
                }
            }
            Msg::End(res) => {
                if let Err(e) = settle(&mut st).await {
                    break Pass::Done(Outcome::Stuck(format!("syncing the checkpoint: {e}")));
                }
                break finish(sh, path, root, fp, st.ck.clone(), res).await;
            }
        }
    };
    drop(rx);
    let _ = parser.await;
    if let Err(e) = settle(&mut st).await {
        tracing::warn!(file = %path.display(), error = %e, "csv: syncing the checkpoint failed");
    }
    result
}

/// Records a durable chunk: report lines, counts, checkpoint. The checkpoint is visible to a
/// restarted process when this returns; its sync runs on while the next chunk goes to the
/// sink, and the next call waits for it first.
async fn durable(
    sh: &Arc<Shared>,
    st: &mut FileState,
    chunk: Chunk,
    out: SinkOutcome,
) -> io::Result<()> {
    let mut text = String::new();
    for e in &chunk.row_errors {
        use std::fmt::Write as _;
        let _ = writeln!(text, "line {}: {}: {}", e.line, e.reason.label(), e.message);
    }
    for r in &out.rejections {
        use std::fmt::Write as _;
        let line = match r.location {
            Location::Record { index, .. } => chunk.record_lines.get(index),
            _ => None,
        };
        match line {
            Some(l) => {
                let _ = writeln!(
                    text,
                    "line {l}: {}: {} (sink: {})",
                    r.reason.label(),
                    r.message,
                    r.location
                );
            }
            None => {
                let _ = writeln!(
                    text,
                    "sink {}: {}: {}",
                    r.location,
                    r.reason.label(),
                    r.message
                );
            }
        }
    }
    settle(st).await?;
    let ck = &mut st.ck;
    ck.offset = chunk.end.offset;
    ck.line = chunk.end.line;
    ck.rows += chunk.rows;
    ck.rejected_rows += chunk.rejected_rows();
    ck.points += out.accepted;
    ck.rejected_points += chunk.rejected_points() + out.rejected;
    ck.report_len += text.len() as u64;
    sh.metrics.rows(chunk.rows, chunk.rejected_rows());
    sh.metrics
        .points(out.accepted, chunk.rejected_points() + out.rejected);
    let report = st.report.clone();
    let ck = ck.clone();
    let s2 = sh.clone();
    let mut log = st.log.take();
    let (log, recorded) = blocking(move || {
        let r = (|| -> io::Result<bool> {
            if !text.is_empty() {
                let mut r = report.lock().unwrap_or_else(|e| e.into_inner());
                r.write_all(text.as_bytes())?;
                r.sync_data()?;
            }
            s2.store.record(&mut log, &ck)
        })();
        (log, r)
    })
    .await
    .unwrap_or_else(|| (None, Err(io::Error::other("checkpoint task failed"))));
    st.log = log;
    if recorded? {
        if let Some(mut log) = st.log.take() {
            st.syncing = Some(tokio::task::spawn_blocking(move || {
                let r = log.sync();
                (log, r)
            }));
        }
    }
    Ok(())
}

/// The end of a pass: decide whether the file is complete, and move it.
async fn finish(
    sh: &Arc<Shared>,
    path: &Path,
    root: &Root,
    fp: Fingerprint,
    ck: Checkpoint,
    res: Result<ParseSummary, Error>,
) -> Pass {
    let changed = match std::fs::metadata(path) {
        Ok(m) => m.len() != fp.size || mtime_ns(&m) != fp.mtime_ns,
        Err(_) => return Pass::Done(Outcome::Vanished),
    };
    let file_error = match res {
        Ok(s) if !s.complete || changed => return Pass::Done(Outcome::Growing),
        Ok(_) => None,
        Err(_) if changed => return Pass::Done(Outcome::Growing),
        Err(e) => Some(e.to_string()),
    };
    let sh2 = sh.clone();
    let path = path.to_path_buf();
    let root = root.clone();
    let r = blocking(move || finish_blocking(&sh2, &path, &root, &ck, file_error)).await;
    match r {
        Some(Ok(result)) => Pass::Done(Outcome::Finished(result)),
        Some(Err(e)) => Pass::Done(Outcome::Stuck(e)),
        None => Pass::Done(Outcome::Stuck("finishing failed".into())),
    }
}

fn finish_blocking(
    sh: &Shared,
    path: &Path,
    root: &Root,
    ck: &Checkpoint,
    file_error: Option<String>,
) -> Result<FileResult, String> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let bad = file_error.is_some() || ck.rejected_rows > 0 || ck.rejected_points > 0;
    let result = if bad {
        let dest = unique_name(&root.error, &name);
        let mut report = format!(
            "# tsfiled csv report for {}\n# rows: {} ingested, {} rejected; points: {} ingested, {} rejected\n",
            path.display(),
            ck.rows,
            ck.rejected_rows,
            ck.points,
            ck.rejected_points
        )
        .into_bytes();
        let pending = sh
            .store
            .read_report(path, ck.report_len)
            .map_err(|e| format!("reading the pending report: {e}"))?;
        report.extend_from_slice(&pending);
        if let Some(e) = &file_error {
            report.extend_from_slice(format!("file: {e}\n").as_bytes());
        }
        write_report(&dest, &report)
            .map_err(|e| format!("writing the report for {}: {e}", dest.display()))?;
        move_file(path, &dest).map_err(|e| format!("moving to {}: {e}", dest.display()))?;
        FileResult::Error
    } else if sh.opts.on_success == OnSuccess::Move {
        let dest = unique_name(&root.done, &name);
        move_file(path, &dest).map_err(|e| format!("moving to {}: {e}", dest.display()))?;
        FileResult::Done
    } else {
        delete_file(path).map_err(|e| format!("deleting: {e}"))?;
        FileResult::Deleted
    };
    if let Err(e) = sh.store.remove(path) {
        tracing::warn!(file = %path.display(), error = %e, "csv: cannot remove a checkpoint");
    }
    Ok(result)
}
