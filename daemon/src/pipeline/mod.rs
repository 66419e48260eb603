//! A pipeline: normalization (paths, schema), the write-ahead log and the engine.
//!
//! This is the source interface: every source (HTTP push, MQTT, CSV) hands parsed
//! [`Batch`]es to [`Pipeline::submit`] (or [`Pipeline::submit_blocking`] from a plain
//! thread) and acknowledges upstream only once it returns `Ok` — the accepted points
//! are then durable. Rejected points come back with their reasons; they never block
//! the rest of their batch.

mod backlog;
mod lock;
mod spare;
mod status;

use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tsfile::basic::Column;
use tsfiled_connectors::TableLine;
use tsfiled_connectors::{
    Batch, Field, FieldValue, Location, PointAt, Record, RejectReason, Rejection,
};

use crate::engine::batch::{SeriesData, WriteBatch};
use crate::engine::schema::{self, Registry, SchemaRule, SeriesType, TypeDefaults};
use crate::engine::table;
use crate::engine::{Engine, EngineMsg, EngineOptions, SealReason, WalControl};
use crate::hasher::FxBuild;
use crate::health::StorageHealth;
use crate::metrics::Metrics;
use crate::notify::Progress;
use crate::wal::{self, Wal, WalOptions};
use crate::{Error, Refusal, Result};
pub use backlog::{Backlog, Handoff};
use lock::lock_dir;

/// Settings of one pipeline.
#[derive(Debug, Clone)]
pub struct PipelineOptions {
    /// Engine settings (name, data directory, sealing...).
    pub engine: EngineOptions,
    /// WAL settings (its `dir` is normally `<data>/wal`).
    pub wal: WalOptions,
    /// Schema rules.
    pub rules: Vec<SchemaRule>,
    /// Typing of series no rule pins.
    pub defaults: TypeDefaults,
    /// `Retry-After` suggested when full.
    pub retry_after: Duration,
    /// How long intake waits for the engine's backlog to shrink before refusing a batch
    /// (see [`Backlog`]).
    pub backlog_wait: Duration,
}

impl PipelineOptions {
    /// Defaults for a pipeline writing into `data_dir`.
    pub fn new(name: &str, data_dir: impl Into<PathBuf>) -> Self {
        let data_dir = data_dir.into();
        PipelineOptions {
            wal: WalOptions::new(data_dir.join("wal")),
            engine: EngineOptions::new(name, data_dir),
            rules: Vec::new(),
            defaults: TypeDefaults::default(),
            retry_after: Duration::from_secs(1),
            backlog_wait: Backlog::MAX_WAIT,
        }
    }

    /// Puts every file operation of the pipeline (WAL, engine, journals) on `fs`.
    pub fn set_fs(&mut self, fs: tsfiled_fsio::FsRef) {
        self.wal.fs = fs.clone();
        self.engine.fs = fs;
    }

    /// Injects test faults into the pipeline's WAL and engine.
    pub fn set_hooks(&mut self, hooks: crate::hooks::TestHooks) {
        self.wal.hooks = hooks.clone();
        self.engine.hooks = hooks;
    }
}

/// A normalized batch (see [`Pipeline::normalize`]).
struct Normalized {
    /// The typed points, grouped by series.
    batch: WriteBatch,
    /// The parser's rejections, then normalization's.
    rejections: Vec<Rejection>,
    /// Series not in the registry that the batch creates (each has points in `batch`).
    new_series: Vec<(Arc<str>, Arc<str>, SeriesType)>,
}

/// Result of a successful submission.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SubmitOutcome {
    /// Points now durable.
    pub accepted: u64,
    /// Points rejected (parse errors, invalid paths, type mismatches, bad times).
    pub rejected: u64,
    /// The rejections, in payload order.
    pub rejections: Vec<Rejection>,
}

/// A batch [`Pipeline::admit`] queued for the write-ahead log; [`Pipeline::durable`] waits
/// for it.
#[must_use = "the points are durable only once `Pipeline::durable` returned Ok"]
pub struct Admitted {
    /// `None` when nothing of the batch was accepted.
    ticket: Option<wal::Ticket>,
    outcome: SubmitOutcome,
    received: Instant,
}

