//! The storage engine of one pipeline: memtables per storage group partition, flushes
//! into open TsFiles, sealing, WAL trimming and recovery.
//!
//! It runs on its own thread and receives durable batches from the write-ahead log in
//! log order ([`EngineMsg::Write`]). Points of a device newer than everything already
//! flushed for that device in the partition's sequence space go to the sequence
//! memtable; the others go to the unsequence memtable (as IoTDB does). Memtables are
//! flushed as chunk groups (followed by a version record) when the pipeline's memtable
//! budget is reached; a partition's files are sealed together on size, age, idle time,
//! partition boundary, WAL pressure or shutdown.

pub mod batch;
pub mod files;
mod flush;
mod from_log;
mod inbox;
mod journal;
mod memtable;
mod priority;
pub(crate) use memtable::column_capacity_bytes;
mod retry;
pub mod schema;
mod sealer;
mod status;
pub mod table;
#[cfg(test)]
mod testing;

use std::collections::HashMap;
use std::io;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::oneshot;
use tsfile::file::properties::WriterProperties;
use tsfiled_fsio::FsRef;

use crate::hasher::FxBuild;
use crate::health::{FaultKind, StorageHealth, StorageOp};
use crate::hooks::TestHooks;
use crate::metrics::Metrics;
use crate::wal::{LogReader, Lsn, OpenSegments, WalStats};
use batch::{SeriesData, WriteBatch};
use files::{FormatVersion, SealEntry, SealJournal};
use journal::JournalState;
use memtable::{gather, Group, Proc};
use schema::Registry;
use sealer::{PendingSeal, Sealer};
pub use status::{EngineStatus, FileStatus, RECENT_SEALED};

/// Engine settings.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Pipeline name (metric label).
    pub pipeline: String,
    /// The data directory (`sequence/`, `unsequence/`).
    pub data_dir: PathBuf,
    /// State directory (seal journal, schema journal, lock), normally `<data>/state`.
    pub state_dir: PathBuf,
    /// Storage group level: `root` plus this many nodes.
    pub sg_level: usize,
    /// Time partition interval in stored time units (`None`: everything in partition 0).
    pub partition_interval: Option<i64>,
    /// Memtable budget of the pipeline in bytes.
    pub memtable_bytes: usize,
    /// A storage group partition's sequence memtable is flushed at this size.
    pub chunk_group_bytes: usize,
    /// Seal a file once it has this many bytes.
    pub file_max_bytes: u64,
    /// Seal a partition's files this long after its first unsealed point.
    pub file_max_age: Duration,
    /// Seal a partition's files after this long without new points.
    pub file_idle: Duration,
    /// TsFile writer settings.
    pub writer: WriterProperties,
    /// The format sealed files are written in.
    pub format: FormatVersion,
    /// How often time-based sealing is checked.
    pub tick: Duration,
    /// The file system (tests inject a simulated one).
    pub fs: FsRef,
    /// The wall clock file names take their creation time from (tests set it).
    pub clock: WallClock,
    /// Faults tests inject (none by default).
    pub hooks: TestHooks,
}

/// A wall clock in milliseconds since the Unix epoch.
#[derive(Clone)]
pub struct WallClock(Arc<dyn Fn() -> i64 + Send + Sync>);

impl WallClock {
    /// The system clock.
    pub fn system() -> WallClock {
        WallClock(Arc::new(now_millis))
    }

    /// A clock reading `f` (tests).
    pub fn new(f: impl Fn() -> i64 + Send + Sync + 'static) -> WallClock {
        WallClock(Arc::new(f))
    }

    /// The current time in ms.
    pub fn now_millis(&self) -> i64 {
        (self.0)()
    }
}

impl std::fmt::Debug for WallClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WallClock({})", self.now_millis())
    }
}

impl EngineOptions {
    /// Defaults for a data directory.
    pub fn new(pipeline: &str, data_dir: impl Into<PathBuf>) -> Self {
        let data_dir = data_dir.into();
        EngineOptions {
            pipeline: pipeline.to_string(),
            state_dir: data_dir.join("state"),
            data_dir,
            sg_level: 1,
            partition_interval: None,
            memtable_bytes: 64 * 1024 * 1024,
            chunk_group_bytes: 16 * 1024 * 1024,
            file_max_bytes: 256 * 1024 * 1024,
            file_max_age: Duration::from_secs(3600),
            file_idle: Duration::from_secs(600),
            writer: WriterProperties::default(),
            format: FormatVersion::V2,
            tick: Duration::from_millis(500),
            fs: tsfiled_fsio::std_fs(),
            clock: WallClock::system(),
            hooks: TestHooks::default(),
        }
    }
}

/// Why files were sealed (metric label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SealReason {
    /// Reached the size limit.
    Size,
    /// Reached the age limit.
    Age,
    /// Idle.
    Idle,
    /// A newer time partition started.
    Partition,
    /// Daemon shutdown.
    Shutdown,
    /// The write-ahead log is filling up.
    Wal,
    /// Configuration reload or explicit request.
    Request,
}

impl SealReason {
    /// Metric label.
    pub fn label(self) -> &'static str {
        match self {
            SealReason::Size => "size",
            SealReason::Age => "age",
            SealReason::Idle => "idle",
            SealReason::Partition => "partition",
            SealReason::Shutdown => "shutdown",
            SealReason::Wal => "wal",
            SealReason::Request => "request",
        }
    }
}

/// Records of at most this many points leave their decoded vectors to the next record.
const SCRATCH_POINTS: u64 = 1 << 16;

