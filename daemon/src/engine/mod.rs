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
pub mod schema;

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::oneshot;
use tsfile::basic::Column;
use tsfile::file::properties::{MeasurementSchema, WriterProperties};
use tsfile::file::v4::{SeriesChunk, TsFileWriterV4};
use tsfile::file::writer::{DeviceTimeRange, TsFileWriter};
use tsfile::Encoding;
use tsfiled_fsio::{Fs, FsFile, FsRef};

use crate::health::{FaultKind, StorageHealth, StorageOp};
use crate::metrics::Metrics;
use crate::wal::{self, Lsn, WalStats};
use batch::{SeriesData, WriteBatch};
use files::{FormatVersion, SealEntry, SealJournal, Space};
use schema::{Registry, SeriesType};

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

/// A file as the status page shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStatus {
    /// Path relative to the data directory.
    pub path: String,
    /// Storage group.
    pub storage_group: String,
    /// Bytes written so far (sealed: the file size).
    pub bytes: u64,
    /// Points in it.
    pub points: u64,
    /// Unix ms of creation (open files) or of the seal (sealed files).
    pub time_ms: i64,
    /// Why it was sealed (sealed files).
    pub reason: Option<&'static str>,
}

/// What the engine publishes for the status page: open files and the last sealed ones.
#[derive(Debug, Default)]
pub struct EngineStatus {
    /// Open files by path.
    pub open: std::collections::BTreeMap<String, FileStatus>,
    /// Recently sealed files, newest first (at most [`RECENT_SEALED`]).
    pub sealed: std::collections::VecDeque<FileStatus>,
}

/// How many sealed files [`EngineStatus`] remembers.
pub const RECENT_SEALED: usize = 20;

/// Messages to the engine thread.
pub enum EngineMsg {
    /// A durable batch.
    Write {
        /// Its WAL position.
        lsn: Lsn,
        /// The points.
        batch: WriteBatch,
        /// When the payload was received.
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
}

struct SeriesBuf {
    ty: SeriesType,
    times: Vec<i64>,
    values: Column,
    /// Times strictly increasing so far.
    sorted: bool,
    /// Bytes of TEXT values (their heap parts).
    text_bytes: usize,
}

/// Memory of a memtable entry besides its vectors (map slot, key, buffer header).
const SERIES_OVERHEAD: usize = 160;

/// Heap bytes a series buffer holds (allocated capacity, not length).
fn footprint(b: &SeriesBuf) -> usize {
    let cap = match &b.values {
        Column::Boolean(v) => v.capacity(),
        Column::Int32(v) => v.capacity() * 4,
        Column::Float(v) => v.capacity() * 4,
        Column::Int64(v) => v.capacity() * 8,
        Column::Double(v) => v.capacity() * 8,
        Column::Text(v) => v.capacity() * 24,
    };
    b.times.capacity() * 8 + cap + b.text_bytes
}

type SeriesKey = (Arc<str>, Arc<str>);

type FileOut = BufWriter<Box<dyn FsFile>>;

/// One series of a flush: its key, type, strictly increasing times and values.
type FlushSeries = (SeriesKey, SeriesType, Vec<i64>, Column);

/// The writer of an open file, in the pipeline's format.
enum FileWriter {
    /// Format 000002.
    V2(Box<TsFileWriter<FileOut>>),
    /// TsFile v4.
    V4 {
        writer: TsFileWriterV4<FileOut>,
        /// Per device, the smallest and largest time written (for the `.resource`).
        ranges: BTreeMap<Arc<str>, (i64, i64)>,
    },
}

/// The encoding a series is written with in v4: its own where the daemon writes it in v4
/// ([`tsfiled_config::encoding_supported_v4`]), else PLAIN (a series typed while the
/// pipeline wrote format 2, such as BOOLEAN RLE, kept in the schema journal).
fn v4_encoding(ty: &SeriesType) -> Encoding {
    let ok = match (
        tsfiled_config::DataType::parse(ty.data_type.name()),
        tsfiled_config::Encoding::parse(ty.encoding.name()),
    ) {
        (Some(t), Some(e)) => tsfiled_config::encoding_supported_v4(t, e),
        _ => false,
    };
    if ok {
        ty.encoding
    } else {
        Encoding::PLAIN
    }
}

impl FileWriter {
    fn new(out: FileOut, props: WriterProperties, format: FormatVersion) -> Result<Self, Fail> {
        Ok(match format {
            FormatVersion::V2 => {
                FileWriter::V2(Box::new(TsFileWriter::new(out, props).map_err(ts_fail)?))
            }
            FormatVersion::V4 => FileWriter::V4 {
                writer: TsFileWriterV4::new(out, props).map_err(ts_fail)?,
                ranges: BTreeMap::new(),
            },
        })
    }

    /// Bytes written so far.
    fn position(&self) -> u64 {
        match self {
            FileWriter::V2(w) => w.position(),
            FileWriter::V4 { writer, .. } => writer.position(),
        }
    }

    /// Writes one flush (`series` sorted by device, then measurement): format 000002 as
    /// chunk groups followed by the version record `version`; v4 as one chunk group per
    /// device. `registered` holds the series this file has seen.
    fn write_flush(
        &mut self,
        series: &[FlushSeries],
        registered: &mut HashSet<SeriesKey>,
        version: i64,
    ) -> Result<(), Fail> {
        match self {
            FileWriter::V2(w) => {
                for ((device, measurement), ty, times, values) in series {
                    let key = (device.clone(), measurement.clone());
                    if !registered.contains(&key) {
                        w.register(
                            device,
                            MeasurementSchema::new(
                                &**measurement,
                                ty.data_type,
                                ty.encoding,
                                ty.compression,
                            ),
                        )
                        .map_err(ts_fail)?;
                        registered.insert(key);
                    }
                    w.write_tablet(device, times, &[(measurement, values)])
                        .map_err(ts_fail)?;
                }
                w.write_version(version).map_err(ts_fail)
            }
            FileWriter::V4 { writer, ranges } => {
                let mut i = 0;
                while i < series.len() {
                    let device = &series[i].0 .0;
                    let n = series[i..].iter().take_while(|s| &s.0 .0 == device).count();
                    let group = &series[i..i + n];
                    i += n;
                    let schemas: Vec<MeasurementSchema> = group
                        .iter()
                        .map(|((_, m), ty, _, _)| {
                            let enc = v4_encoding(ty);
                            let key = (device.clone(), m.clone());
                            if enc != ty.encoding && !registered.contains(&key) {
                                tracing::warn!(
                                    series = %format_args!("{device}.{m}"),
                                    "{} {} is not written in TsFile v4; the series is written PLAIN",
                                    ty.data_type.name(),
                                    ty.encoding.name()
                                );
                            }
                            registered.insert(key);
                            MeasurementSchema::new(&**m, ty.data_type, enc, ty.compression)
                        })
                        .collect();
                    let chunks: Vec<SeriesChunk<'_>> = group
                        .iter()
                        .zip(&schemas)
                        .map(|((_, _, times, values), schema)| SeriesChunk {
                            schema,
                            times,
                            values,
                        })
                        .collect();
                    writer.write_chunk_group(device, &chunks).map_err(ts_fail)?;
                    for (_, _, times, _) in group {
                        if let (Some(&first), Some(&last)) = (times.first(), times.last()) {
                            let r = ranges.entry(device.clone()).or_insert((first, last));
                            r.0 = r.0.min(first);
                            r.1 = r.1.max(last);
                        }
                    }
                }
                Ok(())
            }
        }
    }

