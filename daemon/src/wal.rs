//! Write-ahead log: checksummed, length-prefixed records in numbered segment files,
//! group commit and trimming.
//!
//! One thread owns the log. Appenders hand it an encoded record plus an item; the
//! thread writes everything that queued up while the previous `fdatasync` ran, syncs
//! once, passes the items in log order to the sink (the engine), and only then
//! resolves the appenders' tickets: an acknowledged record is on disk.
//!
//! Segment file: `wal-<id:020>.log` = 8-byte magic `TSFDWAL2`, then records
//! `[len: u32 LE][crc: u32 LE][payload]`, where `crc` is the CRC-32 (IEEE) of the segment id
//! as a u64 LE followed by the payload. Segments of the first format (magic `TSFDWAL1`, `crc`
//! over the payload alone) still replay. Replay cuts a torn or corrupt tail of a segment. A
//! corrupt record in the middle of a segment (good records after it) is skipped: replay looks
//! for the next position where a whole record checks out, replays from there, reports the
//! skipped byte range, and keeps the segment as it is.
//!
//! Segment files are reused: a trimmed segment that the log filled and closed itself is kept
//! as a spare (`wal-<id:020>.spare`, at most [`WalOptions::spares`]) instead of being deleted, and the
//! trimmer thread renames a spare to the next segment's name ahead of time (then fsyncs the
//! directory). The log then overwrites blocks the file already has: an `fdatasync` that does
//! not change the file's size or extents has no allocation to make durable (block bitmaps,
//! extent blocks; on a journaling file system, no journal commit to wait for, which other
//! files' writes, fsyncs and deletions share), and no segment is unlinked. The old bytes
//! after the last record are not records of this segment: their checksums were salted with an
//! older segment id (ids only grow, spares included), so replay never takes them for records
//! and cuts them as a tail. Without a spare, a segment is created as before.
//!
//! A failed write or fsync retires the segment (the records of the failed group are not
//! acknowledged; after a failed fsync nothing unsynced in that file is trusted again) and
//! the next group starts a new segment. Every file operation goes through [`Fs`].
//!
//! A record's position is its [`Lsn`]: `segment << 40 | offset`; the engine raises a
//! low watermark ([`Wal::trim_before`]) once everything before an LSN is sealed, and
//! whole segments below it are deleted by a second thread, so that a slow deletion never
//! holds a commit.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use tsfiled_fsio::{Fs, FsFile, FsReader, FsRef};

use crate::health::{FaultKind, StorageHealth, StorageOp};
use crate::hooks::TestHooks;
use crate::{Error, Result};

/// A log position: `segment << 40 | byte offset in the segment`.
pub type Lsn = u64;

/// Magic of the segments written now (record checksums salted with the segment id).
const MAGIC: &[u8; 8] = b"TSFDWAL2";
/// Magic of the first format (record checksums over the payload alone), replayed still.
const MAGIC_V1: &[u8; 8] = b"TSFDWAL1";
/// Emptied segments kept for reuse by default, at most ([`WalOptions::spares`]).
pub const SPARES: usize = 2;
const HEADER: usize = 8;
const OFFSET_BITS: u32 = 40;
/// Largest record payload accepted, 256 MiB (also the replay sanity bound).
pub const MAX_RECORD: usize = 256 * 1024 * 1024;

/// A record's checksum: CRC-32 of the segment id (u64 LE) then the payload; with no id
/// (a `TSFDWAL1` segment), of the payload alone.
fn record_crc(segment: Option<u64>, payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    if let Some(id) = segment {
        h.update(&id.to_le_bytes());
    }
    h.update(payload);
    h.finalize()
}

/// The checksum salt of a segment from its magic (`Some(None)`: a `TSFDWAL1` segment);
/// `None`: no valid magic.
fn segment_salt(data: &[u8], id: u64) -> Option<Option<u64>> {
    match data.get(..HEADER) {
        Some(m) if m == MAGIC => Some(Some(id)),
        Some(m) if m == MAGIC_V1 => Some(None),
        _ => None,
    }
}

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
    /// A segment is rotated at this size, or at an eighth of `max_bytes` (at least 64 KiB) if
    /// smaller (only whole segments are trimmed: the log must rotate well before its limit).
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
    /// The file system (tests inject a simulated one).
    pub fs: FsRef,
    /// Faults tests inject (none by default): [`TestHooks::wal_sync_delay`].
    pub hooks: TestHooks,
    /// Observes the duration of every `fdatasync` of the log (none: not observed).
    pub fsync_seconds: Option<prometheus::Histogram>,
    /// Emptied segments kept for reuse, at most (0: trimmed segments are deleted). They are
    /// not counted in `max_bytes`: the directory holds up to this many segments more.
    pub spares: usize,
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
            fs: tsfiled_fsio::std_fs(),
            hooks: TestHooks::default(),
            fsync_seconds: None,
            spares: SPARES,
        }
    }
}

/// Counters the WAL exposes (read by the metrics module).
#[derive(Debug, Default)]
pub struct WalStats {
    /// Bytes of the segment files on disk (whole files: a reused segment counts in full from
    /// the moment the log opens it).
    pub disk_bytes: AtomicU64,
    /// Bytes of the spare segment files kept for reuse (at most [`WalOptions::spares`] files,
    /// not part of `disk_bytes` nor of the size limit).
    pub spare_bytes: AtomicU64,
    /// Bytes queued, not yet written.
    pub pending_bytes: AtomicUsize,
    /// Number of fdatasync calls.
    pub syncs: AtomicU64,
    /// Records written.
    pub records: AtomicU64,
    /// Nanoseconds spent in fdatasync, total.
    pub sync_nanos: AtomicU64,
    /// Set when a segment holding acknowledged records vanished (its directory was
    /// deleted): those records are only in memory now, so the engine seals everything.
    pub lost_segments: AtomicBool,
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
    /// Corrupt stretches skipped inside a segment, good records following them:
    /// (segment id, first skipped offset, offset of the next good record, reason).
    pub skipped: Vec<(u64, u64, u64, String)>,
}

impl ReplayReport {
    /// The skipped stretches as log positions, for [`LogReader::skipping`].
    pub fn skip_ranges(&self) -> Arc<[Range<Lsn>]> {
        self.skipped
            .iter()
            .map(|&(id, from, to, _)| lsn(id, from)..lsn(id, to))
            .collect()
    }
}