/// Messages to the engine thread.
pub enum EngineMsg {
    /// A durable batch.
    Write {
        /// Its WAL position.
        lsn: Lsn,
        /// The record written for it (a [`WriteBatch`] payload), decoded by the engine.
        payload: Vec<u8>,
        /// When the payload was received.
        received: Instant,
    },
    /// The log keeps the durable records from `from` on instead of handing them over: the
    /// engine reads them back from it (see [`Backlog`](crate::pipeline::Backlog)).
    FromLog {
        /// The first record's position.
        from: Lsn,
        /// When the first record was received.
        received: Instant,
    },
    /// Seal everything open, then answer.
    SealAll {
        /// Reason label.
        reason: SealReason,
        /// Answered when done.
        done: oneshot::Sender<()>,
    },
    /// Stop without sealing, leaving open files as a crash would (tests).
    Abandon {
        /// Answered when done.
        done: oneshot::Sender<()>,
    },
    /// Seal everything and stop.
    Stop {
        /// Answered when done.
        done: oneshot::Sender<()>,
    },
}

/// What the engine needs from the WAL: where to publish its low watermark and how full it is.
#[derive(Clone)]
pub struct WalControl {
    /// Low watermark (segments entirely below are deleted).
    pub watermark: Arc<AtomicU64>,
    /// WAL counters.
    pub stats: Arc<WalStats>,
    /// WAL disk budget.
    pub max_bytes: u64,
    /// The WAL's directory (a failed partition's points are read back from it).
    pub dir: PathBuf,
    /// The corrupt stretches replay skipped (reading back passes over them too).
    pub skipped: Arc<[Range<Lsn>]>,
    /// The segments the log keeps open for reading.
    pub open_segments: OpenSegments,
}
fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The engine of one pipeline.
pub struct Engine {
    opts: EngineOptions,
    groups: HashMap<(Arc<str>, i64), Group, FxBuild>,
    sg_of: HashMap<Arc<str>, Arc<str>, FxBuild>,
    versions: HashMap<Arc<str>, i64>,
    newest_partition: HashMap<Arc<str>, i64>,
    covered: HashMap<(String, i64), Lsn>,
    flushed_init: HashMap<(String, i64), HashMap<String, i64>>,
    /// The seal journal while sealing runs inline (recovery); moved into the sealer
    /// thread by [`Engine::run`].
    journal: Option<JournalState>,
    sealer: Option<Sealer>,
    /// Seals handed to the sealer and not done yet, by job id.
    pending: HashMap<u64, PendingSeal>,
    /// The partition being read back from the WAL and the LSN reached (see
    /// [`Engine::rebuild`]).
    rebuilding: Option<((Arc<str>, i64), Lsn)>,
    health: Arc<StorageHealth>,
    next_job: u64,
    registry: Arc<Mutex<Registry>>,
    wal: Option<WalControl>,
    mem_total: usize,
    last_lsn: Option<Lsn>,
    progress: Option<crate::notify::Progress>,
    status: Arc<Mutex<EngineStatus>>,
    metrics: Arc<Metrics>,
    last_create_millis: i64,
    /// Names of decoded records.
    names: batch::Names,
    /// The last record decoded, its vectors kept for the next one.
    scratch: WriteBatch,
    /// The memtable-bytes gauge of this pipeline.
    memtable_gauge: prometheus::IntGauge,
    /// Per device (the address of its shared name), the positions of its last run of series
    /// in its sequence memtable (see [`Engine::insert_run`]).
    hints: HashMap<usize, Vec<usize>, FxBuild>,
    /// Positions in `hints`.
    hint_count: usize,
    /// Records handed over by the write-ahead log and not applied yet (live writes only).
    backlog: Option<crate::pipeline::Backlog>,
    /// The thread's messages (see [`inbox`]).
    inbox: inbox::Inbox,
    /// Reading the log back, until caught up.
    from_log: Option<from_log::FromLog>,
    /// The engine thread's priority, once its loop runs ([`Engine::pace`]).
    priority: Option<priority::Niceness>,
}

impl Engine {
    /// Opens the data directory: rolls committed seals forward, removes uncommitted
    /// temporaries, and loads what replay and file naming need.
    pub fn open(
        opts: EngineOptions,
        registry: Arc<Mutex<Registry>>,
        metrics: Arc<Metrics>,
    ) -> io::Result<Engine> {
        let state_dir = opts.state_dir.clone();
        let fs = opts.fs.clone();
        tsfiled_fsio::create_dir_all_synced(&*fs, &state_dir)?;
        let (mut journal, entries) = SealJournal::open(fs.clone(), &state_dir.join("seals.log"))?;
        for e in &entries {
            for f in &e.files {
                if files::roll_forward(&*fs, &opts.data_dir, f)? {
                    tracing::info!(file = %f, "recovery: completed an interrupted seal");
                }
            }
        }
        let state = files::scan_data_dir(&*fs, &opts.data_dir)?;
        for p in &state.removed_tmp {
            tracing::info!(file = %p.display(), "recovery: removed an unsealed temporary file");
        }
        let mut covered: HashMap<(String, i64), Lsn> = HashMap::new();
        let mut versions: HashMap<Arc<str>, i64> = HashMap::new();
        let mut last_by_group: HashMap<(String, i64), SealEntry> = HashMap::new();
        for e in entries {
            let c = covered.entry((e.sg.clone(), e.partition)).or_insert(0);
            *c = (*c).max(e.covered);
            let v = versions.entry(Arc::from(e.sg.as_str())).or_insert(0);
            *v = (*v).max(e.max_version);
            last_by_group.insert((e.sg.clone(), e.partition), e);
        }
        for (sg, v) in state.max_version {
            let e = versions.entry(Arc::from(sg.as_str())).or_insert(0);
            *e = (*e).max(v);
        }
        let keep: Vec<SealEntry> = last_by_group.values().cloned().collect();
        let health = StorageHealth::new(&opts.pipeline, metrics.clone());
        if let Err(e) = journal.compact(&keep) {
            // Only a smaller journal is lost; it is compacted again later.
            tracing::warn!(error = %e, "seal journal: compaction failed; keeping it as it is");
            health.count(StorageOp::Journal, FaultKind::of(&e));
        }
        let opts_data_dir = opts.data_dir.clone();
        let seal_delay = opts.hooks.seal_delay;
        let memtable_gauge = metrics.memtable_bytes.with_label_values(&[&opts.pipeline]);
        Ok(Engine {
            opts,
            groups: HashMap::default(),
            sg_of: HashMap::default(),
            versions,
            newest_partition: HashMap::new(),
            covered,
            flushed_init: state.latest_flushed,
            journal: Some(JournalState {
                journal,
                entries: keep.len(),
                last_by_group,
                data_dir: opts_data_dir,
                fs,
                unrenamed: Vec::new(),
                seal_delay,
            }),
            sealer: None,
            pending: HashMap::new(),
            rebuilding: None,
            health,
            next_job: 0,
            registry,
            wal: None,
            mem_total: 0,
            last_lsn: None,
            progress: None,
            status: Arc::default(),
            metrics,
            // New names sort after every existing file even if the clock went back.
            last_create_millis: state.max_create_millis,
            names: batch::Names::default(),
            scratch: WriteBatch::default(),
            memtable_gauge,
            hints: HashMap::default(),
            hint_count: 0,
            backlog: None,
            inbox: inbox::Inbox::default(),
            from_log: None,
            priority: None,
        })
    }

