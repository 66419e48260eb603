//! Write-ahead log: checksummed, length-prefixed records in numbered segment files,
//! group commit and trimming.
//!
//! One thread owns the log. Appenders hand it an encoded record plus an item; the
//! thread writes everything that queued up while the previous `fdatasync` ran, syncs
//! once, passes the items in log order to the sink (the engine), and only then
//! resolves the appenders' tickets: an acknowledged record is on disk.
//!
//! Segment file: `wal-<id:020>.log` = 8-byte magic, then records
//! `[len: u32 LE][crc32(payload): u32 LE][payload]`. Replay stops at the first torn
//! or corrupt record of a segment and truncates the segment there.
//!
//! A record's position is its [`Lsn`]: `segment << 40 | offset`; the engine raises a
//! low watermark ([`Wal::trim_before`]) once everything before an LSN is sealed, and
//! whole segments below it are deleted.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::oneshot;

use crate::{Error, Result};

/// A log position: `segment << 40 | byte offset in the segment`.
pub type Lsn = u64;

const MAGIC: &[u8; 8] = b"TSFDWAL1";
const HEADER: usize = 8;
const OFFSET_BITS: u32 = 40;
/// Largest record payload accepted (also the replay sanity bound).
pub const MAX_RECORD: usize = 256 * 1024 * 1024;

/// Builds an LSN.
pub fn lsn(segment: u64, offset: u64) -> Lsn {
    (segment << OFFSET_BITS) | offset
}

/// The segment of an LSN.
pub fn lsn_segment(lsn: Lsn) -> u64 {
    lsn >> OFFSET_BITS
}

/// WAL settings.
#[derive(Debug, Clone)]
pub struct WalOptions {
    /// Directory of the segment files.
    pub dir: PathBuf,
    /// A segment is rotated once it reaches this size.
    pub segment_bytes: u64,
    /// Appends are refused ("full") while the segments on disk plus queued bytes exceed this.
    pub max_bytes: u64,
    /// Appends are refused while this many bytes wait to be written.
    pub max_pending_bytes: usize,
    /// Extra wait after the first record of a group before writing (0: none; the time an
    /// `fdatasync` takes already groups concurrent appenders).
    pub commit_delay: Duration,
    /// Most bytes written under one fsync (a larger queue is split into several groups).
    pub commit_bytes: usize,
}

impl WalOptions {
    /// Defaults for `dir`: 64 MiB segments, 1 GiB total, 64 MiB queue.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        WalOptions {
            dir: dir.into(),
            segment_bytes: 64 * 1024 * 1024,
            max_bytes: 1024 * 1024 * 1024,
            max_pending_bytes: 64 * 1024 * 1024,
            commit_delay: Duration::ZERO,
            commit_bytes: 4 * 1024 * 1024,
        }
    }
}

/// Counters the WAL exposes (read by the metrics module).
#[derive(Debug, Default)]
pub struct WalStats {
    /// Bytes in segment files on disk.
    pub disk_bytes: AtomicU64,
    /// Bytes queued, not yet written.
    pub pending_bytes: AtomicUsize,
    /// Number of fdatasync calls.
    pub syncs: AtomicU64,
    /// Records written.
    pub records: AtomicU64,
    /// Nanoseconds spent in fdatasync, total.
    pub sync_nanos: AtomicU64,
}

/// A record found by replay.
#[derive(Debug)]
pub struct ReplayRecord {
    /// Its position.
    pub lsn: Lsn,
    /// Its payload.
    pub payload: Vec<u8>,
}

/// What replay found besides records.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ReplayReport {
    /// Segments read.
    pub segments: usize,
    /// Records read.
    pub records: usize,
    /// Segments cut at a torn or corrupt record: (segment id, offset cut at, reason).
    pub truncated: Vec<(u64, u64, String)>,
}

/// Where the WAL thread sends items once they are durable (in log order).
pub trait Sink<T>: Send + 'static {
    /// Receives a durable item with its LSN. May block (backpressure).
    fn deliver(&mut self, lsn: Lsn, item: T);
}