/// Where the WAL thread sends items once they are durable (in log order).
pub trait Sink<T>: Send + 'static {
    /// Receives a durable item with its LSN and the payload written for it (the sink may
    /// keep the buffer instead of copying it). May block (backpressure).
    fn deliver(&mut self, lsn: Lsn, payload: Vec<u8>, item: T);
}

impl<T, F: FnMut(Lsn, Vec<u8>, T) + Send + 'static> Sink<T> for F {
    fn deliver(&mut self, lsn: Lsn, payload: Vec<u8>, item: T) {
        self(lsn, payload, item)
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

/// The segments this log wrote, each open for reading from when it was opened until it is
/// trimmed: records left in the log stay readable even if their files are unlinked (the
/// directory removed under the daemon).
pub type OpenSegments = Arc<Mutex<BTreeMap<u64, Arc<dyn FsReader>>>>;

/// The write-ahead log handle (cheap to share behind an `Arc`).
pub struct Wal<T: Send + 'static> {
    tx: Mutex<Option<mpsc::Sender<Msg<T>>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    stats: Arc<WalStats>,
    open_segments: OpenSegments,
    low_watermark: Arc<AtomicU64>,
    broken: Arc<AtomicU8>,
    opts: WalOptions,
}

/// The log has no segment it can write to (it retries opening one): 0 no, else why.
const USABLE: u8 = 0;

fn broken_code(kind: FaultKind) -> u8 {
    match kind {
        FaultKind::NoSpace => 1,
        FaultKind::ReadOnly => 2,
        FaultKind::Io => 3,
    }
}

/// Why appends are refused while the log cannot write (the [`Error::WalFull`] reason).
fn unusable_reason(kind: FaultKind) -> &'static str {
    match kind {
        FaultKind::NoSpace => "no space left on the WAL device",
        FaultKind::ReadOnly => "the WAL device is read-only",
        FaultKind::Io => "the WAL device has I/O errors",
    }
}

fn broken_reason(code: u8) -> &'static str {
    unusable_reason(match code {
        1 => FaultKind::NoSpace,
        2 => FaultKind::ReadOnly,
        _ => FaultKind::Io,
    })
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

fn spare_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("wal-{id:020}.spare"))
}

fn list_segments(fs: &dyn Fs, dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    list_numbered(fs, dir, ".log")
}

/// The spare segment files, named after the last segment id they held.
fn list_spares(fs: &dyn Fs, dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    list_numbered(fs, dir, ".spare")
}

fn list_numbered(fs: &dyn Fs, dir: &Path, suffix: &str) -> io::Result<Vec<(u64, PathBuf)>> {
    let mut out = Vec::new();
    for entry in fs.read_dir(dir)? {
        if let Some(id) = entry
            .name
            .strip_prefix("wal-")
            .and_then(|s| s.strip_suffix(suffix))
            .and_then(|s| s.parse::<u64>().ok())
        {
            out.push((id, entry.path));
        }
    }
    out.sort();
    Ok(out)
}

/// Reads every record of every segment in `dir`, in order, calling `f` for each;
/// cuts torn or corrupt tails and skips corrupt records followed by good ones (both
/// logged and in the report). Returns the next free segment id (past every segment and
/// spare, so that a reused file never gets an id it held before), the report and the
/// segment bytes left on disk (spares not counted).
pub fn replay(
    fs: &dyn Fs,
    dir: &Path,
    mut f: impl FnMut(ReplayRecord),
) -> io::Result<(u64, ReplayReport, u64)> {
    tsfiled_fsio::create_dir_all_synced(fs, dir)?;
    let mut report = ReplayReport::default();
    let segments = list_segments(fs, dir)?;
    let mut next = list_spares(fs, dir)?.last().map_or(0, |s| s.0 + 1);
    let mut disk = 0u64;
    for (id, path) in &segments {
        next = next.max(id + 1);
        report.segments += 1;
        let data = fs.read(path)?;
        let salt = segment_salt(&data, *id);
        let mut pos = 0;
        let mut end;
        let mut tail = None;
        loop {
            let (good_end, reason) = scan_segment(&data, *id, pos, |offset, payload| {
                report.records += 1;
                f(ReplayRecord {
                    lsn: lsn(*id, offset as u64),
                    payload: payload.to_vec(),
                })
            });
            end = good_end;
            let Some(reason) = reason else { break };
            match salt.and_then(|salt| resync(&data, good_end.max(HEADER), salt)) {
                Some(next_good) if good_end >= HEADER => {
                    tracing::error!(segment = %path.display(), from = good_end, to = next_good, %reason, "write-ahead log: skipping a corrupt stretch; the records after it are replayed");
                    report
                        .skipped
                        .push((*id, good_end as u64, next_good as u64, reason));
                    pos = next_good;
                }
                _ => {
                    tail = Some(reason);
                    break;
                }
            }
        }
        if let Some(reason) = tail {
            if salt == Some(Some(*id)) {
                // Expected in a reused segment: the file's old contents follow the last record.
                tracing::info!(segment = %path.display(), offset = end, %reason, "write-ahead log: cutting the segment after its last record (a torn write or a reused file's old contents)");
            } else {
                tracing::warn!(segment = %path.display(), offset = end, %reason, "write-ahead log: cutting torn or corrupt tail");
            }
            if end < HEADER {
                fs.remove_file(path)?;
            } else {
                let mut file = fs.open_write(path)?;
                file.set_len(end as u64)?;
                file.sync_all()?;
                disk += end as u64;
            }
            report.truncated.push((*id, end as u64, reason));
        } else {
            disk += data.len() as u64;
        }
    }
    fs.sync_dir(dir)?;
    Ok((next, report, disk))
}

/// Bytes of payload [`resync`] may checksum per byte of the segment. A reused file's old
/// contents after the last record look like records (lengths in range, payloads present) at
/// many positions: an unbounded search checksummed gigabytes on a restart (tens of seconds
/// for one 64 MiB segment); past the budget the rest is cut as a tail.
const RESYNC_BUDGET: usize = 8;