    /// The pipeline's storage health, which the engine and the WAL report to.
    pub fn health_handle(&self) -> Arc<StorageHealth> {
        self.health.clone()
    }

    /// Reports liveness: every live batch applied completes one pending item.
    pub fn set_progress(&mut self, progress: Option<crate::notify::Progress>) {
        self.progress = progress;
    }

    /// Counts the records it applies off `backlog`.
    pub fn set_backlog(&mut self, backlog: crate::pipeline::Backlog) {
        self.backlog = Some(backlog);
    }

    /// Connects the engine to its WAL (after replay).
    pub fn attach_wal(&mut self, wal: WalControl) {
        self.wal = Some(wal);
    }

    /// A reader of the log from `from` (through the segments the log keeps open, passing over
    /// the stretches replay skipped), if a log is attached.
    pub(super) fn log_reader(&self, from: Lsn) -> Option<LogReader> {
        let wal = self.wal.as_ref()?;
        Some(
            LogReader::new(self.opts.fs.clone(), wal.dir.clone(), from)
                .skipping(wal.skipped.clone())
                .with_open_segments(wal.open_segments.clone()),
        )
    }

    /// Bytes currently in memtables.
    pub fn memtable_bytes(&self) -> usize {
        self.mem_total
    }

    fn sg_for(&mut self, device: &Arc<str>) -> Arc<str> {
        if let Some(sg) = self.sg_of.get(device) {
            return sg.clone();
        }
        let sg: Arc<str> = Arc::from(schema::storage_group(device, self.opts.sg_level));
        let sg = self
            .versions
            .get_key_value(&sg)
            .map(|(k, _)| k.clone())
            .unwrap_or(sg);
        self.sg_of.insert(device.clone(), sg.clone());
        sg
    }

    fn partition_of(&self, t: i64) -> i64 {
        match self.opts.partition_interval {
            Some(iv) if iv > 0 => t.div_euclid(iv),
            _ => 0,
        }
    }

    fn group(&mut self, sg: &Arc<str>, partition: i64) -> &mut Group {
        let flushed_init = &mut self.flushed_init;
        self.groups
            .entry((sg.clone(), partition))
            .or_insert_with(|| {
                let mut latest = HashMap::default();
                if let Some(m) = flushed_init.remove(&(sg.to_string(), partition)) {
                    for (d, t) in m {
                        latest.insert(Arc::from(d.as_str()), t);
                    }
                }
                Group {
                    sg: sg.clone(),
                    partition,
                    seq: Proc::new(),
                    unseq: Proc::new(),
                    first_lsn: None,
                    first_at: None,
                    last_write: Instant::now(),
                    oldest_receive: None,
                    latest_flushed: latest,
                    failed: None,
                    backoff: Duration::ZERO,
                    reseal: None,
                }
            })
    }

    /// The partition of a (non-empty) series that lies in one.
    fn single_partition(&self, s: &SeriesData) -> Option<i64> {
        let p0 = self.partition_of(s.times[0]);
        (self.opts.partition_interval.is_none()
            || s.times.iter().all(|&t| self.partition_of(t) == p0))
        .then_some(p0)
    }

    /// A series split by time partition (one part when it lies in one).
    fn split_partitions(&self, s: &SeriesData) -> Vec<(i64, SeriesData)> {
        if let Some(p) = self.single_partition(s) {
            return vec![(p, s.clone())];
        }
        let mut parts: HashMap<i64, Vec<usize>> = HashMap::new();
        for (i, &t) in s.times.iter().enumerate() {
            parts.entry(self.partition_of(t)).or_default().push(i);
        }
        parts
            .into_iter()
            .map(|(p, idx)| {
                let part = SeriesData {
                    device: s.device.clone(),
                    measurement: s.measurement.clone(),
                    ty: s.ty,
                    times: idx.iter().map(|&i| s.times[i]).collect(),
                    values: gather(&s.values, &idx),
                };
                (p, part)
            })
            .collect()
    }

    fn is_failed(&self, sg: &Arc<str>, p: i64) -> bool {
        self.groups
            .get(&(sg.clone(), p))
            .is_some_and(|g| g.failed.is_some())
    }

    /// Applies a durable record as the write-ahead log delivered it. Its payload was encoded
    /// by the pipeline from a checked batch: a payload that does not decode is a defect,
    /// logged; its points stay in the log, which replay reads the same way.
    fn write(&mut self, lsn: Lsn, payload: &[u8], received: Instant) {
        let names = &mut self.names;
        let mut batch = std::mem::take(&mut self.scratch);
        match batch.decode_named(payload, names) {
            Ok(()) => {
                self.apply_batch(lsn, &batch, received, false);
                // The next record reuses the vectors, unless this one was large.
                if batch.points() <= SCRATCH_POINTS {
                    self.scratch = batch;
                }
            }
            Err(e) => {
                self.last_lsn = Some(lsn);
                tracing::error!(lsn, error = %e, "a durable record does not decode; its points are not written");
            }
        }
    }