impl<T, F: FnMut(Lsn, T) + Send + 'static> Sink<T> for F {
    fn deliver(&mut self, lsn: Lsn, item: T) {
        self(lsn, item)
    }
}

struct Request<T> {
    payload: Vec<u8>,
    item: T,
    done: oneshot::Sender<Result<Lsn>>,
}

enum Msg<T> {
    Append(Request<T>),
    Stop,
}

/// The write-ahead log handle (cheap to share behind an `Arc`).
pub struct Wal<T: Send + 'static> {
    tx: Mutex<Option<mpsc::Sender<Msg<T>>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    stats: Arc<WalStats>,
    low_watermark: Arc<AtomicU64>,
    broken: Arc<AtomicBool>,
    opts: WalOptions,
}

/// A pending append: resolves once the record is durable.
pub struct Ticket(oneshot::Receiver<Result<Lsn>>);

impl Ticket {
    /// Waits for durability.
    pub async fn wait(self) -> Result<Lsn> {
        self.0.await.unwrap_or(Err(Error::WalClosed))
    }

    /// Waits for durability from a non-async thread.
    pub fn wait_blocking(self) -> Result<Lsn> {
        self.0.blocking_recv().unwrap_or(Err(Error::WalClosed))
    }
}

fn segment_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("wal-{id:020}.log"))
}