/// The first position at or after `from + 1` where a whole record with a matching
/// checksum (salted with `salt`, see [`record_crc`]) starts, if any (a false match needs a
/// 32-bit checksum collision). If the record at `from` is whole (only its checksum is
/// wrong) and a good record follows it, that one; else positions are tried one by one
/// until [`RESYNC_BUDGET`] is spent.
fn resync(data: &[u8], from: usize, salt: Option<u64>) -> Option<usize> {
    let mut budget = RESYNC_BUDGET.saturating_mul(data.len());
    let mut whole = |p: usize| -> Option<bool> {
        let head = data.get(p..p + 8)?;
        let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let crc = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        if len == 0 || len > MAX_RECORD {
            return Some(false);
        }
        let Some(payload) = data.get(p + 8..p + 8 + len) else {
            return Some(false);
        };
        budget = budget.checked_sub(len)?;
        Some(record_crc(salt, payload) == crc)
    };
    let follower = data
        .get(from..from + 4)
        .map(|l| from + 8 + u32::from_le_bytes([l[0], l[1], l[2], l[3]]) as usize)
        .filter(|&next| next > from + 8 && next <= data.len());
    if let Some(next) = follower {
        if whole(next) == Some(true) {
            return Some(next);
        }
    }
    for p in from + 1..data.len().saturating_sub(8) {
        match whole(p) {
            Some(true) => return Some(p),
            Some(false) => {}
            None => return None, // the budget is spent
        }
    }
    None
}

fn lock_open(open: &OpenSegments) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<dyn FsReader>>> {
    open.lock().unwrap_or_else(|e| e.into_inner())
}

/// Bytes [`LogReader`] reads at a time (more for a larger record).
const READ_CHUNK: usize = 1 << 20;

/// Reads the log forward from a record, a chunk at a time, while its thread appends: the
/// records the engine must apply that the log did not hand over ([`Backlog`]).
///
/// [`Backlog`]: crate::pipeline::Backlog
pub struct LogReader {
    fs: FsRef,
    dir: PathBuf,
    /// The segment read and the offset of the next record in it.
    segment: u64,
    offset: u64,
    /// The segment's checksum salt, once its header was read.
    salt: Option<Option<u64>>,
    /// Bytes of the segment from `chunk_at`.
    chunk: Vec<u8>,
    chunk_at: u64,
    /// Corrupt stretches [`replay`] skipped: a record that does not check out at the start
    /// of one is passed over to its end, as replay did.
    skips: Arc<[Range<Lsn>]>,
    /// The log's segments open for reading (others are read by name).
    open_segments: Option<OpenSegments>,
}

impl LogReader {
    /// A reader whose first record is the one at `from`.
    pub fn new(fs: FsRef, dir: PathBuf, from: Lsn) -> LogReader {
        LogReader {
            fs,
            dir,
            segment: lsn_segment(from),
            offset: from & ((1 << OFFSET_BITS) - 1),
            salt: None,
            chunk: Vec::new(),
            chunk_at: 0,
            skips: Arc::from([]),
            open_segments: None,
        }
    }

    /// The reader reading the segments `open` holds through their handles: their records
    /// stay readable after their files are unlinked.
    pub fn with_open_segments(mut self, open: OpenSegments) -> LogReader {
        self.open_segments = Some(open);
        self
    }

    /// The reader passing over the stretches `skips` (from [`ReplayReport::skip_ranges`]).
    pub fn skipping(mut self, skips: Arc<[Range<Lsn>]>) -> LogReader {
        self.skips = skips;
        self
    }

    /// The position of the next record.
    pub fn position(&self) -> Lsn {
        lsn(self.segment, self.offset)
    }

    /// `len` bytes of the segment from `at`, or fewer at its end.
    fn bytes(&mut self, at: u64, len: usize) -> io::Result<&[u8]> {
        let end = at + len as u64;
        if self.chunk.is_empty()
            || at < self.chunk_at
            || end > self.chunk_at + self.chunk.len() as u64
        {
            let handle = self
                .open_segments
                .as_ref()
                .and_then(|open| lock_open(open).get(&self.segment).cloned());
            match handle {
                Some(file) => file.read_at(at, len.max(READ_CHUNK), &mut self.chunk)?,
                None => {
                    let path = segment_path(&self.dir, self.segment);
                    self.fs
                        .read_at(&path, at, len.max(READ_CHUNK), &mut self.chunk)?
                }
            }
            self.chunk_at = at;
        }
        let from = (at - self.chunk_at) as usize;
        let to = (from + len).min(self.chunk.len());
        Ok(&self.chunk[from.min(to)..to])
    }

    /// Where in the chunk the payload of the record at the reader's position is, if it is
    /// whole and checks out (the reader moves past it). A chunk read
    /// before the log wrote that far holds what the file had then (nothing, or a reused
    /// file's old bytes): a record that does not check out in it is read again from the file.
    fn record(&mut self) -> io::Result<Option<std::ops::Range<usize>>> {
        if self.salt.is_none() {
            let header = self.bytes(0, HEADER)?.to_vec();
            self.salt =
                Some(segment_salt(&header, self.segment).ok_or_else(|| {
                    io::Error::new(io::ErrorKind::InvalidData, "bad segment magic")
                })?);
            self.offset = self.offset.max(HEADER as u64);
        }
        for fresh in [false, true] {
            if fresh {
                self.chunk.clear();
            }
            if let Some(len) = self.checked_len()? {
                let from = (self.offset - self.chunk_at) as usize + 8;
                self.offset += 8 + len as u64;
                return Ok(Some(from..from + len));
            }
        }
        Ok(None)
    }

    /// The payload length of the record at the reader's position if the bytes at hand hold
    /// it whole and it checks out (they then cover it).
    fn checked_len(&mut self) -> io::Result<Option<usize>> {
        let salt = self.salt.flatten();
        let head = self.bytes(self.offset, 8)?;
        if head.len() < 8 {
            return Ok(None);
        }
        let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let crc = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        if len > MAX_RECORD {
            return Ok(None);
        }
        // Read again if the chunk ended within the record: its header must be the same.
        let whole = self.bytes(self.offset, 8 + len)?;
        Ok((whole.len() == 8 + len
            && whole[..4] == (len as u32).to_le_bytes()
            && whole[4..8] == crc.to_le_bytes()
            && record_crc(salt, &whole[8..]) == crc)
            .then_some(len))
    }