    /// Applies one durable batch. `replay` skips points already sealed. Points of a failed
    /// partition are skipped: they are read back from the WAL when it is retried.
    pub fn apply(&mut self, lsn: Lsn, batch: WriteBatch, received: Instant, replay: bool) {
        self.apply_batch(lsn, &batch, received, replay);
    }

    /// [`Engine::apply`] of a borrowed batch.
    fn apply_batch(&mut self, lsn: Lsn, batch: &WriteBatch, received: Instant, replay: bool) {
        self.last_lsn = Some(lsn);
        let now = Instant::now();
        let mut touched: Vec<(Arc<str>, i64)> = Vec::new();
        // The series of a record mostly share their device: its storage group is looked up
        // once per run of them, and a run in one partition goes to it in one piece.
        let mut last: Option<(Arc<str>, Arc<str>)> = None;
        let series = &batch.series;
        let mut i = 0;
        while i < series.len() {
            let device = &series[i].device;
            let end = i + series[i..]
                .iter()
                .position(|s| !Arc::ptr_eq(&s.device, device))
                .unwrap_or(series.len() - i);
            let run = &series[i..end];
            i = end;
            let Some(first) = run.iter().find(|s| !s.is_empty()) else {
                continue;
            };
            let sg = match &last {
                Some((d, sg)) if Arc::ptr_eq(d, device) => sg.clone(),
                _ => {
                    let sg = self.sg_for(device);
                    last = Some((device.clone(), sg.clone()));
                    sg
                }
            };
            let p0 = self.single_partition(first);
            let one = p0.filter(|&p0| {
                self.opts.partition_interval.is_none()
                    || run
                        .iter()
                        .filter(|s| !s.is_empty())
                        .all(|s| self.single_partition(s) == Some(p0))
            });
            if let Some(p) = one {
                if self.takes(&sg, p, lsn, replay) {
                    self.insert_run(&sg, p, lsn, (received, now), run);
                    self.touch_partition(&sg, p, &mut touched);
                }
                continue;
            }
            for s in run.iter().filter(|s| !s.is_empty()) {
                match self.single_partition(s) {
                    Some(p) => {
                        self.apply_part(&sg, p, lsn, (received, now), replay, s, &mut touched)
                    }
                    None => {
                        for (p, part) in self.split_partitions(s) {
                            self.apply_part(
                                &sg,
                                p,
                                lsn,
                                (received, now),
                                replay,
                                &part,
                                &mut touched,
                            );
                        }
                    }
                }
            }
        }
        if self.inbox.taking_in {
            // A flush takes this record in between its slices: the rest waits for the
            // next record after it.
            self.inbox.touched.append(&mut touched);
            self.memtable_gauge.set(self.mem_total as i64);
            return;
        }
        touched.append(&mut self.inbox.touched);
        for (sg, p) in touched {
            let newest = self.newest_partition.entry(sg.clone()).or_insert(p);
            if p > *newest {
                *newest = p;
                let older: Vec<_> = self
                    .groups
                    .iter()
                    .filter(|((g, q), gr)| g == &sg && *q < p && gr.has_data())
                    .map(|(k, _)| k.clone())
                    .collect();
                for k in older {
                    self.seal_group(&k, SealReason::Partition);
                }
            }
        }
        self.enforce_budget();
        self.memtable_gauge.set(self.mem_total as i64);
    }

    /// Inserts one partition's part of a series unless its points are sealed already
    /// (`replay`) or its partition is failed; records the partition in `touched` when
    /// partitions roll (time partitioning on).
    #[allow(clippy::too_many_arguments)]
    fn apply_part(
        &mut self,
        sg: &Arc<str>,
        p: i64,
        lsn: Lsn,
        (received, now): (Instant, Instant),
        replay: bool,
        part: &SeriesData,
        touched: &mut Vec<(Arc<str>, i64)>,
    ) {
        if !self.takes(sg, p, lsn, replay) {
            return;
        }
        self.insert_series(sg, p, lsn, (received, now), part);
        self.touch_partition(sg, p, touched);
    }

    /// Whether points of the record at `lsn` go into partition `p` of `sg`: not when they are
    /// sealed already (`replay`) or the partition is failed.
    fn takes(&self, sg: &Arc<str>, p: i64, lsn: Lsn, replay: bool) -> bool {
        !((replay && self.is_covered(sg, p, lsn)) || self.is_failed(sg, p))
    }

    /// Records partition `p` of `sg` in `touched` when partitions roll (time partitioning on).
    fn touch_partition(&self, sg: &Arc<str>, p: i64, touched: &mut Vec<(Arc<str>, i64)>) {
        if self.opts.partition_interval.is_some()
            && !touched.iter().any(|(a, b)| a == sg && *b == p)
        {
            touched.push((sg.clone(), p));
        }
    }

    fn is_covered(&self, sg: &str, p: i64, lsn: Lsn) -> bool {
        self.covered
            .get(&(sg.to_string(), p))
            .is_some_and(|&c| lsn < c)
    }
    /// Raises the WAL low watermark to the oldest unsealed point.
    fn publish_watermark(&mut self) {
        let Some(wal) = &self.wal else { return };
        let pinned = self
            .groups
            .values()
            .filter_map(|g| g.first_lsn)
            .chain(self.pending.values().map(|p| p.pin))
            .chain(self.rebuilding.as_ref().map(|r| r.1))
            .min();
        let wm = match pinned {
            Some(l) => l,
            None => self.last_lsn.map_or(0, |l| l + 1),
        };
        if let Ok(mut r) = self.registry.lock() {
            if let Err(e) = r.sync() {
                tracing::error!(error = %e, "schema journal sync failed; not trimming the write-ahead log");
                self.health.count(StorageOp::Journal, FaultKind::of(&e));
                return;
            }
        }
        wal.watermark.fetch_max(wm, Ordering::Relaxed);
    }