fn list_segments(dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(id) = name
            .strip_prefix("wal-")
            .and_then(|s| s.strip_suffix(".log"))
            .and_then(|s| s.parse::<u64>().ok())
        {
            out.push((id, entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// Fsyncs a directory so that creations, renames and deletions in it are durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Reads every record of every segment in `dir`, in order, calling `f` for each;
/// cuts torn or corrupt tails. Returns the next free segment id and a report.
pub fn replay(dir: &Path, mut f: impl FnMut(ReplayRecord)) -> io::Result<(u64, ReplayReport, u64)> {
    fs::create_dir_all(dir)?;
    let mut report = ReplayReport::default();
    let segments = list_segments(dir)?;
    let mut next = 0;
    let mut disk = 0u64;
    for (id, path) in &segments {
        next = id + 1;
        report.segments += 1;
        let mut data = Vec::new();
        File::open(path)?.read_to_end(&mut data)?;
        let (end, reason) = scan_segment(&data, |offset, payload| {
            report.records += 1;
            f(ReplayRecord {
                lsn: lsn(*id, offset as u64),
                payload: payload.to_vec(),
            })
        });
        if let Some(reason) = reason {
            tracing::warn!(segment = %path.display(), offset = end, %reason, "write-ahead log: cutting torn or corrupt tail");
            let file = OpenOptions::new().write(true).open(path)?;
            if end < HEADER {
                file.set_len(0)?;
                drop(file);
                fs::remove_file(path)?;
            } else {
                file.set_len(end as u64)?;
                file.sync_all()?;
                disk += end as u64;
            }
            report.truncated.push((*id, end as u64, reason));
        } else {
            disk += data.len() as u64;
        }
    }
    sync_dir(dir)?;
    Ok((next, report, disk))
}

/// Scans one segment's bytes: calls `f(offset, payload)` per good record; returns where
/// the good part ends and, if it ends early, why.
fn scan_segment(data: &[u8], mut f: impl FnMut(usize, &[u8])) -> (usize, Option<String>) {
    if data.len() < HEADER {
        return (
            0,
            Some(format!("segment of {} bytes has no header", data.len())),
        );
    }
    if &data[..HEADER] != MAGIC {
        return (0, Some("bad segment magic".to_string()));
    }
    let mut pos = HEADER;
    while pos < data.len() {
        let Some(head) = data.get(pos..pos + 8) else {
            return (pos, Some("torn record header".to_string()));
        };
        let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let crc = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        if len > MAX_RECORD {
            return (pos, Some(format!("record length {len} out of range")));
        }
        let Some(payload) = data.get(pos + 8..pos + 8 + len) else {
            return (
                pos,
                Some(format!(
                    "torn record: {len} bytes announced, {} present",
                    data.len() - pos - 8
                )),
            );
        };
        if crc32fast::hash(payload) != crc {
            return (pos, Some("record checksum mismatch".to_string()));
        }
        f(pos, payload);
        pos += 8 + len;
    }
    (pos, None)
}

impl<T: Send + 'static> Wal<T> {
    /// Starts the log thread on a fresh segment `first_segment` (from [`replay`]);
    /// `initial_disk_bytes` is what replay left on disk. Durable items go to `sink`.
    pub fn start(
        opts: WalOptions,
        first_segment: u64,
        initial_disk_bytes: u64,
        sink: impl Sink<T>,
    ) -> io::Result<Self> {
        fs::create_dir_all(&opts.dir)?;
        let stats = Arc::new(WalStats::default());
        stats
            .disk_bytes
            .store(initial_disk_bytes, Ordering::Relaxed);
        let low_watermark = Arc::new(AtomicU64::new(0));
        let broken = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let mut worker = Worker {
            dir: opts.dir.clone(),
            segment_bytes: opts.segment_bytes,
            commit_delay: opts.commit_delay,
            commit_bytes: opts.commit_bytes.max(1),
            active: None,
            active_id: first_segment,
            active_len: 0,
            stats: stats.clone(),
            low_watermark: low_watermark.clone(),
            broken: broken.clone(),
            trimmed_below: 0,
        };
        worker.open_segment(first_segment)?;
        let thread = std::thread::Builder::new()
            .name("tsfiled-wal".into())
            .spawn(move || worker.run(rx, sink))?;
        Ok(Wal {
            tx: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
            stats,
            low_watermark,
            broken,
            opts,
        })
    }

    /// Queues a record; the ticket resolves once it is durable. Refuses with
    /// [`Error::WalFull`] when the log or its queue is at its limit.
    pub fn append(&self, payload: Vec<u8>, item: T) -> Result<Ticket> {
        if payload.len() > MAX_RECORD {
            return Err(Error::WalRecordTooLarge {
                bytes: payload.len(),
                limit: MAX_RECORD,
            });
        }
        if self.broken.load(Ordering::Relaxed) {
            return Err(Error::WalIo(
                "an earlier write failed and could not be undone".into(),
            ));
        }
        let size = payload.len() + 8;
        let pending = self.stats.pending_bytes.load(Ordering::Relaxed);
        if pending + size > self.opts.max_pending_bytes && pending > 0 {
            return Err(Error::WalFull("queue"));
        }
        let disk = self.stats.disk_bytes.load(Ordering::Relaxed);
        if disk + (pending + size) as u64 > self.opts.max_bytes {
            return Err(Error::WalFull("disk budget"));
        }
        self.stats.pending_bytes.fetch_add(size, Ordering::Relaxed);
        let (done, rx) = oneshot::channel();
        let guard = self.tx.lock().map_err(|_| Error::WalClosed)?;
        let Some(tx) = guard.as_ref() else {
            self.stats.pending_bytes.fetch_sub(size, Ordering::Relaxed);
            return Err(Error::WalClosed);
        };
        if tx
            .send(Msg::Append(Request {
                payload,
                item,
                done,
            }))
            .is_err()
        {
            self.stats.pending_bytes.fetch_sub(size, Ordering::Relaxed);
            return Err(Error::WalClosed);
        }
        Ok(Ticket(rx))
    }

    /// Allows deleting every segment whose records all lie before `lsn`.
    pub fn trim_before(&self, lsn: Lsn) {
        self.low_watermark.fetch_max(lsn, Ordering::Relaxed);
    }

    /// The shared low watermark (what [`Wal::trim_before`] raises).
    pub fn watermark_handle(&self) -> Arc<AtomicU64> {
        self.low_watermark.clone()
    }

    /// The log's counters.
    pub fn stats(&self) -> &Arc<WalStats> {
        &self.stats
    }

    /// Fraction of the disk budget in use (0..=1+).
    pub fn fill_ratio(&self) -> f64 {
        let used = self.stats.disk_bytes.load(Ordering::Relaxed)
            + self.stats.pending_bytes.load(Ordering::Relaxed) as u64;
        used as f64 / self.opts.max_bytes.max(1) as f64
    }

    /// Writes what is queued, stops the thread and waits for it. Appends after this
    /// fail with [`Error::WalClosed`].
    pub fn shutdown(&self) {
        if let Ok(mut g) = self.tx.lock() {
            if let Some(tx) = g.take() {
                let _ = tx.send(Msg::Stop);
            }
        }
        if let Ok(mut g) = self.thread.lock() {
            if let Some(t) = g.take() {
                let _ = t.join();
            }
        }
    }
}

impl<T: Send + 'static> Drop for Wal<T> {
    fn drop(&mut self) {
        self.shutdown();
    }
}

struct Worker {
    dir: PathBuf,
    segment_bytes: u64,
    commit_delay: Duration,
    commit_bytes: usize,
    active: Option<File>,
    active_id: u64,
    active_len: u64,
    stats: Arc<WalStats>,
    low_watermark: Arc<AtomicU64>,
    broken: Arc<AtomicBool>,
    trimmed_below: u64,
}

impl Worker {
    fn open_segment(&mut self, id: u64) -> io::Result<()> {
        let path = segment_path(&self.dir, id);
        let mut f = OpenOptions::new()
            .create_new(true)
            .write(true)
            .open(&path)?;
        f.write_all(MAGIC)?;
        f.sync_all()?;
        sync_dir(&self.dir)?;
        self.active = Some(f);
        self.active_id = id;
        self.active_len = HEADER as u64;
        self.stats
            .disk_bytes
            .fetch_add(HEADER as u64, Ordering::Relaxed);
        Ok(())
    }

    fn run<T>(&mut self, rx: mpsc::Receiver<Msg<T>>, mut sink: impl Sink<T>) {
        let mut group: Vec<Request<T>> = Vec::new();
        let mut buf: Vec<u8> = Vec::new();
        let mut stopping = false;
        loop {
            if group.is_empty() {
                if stopping {
                    break;
                }
                match rx.recv_timeout(Duration::from_millis(100)) {
                    Ok(Msg::Append(r)) => group.push(r),
                    Ok(Msg::Stop) => stopping = true,
                    Err(RecvTimeoutError::Timeout) => {
                        self.trim();
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => stopping = true,
                }
                if group.is_empty() {
                    continue;
                }
                if !self.commit_delay.is_zero() {
                    std::thread::sleep(self.commit_delay);
                }
            }
            // Take everything that queued up meanwhile (bounded per group).
            let mut bytes: usize = group.iter().map(|r| r.payload.len() + 8).sum();
            while bytes < self.commit_bytes {
                match rx.try_recv() {
                    Ok(Msg::Append(r)) => {
                        bytes += r.payload.len() + 8;
                        group.push(r);
                    }
                    Ok(Msg::Stop) => stopping = true,
                    Err(_) => break,
                }
            }
            self.commit(&mut group, &mut buf, &mut sink);
            self.trim();
        }
        if let Some(f) = self.active.take() {
            let _ = f.sync_all();
        }
    }

    fn commit<T>(
        &mut self,
        group: &mut Vec<Request<T>>,
        buf: &mut Vec<u8>,
        sink: &mut impl Sink<T>,
    ) {
        buf.clear();
        let mut offsets = Vec::with_capacity(group.len());
        let base = self.active_len;
        for r in group.iter() {
            offsets.push(base + buf.len() as u64);
            buf.extend_from_slice(&(r.payload.len() as u32).to_le_bytes());
            buf.extend_from_slice(&crc32fast::hash(&r.payload).to_le_bytes());
            buf.extend_from_slice(&r.payload);
        }
        let pending: usize = group.iter().map(|r| r.payload.len() + 8).sum();
        let result = self.write_and_sync(buf);
        self.stats
            .pending_bytes
            .fetch_sub(pending, Ordering::Relaxed);
        match result {
            Ok(()) => {
                self.active_len += buf.len() as u64;
                self.stats
                    .disk_bytes
                    .fetch_add(buf.len() as u64, Ordering::Relaxed);
                self.stats
                    .records
                    .fetch_add(group.len() as u64, Ordering::Relaxed);
                let seg = self.active_id;
                for (r, off) in group.drain(..).zip(offsets) {
                    let at = lsn(seg, off);
                    sink.deliver(at, r.item);
                    let _ = r.done.send(Ok(at));
                }
                if self.active_len >= self.segment_bytes {
                    if let Err(e) = self.rotate() {
                        tracing::error!(error = %e, "write-ahead log: cannot open a new segment");
                        self.broken.store(true, Ordering::Relaxed);
                    }
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "write-ahead log: write failed");
                // Undo the partial write so the segment stays well-formed.
                let undone = self
                    .active
                    .as_mut()
                    .map(|f| f.set_len(base).and_then(|_| f.seek(SeekFrom::Start(base))))
                    .transpose();
                if !matches!(undone, Ok(Some(_))) {
                    self.broken.store(true, Ordering::Relaxed);
                }
                // A full disk is a transient condition for the sender (retry later);
                // other errors are failures.
                let full = e.raw_os_error() == Some(libc::ENOSPC);
                let message = format!(
                    "writing {}: {e}",
                    segment_path(&self.dir, self.active_id).display()
                );
                for r in group.drain(..) {
                    let err = if full {
                        Error::WalFull("no space left on the WAL device")
                    } else {
                        Error::WalIo(message.clone())
                    };
                    let _ = r.done.send(Err(err));
                }
            }
        }
    }

    fn write_and_sync(&mut self, buf: &[u8]) -> io::Result<()> {
        let f = self
            .active
            .as_mut()
            .ok_or_else(|| io::Error::other("no active segment"))?;
        f.write_all(buf)?;
        let t = std::time::Instant::now();
        f.sync_data()?;
        if let Some(d) = test_delay(&WAL_DELAY, "TSFILED_TEST_WAL_DELAY_MS") {
            std::thread::sleep(d);
        }
        self.stats
            .sync_nanos
            .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.stats.syncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn rotate(&mut self) -> io::Result<()> {
        if let Some(f) = self.active.take() {
            f.sync_all()?;
        }
        let next = self.active_id + 1;
        self.open_segment(next)
    }

    /// Deletes segments entirely below the low watermark (never the active one).
    fn trim(&mut self) {
        let wm = self.low_watermark.load(Ordering::Relaxed);
        let below = lsn_segment(wm).min(self.active_id);
        if below <= self.trimmed_below {
            return;
        }
        let Ok(segments) = list_segments(&self.dir) else {
            return;
        };
        let mut removed = false;
        for (id, path) in segments {
            if id >= below {
                break;
            }
            let len = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            match fs::remove_file(&path) {
                Ok(()) => {
                    removed = true;
                    let _ = self.stats.disk_bytes.fetch_update(
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                        |v| Some(v.saturating_sub(len)),
                    );
                }
                Err(e) => {
                    tracing::warn!(segment = %path.display(), error = %e, "write-ahead log: cannot delete segment");
                    return;
                }
            }
        }
        if removed {
            let _ = sync_dir(&self.dir);
        }
        self.trimmed_below = below;
    }
}

static WAL_DELAY: std::sync::OnceLock<Option<Duration>> = std::sync::OnceLock::new();

/// Test-only hook: the delay in milliseconds named by environment variable `var`
/// (e.g. `TSFILED_TEST_WAL_DELAY_MS`, slept after every WAL fsync), read once into
/// `cell`. Unset or unparsable: `None`, no delay. Used by the end-to-end tests only.
pub(crate) fn test_delay(
    cell: &'static std::sync::OnceLock<Option<Duration>>,
    var: &str,
) -> Option<Duration> {
    *cell.get_or_init(|| {
        std::env::var(var)
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .map(Duration::from_millis)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::Receiver;

    type Started = (
        Wal<u32>,
        Receiver<(Lsn, u32)>,
        ReplayReport,
        Vec<ReplayRecord>,
    );

    fn start(dir: &Path, opts: Option<WalOptions>) -> Started {
        let mut recs = Vec::new();
        let (next, report, disk) = replay(dir, |r| recs.push(r)).unwrap();
        let (tx, rx) = mpsc::channel();
        let wal = Wal::start(
            opts.unwrap_or_else(|| WalOptions::new(dir)),
            next,
            disk,
            move |lsn, item| {
                let _ = tx.send((lsn, item));
            },
        )
        .unwrap();
        (wal, rx, report, recs)
    }

    #[test]
    fn append_is_durable_and_replays_in_order() {
        let tmp = tempfile::tempdir().unwrap();
        let (wal, rx, _, recs) = start(tmp.path(), None);
        assert!(recs.is_empty());
        let tickets: Vec<_> = (0..50u32)
            .map(|i| wal.append(vec![i as u8; i as usize], i).unwrap())
            .collect();
        let lsns: Vec<_> = tickets
            .into_iter()
            .map(|t| t.wait_blocking().unwrap())
            .collect();
        assert!(lsns.windows(2).all(|w| w[0] < w[1]));
        let delivered: Vec<_> = rx.try_iter().collect();
        assert_eq!(delivered.len(), 50);
        assert_eq!(
            delivered.iter().map(|d| d.1).collect::<Vec<_>>(),
            (0..50).collect::<Vec<_>>()
        );
        assert_eq!(delivered.iter().map(|d| d.0).collect::<Vec<_>>(), lsns);
        drop(wal);
        let (_wal, _rx, report, recs) = start(tmp.path(), None);
        assert_eq!(report.records, 50);
        assert!(report.truncated.is_empty());
        for (i, r) in recs.iter().enumerate() {
            assert_eq!(r.payload, vec![i as u8; i]);
            assert_eq!(r.lsn, lsns[i]);
        }
    }

    #[test]
    fn concurrent_appenders_share_syncs() {
        let tmp = tempfile::tempdir().unwrap();
        let (wal, _rx, _, _) = start(tmp.path(), None);
        let wal = Arc::new(wal);
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let wal = wal.clone();
                std::thread::spawn(move || {
                    for i in 0..100u32 {
                        let mut payload = (t * 1000 + i).to_le_bytes().to_vec();
                        payload.resize(100, 1);
                        wal.append(payload, t * 1000 + i)
                            .unwrap()
                            .wait_blocking()
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let st = wal.stats();
        assert_eq!(st.records.load(Ordering::Relaxed), 800);
        assert_eq!(st.pending_bytes.load(Ordering::Relaxed), 0);
        drop(wal);
        // Every record of every thread is there, in each thread's order.
        let (_wal, _rx, report, recs) = start(tmp.path(), None);
        assert_eq!(report.records, 800);
        let mut per_thread = vec![Vec::new(); 8];
        for r in &recs {
            assert_eq!(r.payload.len(), 100);
            let id = u32::from_le_bytes(r.payload[..4].try_into().unwrap());
            per_thread[(id / 1000) as usize].push(id % 1000);
        }
        for seq in per_thread {
            assert_eq!(seq, (0..100).collect::<Vec<u32>>());
        }
    }

    /// Group commit, deterministically: while the log thread is held inside the first
    /// commit (its sink blocks), 99 more appends queue up; they are written under one
    /// fsync, so 100 records take exactly 2 syncs.
    #[test]
    fn appends_queued_during_a_sync_share_the_next_one() {
        let tmp = tempfile::tempdir().unwrap();
        let (next, _, disk) = replay(tmp.path(), |_| {}).unwrap();
        let (entered_tx, entered_rx) = mpsc::channel::<()>();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let delivered = Arc::new(Mutex::new(Vec::new()));
        let seen = delivered.clone();
        let wal = Wal::start(
            WalOptions::new(tmp.path()),
            next,
            disk,
            move |lsn, item: u32| {
                if item == 0 {
                    entered_tx.send(()).unwrap();
                    release_rx.recv().unwrap();
                }
                seen.lock().unwrap().push((lsn, item));
            },
        )
        .unwrap();
        let first = wal.append(vec![0; 10], 0).unwrap();
        entered_rx.recv().unwrap();
        let tickets: Vec<_> = (1..100u32)
            .map(|i| wal.append(vec![i as u8; 10], i).unwrap())
            .collect();
        release_tx.send(()).unwrap();
        let mut lsns = vec![first.wait_blocking().unwrap()];
        lsns.extend(tickets.into_iter().map(|t| t.wait_blocking().unwrap()));
        let st = wal.stats();
        assert_eq!(st.records.load(Ordering::Relaxed), 100);
        assert_eq!(st.syncs.load(Ordering::Relaxed), 2);
        // Records of 18 bytes (8 header + 10 payload) laid end to end after the 8-byte magic.
        let want: Vec<Lsn> = (0..100).map(|i| lsn(next, 8 + 18 * i)).collect();
        assert_eq!(lsns, want);
        let got = delivered.lock().unwrap().clone();
        assert_eq!(got, want.into_iter().zip(0..100u32).collect::<Vec<_>>());
    }

    fn only_segment(dir: &Path) -> PathBuf {
        let segs = list_segments(dir).unwrap();
        segs.into_iter()
            .map(|s| s.1)
            .find(|p| fs::metadata(p).unwrap().len() > HEADER as u64)
            .unwrap()
    }

    #[test]
    fn torn_tail_is_cut() {
        let tmp = tempfile::tempdir().unwrap();
        {
            let (wal, _rx, _, _) = start(tmp.path(), None);
            for i in 0..3u8 {
                wal.append(vec![i; 10], 0).unwrap().wait_blocking().unwrap();
            }
        }
        let seg = only_segment(tmp.path());
        let full = fs::metadata(&seg).unwrap().len();
        // Tear the last record in the middle of its payload.
        OpenOptions::new()
            .write(true)
            .open(&seg)
            .unwrap()
            .set_len(full - 4)
            .unwrap();
        let (wal, _rx, report, recs) = start(tmp.path(), None);
        assert_eq!(recs.len(), 2);
        assert_eq!(report.truncated.len(), 1);
        assert_eq!(report.truncated[0].1, HEADER as u64 + 2 * 18);
        assert_eq!(fs::metadata(&seg).unwrap().len(), HEADER as u64 + 2 * 18);
        // New appends go on and replay again cleanly.
        wal.append(vec![9; 5], 0).unwrap().wait_blocking().unwrap();
        drop(wal);
        let (_w, _rx, report, recs) = start(tmp.path(), None);
        assert!(report.truncated.is_empty());
        assert_eq!(
            recs.iter().map(|r| r.payload.clone()).collect::<Vec<_>>(),
            vec![vec![0; 10], vec![1; 10], vec![9; 5]]
        );
    }

    #[test]
    fn torn_header_and_corrupt_crc_are_cut() {
        let tmp = tempfile::tempdir().unwrap();
        {
            let (wal, _rx, _, _) = start(tmp.path(), None);
            for i in 0..4u8 {
                wal.append(vec![i; 10], 0).unwrap().wait_blocking().unwrap();
            }
        }
        let seg = only_segment(tmp.path());
        let mut data = fs::read(&seg).unwrap();
        // Flip a payload byte of the third record.
        let third = HEADER + 2 * 18 + 8;
        data[third] ^= 0xff;
        fs::write(&seg, &data).unwrap();
        let (_w, _rx, report, recs) = start(tmp.path(), None);
        assert_eq!(recs.len(), 2);
        assert_eq!(report.truncated[0].2, "record checksum mismatch");
        drop(_w);
        // A torn 3-byte header.
        let mut data = fs::read(&seg).unwrap();
        data.extend_from_slice(&[1, 2, 3]);
        fs::write(&seg, &data).unwrap();
        let (_w, _rx, report, recs) = start(tmp.path(), None);
        assert_eq!(recs.len(), 2);
        assert_eq!(report.truncated[0].2, "torn record header");
        // An absurd length.
        drop(_w);
        let mut data = fs::read(&seg).unwrap();
        data.extend_from_slice(&u32::MAX.to_le_bytes());
        data.extend_from_slice(&[0; 4]);
        fs::write(&seg, &data).unwrap();
        let (_w, _rx, report, recs) = start(tmp.path(), None);
        assert_eq!(recs.len(), 2);
        assert!(report.truncated[0].2.contains("out of range"));
    }

    #[test]
    fn an_oversized_record_is_refused_with_its_size_and_the_limit() {
        let tmp = tempfile::tempdir().unwrap();
        let (wal, _rx, _, _) = start(tmp.path(), None);
        let e = wal.append(vec![0; MAX_RECORD + 1], 0).err().unwrap();
        assert!(
            matches!(e, Error::WalRecordTooLarge { bytes, limit: MAX_RECORD } if bytes == MAX_RECORD + 1)
        );
        assert_eq!(
            e.to_string(),
            format!(
                "record of {} bytes exceeds the write-ahead log's record limit of {MAX_RECORD} bytes",
                MAX_RECORD + 1
            )
        );
    }

    #[test]
    fn rotation_trimming_and_backpressure() {
        let tmp = tempfile::tempdir().unwrap();
        let mut opts = WalOptions::new(tmp.path());
        opts.segment_bytes = 1000;
        opts.max_bytes = 10_000;
        let (wal, rx, _, _) = start(tmp.path(), Some(opts));
        let mut lsns = Vec::new();
        let mut full = false;
        for i in 0..100u32 {
            match wal.append(vec![7; 500], i) {
                Ok(t) => lsns.push(t.wait_blocking().unwrap()),
                Err(Error::WalFull(_)) => {
                    full = true;
                    break;
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert!(full, "the size limit must refuse appends");
        assert!(lsns.len() >= 15 && lsns.len() < 20, "{}", lsns.len());
        let segs_before = list_segments(tmp.path()).unwrap().len();
        assert!(segs_before > 5);
        // Everything delivered so far is sealed: trim up to the last one.
        let last = *lsns.last().unwrap();
        assert_eq!(rx.try_iter().count(), lsns.len());
        wal.trim_before(last);
        // The thread trims on its next wake-up.
        let mut waited = 0;
        let below = |segs: &[(u64, PathBuf)]| segs.iter().any(|s| s.0 < lsn_segment(last));
        while below(&list_segments(tmp.path()).unwrap()) && waited < 250 {
            std::thread::sleep(Duration::from_millis(20));
            waited += 1;
        }
        let segs = list_segments(tmp.path()).unwrap();
        assert!(segs.len() <= 2, "{segs:?}");
        assert!(
            segs.iter().all(|s| s.0 >= lsn_segment(last)),
            "{segs:?} {}",
            lsn_segment(last)
        );
        // Room again.
        wal.append(vec![1; 500], 0)
            .unwrap()
            .wait_blocking()
            .unwrap();
    }

    #[test]
    fn segment_without_header_is_removed() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(segment_path(tmp.path(), 3), b"TSF").unwrap();
        let (next, report, _) = replay(tmp.path(), |_| {}).unwrap();
        assert_eq!(next, 4);
        assert_eq!(report.truncated.len(), 1);
        assert!(list_segments(tmp.path()).unwrap().is_empty());
    }
}