/// A batch's place among those waiting for room ([`Pipeline::must_wait`]); dropped once the
/// batch is admitted or given up.
pub struct Waiting(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What the write-ahead log carries beside a batch's payload: when the batch was received
/// (the engine decodes the payload itself, so the batch's vectors are freed where they were
/// allocated).
type WalItem = Instant;

struct DevSlot {
    device: Arc<str>,
    /// The device the points are stored under: `device`, or a table-model line's table device
    /// (see [`crate::engine::table`]).
    key: Arc<str>,
    /// Whether `key` is a table device (names are lower case).
    table: bool,
    invalid: Option<String>,
    /// Records of this device in the batch: the most points one of its series can get.
    records: usize,
    series: HashMap<Arc<str>, Option<usize>, FxBuild>,
    /// The last record's fields of this device by position: name and target. The rows of a
    /// batch usually share their name strings (one per column), so most fields are found
    /// here by a pointer comparison instead of a hash lookup.
    recent: Vec<(Arc<str>, Option<usize>)>,
}

/// Distinct device strings a batch's records are matched by pointer comparison first (the
/// records of a batch usually share one string per device); more are found by hash.
const FEW_DEVICES: usize = 8;

/// The records of each device in `records`, and the number of fields of them all.
fn device_records(records: &[Record]) -> (HashMap<Arc<str>, usize, FxBuild>, usize) {
    let mut counts: HashMap<Arc<str>, usize, FxBuild> = HashMap::default();
    let mut fields = 0;
    // Counts by device string (pointer), for the first few strings; the rest by hash.
    let mut few: Vec<(&Arc<str>, usize)> = Vec::new();
    for r in records {
        fields += r.fields.len();
        match few.iter().position(|(d, _)| Arc::ptr_eq(d, &r.device)) {
            Some(i) => few[i].1 += 1,
            None if few.len() < FEW_DEVICES => few.push((&r.device, 1)),
            None => *counts.entry(r.device.clone()).or_default() += 1,
        }
    }
    for (d, n) in few {
        *counts.entry(d.clone()).or_default() += n;
    }
    (counts, fields)
}

/// Notes in `recent` that field `k` of a device's last record is `measurement`, at `target`.
fn remember(
    recent: &mut Vec<(Arc<str>, Option<usize>)>,
    k: usize,
    measurement: &Arc<str>,
    target: Option<usize>,
) {
    let entry = (measurement.clone(), target);
    if k < recent.len() {
        recent[k] = entry;
    } else if k == recent.len() {
        recent.push(entry);
    }
}

/// Appends the leading `fields` of a record at `time` whose series `recent` holds at their
/// positions (the same name string, found there by pointer) and which carry no declared type,
/// as [`schema::append`] stores them; returns how many. It stops at the first other field and
/// at a value the series refuses (changing nothing for it). Apart from the loop of
/// [`Pipeline::normalize`] so that its slices stay in registers.
#[inline(never)]
fn append_by_position(
    fields: &[Field],
    recent: &[(Arc<str>, Option<usize>)],
    series: &mut [SeriesData],
    time: i64,
) -> usize {
    let mut done = 0;
    for (f, (m, target)) in fields.iter().zip(recent) {
        let Some(s) = target.and_then(|si| series.get_mut(si)) else {
            break;
        };
        if !Arc::ptr_eq(m, &f.measurement) || f.type_hint.is_some() {
            break;
        }
        // The commonest pairs without the call: every encoding stores a double other than
        // NaN and an INT64 other than the minimum (`schema::storable`); those two go through
        // `append`, which checks them.
        let stored = match (&mut s.values, &f.value) {
            (Column::Double(c), FieldValue::Float(v)) if !v.is_nan() => {
                c.push(*v);
                true
            }
            (Column::Int64(c), FieldValue::Int(v)) if *v != i64::MIN => {
                c.push(*v);
                true
            }
            (values, value) => schema::append(values, value, s.ty).is_ok(),
        };
        if !stored {
            break;
        }
        s.times.push(time);
        done += 1;
    }
    done
}

/// A device as a rejection names it: a tree device's path, a table device's database, table
/// and tag values joined with `.` (a null tag as `null`).
fn shown(device: &Arc<str>) -> Arc<str> {
    match table::device_id(device) {
        Some((db, id)) => Arc::from(format!("{db}.{}", id.path())),
        None => device.clone(),
    }
}

/// One running pipeline.
pub struct Pipeline {
    name: String,
    sg_level: usize,
    wal: Wal<WalItem>,
    engine_tx: Sender<EngineMsg>,
    backlog: Backlog,
    backlog_wait: Duration,
    /// Batches [`PipelineSink`](crate::sources::PipelineSink) admitted while intake had to
    /// wait, not in the log yet: later ones wait behind them, so batches enter the log in
    /// call order.
    deferred: Arc<std::sync::atomic::AtomicUsize>,
    engine_thread: Mutex<Option<JoinHandle<()>>>,
    registry: Arc<Mutex<Registry>>,
    metrics: Arc<Metrics>,
    accepting: AtomicBool,
    retry_after: Duration,
    rules: Mutex<Vec<SchemaRule>>,
    progress: Option<Progress>,
    status: Arc<Mutex<crate::engine::EngineStatus>>,
    wal_max_bytes: u64,
    memtable_budget: usize,
    health: Arc<StorageHealth>,
    _lock: Box<dyn std::any::Any + Send + Sync>,
}

impl Pipeline {
    /// Recovers the data directory, replays the WAL, and starts the log and engine threads.
    /// Fails with [`Error::Pipeline`].
    pub fn open(opts: PipelineOptions, metrics: Arc<Metrics>) -> Result<Arc<Pipeline>> {
        Pipeline::open_with(opts, metrics, None)
    }

    /// [`Pipeline::open`], reporting liveness to `progress` (the systemd watchdog): one
    /// pending item per accepted submission until the engine has applied it.
    pub fn open_with(
        opts: PipelineOptions,
        metrics: Arc<Metrics>,
        progress: Option<Progress>,
    ) -> Result<Arc<Pipeline>> {
        let pipeline = opts.engine.pipeline.clone();
        Pipeline::open_io(opts, metrics, progress)
            .map_err(|source| Error::Pipeline { pipeline, source })
    }

    fn open_io(
        opts: PipelineOptions,
        metrics: Arc<Metrics>,
        progress: Option<Progress>,
    ) -> io::Result<Arc<Pipeline>> {
        let name = opts.engine.pipeline.clone();
        let state_dir = opts.engine.state_dir.clone();
        let fs = opts.engine.fs.clone();
        tsfiled_fsio::create_dir_all_synced(&*fs, &state_dir)?;
        let lock = lock_dir(&*fs, &state_dir)?;
        let mut reg = Registry::open(
            fs.clone(),
            &state_dir.join("schema.tsv"),
            opts.rules.clone(),
        )?;
        reg.set_rules(opts.rules.clone(), opts.defaults);
        let registry = Arc::new(Mutex::new(reg));
        let sg_level = opts.engine.sg_level;
        let mut engine = Engine::open(opts.engine.clone(), registry.clone(), metrics.clone())?;
        let health = engine.health_handle();
        let started = Instant::now();
        let mut replayed = 0u64;
        let mut bad = 0u64;
        let (next_segment, report, disk) = wal::replay(&*opts.wal.fs, &opts.wal.dir, |rec| {
            let decoded = {
                let mut reg = registry.lock().unwrap_or_else(|e| e.into_inner());
                WriteBatch::decode(&rec.payload, |d, m, ty| {
                    let s = reg.define(d, m, ty);
                    (s.device, s.measurement)
                })
            };
            match decoded {
                Ok(b) => {
                    replayed += b.points();
                    engine.apply(rec.lsn, b, Instant::now(), true);
                }
                Err(e) => {
                    bad += 1;
                    tracing::error!(lsn = rec.lsn, error = %e, "write-ahead log: undecodable record skipped");
                }
            }
        })?;
        if report.records > 0 || !report.truncated.is_empty() || !report.skipped.is_empty() {
            tracing::info!(
                pipeline = %name,
                segments = report.segments,
                records = report.records,
                points = replayed,
                undecodable = bad,
                truncated = report.truncated.len(),
                skipped_corrupt = report.skipped.len(),
                elapsed_ms = started.elapsed().as_millis() as u64,
                "write-ahead log replayed"
            );
        }
        // Unbounded: the log's thread never waits for the engine; past the backlog's memory
        // limit records stay in the log, and intake waits past its lag limit (see `Backlog`).
        let (engine_tx, engine_rx) = channel::<EngineMsg>();
        let sink_tx = engine_tx.clone();
        let backlog = Backlog::with_lag(
            Backlog::limit_for(opts.engine.memtable_bytes),
            Backlog::lag_limit_for(opts.engine.memtable_bytes, opts.wal.max_bytes),
        );
        let sink_backlog = backlog.clone();
        let mut wal_opts = opts.wal.clone();
        wal_opts.fsync_seconds = Some(
            metrics
                .wal_fsync_seconds
                .with_label_values(&[name.as_str()]),
        );
        let wal = Wal::start_with_health(
            wal_opts,
            next_segment,
            disk,
            move |lsn, payload: Vec<u8>, received: WalItem| match sink_backlog.hand_over(
                lsn,
                payload.capacity(),
                payload.len(),
            ) {
                Handoff::Engine => {
                    let _ = sink_tx.send(EngineMsg::Write {
                        lsn,
                        payload,
                        received,
                    });
                }
                Handoff::FirstInLog => {
                    let _ = sink_tx.send(EngineMsg::FromLog {
                        from: lsn,
                        received,
                    });
                }
                Handoff::InLog => {}
            },
            Some(health.clone()),
        )?;
        engine.set_progress(progress.clone());
        engine.set_backlog(backlog.clone());
        let status = engine.status_handle();
        engine.attach_wal(WalControl {
            watermark: wal.watermark_handle(),
            stats: wal.stats().clone(),
            max_bytes: opts.wal.max_bytes,
            dir: opts.wal.dir.clone(),
            skipped: report.skip_ranges(),
            open_segments: wal.open_segments(),
        });
        engine.tick();
        let thread = std::thread::Builder::new()
            .name(format!("tsfiled-engine-{name}"))
            .spawn(move || engine.run(engine_rx))?;
        let p = Arc::new(Pipeline {
            name: name.clone(),
            sg_level,
            wal,
            engine_tx,
            backlog,
            backlog_wait: opts.backlog_wait,
            deferred: Arc::default(),
            engine_thread: Mutex::new(Some(thread)),
            registry,
            metrics: metrics.clone(),
            accepting: AtomicBool::new(true),
            retry_after: opts.retry_after,
            rules: Mutex::new(opts.rules),
            progress,
            status,
            wal_max_bytes: opts.wal.max_bytes,
            memtable_budget: opts.engine.memtable_bytes,
            health,
            _lock: lock,
        });
        // Series exist from the start (at 0), so alerts and rates see them.
        {
            let l = [name.as_str()];
            metrics.points_written.with_label_values(&l);
            metrics.bytes_written.with_label_values(&l);
            metrics.open_files.with_label_values(&l);
            metrics.memtable_bytes.with_label_values(&l);
            metrics.wal_bytes.with_label_values(&l);
            metrics.wal_fsyncs.with_label_values(&l);
            metrics.series.with_label_values(&l);
        }
        metrics
            .wal_max_bytes
            .with_label_values(&[name.as_str()])
            .set(opts.wal.max_bytes.min(i64::MAX as u64) as i64);
        metrics
            .memtable_max_bytes
            .with_label_values(&[name.as_str()])
            .set(opts.engine.memtable_bytes.min(i64::MAX as usize) as i64);
        let weak = Arc::downgrade(&p);
        // The log counts its fsyncs itself; the counter takes the increase since the last
        // scrape (refreshers run one at a time, under the metrics' lock).
        let fsyncs_reported = std::sync::atomic::AtomicU64::new(0);
        metrics.on_scrape(move || {
            if let Some(p) = weak.upgrade() {
                let l = [p.name.as_str()];
                let st = p.wal.stats();
                p.metrics
                    .wal_bytes
                    .with_label_values(&l)
                    .set(st.disk_bytes.load(Ordering::Relaxed) as i64);
                let fsyncs = st.syncs.load(Ordering::Relaxed);
                let before = fsyncs_reported.swap(fsyncs, Ordering::Relaxed);
                p.metrics
                    .wal_fsyncs
                    .with_label_values(&l)
                    .inc_by(fsyncs.saturating_sub(before));
                if let Ok(r) = p.registry.lock() {
                    p.metrics.series.with_label_values(&l).set(r.len() as i64);
                }
            }
        });
        Ok(p)
    }

    /// The pipeline's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Replaces the schema rules and defaults (for series not seen yet).
    pub fn set_rules(&self, rules: Vec<SchemaRule>, defaults: TypeDefaults) {
        if let Ok(mut r) = self.registry.lock() {
            r.set_rules(rules.clone(), defaults);
        }
        if let Ok(mut r) = self.rules.lock() {
            *r = rules;
        }
    }

    /// The pipeline's storage health (failing operations, why intake is refused).
    pub fn health(&self) -> &Arc<StorageHealth> {
        &self.health
    }

    /// Whether the pipeline takes submissions.
    pub fn is_accepting(&self) -> bool {
        self.accepting.load(Ordering::Relaxed)
    }

    /// Fraction of the WAL budget in use.
    pub fn wal_fill(&self) -> f64 {
        self.wal.fill_ratio()
    }

    /// Validates, types and groups a batch's records: the typed points, the rejections (the
    /// parser's first, then ours) and the series the batch would create. Reads the registry
    /// (locking it into `reg`) but changes nothing: new series are defined only once the batch
    /// is in the write-ahead log (see [`Pipeline::enqueue`]).
    fn normalize<'r>(
        &'r self,
        batch: Batch,
        reg: &mut Option<std::sync::MutexGuard<'r, Registry>>,
    ) -> Normalized {
        let mut rejections = batch.rejections;
        let mut series: Vec<SeriesData> = Vec::new();
        // Parallel to `series`: whether the series is new (not in the registry).
        let mut fresh: Vec<bool> = Vec::new();
        // Batch-local caches: device -> slot, slot: measurement -> series index (or
        // None for an invalid measurement), so the registry is consulted once per
        // series and batch, not once per point.
        let mut dev_index: HashMap<Arc<str>, usize, FxBuild> = HashMap::default();
        let mut slots: Vec<DevSlot> = Vec::new();
        let mut last: Option<usize> = None;
        let lock = || self.registry.lock().unwrap_or_else(|e| e.into_inner());
        // A new series' columns get room for one point per record of its device (growing
        // them point by point cost more than typing the points), within the batch's field
        // count in all: a device with many sparse series cannot reserve more than the batch.
        let (per_device, mut room) = device_records(&batch.records);
        for (ri, rec) in batch.records.iter().enumerate() {
            // The slot of this device string (pointer), of the last record's device (equal
            // text), or by hash.
            let known = slots
                .iter()
                .take(FEW_DEVICES)
                .position(|s| Arc::ptr_eq(&s.device, &rec.device))
                .or_else(|| last.filter(|&i| slots[i].device == rec.device));
            let slot_i = match known {
                Some(i) => i,
                None => match dev_index.get(&rec.device) {
                    Some(&i) => i,
                    None => {
                        let reg = reg.get_or_insert_with(lock);
                        let (key, table, invalid) = match TableLine::decode(&rec.device) {
                            Some(line) => match table::map_line(reg, &line) {
                                Ok(key) => (key, true, None),
                                Err(e) => (rec.device.clone(), true, Some(e)),
                            },
                            None if reg.knows_device(&rec.device) => {
                                (rec.device.clone(), false, None)
                            }
                            None => (
                                rec.device.clone(),
                                false,
                                schema::validate_device(&rec.device, self.sg_level).err(),
                            ),
                        };
                        slots.push(DevSlot {
                            device: rec.device.clone(),
                            key,
                            table,
                            invalid,
                            records: per_device.get(&rec.device).copied().unwrap_or(0),
                            // Room for the first record's fields (a device's records
                            // mostly share them): no rehash while they go in.
                            series: HashMap::with_capacity_and_hasher(
                                rec.fields.len(),
                                FxBuild::default(),
                            ),
                            recent: Vec::with_capacity(rec.fields.len()),
                        });
                        dev_index.insert(rec.device.clone(), slots.len() - 1);
                        slots.len() - 1
                    }
                },
            };
            last = Some(slot_i);
            let slot = &mut slots[slot_i];
            let device = &slot.key;
            if let Some(msg) = &slot.invalid {
                rejections.push(Rejection {
                    location: Location::Record {
                        index: ri,
                        point: None,
                    },
                    reason: RejectReason::InvalidPath,
                    message: msg.clone(),
                    points: rec.fields.len() as u64,
                });
                continue;
            }
            // The leading fields found by position (a device's records usually share their
            // name strings in the same order) without a declared type: appended in a tight
            // loop. The first other field, or a value the series refuses (`append` changes
            // nothing then), goes on in the general loop below.
            let done = append_by_position(&rec.fields, &slot.recent, &mut series, rec.time);
            for (k, f) in rec.fields.iter().enumerate().skip(done) {
                let declared = f.type_hint;
                let known = match slot.recent.get(k) {
                    Some((m, t)) if Arc::ptr_eq(m, &f.measurement) => Some(*t),
                    _ => slot.series.get(&f.measurement).copied().inspect(|t| {
                        remember(&mut slot.recent, k, &f.measurement, *t);
                    }),
                };
                let target = match known {
                    Some(t) => t,
                    None => {
                        let reg = reg.get_or_insert_with(lock);
                        // A table's column names are lower case (IoTDB's table model).
                        let name: Arc<str> = if slot.table {
                            Arc::from(f.measurement.to_lowercase())
                        } else {
                            f.measurement.clone()
                        };
                        let tag_column = slot.table
                            && table::owner(device).is_some_and(|o| {
                                reg.table_columns(o)
                                    .iter()
                                    .any(|(c, tag)| *tag && *c == name)
                            });
                        // A column this batch already has under another case.
                        let same = (slot.table && *name != *f.measurement)
                            .then(|| slot.series.get(&name).copied())
                            .flatten();
                        let info = match reg.get(device, &name) {
                            _ if same.is_some() => None,
                            Some(i) => Some((i.device, i.measurement, i.ty, false)),
                            None if tag_column => {
                                rejections.push(Rejection {
                                    location: Location::Record {
                                        index: ri,
                                        point: None,
                                    },
                                    reason: RejectReason::InvalidPath,
                                    message: format!("field {name:?} is a TAG column of its table"),
                                    points: 1,
                                });
                                None
                            }
                            None => match schema::validate_measurement(&name) {
                                Ok(()) => {
                                    let ty = reg.type_for_new(device, &name, &f.value, declared);
                                    Some((device.clone(), name.clone(), ty, true))
                                }
                                Err(msg) => {
                                    rejections.push(Rejection {
                                        location: Location::Record {
                                            index: ri,
                                            point: None,
                                        },
                                        reason: RejectReason::InvalidPath,
                                        message: msg,
                                        points: 1,
                                    });
                                    None
                                }
                            },
                        };
                        let t = match same {
                            Some(t) => t,
                            None => info.map(|(device, measurement, ty, new)| {
                                let n = slot.records.min(room);
                                room -= n;
                                let (times, values) = spare::vectors(ty.data_type, n);
                                series.push(SeriesData {
                                    device,
                                    measurement,
                                    ty,
                                    times,
                                    values,
                                });
                                fresh.push(new);
                                series.len() - 1
                            }),
                        };
                        if slot.table && same.is_none() && *name != *f.measurement {
                            slot.series.insert(name.clone(), t);
                        }
                        slot.series.insert(f.measurement.clone(), t);
                        remember(&mut slot.recent, k, &f.measurement, t);
                        match t {
                            Some(t) => Some(t),
                            None => continue,
                        }
                    }
                };
                let Some(si) = target else {
                    rejections.push(Rejection {
                        location: Location::Record {
                            index: ri,
                            point: None,
                        },
                        reason: RejectReason::InvalidPath,
                        message: format!("invalid measurement name {:?}", f.measurement),
                        points: 1,
                    });
                    continue;
                };
                let s = &mut series[si];
                if let Some(declared) = declared.filter(|d| *d != s.ty.data_type) {
                    rejections.push(Rejection {
                        location: Location::Record {
                            index: ri,
                            point: Some(PointAt {
                                device: shown(device),
                                measurement: f.measurement.clone(),
                                time: rec.time,
                            }),
                        },
                        reason: RejectReason::DeclaredTypeConflict,
                        message: format!(
                            "declared type {declared} differs from the series' type {}",
                            s.ty.data_type
                        ),
                        points: 1,
                    });
                    continue;
                }
                // A value the series' encoding cannot store (its end-of-page marker) is
                // rejected here: the flush would refuse it.
                match schema::append(&mut s.values, &f.value, s.ty) {
                    Ok(()) => s.times.push(rec.time),
                    Err(message) => rejections.push(Rejection {
                        location: Location::Record {
                            index: ri,
                            point: Some(PointAt {
                                device: shown(device),
                                measurement: f.measurement.clone(),
                                time: rec.time,
                            }),
                        },
                        reason: RejectReason::TypeMismatch,
                        message,
                        points: 1,
                    }),
                }
            }
        }
        // A new series without an accepted point is not created.
        let new_series = series
            .iter()
            .zip(&fresh)
            .filter(|(s, new)| **new && !s.is_empty())
            .map(|(s, _)| (s.device.clone(), s.measurement.clone(), s.ty))
            .collect();
        series.retain(|s| !s.is_empty());
        // The records' field vectors go back to this thread's parsers (their names' reference
        // counts untouched: see `recycle_fields`).
        for rec in batch.records {
            tsfiled_connectors::model::recycle_fields(rec.fields);
        }
        Normalized {
            batch: WriteBatch { series },
            rejections,
            new_series,
        }
    }

    fn count(&self, source: &str, accepted: u64, rejections: &[Rejection]) {
        let rejected: u64 = rejections.iter().map(|r| r.points).sum();
        self.metrics
            .points_received
            .with_label_values(&[&self.name, source])
            .inc_by(accepted + rejected);
        for r in rejections {
            self.metrics
                .points_rejected
                .with_label_values(&[&self.name, source, r.reason.label()])
                .inc_by(r.points);
        }
    }

    /// Admits a batch: normalizes it and appends its points to the write-ahead log. A batch
    /// refused (closed, log full, log error) changes nothing: its new series are defined in
    /// the registry, and its points counted, only once the append succeeded. The registry
    /// stays locked from normalization to that definition when the batch creates series, so
    /// no other batch can type them differently meanwhile.
    fn enqueue(
        &self,
        source: &str,
        batch: Batch,
        received: Instant,
    ) -> Result<(Option<wal::Ticket>, SubmitOutcome)> {
        if !self.is_accepting() {
            return Err(Error::Refused(Refusal::Closed));
        }
        if let Some(reason) = self.health.refusal() {
            // Storage is failing: points could only pile up in the WAL until it is fixed.
            self.metrics
                .backpressure
                .with_label_values(&[&self.name, source])
                .inc();
            return Err(Error::Refused(Refusal::Full {
                reason,
                retry_after: self.retry_after,
            }));
        }
        let mut reg = None;
        let Normalized {
            batch: wb,
            rejections,
            new_series,
        } = self.normalize(batch, &mut reg);
        if new_series.is_empty() {
            drop(reg.take());
        }
        let outcome = SubmitOutcome {
            accepted: wb.points(),
            rejected: rejections.iter().map(|r| r.points).sum(),
            rejections,
        };
        if wb.series.is_empty() {
            self.count(source, 0, &outcome.rejections);
            return Ok((None, outcome));
        }
        let payload = wb.encode();
        spare::recycle(wb);
        let ticket = self
            .wal
            .append(payload, received)
            .map_err(|e| self.map_err(source, e))?;
        if let Some(reg) = reg.as_mut() {
            for (device, measurement, ty) in &new_series {
                reg.define(device, measurement, *ty);
            }
        }
        drop(reg);
        self.count(source, outcome.accepted, &outcome.rejections);
        if let Some(p) = &self.progress {
            p.add_pending(1);
        }
        Ok((Some(ticket), outcome))
    }

    /// The write-ahead log's limits become refusals (counted as backpressure); its other
    /// errors pass unchanged.
    fn map_err(&self, source: &str, e: Error) -> Error {
        match e {
            Error::WalFull(reason) => {
                self.metrics
                    .backpressure
                    .with_label_values(&[&self.name, source])
                    .inc();
                Error::Refused(Refusal::Full {
                    reason,
                    retry_after: self.retry_after,
                })
            }
            Error::WalClosed => Error::Refused(Refusal::Closed),
            e => e,
        }
    }

    /// An accepted append that will never reach the engine.
    /// Turns a durability ticket's result into the submission's: a failure is mapped and
    /// counted, a success records the acknowledgement latency.
    fn acknowledged(
        &self,
        source: &str,
        received: Instant,
        waited: Result<crate::wal::Lsn>,
    ) -> Result<()> {
        waited.map_err(|e| {
            self.ticket_failed();
            self.map_err(source, e)
        })?;
        self.metrics
            .ack_seconds
            .with_label_values(&[&self.name, source])
            .observe(received.elapsed().as_secs_f64());
        Ok(())
    }

    fn ticket_failed(&self) {
        if let Some(p) = &self.progress {
            p.complete(1);
        }
    }

    /// Submits a parsed batch; resolves once its accepted points are durable. While the
    /// engine is behind (its backlog over the limit) the batch first waits for room. A batch
    /// refused as a whole for now (nothing of it accepted) fails with [`Error::Refused`].
    pub async fn submit(
        &self,
        source: &str,
        batch: Batch,
        received: Instant,
    ) -> Result<SubmitOutcome> {
        self.room(source).await?;
        let admitted = self.admit(source, batch, received)?;
        self.durable(source, admitted).await
    }

    /// Waits while the engine's backlog is over its limit, so that records the engine has
    /// not applied yet do not pile up in memory; refuses (503 "engine backlog") when it
    /// stays over for the pipeline's `backlog_wait`: an engine that stopped applying them.
    pub async fn room(&self, source: &str) -> Result<()> {
        if self.backlog.over() && !self.backlog.wait(self.backlog_wait).await {
            return Err(self.backlog_refusal(source));
        }
        Ok(())
    }

    /// [`Pipeline::room`] for plain threads.
    pub fn room_blocking(&self, source: &str) -> Result<()> {
        if self.backlog.over() && !self.backlog.wait_blocking(self.backlog_wait) {
            return Err(self.backlog_refusal(source));
        }
        Ok(())
    }

    fn backlog_refusal(&self, source: &str) -> Error {
        self.metrics
            .backpressure
            .with_label_values(&[&self.name, source])
            .inc();
        Error::Refused(Refusal::Full {
            reason: Backlog::REASON,
            retry_after: self.retry_after,
        })
    }

    /// `None` when a batch may be admitted now ([`Pipeline::admit`]); otherwise it waits for
    /// [`Pipeline::room`] first, holding the returned place until it is admitted (or given
    /// up): batches admitted meanwhile wait behind it, so batches enter the log in call order
    /// as long as their waits are polled in that order.
    pub fn must_wait(&self) -> Option<Waiting> {
        if self.deferred.load(Ordering::SeqCst) == 0 && !self.backlog.over() {
            return None;
        }
        self.deferred.fetch_add(1, Ordering::SeqCst);
        Some(Waiting(self.deferred.clone()))
    }

    /// The first half of [`Pipeline::submit`]: admits the batch (normalized and queued for
    /// the write-ahead log, in call order) without waiting for its durability, so that a
    /// source can admit its next batches meanwhile and one fsync covers them all. Refusals
    /// are [`Pipeline::submit`]'s. It does not wait for room: callers ask
    /// [`Pipeline::must_wait`] first.
    pub fn admit(&self, source: &str, batch: Batch, received: Instant) -> Result<Admitted> {
        let (ticket, outcome) = self.enqueue(source, batch, received)?;
        Ok(Admitted {
            ticket,
            outcome,
            received,
        })
    }

    /// The second half of [`Pipeline::submit`]: resolves once the admitted batch's accepted
    /// points are durable (`source` as given to [`Pipeline::admit`]).
    pub async fn durable(&self, source: &str, admitted: Admitted) -> Result<SubmitOutcome> {
        if let Some(t) = admitted.ticket {
            self.acknowledged(source, admitted.received, t.wait().await)?;
        }
        Ok(admitted.outcome)
    }

    /// [`Pipeline::submit`] for plain threads.
    pub fn submit_blocking(
        &self,
        source: &str,
        batch: Batch,
        received: Instant,
    ) -> Result<SubmitOutcome> {
        self.room_blocking(source)?;
        let (ticket, outcome) = self.enqueue(source, batch, received)?;
        if let Some(t) = ticket {
            self.acknowledged(source, received, t.wait_blocking())?;
        }
        Ok(outcome)
    }

    /// Seals every open file (blocking).
    pub fn seal_all_blocking(&self, reason: SealReason) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if self
            .engine_tx
            .send(EngineMsg::SealAll { reason, done: tx })
            .is_ok()
        {
            let _ = rx.blocking_recv();
        }
    }

    /// Stops the threads without sealing anything, as a crash would leave the data
    /// directory (for tests of recovery).
    pub fn abandon_blocking(&self) {
        self.stop_threads(|done| EngineMsg::Abandon { done });
    }

    /// Stops intake and the WAL, sends the engine its last message, waits for its answer
    /// and joins the engine thread.
    fn stop_threads(&self, last: impl FnOnce(tokio::sync::oneshot::Sender<()>) -> EngineMsg) {
        self.accepting.store(false, Ordering::Relaxed);
        self.wal.shutdown();
        let (tx, rx) = tokio::sync::oneshot::channel();
        if self.engine_tx.send(last(tx)).is_ok() {
            let _ = rx.blocking_recv();
        }
        if let Ok(mut t) = self.engine_thread.lock() {
            if let Some(t) = t.take() {
                let _ = t.join();
            }
        }
    }

    /// Stops intake, writes what is queued, seals every file and stops the threads
    /// (blocking; call from a blocking context).
    pub fn shutdown_blocking(&self) {
        self.stop_threads(|done| EngineMsg::Stop { done });
        match self.health.summary() {
            None => tracing::info!(pipeline = %self.name, "pipeline stopped; every file sealed"),
            Some(why) => tracing::warn!(
                pipeline = %self.name,
                storage = %why,
                "pipeline stopped with storage failing; what could not be sealed stays in the write-ahead log for the next start"
            ),
        }
    }
}

#[cfg(test)]
mod mutant_gaps_tests;
#[cfg(test)]
mod tests;