    /// Retries of failed partitions, time-based and WAL-pressure sealing; call periodically.
    pub fn tick(&mut self) {
        self.retry_failed(false);
        self.catch_up(false);
        let now = Instant::now();
        let due: Vec<((Arc<str>, i64), SealReason)> = self
            .groups
            .iter()
            .filter(|(_, g)| g.has_data() && g.failed.is_none())
            .filter_map(|(k, g)| {
                if g.first_at
                    .is_some_and(|t| now.duration_since(t) >= self.opts.file_max_age)
                {
                    Some((k.clone(), SealReason::Age))
                } else if now.duration_since(g.last_write) >= self.opts.file_idle {
                    Some((k.clone(), SealReason::Idle))
                } else {
                    None
                }
            })
            .collect();
        for (k, r) in due {
            self.seal_group(&k, r);
        }
        let lost = self
            .wal
            .as_ref()
            .is_some_and(|w| w.stats.lost_segments.swap(false, Ordering::Relaxed));
        if lost {
            // Acknowledged points are in memory only (their WAL segment is gone): seal them.
            tracing::error!("write-ahead log segments vanished; sealing every open file so acknowledged points are on disk");
            self.seal_all(SealReason::Wal);
        }
        if let Some(wal) = &self.wal {
            let used = wal.stats.disk_bytes.load(Ordering::Relaxed);
            if used > wal.max_bytes / 2 {
                let oldest = self
                    .groups
                    .iter()
                    .filter(|(_, g)| g.failed.is_none())
                    .filter_map(|(k, g)| g.first_lsn.map(|l| (l, k.clone())))
                    .min();
                if let Some((_, k)) = oldest {
                    self.seal_group(&k, SealReason::Wal);
                }
            }
        }
        self.publish_watermark();
    }

    /// The engine thread's loop.
    pub fn run(mut self, rx: Receiver<EngineMsg>) {
        if let Err(e) = self.start_sealer() {
            tracing::warn!(error = %e, "cannot start the sealer thread; sealing inline");
        }
        let tick = self.opts.tick;
        let stall = self.opts.hooks.stall_engine;
        let mut last_tick = Instant::now();
        self.attach_inbox(rx);
        self.priority = Some(priority::Niceness::own());
        loop {
            let msg = self.next_msg(tick);
            self.poll_sealer();
            match msg {
                Ok(EngineMsg::Write { .. } | EngineMsg::FromLog { .. }) if stall => loop {
                    std::thread::park();
                },
                Ok(EngineMsg::Write {
                    lsn,
                    payload,
                    received,
                }) => self.write_live(lsn, payload, received),
                Ok(EngineMsg::FromLog { from, received }) => self.read_log_from(from, received),
                Ok(EngineMsg::SealAll { reason, done }) => {
                    self.seal_all(reason);
                    self.drain_sealer();
                    let _ = done.send(());
                }
                Ok(EngineMsg::Abandon { done }) => {
                    // Seals already handed off finish (as if the crash came after them).
                    self.stop_sealer();
                    let _ = done.send(());
                    return;
                }
                Ok(EngineMsg::Stop { done }) => {
                    // Drain what the WAL already delivered.
                    while let Some(m) = self.try_next_msg() {
                        match m {
                            EngineMsg::Write {
                                lsn,
                                payload,
                                received,
                            } => self.write_live(lsn, payload, received),
                            EngineMsg::FromLog { from, received } => {
                                self.read_log_from(from, received)
                            }
                            EngineMsg::SealAll { done, .. }
                            | EngineMsg::Stop { done }
                            | EngineMsg::Abandon { done } => {
                                let _ = done.send(());
                            }
                        }
                    }
                    // A last try for records left in the log and failed partitions (space
                    // may be back).
                    self.catch_up(true);
                    self.retry_failed(true);
                    self.seal_all(SealReason::Shutdown);
                    self.stop_sealer();
                    self.publish_watermark();
                    self.report_unsealed();
                    let _ = done.send(());
                    return;
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    self.seal_all(SealReason::Shutdown);
                    self.stop_sealer();
                    return;
                }
            }
            if last_tick.elapsed() >= tick {
                last_tick = Instant::now();
                self.tick();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::files::{format_of_name, parse_resource_v4};
    use super::*;
    use crate::pipeline::{Pipeline, PipelineOptions};
    use std::collections::BTreeMap;
    use std::path::Path;
    use tsfile::file::v4::TsFileReaderV4;
    use tsfile::Value;
    use tsfiled_connectors::{Batch, Field, FieldValue, Record};

    type Points = BTreeMap<(String, String, i64), Vec<Value>>;

    fn sealed(dir: &Path) -> Vec<PathBuf> {
        let mut files = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    if !p.ends_with("state") && !p.ends_with("wal") {
                        stack.push(p);
                    }
                } else if p.extension().is_some_and(|x| x == "tsfile") {
                    files.push(p);
                }
            }
        }
        files.sort();
        files
    }

    /// Every point of the sealed v4 files under `dir`; checks each file's name and that its
    /// `.resource` holds exactly the device time ranges of its points.
    fn read_v4(dir: &Path) -> (Points, Vec<PathBuf>) {
        let files = sealed(dir);
        let mut out = Points::new();
        for f in &files {
            let name = f.file_name().unwrap().to_str().unwrap();
            assert_eq!(format_of_name(name), FormatVersion::V4, "{name}");
            let r = TsFileReaderV4::open_path(f).unwrap();
            let mut ranges: BTreeMap<String, (i64, i64)> = BTreeMap::new();
            for d in r.devices().unwrap() {
                let dev = d.device.path();
                for ts in &d.series {
                    for (t, v) in r.series_points(ts, None).unwrap() {
                        let e = ranges.entry(dev.clone()).or_insert((t, t));
                        e.0 = e.0.min(t);
                        e.1 = e.1.max(t);
                        out.entry((dev.clone(), ts.measurement.clone(), t))
                            .or_default()
                            .push(v);
                    }
                }
            }
            let res = std::fs::read(files::with_suffix(f, ".resource")).unwrap();
            let got: BTreeMap<String, (i64, i64)> = parse_resource_v4(&res)
                .unwrap()
                .into_iter()
                .map(|d| (d.device, (d.start_time, d.end_time)))
                .collect();
            assert_eq!(got, ranges, "{}", f.display());
        }
        (out, files)
    }