    /// Writes the file's tail; returns the output and each device's time range.
    fn close(self) -> Result<(FileOut, Vec<DeviceTimeRange>), Fail> {
        match self {
            FileWriter::V2(w) => {
                let (out, summary) = w.close().map_err(ts_fail)?;
                Ok((out, summary.devices))
            }
            FileWriter::V4 { writer, ranges } => {
                let (out, _) = writer.finish().map_err(ts_fail)?;
                let devices = ranges
                    .into_iter()
                    .map(|(d, (start_time, end_time))| DeviceTimeRange {
                        device: d.to_string(),
                        start_time,
                        end_time,
                    })
                    .collect();
                Ok((out, devices))
            }
        }
    }
}

struct OpenFile {
    writer: FileWriter,
    format: FormatVersion,
    final_path: PathBuf,
    tmp_path: PathBuf,
    version: i64,
    registered: HashSet<SeriesKey>,
    points: u64,
    /// Chunks written so far (the writer keeps metadata for each until close).
    chunks: u64,
    /// Unix ms the file was created (its name's first part).
    created_ms: i64,
    written_reported: u64,
}

/// Memory the writer and engine keep per chunk of an open file until it is sealed
/// (chunk metadata with statistics), and per registered series.
const CHUNK_META_BYTES: u64 = 160;
const SERIES_META_BYTES: u64 = 400;

impl OpenFile {
    fn metadata_bytes(&self) -> u64 {
        self.chunks * CHUNK_META_BYTES + self.registered.len() as u64 * SERIES_META_BYTES
    }
}

struct Proc {
    mem: HashMap<SeriesKey, SeriesBuf>,
    mem_bytes: usize,
    file: Option<OpenFile>,
}

impl Proc {
    fn new() -> Proc {
        Proc {
            mem: HashMap::new(),
            mem_bytes: 0,
            file: None,
        }
    }
}

struct Group {
    sg: Arc<str>,
    partition: i64,
    seq: Proc,
    unseq: Proc,
    first_lsn: Option<Lsn>,
    first_at: Option<Instant>,
    last_write: Instant,
    oldest_receive: Option<Instant>,
    latest_flushed: HashMap<Arc<str>, i64>,
    /// Set while a flush or seal of the partition failed: its unsealed points are then
    /// neither in memory nor in open files, only in the WAL from `first_lsn` on, and are
    /// read back from there at `retry_at`.
    failed: Option<Instant>,
    /// Wait before the next retry after a failure (doubles; reset by a successful seal).
    backoff: Duration,
    /// Seal again once the points are read back (the seal that failed, and why).
    reseal: Option<SealReason>,
}

impl Group {
    fn has_data(&self) -> bool {
        self.first_lsn.is_some()
    }
}

fn push_from(dst: &mut Column, src: &Column, i: usize) {
    match (dst, src) {
        (Column::Boolean(d), Column::Boolean(s)) => d.push(s[i]),
        (Column::Int32(d), Column::Int32(s)) => d.push(s[i]),
        (Column::Int64(d), Column::Int64(s)) => d.push(s[i]),
        (Column::Float(d), Column::Float(s)) => d.push(s[i]),
        (Column::Double(d), Column::Double(s)) => d.push(s[i]),
        (Column::Text(d), Column::Text(s)) => d.push(s[i].clone()),
        _ => {}
    }
}

fn extend_from(dst: &mut Column, src: &Column) {
    match (dst, src) {
        (Column::Boolean(d), Column::Boolean(s)) => d.extend_from_slice(s),
        (Column::Int32(d), Column::Int32(s)) => d.extend_from_slice(s),
        (Column::Int64(d), Column::Int64(s)) => d.extend_from_slice(s),
        (Column::Float(d), Column::Float(s)) => d.extend_from_slice(s),
        (Column::Double(d), Column::Double(s)) => d.extend_from_slice(s),
        (Column::Text(d), Column::Text(s)) => d.extend(s.iter().cloned()),
        _ => {}
    }
}

fn gather(src: &Column, idx: &[usize]) -> Column {
    match src {
        Column::Boolean(s) => Column::Boolean(idx.iter().map(|&i| s[i]).collect()),
        Column::Int32(s) => Column::Int32(idx.iter().map(|&i| s[i]).collect()),
        Column::Int64(s) => Column::Int64(idx.iter().map(|&i| s[i]).collect()),
        Column::Float(s) => Column::Float(idx.iter().map(|&i| s[i]).collect()),
        Column::Double(s) => Column::Double(idx.iter().map(|&i| s[i]).collect()),
        Column::Text(s) => Column::Text(idx.iter().map(|&i| s[i].clone()).collect()),
    }
}

/// Sorts a series by time; for equal times the last written wins.
fn sort_dedup(times: Vec<i64>, values: Column) -> (Vec<i64>, Column) {
    let mut idx: Vec<usize> = (0..times.len()).collect();
    idx.sort_by_key(|&i| times[i]); // stable: equal times keep arrival order
    let mut keep: Vec<usize> = Vec::with_capacity(idx.len());
    for &i in &idx {
        match keep.last_mut() {
            Some(last) if times[*last] == times[i] => *last = i,
            _ => keep.push(i),
        }
    }
    let t = keep.iter().map(|&i| times[i]).collect();
    (t, gather(&values, &keep))
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
    groups: HashMap<(Arc<str>, i64), Group>,
    sg_of: HashMap<Arc<str>, Arc<str>>,
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
        Ok(Engine {
            opts,
            groups: HashMap::new(),
            sg_of: HashMap::new(),
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
        })
    }