    /// The next record if its position is at most `upto`, with its position. Every record up
    /// to `upto` must be durable: one that does not check out is an error (the log is
    /// corrupt or gone), except at the end of a segment before `upto`'s, where the next
    /// segment follows.
    pub fn next(&mut self, upto: Lsn) -> io::Result<Option<(Lsn, &[u8])>> {
        loop {
            let at = self.position();
            if at > upto {
                return Ok(None);
            }
            if let Some(payload) = self.record()? {
                return Ok(Some((at, &self.chunk[payload])));
            }
            let here = self.position();
            if let Some(skip) = self.skips.iter().find(|s| s.start == here) {
                self.offset = skip.end & ((1 << OFFSET_BITS) - 1);
                continue;
            }
            if self.segment >= lsn_segment(upto) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "the record at {at:#x} (segment {}, offset {}) is torn or corrupt",
                        self.segment, self.offset
                    ),
                ));
            }
            // The segment ends here: the next one follows (ids grow; a retired segment's
            // successor may skip ids).
            let after = |id: &u64| *id > self.segment;
            let open = self
                .open_segments
                .as_ref()
                .and_then(|open| lock_open(open).keys().copied().find(after));
            let listed = match list_segments(&*self.fs, &self.dir) {
                Ok(listed) => listed.into_iter().map(|(id, _)| id).find(after),
                Err(_) if open.is_some() => None,
                Err(e) => return Err(e),
            };
            let next = open.into_iter().chain(listed).min();
            let Some(next) = next else {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!(
                        "no segment after {} holds the record at {upto:#x}",
                        self.segment
                    ),
                ));
            };
            self.segment = next;
            self.offset = HEADER as u64;
            self.salt = None;
            self.chunk.clear();
            self.chunk_at = 0;
        }
    }
}