    /// A durable record goes to the engine as the bytes the log wrote, and the engine decodes
    /// it: the points land in the memtable as submitted. A record that does not decode (a
    /// defect: the pipeline encodes checked batches) is logged, and the next record is
    /// applied as usual.
    #[test]
    fn the_engine_applies_records_from_their_payload_and_survives_an_undecodable_one() {
        let tmp = tempfile::tempdir().unwrap();
        let faults = testing::FaultFs::default();
        let mut e = testing::engine(tmp.path(), &faults);
        let log = testing::logs(|| e.write(0, &[9, 1, 2], Instant::now()));
        assert!(log.contains("does not decode"), "{log}");
        assert!(e.groups.is_empty());
        let wb = WriteBatch {
            series: vec![
                SeriesData {
                    device: "root.sg.d1".into(),
                    measurement: "a".into(),
                    ty: schema::SeriesType::default_for(tsfile::DataType::INT64),
                    times: vec![5, 7],
                    values: tsfile::basic::Column::Int64(vec![-3, 40]),
                },
                SeriesData {
                    device: "root.sg.d1".into(),
                    measurement: "b".into(),
                    ty: schema::SeriesType::default_for(tsfile::DataType::DOUBLE),
                    times: vec![5, 7],
                    values: tsfile::basic::Column::Double(vec![0.5, -1.25]),
                },
            ],
        };
        e.write(1, &wb.encode(), Instant::now());
        let g = &e.groups[&(Arc::from("root.sg"), 0)];
        let a = &g.seq.mem[&(Arc::from("root.sg.d1"), Arc::from("a"))];
        assert_eq!(a.times, vec![5, 7]);
        assert_eq!(a.values, tsfile::basic::Column::Int64(vec![-3, 40]));
        let b = &g.seq.mem[&(Arc::from("root.sg.d1"), Arc::from("b"))];
        assert_eq!(b.times, vec![5, 7]);
        assert_eq!(b.values, tsfile::basic::Column::Double(vec![0.5, -1.25]));
        assert_eq!(e.last_lsn, Some(1));
    }

    fn batch(device: &str, t: i64) -> Batch {
        let fields = vec![
            Field::new("i", FieldValue::Int(t * 7 - 3)),
            Field::new("f", FieldValue::Float(t as f64 / 4.0)),
            Field::new("b", FieldValue::Bool(t % 3 == 0)),
            Field::new("s", FieldValue::Text(format!("v{t}"))),
        ];
        Batch {
            records: vec![Record {
                device: device.into(),
                time: t,
                fields,
            }],
            rejections: vec![],
        }
    }

    fn expected(device: &str, t: i64) -> Vec<((String, String, i64), Vec<Value>)> {
        let k = |m: &str| (device.to_string(), m.to_string(), t);
        vec![
            (k("i"), vec![Value::Int64(t * 7 - 3)]),
            (k("f"), vec![Value::Double(t as f64 / 4.0)]),
            (k("b"), vec![Value::Boolean(t % 3 == 0)]),
            (k("s"), vec![Value::Text(format!("v{t}").into_bytes())]),
        ]
    }

    /// Format v4 end to end inside the daemon: the default types (BOOLEAN RLE and DOUBLE
    /// GORILLA are written PLAIN in v4), late points in unsequence files, a crash that leaves
    /// open files behind (rebuilt from the WAL on restart), and IoTDB 2.x names and
    /// `.resource` files.
    #[test]
    fn v4_files_seal_late_points_and_survive_a_crash() {
        let tmp = tempfile::tempdir().unwrap();
        let mut opts = PipelineOptions::new("t", tmp.path());
        opts.engine.format = FormatVersion::V4;
        opts.engine.memtable_bytes = 1; // flush after every batch
        let times = [100, 200, 150, 50, 300];
        {
            let p = Pipeline::open(opts.clone(), Metrics::new()).unwrap();
            for t in times {
                p.submit_blocking("test", batch("root.sg.d1", t), Instant::now())
                    .unwrap();
                p.submit_blocking("test", batch("root.sg.a.b.c", t + 1), Instant::now())
                    .unwrap();
            }
            p.abandon_blocking();
        }
        let p = Pipeline::open(opts.clone(), Metrics::new()).unwrap();
        p.submit_blocking("test", batch("root.sg.d1", 400), Instant::now())
            .unwrap();
        p.shutdown_blocking();
        let (points, files) = read_v4(tmp.path());
        let mut want = Points::new();
        for t in times.iter().chain(&[400]) {
            want.extend(expected("root.sg.d1", *t));
        }
        for t in times {
            want.extend(expected("root.sg.a.b.c", t + 1));
        }
        assert_eq!(points, want);
        // The encodings in the chunk headers: INT64's default TS_2DIFF is written in v4;
        // DOUBLE's default GORILLA is TsFile 2.x's GORILLA in v4 (code 8, which the format
        // crate names GORILLA_V2) and BOOLEAN's RLE becomes PLAIN (docs/configuration.md,
        // `storage.format_version`).
        let mut encodings: BTreeMap<String, std::collections::BTreeSet<&str>> = BTreeMap::new();
        for f in &files {
            let r = TsFileReaderV4::open_path(f).unwrap();
            for d in r.devices().unwrap() {
                for ts in &d.series {
                    for (offset, _) in &ts.chunks {
                        let (header, _) = r.chunk_header(*offset).unwrap();
                        encodings
                            .entry(ts.measurement.clone())
                            .or_default()
                            .insert(header.encoding().unwrap().name());
                    }
                }
            }
        }
        let one = |e: &'static str| std::collections::BTreeSet::from([e]);
        assert_eq!(
            encodings,
            BTreeMap::from([
                ("b".to_string(), one("PLAIN")),
                ("f".to_string(), one("GORILLA_V2")),
                ("i".to_string(), one("TS_2DIFF")),
                ("s".to_string(), one("PLAIN")),
            ])
        );
        assert!(
            files
                .iter()
                .any(|f| f.to_string_lossy().contains("/unsequence/")),
            "{files:?}"
        );
        // The data directory of a v4 pipeline holds no 0.10 names.
        assert!(files.iter().all(|f| f
            .file_name()
            .unwrap()
            .to_string_lossy()
            .ends_with("-0-0.tsfile")));
    }