    /// The pipeline's storage health, which the engine and the WAL report to.
    pub fn health_handle(&self) -> Arc<StorageHealth> {
        self.health.clone()
    }

    /// The status the engine publishes (open and recently sealed files).
    pub fn status_handle(&self) -> Arc<Mutex<EngineStatus>> {
        self.status.clone()
    }

    fn rel(&self, p: &Path) -> String {
        p.strip_prefix(&self.opts.data_dir)
            .unwrap_or(p)
            .to_string_lossy()
            .to_string()
    }

    /// Reports liveness: every live batch applied completes one pending item.
    pub fn set_progress(&mut self, progress: Option<crate::notify::Progress>) {
        self.progress = progress;
    }

    /// Connects the engine to its WAL (after replay).
    pub fn attach_wal(&mut self, wal: WalControl) {
        self.wal = Some(wal);
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
        let key = (sg.clone(), partition);
        if !self.groups.contains_key(&key) {
            let mut latest = HashMap::new();
            if let Some(m) = self.flushed_init.remove(&(sg.to_string(), partition)) {
                for (d, t) in m {
                    latest.insert(Arc::from(d.as_str()), t);
                }
            }
            self.groups.insert(
                key.clone(),
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
                },
            );
        }
        self.groups.get_mut(&key).expect("inserted above")
    }

    /// A series split by time partition (one part when it lies in one).
    fn split_partitions(&self, s: SeriesData) -> Vec<(i64, SeriesData)> {
        let single_partition = self.opts.partition_interval.is_none() || {
            let p0 = self.partition_of(s.times[0]);
            s.times.iter().all(|&t| self.partition_of(t) == p0)
        };
        if single_partition {
            return vec![(self.partition_of(s.times[0]), s)];
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

    /// Applies one durable batch. `replay` skips points already sealed. Points of a failed
    /// partition are skipped: they are read back from the WAL when it is retried.
    pub fn apply(&mut self, lsn: Lsn, batch: WriteBatch, received: Instant, replay: bool) {
        self.last_lsn = Some(lsn);
        let mut touched: Vec<(Arc<str>, i64)> = Vec::new();
        for s in batch.series {
            if s.is_empty() {
                continue;
            }
            let sg = self.sg_for(&s.device);
            for (p, part) in self.split_partitions(s) {
                if (replay && self.is_covered(&sg, p, lsn)) || self.is_failed(&sg, p) {
                    continue;
                }
                self.insert_series(&sg, p, lsn, received, part);
                if !touched.iter().any(|(a, b)| a == &sg && *b == p) {
                    touched.push((sg.clone(), p));
                }
            }
        }
        if self.opts.partition_interval.is_some() {
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
        }
        self.enforce_budget();
        self.metrics
            .memtable_bytes
            .with_label_values(&[&self.opts.pipeline])
            .set(self.mem_total as i64);
    }

    fn is_covered(&self, sg: &str, p: i64, lsn: Lsn) -> bool {
        self.covered
            .get(&(sg.to_string(), p))
            .is_some_and(|&c| lsn < c)
    }

    fn insert_series(&mut self, sg: &Arc<str>, p: i64, lsn: Lsn, received: Instant, s: SeriesData) {
        let g = self.group(sg, p);
        if g.first_lsn.is_none() {
            g.first_lsn = Some(lsn);
            g.first_at = Some(Instant::now());
        }
        g.last_write = Instant::now();
        if g.oldest_receive.is_none() {
            g.oldest_receive = Some(received);
        }
        let latest = g.latest_flushed.get(&s.device).copied();
        let min_t = s.times.iter().copied().min().unwrap_or(i64::MIN);
        let mut added = 0usize;
        let key: SeriesKey = (s.device.clone(), s.measurement.clone());
        let new_buf = || SeriesBuf {
            ty: s.ty,
            times: Vec::new(),
            values: Column::new(s.ty.data_type),
            sorted: true,
            text_bytes: 0,
        };
        match latest {
            Some(l) if min_t <= l => {
                // Split: newer points to sequence, the rest to unsequence.
                for (proc_, keep_seq) in [(&mut g.seq, true), (&mut g.unseq, false)] {
                    let idx: Vec<usize> = (0..s.times.len())
                        .filter(|&i| (s.times[i] > l) == keep_seq)
                        .collect();
                    if idx.is_empty() {
                        continue;
                    }
                    let (before, buf) = match proc_.mem.entry(key.clone()) {
                        Entry::Occupied(e) => (footprint(e.get()) + SERIES_OVERHEAD, e.into_mut()),
                        Entry::Vacant(e) => (0, e.insert(new_buf())),
                    };
                    for &i in &idx {
                        let t = s.times[i];
                        if buf.times.last().is_some_and(|&last| t <= last) {
                            buf.sorted = false;
                        }
                        buf.times.push(t);
                        push_from(&mut buf.values, &s.values, i);
                        if let Column::Text(v) = &s.values {
                            buf.text_bytes += v[i].len();
                        }
                    }
                    let after = footprint(buf) + SERIES_OVERHEAD;
                    let bytes = after.saturating_sub(before);
                    proc_.mem_bytes += bytes;
                    added += bytes;
                }
            }
            _ => {
                let proc_ = &mut g.seq;
                let (before, buf) = match proc_.mem.entry(key) {
                    Entry::Occupied(e) => (footprint(e.get()) + SERIES_OVERHEAD, e.into_mut()),
                    Entry::Vacant(e) => (0, e.insert(new_buf())),
                };
                let mut sorted = buf.sorted
                    && buf
                        .times
                        .last()
                        .is_none_or(|&last| s.times.first().is_some_and(|&f| f > last));
                sorted = sorted && s.times.windows(2).all(|w| w[0] < w[1]);
                buf.sorted = sorted;
                if let Column::Text(v) = &s.values {
                    buf.text_bytes += v.iter().map(|x| x.len()).sum::<usize>();
                }
                buf.times.extend_from_slice(&s.times);
                extend_from(&mut buf.values, &s.values);
                let after = footprint(buf) + SERIES_OVERHEAD;
                let bytes = after.saturating_sub(before);
                proc_.mem_bytes += bytes;
                added += bytes;
            }
        }
        self.mem_total += added;
    }

    fn enforce_budget(&mut self) {
        let big: Vec<(Arc<str>, i64)> = self
            .groups
            .iter()
            .filter(|(_, g)| g.seq.mem_bytes >= self.opts.chunk_group_bytes)
            .map(|(k, _)| k.clone())
            .collect();
        for key in big {
            self.flush_seq_and_check_size(&key);
        }
        if self.mem_total < self.opts.memtable_bytes {
            return;
        }
        let target = self.opts.memtable_bytes / 2;
        while self.mem_total > target {
            let Some((key, space)) = self
                .groups
                .iter()
                .flat_map(|(k, g)| {
                    [
                        (k, Space::Sequence, g.seq.mem_bytes),
                        (k, Space::Unsequence, g.unseq.mem_bytes),
                    ]
                })
                .filter(|x| x.2 > 0)
                .max_by_key(|x| x.2)
                .map(|(k, s, _)| (k.clone(), s))
            else {
                break;
            };
            if space == Space::Unsequence {
                // An unsequence file takes exactly one flush (at its seal), so its
                // series never go back in time: seal instead of flushing.
                self.seal_group(&key, SealReason::Size);
                continue;
            }
            self.flush_seq_and_check_size(&key);
        }
    }

    fn flush_seq_and_check_size(&mut self, key: &(Arc<str>, i64)) {
        self.flush(key, Space::Sequence);
        // Seal at the size limit, and also when the open file's in-memory metadata
        // (one entry per chunk, kept until the file is closed) grows past a quarter of
        // the memtable budget: many series flushed often would otherwise grow without bound.
        let meta_cap = (self.opts.memtable_bytes as u64 / 4).max(4 << 20);
        let over = self
            .groups
            .get(key)
            .and_then(|g| g.seq.file.as_ref())
            .is_some_and(|f| {
                f.writer.position() >= self.opts.file_max_bytes || f.metadata_bytes() >= meta_cap
            });
        if over {
            self.seal_group(key, SealReason::Size);
        }
    }

    fn next_version(&mut self, sg: &Arc<str>) -> i64 {
        let v = self.versions.entry(sg.clone()).or_insert(0);
        *v += 1;
        *v
    }

    fn create_millis(&mut self) -> i64 {
        let m = self
            .opts
            .clock
            .now_millis()
            .max(self.last_create_millis + 1);
        self.last_create_millis = m;
        m
    }

    /// Flushes one memtable into its open file (creating it if needed).
    fn flush(&mut self, key: &(Arc<str>, i64), space: Space) {
        let started = Instant::now();
        let Some(g) = self.groups.get_mut(key) else {
            return;
        };
        let proc_ = match space {
            Space::Sequence => &mut g.seq,
            Space::Unsequence => &mut g.unseq,
        };
        if proc_.mem.is_empty() {
            return;
        }
        let mem = std::mem::take(&mut proc_.mem);
        let bytes = std::mem::take(&mut proc_.mem_bytes);
        self.mem_total = self.mem_total.saturating_sub(bytes);
        let sg = g.sg.clone();
        let partition = g.partition;
        let oldest = g.oldest_receive.take();
        let need_file = g_proc(g, space).file.is_none();
        let (version_for_file, millis) = if need_file {
            (Some(self.next_version(&sg)), self.create_millis())
        } else {
            (None, 0)
        };
        let flush_version = self.next_version(&sg);
        let data_dir = self.opts.data_dir.clone();
        let props = self.opts.writer.clone();
        let format = self.opts.format;
        let fs = self.opts.fs.clone();
        let Some(g) = self.groups.get_mut(key) else {
            return;
        };
        let result = (|| -> Result<u64, Fail> {
            let proc_ = g_proc(g, space);
            if let Some(v) = version_for_file {
                proc_.file = Some(open_file(
                    &*fs, &data_dir, space, &sg, partition, millis, v, props, format,
                )?);
            }
            let file = proc_
                .file
                .as_mut()
                .ok_or((FaultKind::Io, "no open file".to_string()))?;
            let mut series: Vec<(SeriesKey, SeriesBuf)> = mem.into_iter().collect();
            series.sort_by(|a, b| a.0.cmp(&b.0));
            let mut points = 0u64;
            let mut device_max: HashMap<Arc<str>, i64> = HashMap::new();
            let mut flushed: Vec<FlushSeries> = Vec::with_capacity(series.len());
            for (key, buf) in series {
                let (times, values) = if buf.sorted {
                    (buf.times, buf.values)
                } else {
                    sort_dedup(buf.times, buf.values)
                };
                let Some(&last) = times.last() else { continue };
                points += times.len() as u64;
                let e = device_max.entry(key.0.clone()).or_insert(last);
                *e = (*e).max(last);
                flushed.push((key, buf.ty, times, values));
            }
            file.writer
                .write_flush(&flushed, &mut file.registered, flush_version)?;
            file.chunks += flushed.len() as u64;
            file.points += points;
            if space == Space::Sequence {
                for (d, t) in device_max {
                    let e = g.latest_flushed.entry(d).or_insert(t);
                    *e = (*e).max(t);
                }
            }
            Ok(points)
        })();
        match result {
            Ok(points) => {
                let pl = [self.opts.pipeline.as_str()];
                self.metrics
                    .points_written
                    .with_label_values(&pl)
                    .inc_by(points);
                self.metrics
                    .flush_seconds
                    .with_label_values(&pl)
                    .observe(started.elapsed().as_secs_f64());
                if let Some(o) = oldest {
                    self.metrics
                        .end_to_end_seconds
                        .with_label_values(&pl)
                        .observe(o.elapsed().as_secs_f64());
                }
                if let Some(f) = g_proc(g, space).file.as_mut() {
                    let pos = f.writer.position();
                    self.metrics
                        .bytes_written
                        .with_label_values(&pl)
                        .inc_by(pos.saturating_sub(f.written_reported));
                    f.written_reported = pos;
                    let path = f
                        .final_path
                        .strip_prefix(&self.opts.data_dir)
                        .unwrap_or(&f.final_path)
                        .to_string_lossy()
                        .to_string();
                    let (points, created) = (f.points, f.created_ms);
                    if let Ok(mut st) = self.status.lock() {
                        st.open.insert(
                            path.clone(),
                            FileStatus {
                                path,
                                storage_group: sg.to_string(),
                                bytes: pos,
                                points,
                                time_ms: created,
                                reason: None,
                            },
                        );
                    }
                }
            }
            Err((kind, e)) => {
                self.fail_group(key, StorageOp::Flush, kind, e, None, None);
            }
        }
        self.update_open_files();
    }

    /// A flush or seal of a partition failed: drops what the partition holds in memory and
    /// open files (its points stay in the WAL from `first_lsn`, or the failed seal's `pin`),
    /// takes it out of intake and sealing, and schedules reading its points back from the
    /// WAL with backoff ([`Engine::retry_failed`]). No later seal of the partition can be
    /// committed before that, so the seal journal's `covered` never passes points that are
    /// in no sealed file.
    fn fail_group(
        &mut self,
        key: &(Arc<str>, i64),
        op: StorageOp,
        kind: FaultKind,
        error: String,
        pin: Option<Lsn>,
        reseal: Option<SealReason>,
    ) {
        let Some(g) = self.groups.get_mut(key) else {
            return;
        };
        let mut freed = 0;
        let mut dropped = Vec::new();
        for space in [Space::Sequence, Space::Unsequence] {
            let p = g_proc(g, space);
            p.mem.clear();
            freed += std::mem::take(&mut p.mem_bytes);
            dropped.extend(p.file.take());
        }
        g.first_lsn = match (g.first_lsn, pin) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        g.first_at = None;
        g.oldest_receive = None;
        g.backoff = if g.backoff.is_zero() {
            RETRY_FIRST
        } else {
            (g.backoff * 2).min(RETRY_MAX)
        };
        g.failed = Some(Instant::now() + g.backoff);
        if reseal.is_some() {
            g.reseal = reseal;
        }
        let backoff = g.backoff;
        self.mem_total = self.mem_total.saturating_sub(freed);
        for f in dropped {
            let _ = self.opts.fs.remove_file(&f.tmp_path);
            let rel = self.rel(&f.final_path);
            if let Ok(mut st) = self.status.lock() {
                st.open.remove(&rel);
            }
        }
        tracing::error!(
            storage_group = %key.0,
            partition = key.1,
            op = op.label(),
            error = %error,
            retry_in_ms = backoff.as_millis() as u64,
            "storage failed: the partition's points stay in the write-ahead log; intake is refused until a retry succeeds"
        );
        self.health.failed(op, kind, error);
        self.metrics
            .memtable_bytes
            .with_label_values(&[&self.opts.pipeline])
            .set(self.mem_total as i64);
        self.update_open_files();
    }

    /// Reads back every failed partition whose retry is due (`force`: every failed one).
    pub fn retry_failed(&mut self, force: bool) {
        let Some(dir) = self.wal.as_ref().map(|w| w.dir.clone()) else {
            return;
        };
        let now = Instant::now();
        let due: Vec<(Arc<str>, i64)> = self
            .groups
            .iter()
            .filter(|(_, g)| g.failed.is_some_and(|at| force || at <= now))
            .map(|(k, _)| k.clone())
            .collect();
        for key in due {
            self.rebuild(&key, &dir);
        }
        if self.groups.values().all(|g| g.failed.is_none()) {
            for op in [StorageOp::Flush, StorageOp::Seal, StorageOp::Rebuild] {
                self.health.recovered(op);
            }
        }
        self.publish_watermark();
    }

    /// Reads a failed partition's points back from the WAL into its memtables (flushing as
    /// the budget requires), then seals it again if a seal had failed.
    fn rebuild(&mut self, key: &(Arc<str>, i64), dir: &Path) {
        let Some(g) = self.groups.get_mut(key) else {
            return;
        };
        g.failed = None;
        let Some(from) = g.first_lsn.take() else {
            return;
        };
        let upto = self.last_lsn.unwrap_or(from);
        tracing::info!(storage_group = %key.0, partition = key.1, "retrying: reading the partition's points back from the write-ahead log");
        self.rebuilding = Some((key.clone(), from));
        let registry = self.registry.clone();
        let fs = self.opts.fs.clone();
        let result = wal::read_range(&*fs, dir, from, upto, |lsn, payload| {
            let decoded = {
                let mut reg = registry.lock().unwrap_or_else(|e| e.into_inner());
                WriteBatch::decode(payload, |d, m, ty| {
                    let s = reg.define(d, m, ty);
                    (s.device, s.measurement)
                })
            };
            match decoded {
                Ok(b) => self.apply_rebuilt(key, lsn, b),
                Err(e) => {
                    tracing::error!(lsn, error = %e, "write-ahead log: undecodable record skipped")
                }
            }
            !self.is_failed(&key.0, key.1)
        });
        self.rebuilding = None;
        match result {
            Err(e) => {
                let msg = format!("reading back the write-ahead log: {e}");
                self.fail_group(
                    key,
                    StorageOp::Rebuild,
                    FaultKind::of(&e),
                    msg,
                    Some(from),
                    None,
                );
            }
            Ok(()) if self.is_failed(&key.0, key.1) => {}
            Ok(()) => {
                let reseal = self.groups.get_mut(key).and_then(|g| g.reseal.take());
                if let Some(r) = reseal {
                    self.seal_group(key, r);
                }
            }
        }
    }

    /// One record read back for partition `key` (others' points are skipped: they are in
    /// their own memtables or sealed).
    fn apply_rebuilt(&mut self, key: &(Arc<str>, i64), lsn: Lsn, batch: WriteBatch) {
        self.rebuilding = Some((key.clone(), lsn));
        let received = Instant::now();
        for s in batch.series {
            if s.is_empty() {
                continue;
            }
            let sg = self.sg_for(&s.device);
            if sg != key.0 {
                continue;
            }
            for (p, part) in self.split_partitions(s) {
                if p == key.1 {
                    self.insert_series(&sg, p, lsn, received, part);
                }
            }
        }
        self.enforce_budget();
    }

    /// The `covered` LSN of a seal of `key` now: every point of the partition before it is
    /// in its files (while the partition is read back, only up to the record reached).
    fn covered_for(&self, key: &(Arc<str>, i64)) -> Lsn {
        match &self.rebuilding {
            Some((k, lsn)) if k == key => lsn + 1,
            _ => self.last_lsn.map_or(0, |l| l + 1),
        }
    }

    fn update_open_files(&self) {
        let n: usize = self
            .groups
            .values()
            .map(|g| g.seq.file.is_some() as usize + g.unseq.file.is_some() as usize)
            .sum::<usize>()
            + self.pending.values().map(|p| p.files).sum::<usize>();
        self.metrics
            .open_files
            .with_label_values(&[&self.opts.pipeline])
            .set(n as i64);
    }

    /// Flushes a partition's memtables and hands its files to the sealer (closing,
    /// fsync, `.resource`, journal commit and renames happen there, off the intake path).
    fn seal_group(&mut self, key: &(Arc<str>, i64), reason: SealReason) {
        let started = Instant::now();
        // A partition's seals commit in log order, one at a time: wait for its previous
        // seal (if that failed, the partition is failed and is not sealed now).
        while self.sealer.is_some() && self.pending.values().any(|p| p.key == *key) {
            match self.sealer.as_ref().and_then(|s| s.done.recv().ok()) {
                Some(d) => self.seal_done(d),
                None => break,
            }
        }
        self.flush(key, Space::Sequence);
        self.flush(key, Space::Unsequence);
        let covered = self.covered_for(key);
        let Some(g) = self.groups.get_mut(key) else {
            return;
        };
        if g.failed.is_some() {
            return;
        }
        let files: Vec<OpenFile> = [Space::Sequence, Space::Unsequence]
            .into_iter()
            .filter_map(|space| g_proc(g, space).file.take())
            .collect();
        let pin = g.first_lsn.take().unwrap_or(covered);
        g.first_at = None;
        if files.is_empty() {
            return;
        }
        let sg = g.sg.clone();
        let partition = g.partition;
        let paths: Vec<String> = files.iter().map(|f| self.rel(&f.final_path)).collect();
        if let Ok(mut st) = self.status.lock() {
            for p in &paths {
                st.open.remove(p);
            }
        }
        let job = SealJob {
            id: self.next_job,
            sg: sg.to_string(),
            partition,
            covered,
            max_version: self.versions.get(&sg).copied().unwrap_or(0),
            files,
            reason,
            started,
        };
        self.next_job += 1;
        self.pending.insert(
            job.id,
            PendingSeal {
                key: key.clone(),
                pin,
                files: job.files.len(),
            },
        );
        // Bound the work (and open files) queued behind the sealer.
        while self.sealer.is_some() && self.pending.len() > 4 {
            let done = self.sealer.as_ref().and_then(|s| s.done.recv().ok());
            match done {
                Some(d) => self.seal_done(d),
                None => break,
            }
        }
        if let Some(s) = &self.sealer {
            if let Err(mpsc::SendError(job)) = s.jobs.send(job) {
                let d = SealDone::failed(&job, (FaultKind::Io, "the sealer thread is gone".into()));
                self.seal_done(d);
            }
        } else if let Some(j) = self.journal.as_mut() {
            let d = j.complete(job);
            self.seal_done(d);
        }
        self.update_open_files();
    }

    /// Takes note of a finished seal.
    fn seal_done(&mut self, d: SealDone) {
        let Some(PendingSeal { key, pin, .. }) = self.pending.remove(&d.id) else {
            return;
        };
        let pl = [self.opts.pipeline.as_str(), d.reason.label()];
        match d.error {
            None => {
                if let Some(g) = self.groups.get_mut(&key) {
                    g.backoff = Duration::ZERO;
                }
                self.metrics
                    .files_sealed
                    .with_label_values(&pl)
                    .inc_by(d.files as u64);
                self.metrics
                    .seal_seconds
                    .with_label_values(&pl[..1])
                    .observe(d.started.elapsed().as_secs_f64());
                if let Ok(mut st) = self.status.lock() {
                    for (path, bytes, points) in &d.sealed {
                        st.sealed.push_front(FileStatus {
                            path: path.clone(),
                            storage_group: d.sg.clone(),
                            bytes: *bytes,
                            points: *points,
                            time_ms: now_millis(),
                            reason: Some(d.reason.label()),
                        });
                    }
                    st.sealed.truncate(RECENT_SEALED);
                }
            }
            Some((kind, e)) => {
                // No later seal of this partition may be committed before these points are
                // sealed: its journal entry would claim (as `covered`) that they are, and
                // replay would skip them.
                self.fail_group(&key, StorageOp::Seal, kind, e, Some(pin), Some(d.reason));
            }
        }
        self.update_open_files();
        self.publish_watermark();
    }

    /// Takes note of every seal the sealer finished so far.
    fn poll_sealer(&mut self) {
        loop {
            let d = self.sealer.as_ref().and_then(|s| s.done.try_recv().ok());
            match d {
                Some(d) => self.seal_done(d),
                None => return,
            }
        }
    }

    /// Waits until every handed-off seal is done.
    fn drain_sealer(&mut self) {
        while !self.pending.is_empty() {
            let d = self.sealer.as_ref().and_then(|s| s.done.recv().ok());
            match d {
                Some(d) => self.seal_done(d),
                None => {
                    // The sealer is gone: nothing more will complete.
                    let lost: Vec<PendingSeal> = self.pending.drain().map(|(_, p)| p).collect();
                    for p in lost {
                        let e = "the sealer thread is gone".to_string();
                        self.fail_group(
                            &p.key,
                            StorageOp::Seal,
                            FaultKind::Io,
                            e,
                            Some(p.pin),
                            None,
                        );
                    }
                }
            }
        }
    }

    /// Starts the sealer thread (sealing then runs beside intake).
    fn start_sealer(&mut self) -> io::Result<()> {
        let Some(mut journal) = self.journal.take() else {
            return Ok(());
        };
        let (jobs, jobs_rx) = mpsc::channel::<SealJob>();
        let (done_tx, done) = mpsc::channel::<SealDone>();
        let thread = std::thread::Builder::new()
            .name(format!("tsfiled-seal-{}", self.opts.pipeline))
            .spawn(move || {
                for job in jobs_rx {
                    if done_tx.send(journal.complete(job)).is_err() {
                        break;
                    }
                }
                journal.rename_committed();
            })?;
        self.sealer = Some(Sealer { jobs, done, thread });
        Ok(())
    }

    fn stop_sealer(&mut self) {
        self.drain_sealer();
        if let Some(Sealer { jobs, done, thread }) = self.sealer.take() {
            drop(jobs);
            drop(done);
            let _ = thread.join();
        }
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

    /// Logs the partitions left unsealed at shutdown because storage is failing.
    fn report_unsealed(&self) {
        let failed = self.groups.values().filter(|g| g.failed.is_some()).count();
        if failed > 0 {
            tracing::warn!(
                partitions = failed,
                "stopping with partitions that could not be sealed (storage failing); their points stay in the write-ahead log and are written at the next start"
            );
        }
    }

    /// Seals every partition with data.
    pub fn seal_all(&mut self, reason: SealReason) {
        let keys: Vec<_> = self
            .groups
            .iter()
            .filter(|(_, g)| g.has_data() || g.seq.file.is_some() || g.unseq.file.is_some())
            .map(|(k, _)| k.clone())
            .collect();
        for k in keys {
            self.seal_group(&k, reason);
        }
        self.publish_watermark();
    }

    /// The engine thread's loop.
    pub fn run(mut self, rx: Receiver<EngineMsg>) {
        if let Err(e) = self.start_sealer() {
            tracing::warn!(error = %e, "cannot start the sealer thread; sealing inline");
        }
        let tick = self.opts.tick;
        let stall = stall_hook();
        let mut last_tick = Instant::now();
        loop {
            let msg = rx.recv_timeout(tick);
            self.poll_sealer();
            match msg {
                Ok(EngineMsg::Write { .. }) if stall => loop {
                    std::thread::park();
                },
                Ok(EngineMsg::Write {
                    lsn,
                    batch,
                    received,
                }) => {
                    self.apply(lsn, batch, received, false);
                    if let Some(p) = &self.progress {
                        p.complete(1);
                    }
                }
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
                    while let Ok(m) = rx.try_recv() {
                        match m {
                            EngineMsg::Write {
                                lsn,
                                batch,
                                received,
                            } => self.apply(lsn, batch, received, false),
                            EngineMsg::SealAll { done, .. }
                            | EngineMsg::Stop { done }
                            | EngineMsg::Abandon { done } => {
                                let _ = done.send(());
                            }
                        }
                    }
                    // A last try for failed partitions (space may be back).
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

/// Test-only hook: with `TSFILED_TEST_STALL_ENGINE=1` in the environment the engine stops
/// processing at its first live write (it parks forever), so the systemd watchdog test can
/// see the pings stop. Never set it in production.
pub fn stall_hook() -> bool {
    std::env::var_os("TSFILED_TEST_STALL_ENGINE").is_some_and(|v| v == "1")
}

/// A seal handed to the sealer and not done yet.
struct PendingSeal {
    /// Its partition.
    key: (Arc<str>, i64),
    /// The lowest LSN it holds (the WAL keeps everything from there).
    pin: Lsn,
    /// Files in it.
    files: usize,
}

/// The sealer thread's handle.
struct Sealer {
    jobs: mpsc::Sender<SealJob>,
    done: mpsc::Receiver<SealDone>,
    thread: std::thread::JoinHandle<()>,
}

/// A partition's files to seal.
struct SealJob {
    id: u64,
    sg: String,
    partition: i64,
    covered: Lsn,
    max_version: i64,
    files: Vec<OpenFile>,
    reason: SealReason,
    started: Instant,
}

/// The outcome of a [`SealJob`].
struct SealDone {
    id: u64,
    sg: String,
    reason: SealReason,
    started: Instant,
    files: usize,
    /// (path relative to the data directory, bytes, points) of each sealed file.
    sealed: Vec<(String, u64, u64)>,
    error: Option<Fail>,
}

impl SealDone {
    fn failed(job: &SealJob, error: Fail) -> SealDone {
        SealDone {
            id: job.id,
            sg: job.sg.clone(),
            reason: job.reason,
            started: job.started,
            files: 0,
            sealed: Vec::new(),
            error: Some(error),
        }
    }
}

/// The seal journal and what its compaction keeps.
struct JournalState {
    journal: SealJournal,
    entries: usize,
    last_by_group: HashMap<(String, i64), SealEntry>,
    data_dir: PathBuf,
    fs: FsRef,
    /// Committed files whose renames into place failed (retried with every seal, at the
    /// sealer's end, and by recovery at the next start).
    unrenamed: Vec<String>,
}

impl JournalState {
    /// What a rewritten journal must hold: for files whose renames are still pending and
    /// that no group's last entry lists, an entry naming them (first, with nothing
    /// covered, so recovery still rolls them forward), then each group's last entry.
    fn keep(&self) -> Vec<SealEntry> {
        let listed: HashSet<&String> = self
            .last_by_group
            .values()
            .flat_map(|e| e.files.iter())
            .collect();
        let mut keep: Vec<SealEntry> = self
            .unrenamed
            .iter()
            .filter(|f| !listed.contains(f))
            .filter_map(|f| {
                let mut parts = f.split('/');
                let (_space, sg, partition) = (parts.next()?, parts.next()?, parts.next()?);
                Some(SealEntry {
                    sg: sg.to_string(),
                    partition: partition.parse().ok()?,
                    covered: 0,
                    max_version: 0,
                    files: vec![f.clone()],
                })
            })
            .collect();
        keep.extend(self.last_by_group.values().cloned());
        keep
    }

    /// Renames committed files into place; keeps those that fail for later.
    fn rename_committed(&mut self) {
        let data_dir = self.data_dir.clone();
        let fs = self.fs.clone();
        self.unrenamed.retain(|f| match files::roll_forward(&*fs, &data_dir, f) {
            Ok(_) => false,
            Err(e) => {
                tracing::error!(file = %f, error = %e, "renaming a sealed file into place failed (retried at the next seal and at start)");
                true
            }
        });
    }

    /// Closes and fsyncs the files, writes their `.resource`, commits the seal in the
    /// journal and renames the files into place (the TsFile last).
    fn complete(&mut self, job: SealJob) -> SealDone {
        // Test-only hook (`TSFILED_TEST_SEAL_DELAY_MS`): a slow seal.
        if let Some(d) = crate::wal::test_delay(&SEAL_DELAY, "TSFILED_TEST_SEAL_DELAY_MS") {
            std::thread::sleep(d);
        }
        let mut done = SealDone::failed(&job, (FaultKind::Io, String::new()));
        let mut prepared: Vec<(PathBuf, PathBuf, u64)> = Vec::new();
        let mut error = None;
        let fs_ref = self.fs.clone();
        let fs = &*fs_ref;
        for f in job.files {
            match finish_file(fs, f) {
                Ok(p) => prepared.push(p),
                Err((e, tmp)) => {
                    let _ = fs.remove_file(&tmp);
                    error = Some(e);
                }
            }
        }
        if error.is_none() {
            // The temporaries' names must be durable before the commit point, or a power
            // loss leaves a committed seal whose files are gone.
            error = sync_parents(fs, prepared.iter().map(|p| p.0.as_path())).err();
        }
        if let Some(e) = error {
            for (fin, tmp, _) in &prepared {
                let _ = fs.remove_file(tmp);
                let _ = fs.remove_file(&files::with_suffix(fin, ".resource.tmp"));
            }
            done.error = Some(e);
            return done;
        }
        let entry = SealEntry {
            sg: job.sg.clone(),
            partition: job.partition,
            covered: job.covered,
            max_version: job.max_version,
            files: prepared
                .iter()
                .map(|(fin, _, _)| {
                    fin.strip_prefix(&self.data_dir)
                        .unwrap_or(fin)
                        .to_string_lossy()
                        .to_string()
                })
                .collect(),
        };
        let known = self.keep();
        if let Err(e) = self.journal.commit(&entry, &known) {
            for (fin, tmp, _) in &prepared {
                let _ = fs.remove_file(tmp);
                let _ = fs.remove_file(&files::with_suffix(fin, ".resource.tmp"));
            }
            done.error = Some((FaultKind::of(&e), format!("seal journal write failed: {e}")));
            return done;
        }
        self.unrenamed.extend(entry.files.iter().cloned());
        self.rename_committed();
        for (fin, _, points) in &prepared {
            tracing::debug!(file = %fin.display(), points, reason = job.reason.label(), "sealed");
        }
        done.files = prepared.len();
        done.sealed = prepared
            .iter()
            .zip(&entry.files)
            .map(|((fin, _, points), rel)| {
                let bytes = fs.file_len(fin).unwrap_or(0);
                (rel.clone(), bytes, *points)
            })
            .collect();
        done.error = None;
        self.last_by_group
            .insert((entry.sg.clone(), entry.partition), entry);
        self.entries += 1;
        if self.entries > 1000 + 2 * self.last_by_group.len() {
            let keep = self.keep();
            if self.journal.compact(&keep).is_ok() {
                self.entries = keep.len();
            }
        }
        done
    }
}

fn g_proc(g: &mut Group, space: Space) -> &mut Proc {
    match space {
        Space::Sequence => &mut g.seq,
        Space::Unsequence => &mut g.unseq,
    }
}

#[allow(clippy::too_many_arguments)]
fn open_file(
    fs: &dyn Fs,
    data: &Path,
    space: Space,
    sg: &str,
    partition: i64,
    millis: i64,
    version: i64,
    props: WriterProperties,
    format: FormatVersion,
) -> Result<OpenFile, Fail> {
    let final_path = files::tsfile_path(data, space, sg, partition, millis, version, format);
    let tmp_path = files::with_suffix(&final_path, ".tmp");
    if let Some(dir) = final_path.parent() {
        tsfiled_fsio::create_dir_all_synced(fs, dir).map_err(|e| io_fail("creating", dir, e))?;
    }
    let f = fs
        .create(&tmp_path)
        .map_err(|e| io_fail("creating", &tmp_path, e))?;
    let writer = FileWriter::new(BufWriter::with_capacity(256 * 1024, f), props, format)?;
    Ok(OpenFile {
        writer,
        format,
        final_path,
        tmp_path,
        version,
        registered: HashSet::new(),
        points: 0,
        chunks: 0,
        created_ms: millis,
        written_reported: 0,
    })
}

/// Fsyncs each distinct parent directory of `paths`.
fn sync_parents<'a>(fs: &dyn Fs, paths: impl Iterator<Item = &'a Path>) -> Result<(), Fail> {
    let mut dirs: Vec<&Path> = paths.filter_map(Path::parent).collect();
    dirs.sort();
    dirs.dedup();
    for d in dirs {
        fs.sync_dir(d)
            .map_err(|e| io_fail("syncing directory", d, e))?;
    }
    Ok(())
}

/// A storage failure: its kind and a message naming the file.
type Fail = (FaultKind, String);

fn io_fail(what: &str, path: &Path, e: io::Error) -> Fail {
    (FaultKind::of(&e), format!("{what} {}: {e}", path.display()))
}

fn ts_fail(e: tsfile::Error) -> Fail {
    match &e {
        tsfile::Error::Io(io) => (FaultKind::of(io), e.to_string()),
        _ => (FaultKind::Io, e.to_string()),
    }
}

/// Closes a file, fsyncs it and writes its `.resource` temporary. Returns
/// (final path, tmp path, points), or the error and the tmp path.
fn finish_file(fs: &dyn Fs, f: OpenFile) -> Result<(PathBuf, PathBuf, u64), (Fail, PathBuf)> {
    let tmp = f.tmp_path.clone();
    let (out, devices) = f.writer.close().map_err(|e| (e, tmp.clone()))?;
    let mut file = out
        .into_inner()
        .map_err(|e| (io_fail("writing", &tmp, e.into_error()), tmp.clone()))?;
    // A failed fsync leaves the file's unsynced data in doubt ("fsyncgate"): the seal
    // fails and the file is rebuilt from the WAL, never retried as it is.
    file.sync_all()
        .map_err(|e| (io_fail("syncing", &tmp, e), tmp.clone()))?;
    drop(file);
    let res_tmp = files::with_suffix(&f.final_path, ".resource.tmp");
    tsfiled_fsio::write_synced(
        fs,
        &res_tmp,
        &files::resource_for(&devices, f.version, f.format),
    )
    .map_err(|e| (io_fail("writing", &res_tmp, e), tmp.clone()))?;
    Ok((f.final_path, f.tmp_path, f.points))
}

/// First wait before a failed partition is retried, and the longest.
const RETRY_FIRST: Duration = Duration::from_millis(500);
const RETRY_MAX: Duration = Duration::from_secs(10);

static SEAL_DELAY: std::sync::OnceLock<Option<std::time::Duration>> = std::sync::OnceLock::new();

#[cfg(test)]
mod tests {
    use super::files::{format_of_name, parse_resource_v4};
    use super::*;
    use crate::pipeline::{Pipeline, PipelineOptions};
    use std::collections::BTreeMap;
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
}

#[cfg(test)]
mod flush_seal_tests;