/// Scans the bytes of segment `id` from `start` (0: the header first): calls
/// `f(offset, payload)` per good record; returns where the good part ends and, if it
/// ends early, why.
fn scan_segment(
    data: &[u8],
    id: u64,
    start: usize,
    mut f: impl FnMut(usize, &[u8]),
) -> (usize, Option<String>) {
    if data.len() < HEADER {
        return (
            0,
            Some(format!("segment of {} bytes has no header", data.len())),
        );
    }
    let Some(salt) = segment_salt(data, id) else {
        return (0, Some("bad segment magic".to_string()));
    };
    let mut pos = start.max(HEADER);
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
        if record_crc(salt, payload) != crc {
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
        Wal::start_with_health(opts, first_segment, initial_disk_bytes, sink, None)
    }

    /// [`Wal::start`] reporting write failures and recoveries to `health`. A first segment
    /// that cannot be created (a full or read-only device) does not fail the start: appends
    /// are refused and the log retries creating it.
    pub fn start_with_health(
        opts: WalOptions,
        first_segment: u64,
        initial_disk_bytes: u64,
        sink: impl Sink<T>,
        health: Option<Arc<StorageHealth>>,
    ) -> io::Result<Self> {
        tsfiled_fsio::create_dir_all_synced(&*opts.fs, &opts.dir)?;
        let stats = Arc::new(WalStats::default());
        stats
            .disk_bytes
            .store(initial_disk_bytes, Ordering::Relaxed);
        let low_watermark = Arc::new(AtomicU64::new(0));
        let broken = Arc::new(AtomicU8::new(USABLE));
        let prepared = Arc::new(Mutex::new(Prepared {
            want: first_segment,
            ready: None,
        }));
        let open_segments = OpenSegments::default();
        let (tx, rx) = mpsc::channel();
        let mut worker = Worker {
            open_segments: open_segments.clone(),
            fs: opts.fs.clone(),
            dir: opts.dir.clone(),
            segment_bytes: opts.segment_bytes.min((opts.max_bytes / 8).max(64 * 1024)),
            commit_delay: opts.commit_delay,
            commit_bytes: opts.commit_bytes.max(1),
            sync_delay: opts.hooks.wal_sync_delay,
            active: None,
            active_id: first_segment,
            active_len: 0,
            active_cap: 0,
            prepared: prepared.clone(),
            fsync_seconds: opts.fsync_seconds.clone(),
            stats: stats.clone(),
            low_watermark: low_watermark.clone(),
            broken: broken.clone(),
            trimmed_below: 0,
            trimmer: None,
            health,
            failing: false,
            repair_at: None,
            repair_backoff: Duration::ZERO,
        };
        if let Err(e) = worker.open_segment(first_segment) {
            worker.segment_failed(first_segment, e);
        }
        let (trim_tx, trim_rx) = mpsc::channel();
        let trimmer = Trimmer {
            fs: opts.fs.clone(),
            dir: opts.dir.clone(),
            stats: stats.clone(),
            prepared,
            max_spares: opts.spares,
            bound: 0,
            closed: BTreeSet::new(),
            spares: Vec::new(),
            open_segments: open_segments.clone(),
        };
        let trimmer = std::thread::Builder::new()
            .name("tsfiled-wal-trim".into())
            .spawn(move || trimmer.run(first_segment, trim_rx))?;
        worker.trimmer = Some((trim_tx, trimmer));
        let thread = std::thread::Builder::new()
            .name("tsfiled-wal".into())
            .spawn(move || worker.run(rx, sink))?;
        Ok(Wal {
            tx: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
            stats,
            open_segments,
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
        let broken = self.broken.load(Ordering::Relaxed);
        if broken != USABLE {
            return Err(Error::WalFull(broken_reason(broken)));
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

    /// The segments this log keeps open for reading ([`LogReader::with_open_segments`]).
    pub fn open_segments(&self) -> OpenSegments {
        self.open_segments.clone()
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
    fs: FsRef,
    dir: PathBuf,
    segment_bytes: u64,
    commit_delay: Duration,
    commit_bytes: usize,
    /// Slept after every fsync (a test hook).
    sync_delay: Option<Duration>,
    /// The segments open for reading ([`OpenSegments`]).
    open_segments: OpenSegments,
    /// The segment being written; `None` after rotation or after a failure retired it
    /// (the next group opens segment `active_id + 1`).
    active: Option<Box<dyn FsFile>>,
    active_id: u64,
    active_len: u64,
    /// The active file's length (more than `active_len` in a reused file).
    active_cap: u64,
    /// The segment the trimmer renamed a spare to, ahead of time.
    prepared: Arc<Mutex<Prepared>>,
    fsync_seconds: Option<prometheus::Histogram>,
    stats: Arc<WalStats>,
    low_watermark: Arc<AtomicU64>,
    broken: Arc<AtomicU8>,
    /// The bound last handed to the trimmer.
    trimmed_below: u64,
    /// The trimmer thread: segments below the bound it is sent are deleted (or kept as spares)
    /// there, full segments are closed there, and the next segment is prepared there.
    trimmer: Option<(mpsc::Sender<TrimMsg>, JoinHandle<()>)>,
    health: Option<Arc<StorageHealth>>,
    /// The last write failed (reported to `health`).
    failing: bool,
    /// No usable segment: when to try opening one next.
    repair_at: Option<Instant>,
    repair_backoff: Duration,
}

impl Worker {
    fn open_segment(&mut self, id: u64) -> io::Result<()> {
        let path = segment_path(&self.dir, id);
        if !self.fs.exists(&self.dir) {
            tracing::error!(dir = %self.dir.display(), "write-ahead log: the directory vanished; creating it again");
            tsfiled_fsio::create_dir_all_synced(&*self.fs, &self.dir)?;
        }
        let reused = self.take_prepared(id).and_then(|len| {
            // The magic is written again (it goes to disk with the first group's fdatasync):
            // the file holds no record of this segment before that.
            let opened = self.fs.open_write(&path).and_then(|mut f| {
                f.write_all(MAGIC)?;
                Ok(f)
            });
            match opened {
                Ok(f) => Some((f, len.max(HEADER as u64))),
                Err(e) => {
                    tracing::warn!(segment = %path.display(), error = %e, "write-ahead log: cannot open the prepared segment; creating it");
                    None
                }
            }
        });
        let (f, cap) = match reused {
            Some(reused) => reused,
            None => {
                // `id` is past every segment holding records (a failed earlier try may have
                // left a partial file under it: truncated).
                let mut f = self.fs.create(&path)?;
                let ready = f
                    .write_all(MAGIC)
                    .and_then(|_| f.sync_all())
                    .and_then(|_| self.fs.sync_dir(&self.dir));
                if let Err(e) = ready {
                    drop(f);
                    let _ = self.fs.remove_file(&path);
                    return Err(e);
                }
                (f, HEADER as u64)
            }
        };
        match self.fs.open_read(&path) {
            Ok(r) => {
                lock_open(&self.open_segments).insert(id, r);
            }
            Err(e) if e.kind() == io::ErrorKind::Unsupported => {}
            Err(e) => {
                tracing::warn!(segment = %path.display(), error = %e, "write-ahead log: cannot open the segment for reading; it is read by name")
            }
        }
        self.active = Some(f);
        self.active_id = id;
        self.active_len = HEADER as u64;
        self.active_cap = cap;
        self.stats.disk_bytes.fetch_add(cap, Ordering::Relaxed);
        if let Some((tx, _)) = &self.trimmer {
            let _ = tx.send(TrimMsg::Prepare);
        }
        Ok(())
    }

    /// The length of the spare prepared as segment `id`, if there is one; from now on the
    /// trimmer prepares `id + 1`. (Waits while the trimmer is renaming a spare.)
    fn take_prepared(&mut self, id: u64) -> Option<u64> {
        let ready = {
            let mut p = self.prepared.lock().unwrap_or_else(|e| e.into_inner());
            p.want = id + 1;
            p.ready.take()
        };
        let (at, len) = ready?;
        self.stats.spare_bytes.fetch_sub(
            len.min(self.stats.spare_bytes.load(Ordering::Relaxed)),
            Ordering::Relaxed,
        );
        if at == id {
            return Some(len);
        }
        // Prepared for an id the log did not open next (not expected): never used.
        let _ = self.fs.remove_file(&segment_path(&self.dir, at));
        None
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
                        if self.repair_at.is_some_and(|at| Instant::now() >= at) {
                            self.repair();
                        }
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
        if let Some(mut f) = self.active.take() {
            let _ = f.sync_all();
        }
        if let Some((tx, thread)) = self.trimmer.take() {
            drop(tx);
            let _ = thread.join();
        }
    }

    fn commit<T>(
        &mut self,
        group: &mut Vec<Request<T>>,
        buf: &mut Vec<u8>,
        sink: &mut impl Sink<T>,
    ) {
        if self.active.is_none() {
            self.repair();
        }
        if self.active.is_none() {
            let reason = broken_reason(self.broken.load(Ordering::Relaxed));
            let pending: usize = group.iter().map(|r| r.payload.len() + 8).sum();
            self.stats
                .pending_bytes
                .fetch_sub(pending, Ordering::Relaxed);
            for r in group.drain(..) {
                let _ = r.done.send(Err(Error::WalFull(reason)));
            }
            return;
        }
        buf.clear();
        let mut offsets = Vec::with_capacity(group.len());
        let base = self.active_len;
        for r in group.iter() {
            offsets.push(base + buf.len() as u64);
            buf.extend_from_slice(&(r.payload.len() as u32).to_le_bytes());
            buf.extend_from_slice(&record_crc(Some(self.active_id), &r.payload).to_le_bytes());
            buf.extend_from_slice(&r.payload);
        }
        let pending: usize = group.iter().map(|r| r.payload.len() + 8).sum();
        let result = self
            .write_and_sync(buf)
            .and_then(|_| self.check_segment_named());
        self.stats
            .pending_bytes
            .fetch_sub(pending, Ordering::Relaxed);
        match result {
            Ok(()) => {
                if self.failing {
                    self.failing = false;
                    if let Some(h) = &self.health {
                        h.recovered(StorageOp::Wal);
                    }
                }
                self.active_len += buf.len() as u64;
                if self.active_len > self.active_cap {
                    self.stats
                        .disk_bytes
                        .fetch_add(self.active_len - self.active_cap, Ordering::Relaxed);
                    self.active_cap = self.active_len;
                }
                self.stats
                    .records
                    .fetch_add(group.len() as u64, Ordering::Relaxed);
                let seg = self.active_id;
                for (r, off) in group.drain(..).zip(offsets) {
                    let at = lsn(seg, off);
                    sink.deliver(at, r.payload, r.item);
                    let _ = r.done.send(Ok(at));
                }
                if self.active_len >= self.segment_bytes {
                    if let Some(f) = self.active.take() {
                        self.close_full(f);
                    }
                    self.repair();
                }
            }
            Err(e) => {
                let kind = FaultKind::of(&e);
                let message = format!(
                    "writing {}: {e}",
                    segment_path(&self.dir, self.active_id).display()
                );
                tracing::error!(error = %message, "write-ahead log: write failed; the batch is refused");
                self.failed(kind, message.clone());
                // Cut the partial write so the segment ends well-formed (if that fails
                // too, replay cuts the torn tail), and never write or fsync this file
                // again: after a failed fsync its unsynced bytes are presumed lost
                // ("fsyncgate"). The next group opens a new segment.
                if let Some(mut f) = self.active.take() {
                    if f.set_len(base).is_ok() {
                        let _ = f.sync_all();
                        let cut = self.active_cap.saturating_sub(base);
                        let _ = self.stats.disk_bytes.fetch_update(
                            Ordering::Relaxed,
                            Ordering::Relaxed,
                            |v| Some(v.saturating_sub(cut)),
                        );
                        self.active_cap = base;
                    }
                }
                // A full or read-only device is a transient condition for the sender
                // (retry later); other errors are failures.
                for r in group.drain(..) {
                    let err = match kind {
                        FaultKind::Io => Error::WalIo(message.clone()),
                        k => Error::WalFull(unusable_reason(k)),
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
        if let Some(d) = self.sync_delay {
            std::thread::sleep(d);
        }
        let took = t.elapsed();
        if let Some(h) = &self.fsync_seconds {
            h.observe(took.as_secs_f64());
        }
        self.stats
            .sync_nanos
            .fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
        self.stats.syncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// After an fsync: the segment must still have its name, or the records are in an
    /// unlinked file that no restart would find (its directory was deleted). Then the
    /// group is refused, and the engine is told to seal what earlier groups delivered.
    fn check_segment_named(&mut self) -> io::Result<()> {
        let path = segment_path(&self.dir, self.active_id);
        if self.fs.exists(&path) {
            return Ok(());
        }
        self.stats.lost_segments.store(true, Ordering::Relaxed);
        Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "{} was deleted while in use (the write-ahead log directory was removed?)",
                path.display()
            ),
        ))
    }

    /// A full segment (every record of it fdatasynced) is closed: its `fsync` (timestamps)
    /// is done by the trimmer thread, which may then reuse the file once it is trimmed.
    fn close_full(&mut self, f: Box<dyn FsFile>) {
        let mut msg = TrimMsg::Closed(self.active_id, f);
        if let Some((tx, _)) = &self.trimmer {
            match tx.send(msg) {
                Ok(()) => return,
                Err(mpsc::SendError(back)) => msg = back,
            }
        }
        if let TrimMsg::Closed(_, mut f) = msg {
            if let Err(e) = f.sync_all() {
                tracing::error!(error = %e, "write-ahead log: syncing a full segment failed");
            }
        }
    }

    fn failed(&mut self, kind: FaultKind, message: String) {
        self.failing = true;
        if let Some(h) = &self.health {
            h.failed(StorageOp::Wal, kind, message);
        }
    }

    /// Opens the next segment when there is none (start, rotation, or a write that could
    /// not be undone); on failure appends are refused and it is retried with backoff.
    fn repair(&mut self) {
        if self.active.is_some() {
            return;
        }
        let next = self.active_id + 1;
        match self.open_segment(next) {
            Ok(()) => {
                if self.repair_at.take().is_some() {
                    tracing::info!(segment = next, "write-ahead log: writing again");
                }
                self.repair_backoff = Duration::ZERO;
                self.broken.store(USABLE, Ordering::Relaxed);
                if self.failing {
                    self.failing = false;
                    if let Some(h) = &self.health {
                        h.recovered(StorageOp::Wal);
                    }
                }
            }
            Err(e) => self.segment_failed(next, e),
        }
    }

    fn segment_failed(&mut self, id: u64, e: io::Error) {
        let kind = FaultKind::of(&e);
        self.broken.store(broken_code(kind), Ordering::Relaxed);
        self.repair_backoff =
            (self.repair_backoff * 2).clamp(Duration::from_millis(200), Duration::from_secs(5));
        self.repair_at = Some(Instant::now() + self.repair_backoff);
        let message = format!("creating {}: {e}", segment_path(&self.dir, id).display());
        tracing::error!(error = %message, retry_in_ms = self.repair_backoff.as_millis() as u64, "write-ahead log: cannot open a segment; appends are refused until it can");
        self.failed(kind, message);
    }

    /// Has the segments entirely below the low watermark (never the active one) deleted or
    /// kept as spares by the trimmer thread ([`Trimmer`]).
    fn trim(&mut self) {
        let wm = self.low_watermark.load(Ordering::Relaxed);
        let below = lsn_segment(wm).min(self.active_id);
        if below <= self.trimmed_below {
            return;
        }
        self.trimmed_below = below;
        let sent = self
            .trimmer
            .as_ref()
            .is_some_and(|(tx, _)| tx.send(TrimMsg::Below(below)).is_ok());
        if !sent {
            delete_below(&*self.fs, &self.dir, &self.stats, below, |_, _, _| false);
        }
    }
}

/// What the log's thread tells the trimmer thread.
enum TrimMsg {
    /// Segments below this id may go.
    Below(u64),
    /// This full segment is closed (every record fdatasynced): `fsync` it; it may be reused.
    Closed(u64, Box<dyn FsFile>),
    /// The log opened a segment: prepare the next one.
    Prepare,
}

/// The segment prepared ahead of time, shared by the log's and the trimmer's threads.
#[derive(Debug)]
struct Prepared {
    /// The id the log opens next (every id below it may hold records).
    want: u64,
    /// A spare renamed to `wal-<id>.log` (directory synced): (id, file length).
    ready: Option<(u64, u64)>,
}

/// The trimmer thread, off the log's thread: deletes the segments below the largest bound it
/// was sent, or keeps them as spares, and renames a spare to the next segment's name. Unlinking
/// a 64 MiB segment and fsyncing the directory took 30–54 ms on this project's machine (ext4
/// mounted with `discard`), and on the log's thread no group was committed meanwhile: every
/// acknowledgement waited (BENCHMARKS.md, 2026-12-03). A deletion that failed is tried again a
/// second later. Ends when the log's thread ends.
struct Trimmer {
    fs: FsRef,
    dir: PathBuf,
    stats: Arc<WalStats>,
    prepared: Arc<Mutex<Prepared>>,
    max_spares: usize,
    bound: u64,
    /// Segments this log filled and closed (fsync succeeded): the ones that may be reused.
    /// A segment retired after a failure never is.
    closed: BTreeSet<u64>,
    /// Spare files: (the last segment id it held, path, length).
    spares: Vec<(u64, PathBuf, u64)>,
    /// Closed for reading once trimmed.
    open_segments: OpenSegments,
}

impl Trimmer {
    fn run(mut self, first_segment: u64, rx: mpsc::Receiver<TrimMsg>) {
        self.adopt_spares(first_segment);
        self.prepare();
        let mut failed = false;
        loop {
            let msg = if failed {
                rx.recv_timeout(Duration::from_secs(1))
            } else {
                rx.recv().map_err(|_| RecvTimeoutError::Disconnected)
            };
            match msg {
                Ok(m) => self.handle(m),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
            while let Ok(m) = rx.try_recv() {
                self.handle(m);
            }
            let (fs, dir, stats, bound) = (
                self.fs.clone(),
                self.dir.clone(),
                self.stats.clone(),
                self.bound,
            );
            let (closed, spares, max) = (&mut self.closed, &mut self.spares, self.max_spares);
            failed = !delete_below(&*fs, &dir, &stats, bound, |id, path, len| {
                if !closed.remove(&id) || spares.len() >= max {
                    return false;
                }
                let spare = spare_path(&dir, id);
                match fs.rename(path, &spare) {
                    Ok(()) => {
                        stats.spare_bytes.fetch_add(len, Ordering::Relaxed);
                        spares.push((id, spare, len));
                        true
                    }
                    Err(e) => {
                        tracing::warn!(segment = %path.display(), error = %e, "write-ahead log: cannot keep a segment for reuse; deleting it");
                        false
                    }
                }
            });
            self.closed.retain(|&id| id >= bound);
            lock_open(&self.open_segments).retain(|&id, _| id >= bound);
            self.prepare();
        }
    }

    fn handle(&mut self, msg: TrimMsg) {
        match msg {
            TrimMsg::Below(b) => self.bound = self.bound.max(b),
            TrimMsg::Closed(id, mut f) => match f.sync_all() {
                Ok(()) => {
                    self.closed.insert(id);
                }
                Err(e) => {
                    tracing::error!(segment = %segment_path(&self.dir, id).display(), error = %e, "write-ahead log: syncing a full segment failed")
                }
            },
            TrimMsg::Prepare => {}
        }
    }

    /// Takes the spares a previous run left (ids below `first_segment`, as [`replay`] makes
    /// sure); deletes those beyond [`WalOptions::spares`].
    fn adopt_spares(&mut self, first_segment: u64) {
        let Ok(found) = list_spares(&*self.fs, &self.dir) else {
            return;
        };
        for (id, path) in found.into_iter().rev() {
            let len = self.fs.file_len(&path).unwrap_or(0);
            if id < first_segment && self.spares.len() < self.max_spares {
                self.stats.spare_bytes.fetch_add(len, Ordering::Relaxed);
                self.spares.push((id, path, len));
            } else if let Err(e) = self.fs.remove_file(&path) {
                tracing::warn!(file = %path.display(), error = %e, "write-ahead log: cannot delete a spare segment");
            }
        }
    }

    /// Renames a spare to the name of the segment the log opens next and fsyncs the
    /// directory, under the shared lock (the log's thread, rotating meanwhile, waits for it
    /// rather than create that file itself).
    fn prepare(&mut self) {
        if self.spares.is_empty() {
            return;
        }
        let mut p = self.prepared.lock().unwrap_or_else(|e| e.into_inner());
        if p.ready.is_some() {
            return;
        }
        let path = segment_path(&self.dir, p.want);
        if self.fs.exists(&path) {
            return; // a leftover of a failed creation: the log's thread truncates it
        }
        let Some((old, spare, len)) = self.spares.pop() else {
            return;
        };
        if let Err(e) = self.fs.rename(&spare, &path) {
            tracing::warn!(file = %spare.display(), error = %e, "write-ahead log: cannot reuse a spare segment; deleting it");
            let _ = self.fs.remove_file(&spare);
            self.stats.spare_bytes.fetch_sub(len, Ordering::Relaxed);
            return;
        }
        match self.fs.sync_dir(&self.dir) {
            Ok(()) => p.ready = Some((p.want, len)),
            Err(e) => {
                // Not durable under its new name: records written there could vanish.
                tracing::warn!(dir = %self.dir.display(), error = %e, "write-ahead log: cannot prepare a spare segment; deleting it");
                if self.fs.remove_file(&path).is_err() {
                    let _ = self.fs.rename(&path, &spare_path(&self.dir, old));
                }
                self.stats.spare_bytes.fetch_sub(len, Ordering::Relaxed);
            }
        }
    }
}

/// Deletes the segments of `dir` below segment `below`, except those `keep(id, path, len)`
/// took (renamed them), then fsyncs the directory; `false`: one could not be deleted (it is
/// tried again).
fn delete_below(
    fs: &dyn Fs,
    dir: &Path,
    stats: &WalStats,
    below: u64,
    mut keep: impl FnMut(u64, &Path, u64) -> bool,
) -> bool {
    let Ok(segments) = list_segments(fs, dir) else {
        return false;
    };
    let mut removed = false;
    let mut ok = true;
    for (id, path) in segments {
        if id >= below {
            break;
        }
        let len = fs.file_len(&path).unwrap_or(0);
        // Counted off first: the log refuses appends on the disk bytes it counts, and a
        // segment seen gone must not be counted any more.
        let _ = stats
            .disk_bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(v.saturating_sub(len))
            });
        if keep(id, &path, len) {
            removed = true;
            continue;
        }
        match fs.remove_file(&path) {
            Ok(()) => removed = true,
            Err(e) => {
                stats.disk_bytes.fetch_add(len, Ordering::Relaxed);
                tracing::warn!(segment = %path.display(), error = %e, "write-ahead log: cannot delete segment");
                ok = false;
                break;
            }
        }
    }
    if removed {
        let _ = fs.sync_dir(dir);
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::{self, OpenOptions};
    use std::sync::mpsc::Receiver;

    type Started = (
        Wal<u32>,
        Receiver<(Lsn, u32)>,
        ReplayReport,
        Vec<ReplayRecord>,
    );

    fn start(dir: &Path, opts: Option<WalOptions>) -> Started {
        let mut recs = Vec::new();
        let (next, report, disk) = replay(&*tsfiled_fsio::std_fs(), dir, |r| recs.push(r)).unwrap();
        let (tx, rx) = mpsc::channel();
        let wal = Wal::start(
            opts.unwrap_or_else(|| WalOptions::new(dir)),
            next,
            disk,
            move |lsn, _, item| {
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
        let (next, _, disk) = replay(&*tsfiled_fsio::std_fs(), tmp.path(), |_| {}).unwrap();
        let (entered_tx, entered_rx) = mpsc::channel::<()>();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let delivered = Arc::new(Mutex::new(Vec::new()));
        let seen = delivered.clone();
        let wal = Wal::start(
            WalOptions::new(tmp.path()),
            next,
            disk,
            move |lsn, _, item: u32| {
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
        let segs = list_segments(&*tsfiled_fsio::std_fs(), dir).unwrap();
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
    fn a_corrupt_record_in_the_middle_is_skipped_and_the_later_ones_replay() {
        let tmp = tempfile::tempdir().unwrap();
        {
            let (wal, _rx, _, _) = start(tmp.path(), None);
            for i in 0..5u8 {
                wal.append(vec![i; 10], 0).unwrap().wait_blocking().unwrap();
            }
        }
        let seg = only_segment(tmp.path());
        let id = list_segments(&*tsfiled_fsio::std_fs(), tmp.path())
            .unwrap()
            .into_iter()
            .find(|s| s.1 == seg)
            .unwrap()
            .0;
        // Records of 10 bytes take 18 bytes each after the 8-byte segment header.
        let rec = |i: usize| HEADER + i * 18;
        let mut data = fs::read(&seg).unwrap();
        assert_eq!(data.len(), rec(5));
        data[rec(2) + 8 + 3] ^= 0xff; // a payload byte of the third record
        data[rec(3)] = 200; // the fourth record's length
        fs::write(&seg, &data).unwrap();
        let (w, _rx, report, recs) = start(tmp.path(), None);
        drop(w);
        let payloads: Vec<Vec<u8>> = recs.iter().map(|r| r.payload.clone()).collect();
        assert_eq!(payloads, vec![vec![0; 10], vec![1; 10], vec![4; 10]]);
        assert_eq!(recs[2].lsn, lsn(id, rec(4) as u64));
        assert_eq!(
            report.skipped,
            vec![(
                id,
                rec(2) as u64,
                rec(4) as u64,
                "record checksum mismatch".to_string()
            )]
        );
        assert!(report.truncated.is_empty(), "{report:?}");
        // The segment is kept as it is (the skipped stretch is reported again next time).
        assert_eq!(fs::read(&seg).unwrap(), data);
        // A corrupt last record is a torn tail: cut.
        data[rec(4) + 8] ^= 1;
        fs::write(&seg, &data).unwrap();
        let (w, _rx, report, recs) = start(tmp.path(), None);
        drop(w);
        assert_eq!(recs.len(), 2);
        assert_eq!(report.skipped, vec![]);
        assert_eq!(
            report.truncated,
            vec![(id, rec(2) as u64, "record checksum mismatch".to_string())]
        );
        assert_eq!(fs::metadata(&seg).unwrap().len(), rec(2) as u64);
    }

    #[test]
    fn torn_header_and_absurd_length_are_cut() {
        let tmp = tempfile::tempdir().unwrap();
        {
            let (wal, _rx, _, _) = start(tmp.path(), None);
            for i in 0..2u8 {
                wal.append(vec![i; 10], 0).unwrap().wait_blocking().unwrap();
            }
        }
        let seg = only_segment(tmp.path());
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
        let segs_before = list_segments(&*tsfiled_fsio::std_fs(), tmp.path())
            .unwrap()
            .len();
        assert!(segs_before > 5);
        // Everything delivered so far is sealed: trim up to the last one.
        let last = *lsns.last().unwrap();
        assert_eq!(rx.try_iter().count(), lsns.len());
        wal.trim_before(last);
        // The thread trims on its next wake-up.
        let mut waited = 0;
        let below = |segs: &[(u64, PathBuf)]| segs.iter().any(|s| s.0 < lsn_segment(last));
        while below(&list_segments(&*tsfiled_fsio::std_fs(), tmp.path()).unwrap()) && waited < 250 {
            std::thread::sleep(Duration::from_millis(20));
            waited += 1;
        }
        let segs = list_segments(&*tsfiled_fsio::std_fs(), tmp.path()).unwrap();
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
    fn a_segment_that_cannot_be_created_refuses_appends_until_it_can() {
        let tmp = tempfile::tempdir().unwrap();
        // A directory where the first segment file goes: creating it fails (EISDIR).
        fs::create_dir(segment_path(tmp.path(), 0)).unwrap();
        let metrics = crate::metrics::Metrics::new();
        let health = StorageHealth::new("t", metrics.clone());
        let (tx, rx) = mpsc::channel();
        let wal = Wal::start_with_health(
            WalOptions::new(tmp.path()),
            0,
            0,
            move |lsn, _, item: u32| {
                let _ = tx.send((lsn, item));
            },
            Some(health.clone()),
        )
        .expect("the log starts without a usable segment");
        match wal.append(vec![1; 10], 1) {
            Err(Error::WalFull(reason)) => assert_eq!(reason, "the WAL device has I/O errors"),
            other => panic!("{:?}", other.map(|_| ())),
        }
        assert!(health.is_degraded());
        assert!(metrics
            .render()
            .contains(r#"tsfiled_storage_errors_total{kind="io",op="wal",pipeline="t"} 1"#));
        // The obstacle goes: the log opens the next segment by itself and takes appends.
        fs::remove_dir(segment_path(tmp.path(), 0)).unwrap();
        let start = std::time::Instant::now();
        let lsn = loop {
            match wal.append(vec![2; 10], 2) {
                Ok(t) => break t.wait_blocking().unwrap(),
                Err(Error::WalFull(_)) => {
                    assert!(start.elapsed() < Duration::from_secs(30), "never recovered");
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("{e}"),
            }
        };
        assert_eq!(lsn_segment(lsn), 1);
        assert_eq!(rx.recv().unwrap(), (lsn, 2));
        assert!(!health.is_degraded());
        drop(wal);
        let mut recs = Vec::new();
        replay(&*tsfiled_fsio::std_fs(), tmp.path(), |r| recs.push(r)).unwrap();
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].payload, vec![2; 10]);
    }

    #[test]
    fn segment_without_header_is_removed() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(segment_path(tmp.path(), 3), b"TSF").unwrap();
        let (next, report, _) = replay(&*tsfiled_fsio::std_fs(), tmp.path(), |_| {}).unwrap();
        assert_eq!(next, 4);
        assert_eq!(report.truncated.len(), 1);
        assert!(list_segments(&*tsfiled_fsio::std_fs(), tmp.path())
            .unwrap()
            .is_empty());
    }
}

#[cfg(test)]
mod contract_tests;