    /// A record of one device at time `t`: one point per `(measurement, value)`, INT64 or
    /// DOUBLE as the value is (`Value::Int64` / `Value::Double`).
    fn record(device: &str, t: i64, points: &[(&str, Value)]) -> Vec<u8> {
        use tsfile::basic::Column;
        let series = points
            .iter()
            .map(|(m, v)| {
                let (dt, values) = match v {
                    Value::Int64(x) => (tsfile::DataType::INT64, Column::Int64(vec![*x])),
                    Value::Double(x) => (tsfile::DataType::DOUBLE, Column::Double(vec![*x])),
                    v => panic!("{v:?}"),
                };
                SeriesData {
                    device: device.into(),
                    measurement: (*m).into(),
                    ty: schema::SeriesType::default_for(dt),
                    times: vec![t],
                    values,
                }
            })
            .collect();
        WriteBatch { series }.encode()
    }

    /// Every point of a memtable: (device, measurement, time) to its values.
    fn mem_points(mem: &memtable::MemMap) -> Points {
        let mut out = Points::new();
        for key in mem.keys() {
            let buf = &mem[key];
            for (i, &t) in buf.times.iter().enumerate() {
                let v = match &buf.values {
                    tsfile::basic::Column::Int64(v) => Value::Int64(v[i]),
                    tsfile::basic::Column::Double(v) => Value::Double(v[i]),
                    c => panic!("{c:?}"),
                };
                out.entry((key.0.to_string(), key.1.to_string(), t))
                    .or_default()
                    .push(v);
            }
        }
        out
    }

    /// Every point of the sealed files (format 000002) under `dir`.
    fn sealed_points(dir: &Path) -> Points {
        use tsfile::file::reader::TsFileReader;
        let mut out = Points::new();
        for f in sealed(dir) {
            let r = TsFileReader::open_path(&f).unwrap();
            for (dev, ts) in r.all_series().unwrap() {
                for p in r.series_reader_for(&dev, &ts).unwrap().points() {
                    let (t, v) = p.unwrap();
                    out.entry((dev.clone(), ts.measurement.clone(), t))
                        .or_default()
                        .push(v);
                }
            }
        }
        out
    }

    fn points(list: &[(&str, &str, i64, Value)]) -> Points {
        let mut out = Points::new();
        for (d, m, t, v) in list {
            out.entry((d.to_string(), m.to_string(), *t))
                .or_default()
                .push(v.clone());
        }
        out
    }

    /// Records of the same layout (devices alternating, a record with one more measurement,
    /// one with its measurements in another order, one naming a device twice) land in the
    /// memtable as written, each point under its own series.
    #[test]
    fn records_of_one_layout_land_under_their_own_series() {
        use Value::{Double as D, Int64 as I};
        let tmp = tempfile::tempdir().unwrap();
        let faults = testing::FaultFs::default();
        let mut e = testing::engine(tmp.path(), &faults);
        let now = Instant::now();
        e.write(
            0,
            &record("root.sg.d1", 1, &[("a", I(10)), ("b", D(0.5))]),
            now,
        );
        e.write(
            1,
            &record("root.sg.d2", 1, &[("a", I(20)), ("b", D(1.5))]),
            now,
        );
        e.write(
            2,
            &record("root.sg.d1", 2, &[("a", I(11)), ("b", D(2.5))]),
            now,
        );
        e.write(
            3,
            &record("root.sg.d2", 2, &[("a", I(21)), ("b", D(3.5))]),
            now,
        );
        // One more measurement, then the same ones in another order.
        let three = [("a", I(12)), ("b", D(4.5)), ("c", I(-7))];
        e.write(4, &record("root.sg.d1", 3, &three), now);
        e.write(
            5,
            &record("root.sg.d1", 4, &[("b", D(5.5)), ("a", I(13))]),
            now,
        );
        // One record, the device twice: the second run takes the first one's place.
        let mut wb = WriteBatch::default();
        for (dev, m, x) in [
            ("root.sg.d1", "c", -8),
            ("root.sg.d2", "a", 22),
            ("root.sg.d1", "a", 14),
        ] {
            wb.series.push(SeriesData {
                device: dev.into(),
                measurement: m.into(),
                ty: schema::SeriesType::default_for(tsfile::DataType::INT64),
                times: vec![5],
                values: tsfile::basic::Column::Int64(vec![x]),
            });
        }
        e.write(6, &wb.encode(), now);
        e.write(
            7,
            &record("root.sg.d1", 6, &[("a", I(15)), ("b", D(6.5))]),
            now,
        );
        let g = &e.groups[&(Arc::from("root.sg"), 0)];
        assert!(g.unseq.mem.is_empty());
        let want = points(&[
            ("root.sg.d1", "a", 1, I(10)),
            ("root.sg.d1", "a", 2, I(11)),
            ("root.sg.d1", "a", 3, I(12)),
            ("root.sg.d1", "a", 4, I(13)),
            ("root.sg.d1", "a", 5, I(14)),
            ("root.sg.d1", "a", 6, I(15)),
            ("root.sg.d1", "b", 1, D(0.5)),
            ("root.sg.d1", "b", 2, D(2.5)),
            ("root.sg.d1", "b", 3, D(4.5)),
            ("root.sg.d1", "b", 4, D(5.5)),
            ("root.sg.d1", "b", 6, D(6.5)),
            ("root.sg.d1", "c", 3, I(-7)),
            ("root.sg.d1", "c", 5, I(-8)),
            ("root.sg.d2", "a", 1, I(20)),
            ("root.sg.d2", "a", 2, I(21)),
            ("root.sg.d2", "a", 5, I(22)),
            ("root.sg.d2", "b", 1, D(1.5)),
            ("root.sg.d2", "b", 2, D(3.5)),
        ]);
        assert_eq!(mem_points(&g.seq.mem), want);
        assert_eq!(e.last_lsn, Some(7));
    }

    /// A flush between two records of one layout: the second record's points go to the new
    /// memtable (not to the flushed one), a late point of the same layout to the unsequence
    /// memtable, and every point is in the sealed files once.
    #[test]
    fn a_flush_between_records_of_one_layout_keeps_every_point_once() {
        use Value::{Double as D, Int64 as I};
        let tmp = tempfile::tempdir().unwrap();
        let faults = testing::FaultFs::default();
        let mut e = testing::engine(tmp.path(), &faults);
        let now = Instant::now();
        let key = (Arc::from("root.sg"), 0);
        e.write(
            0,
            &record("root.sg.d1", 10, &[("a", I(1)), ("b", D(0.25))]),
            now,
        );
        e.flush(&key, files::Space::Sequence);
        assert!(e.groups[&key].seq.mem.is_empty());
        e.write(
            1,
            &record("root.sg.d1", 20, &[("a", I(2)), ("b", D(0.75))]),
            now,
        );
        e.write(
            2,
            &record("root.sg.d1", 5, &[("a", I(3)), ("b", D(-1.0))]),
            now,
        );
        e.write(
            3,
            &record("root.sg.d1", 30, &[("a", I(4)), ("b", D(8.0))]),
            now,
        );
        let g = &e.groups[&key];
        assert_eq!(
            mem_points(&g.seq.mem),
            points(&[
                ("root.sg.d1", "a", 20, I(2)),
                ("root.sg.d1", "a", 30, I(4)),
                ("root.sg.d1", "b", 20, D(0.75)),
                ("root.sg.d1", "b", 30, D(8.0)),
            ])
        );
        assert_eq!(
            mem_points(&g.unseq.mem),
            points(&[
                ("root.sg.d1", "a", 5, I(3)),
                ("root.sg.d1", "b", 5, D(-1.0)),
            ])
        );
        e.seal_all(SealReason::Request);
        assert_eq!(
            sealed_points(tmp.path()),
            points(&[
                ("root.sg.d1", "a", 5, I(3)),
                ("root.sg.d1", "a", 10, I(1)),
                ("root.sg.d1", "a", 20, I(2)),
                ("root.sg.d1", "a", 30, I(4)),
                ("root.sg.d1", "b", 5, D(-1.0)),
                ("root.sg.d1", "b", 10, D(0.25)),
                ("root.sg.d1", "b", 20, D(0.75)),
                ("root.sg.d1", "b", 30, D(8.0)),
            ])
        );
    }

    /// With time partitions of 10, records of one layout in partitions 0, 1 and 0 again and a
    /// series whose points lie in both go each point to its partition's memtable.
    #[test]
    fn records_of_one_layout_in_other_partitions_go_to_theirs() {
        use Value::Int64 as I;
        let tmp = tempfile::tempdir().unwrap();
        let faults = testing::FaultFs::default();
        let mut e = testing::engine(tmp.path(), &faults);
        e.opts.partition_interval = Some(10);
        let now = Instant::now();
        e.write(
            0,
            &record("root.sg.d1", 5, &[("a", I(1)), ("b", I(2))]),
            now,
        );
        e.write(
            1,
            &record("root.sg.d1", 6, &[("a", I(3)), ("b", I(4))]),
            now,
        );
        // Partition 1 starts: partition 0 is sealed.
        e.write(
            2,
            &record("root.sg.d1", 15, &[("a", I(5)), ("b", I(6))]),
            now,
        );
        let mut wb = WriteBatch::default();
        for (m, times, values) in [("a", vec![16, 7], vec![7, 8]), ("b", vec![17], vec![9])] {
            wb.series.push(SeriesData {
                device: "root.sg.d1".into(),
                measurement: m.into(),
                ty: schema::SeriesType::default_for(tsfile::DataType::INT64),
                times,
                values: tsfile::basic::Column::Int64(values),
            });
        }
        e.write(3, &wb.encode(), now);
        let p1 = &e.groups[&(Arc::from("root.sg"), 1)];
        assert_eq!(
            mem_points(&p1.seq.mem),
            points(&[
                ("root.sg.d1", "a", 15, I(5)),
                ("root.sg.d1", "a", 16, I(7)),
                ("root.sg.d1", "b", 15, I(6)),
                ("root.sg.d1", "b", 17, I(9)),
            ])
        );
        // Partition 0 was sealed with its points of t 5 and 6; t 7 came after that.
        let p0 = &e.groups[&(Arc::from("root.sg"), 0)];
        let late = mem_points(&p0.seq.mem)
            .into_iter()
            .chain(mem_points(&p0.unseq.mem))
            .collect::<Points>();
        assert_eq!(late, points(&[("root.sg.d1", "a", 7, I(8))]));
        assert_eq!(
            sealed_points(tmp.path()),
            points(&[
                ("root.sg.d1", "a", 5, I(1)),
                ("root.sg.d1", "a", 6, I(3)),
                ("root.sg.d1", "b", 5, I(2)),
                ("root.sg.d1", "b", 6, I(4)),
            ])
        );
    }
}
