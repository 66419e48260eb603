//! A pipeline: normalization (paths, schema), the write-ahead log and the engine.
//!
//! This is the source interface: every source (HTTP push, MQTT, CSV) hands parsed
//! [`Batch`]es to [`Pipeline::submit`] (or [`Pipeline::submit_blocking`] from a plain
//! thread) and acknowledges upstream only once it returns `Ok` — the accepted points
//! are then durable. Rejected points come back with their reasons; they never block
//! the rest of their batch.

use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tsfile::basic::Column;
use tsfiled_connectors::{Batch, RejectReason, Rejection};

use crate::engine::batch::{SeriesData, WriteBatch};
use crate::engine::schema::{self, Registry, SchemaRule, SeriesType, TypeDefaults};
use crate::engine::{Engine, EngineMsg, EngineOptions, SealReason, WalControl};
use crate::health::StorageHealth;
use crate::metrics::Metrics;
use crate::notify::Progress;
use crate::wal::{self, Wal, WalOptions};
use crate::{Error, Refusal, Result};

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
        }
    }

    /// Puts every file operation of the pipeline (WAL, engine, journals) on `fs`.
    pub fn set_fs(&mut self, fs: tsfiled_fsio::FsRef) {
        self.wal.fs = fs.clone();
        self.engine.fs = fs;
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

type WalItem = (WriteBatch, Instant);

struct DevSlot {
    device: Arc<str>,
    invalid: Option<String>,
    series: HashMap<Arc<str>, Option<usize>, FxBuild>,
    /// The last record's fields of this device by position: name and target. The rows of a
    /// batch usually share their name strings (one per column), so most fields are found
    /// here by a pointer comparison instead of a hash lookup.
    recent: Vec<(Arc<str>, Option<usize>)>,
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

/// A small, fast, non-cryptographic hasher (FxHash) for batch-local lookups of names.
#[derive(Default, Clone, Copy)]
struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut h = self.0;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut a = [0u8; 8];
            a.copy_from_slice(c);
            h = (h.rotate_left(5) ^ u64::from_le_bytes(a)).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            h = (h.rotate_left(5) ^ b as u64).wrapping_mul(K);
        }
        self.0 = h;
    }
    fn write_u8(&mut self, i: u8) {
        self.0 = (self.0.rotate_left(5) ^ i as u64).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn write_usize(&mut self, i: usize) {
        self.0 = (self.0.rotate_left(5) ^ i as u64).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type FxBuild = std::hash::BuildHasherDefault<FxHasher>;

/// One running pipeline.
pub struct Pipeline {
    name: String,
    sg_level: usize,
    wal: Wal<WalItem>,
    engine_tx: SyncSender<EngineMsg>,
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

/// Takes an exclusive lock (`flock`) on `<state>/lock` so two daemons never share a data
/// directory (released when the process ends, also by SIGKILL).
fn lock_dir(
    fs: &dyn tsfiled_fsio::Fs,
    state_dir: &std::path::Path,
) -> io::Result<Box<dyn std::any::Any + Send + Sync>> {
    let path = state_dir.join("lock");
    fs.lock(&path).map_err(|e| {
        if e.kind() == io::ErrorKind::WouldBlock {
            io::Error::new(
                io::ErrorKind::WouldBlock,
                format!(
                    "{} is locked: another tsfiled uses this data directory",
                    path.display()
                ),
            )
        } else {
            e
        }
    })
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
        let (engine_tx, engine_rx) = sync_channel::<EngineMsg>(64);
        let sink_tx = engine_tx.clone();
        let wal = Wal::start_with_health(
            opts.wal.clone(),
            next_segment,
            disk,
            move |lsn, (batch, received): WalItem| {
                let _ = sink_tx.send(EngineMsg::Write {
                    lsn,
                    batch,
                    received,
                });
            },
            Some(health.clone()),
        )?;
        engine.set_progress(progress.clone());
        let status = engine.status_handle();
        engine.attach_wal(WalControl {
            watermark: wal.watermark_handle(),
            stats: wal.stats().clone(),
            max_bytes: opts.wal.max_bytes,
            dir: opts.wal.dir.clone(),
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

    /// The pipeline's part of `/api/status` (see `assets/status.html`); `sources` are
    /// (name, type, state) of its sources.
    pub fn status_json(
        &self,
        sources: &[(String, &'static str, &'static str)],
    ) -> serde_json::Value {
        let file = |f: &crate::engine::FileStatus, time_key: &str| {
            let mut v = serde_json::json!({
                "path": f.path,
                "storage_group": f.storage_group,
                "bytes": f.bytes,
                "points": f.points,
            });
            v[time_key] = f.time_ms.into();
            if let Some(r) = f.reason {
                v["reason"] = r.into();
            }
            v
        };
        let (open, sealed): (Vec<_>, Vec<_>) = match self.status.lock() {
            Ok(st) => (
                st.open.values().map(|f| file(f, "created_ms")).collect(),
                st.sealed.iter().map(|f| file(f, "sealed_ms")).collect(),
            ),
            Err(_) => (Vec::new(), Vec::new()),
        };
        let st = self.wal.stats();
        let memtable = self
            .metrics
            .memtable_bytes
            .with_label_values(&[self.name.as_str()])
            .get();
        let faults: Vec<serde_json::Value> = self
            .health
            .faults()
            .into_iter()
            .map(|f| {
                serde_json::json!({
                    "op": f.op.label(),
                    "kind": f.kind.label(),
                    "message": f.message,
                    "since_ms": f.since_ms,
                })
            })
            .collect();
        let refusal = self.health.refusal();
        serde_json::json!({
            "name": self.name,
            "accepting": self.is_accepting() && self.wal_fill() < 1.0 && refusal.is_none(),
            "storage": {
                "degraded": !faults.is_empty(),
                "reason": self.health.summary(),
                "refusing": refusal,
                "faults": faults,
            },
            "wal": {"bytes": st.disk_bytes.load(Ordering::Relaxed), "max_bytes": self.wal_max_bytes},
            "memtable": {"bytes": memtable, "budget_bytes": self.memtable_budget},
            "sources": sources.iter().map(|(n, t, s)| serde_json::json!({"name": n, "type": t, "state": s})).collect::<Vec<_>>(),
            "open_files": open,
            "recent_sealed": sealed,
        })
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
        for (ri, rec) in batch.records.into_iter().enumerate() {
            let slot_i = match last.filter(|&i| slots[i].device == rec.device) {
                Some(i) => i,
                None => match dev_index.get(&rec.device) {
                    Some(&i) => i,
                    None => {
                        let reg = reg.get_or_insert_with(lock);
                        let invalid = if reg.knows_device(&rec.device) {
                            None
                        } else {
                            schema::validate_device(&rec.device, self.sg_level).err()
                        };
                        slots.push(DevSlot {
                            device: rec.device.clone(),
                            invalid,
                            series: HashMap::default(),
                            recent: Vec::new(),
                        });
                        dev_index.insert(rec.device.clone(), slots.len() - 1);
                        slots.len() - 1
                    }
                },
            };
            last = Some(slot_i);
            let slot = &mut slots[slot_i];
            if let Some(msg) = &slot.invalid {
                rejections.push(Rejection {
                    location: format!("record {ri}"),
                    reason: RejectReason::InvalidPath,
                    message: msg.clone(),
                    points: rec.fields.len() as u64,
                });
                continue;
            }
            for (k, f) in rec.fields.into_iter().enumerate() {
                let declared = f.type_hint.map(schema::declared_data_type);
                let recent = slot
                    .recent
                    .get(k)
                    .filter(|(m, _)| Arc::ptr_eq(m, &f.measurement))
                    .map(|(_, t)| *t);
                let target = match recent.or_else(|| slot.series.get(&f.measurement).copied()) {
                    Some(t) => {
                        if recent.is_none() {
                            remember(&mut slot.recent, k, &f.measurement, t);
                        }
                        t
                    }
                    None => {
                        let reg = reg.get_or_insert_with(lock);
                        let info = match reg.get(&rec.device, &f.measurement) {
                            Some(i) => Some((i.device, i.measurement, i.ty, false)),
                            None => match schema::validate_measurement(&f.measurement) {
                                Ok(()) => {
                                    let ty = reg.type_for_new(
                                        &rec.device,
                                        &f.measurement,
                                        &f.value,
                                        declared,
                                    );
                                    Some((rec.device.clone(), f.measurement.clone(), ty, true))
                                }
                                Err(msg) => {
                                    rejections.push(Rejection {
                                        location: format!("record {ri}"),
                                        reason: RejectReason::InvalidPath,
                                        message: msg,
                                        points: 1,
                                    });
                                    None
                                }
                            },
                        };
                        let t = info.map(|(device, measurement, ty, new)| {
                            series.push(SeriesData {
                                device,
                                measurement,
                                ty,
                                times: Vec::new(),
                                values: Column::new(ty.data_type),
                            });
                            fresh.push(new);
                            series.len() - 1
                        });
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
                        location: format!("record {ri}"),
                        reason: RejectReason::InvalidPath,
                        message: format!("invalid measurement name {:?}", f.measurement),
                        points: 1,
                    });
                    continue;
                };
                let s = &mut series[si];
                if let Some(declared) = declared.filter(|d| *d != s.ty.data_type) {
                    rejections.push(Rejection {
                        location: format!(
                            "record {ri} ({}.{} at {})",
                            rec.device, f.measurement, rec.time
                        ),
                        reason: RejectReason::DeclaredTypeConflict,
                        message: format!(
                            "declared type {declared} differs from the series' type {}",
                            s.ty.data_type
                        ),
                        points: 1,
                    });
                    continue;
                }
                match schema::convert(&f.value, s.ty.data_type) {
                    Ok(v) => {
                        s.times.push(rec.time);
                        let _ = s.values.push(v);
                    }
                    Err(msg) => rejections.push(Rejection {
                        location: format!(
                            "record {ri} ({}.{} at {})",
                            rec.device, f.measurement, rec.time
                        ),
                        reason: RejectReason::TypeMismatch,
                        message: format!("{msg} ({})", s.ty.data_type),
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
        let ticket = self
            .wal
            .append(payload, (wb, received))
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

    /// Submits a parsed batch; resolves once its accepted points are durable. A batch refused
    /// as a whole for now (nothing of it accepted) fails with [`Error::Refused`].
    pub async fn submit(
        &self,
        source: &str,
        batch: Batch,
        received: Instant,
    ) -> Result<SubmitOutcome> {
        let (ticket, outcome) = self.enqueue(source, batch, received)?;
        if let Some(t) = ticket {
            self.acknowledged(source, received, t.wait().await)?;
        }
        Ok(outcome)
    }

    /// [`Pipeline::submit`] for plain threads.
    pub fn submit_blocking(
        &self,
        source: &str,
        batch: Batch,
        received: Instant,
    ) -> Result<SubmitOutcome> {
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
mod tests {
    use super::*;
    use std::path::Path;
    use tsfile::file::reader::TsFileReader;
    use tsfile::Value;
    use tsfiled_connectors::{Field, FieldValue, Record, TypeHint};

    /// Every (device, measurement, time, value) of the sealed files under `dir`, plus
    /// the sealed file paths.
    type Points = Vec<(String, String, i64, Value)>;

    pub(crate) fn read_dir_points(dir: &Path) -> (Points, Vec<PathBuf>) {
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
        let mut out = Vec::new();
        for f in &files {
            let r = TsFileReader::open_path(f).unwrap();
            for (dev, ts) in r.all_series().unwrap() {
                let sr = r.series_reader_for(&dev, &ts).unwrap();
                for p in sr.points() {
                    let (t, v) = p.unwrap();
                    out.push((dev.clone(), ts.measurement.clone(), t, v));
                }
            }
        }
        (out, files)
    }

    fn rec(device: &str, time: i64, fields: &[(&str, FieldValue)]) -> Record {
        Record {
            device: device.into(),
            time,
            fields: fields
                .iter()
                .map(|(m, v)| Field::new(*m, v.clone()))
                .collect(),
        }
    }

    /// A field declaring its type.
    fn typed(m: &str, value: FieldValue, hint: TypeHint) -> Field {
        Field {
            measurement: m.into(),
            value,
            type_hint: Some(hint),
        }
    }

    #[test]
    fn declared_types_create_series_and_conflicts_are_rejected() {
        let tmp = tempfile::tempdir().unwrap();
        let mut opts = PipelineOptions::new("t", tmp.path());
        opts.rules = vec![SchemaRule {
            pattern: schema::PathPattern::parse("root.sg.*.pinned").unwrap(),
            data_type: Some(tsfile::DataType::DOUBLE),
            encoding: None,
            compression: None,
        }];
        let metrics = Metrics::new();
        let p = Pipeline::open(opts, metrics.clone()).unwrap();
        let batch = |time: i64, fields: Vec<Field>| Batch {
            records: vec![Record {
                device: "root.sg.d1".into(),
                time,
                fields,
            }],
            rejections: vec![],
        };
        let out = p
            .submit_blocking(
                "test",
                batch(
                    1,
                    vec![
                        typed("i32", FieldValue::Int(-7), TypeHint::Int32),
                        typed("f", FieldValue::Float(0.1), TypeHint::Float),
                        typed("big", FieldValue::Int(1 << 40), TypeHint::Int32),
                        typed("pinned", FieldValue::Float(1.5), TypeHint::Float),
                        Field::new("plain", FieldValue::Int(3)),
                    ],
                ),
                Instant::now(),
            )
            .unwrap();
        let reasons: Vec<_> = out
            .rejections
            .iter()
            .map(|r| (r.reason, r.points))
            .collect();
        assert_eq!(
            reasons,
            vec![
                (RejectReason::TypeMismatch, 1),
                (RejectReason::DeclaredTypeConflict, 1)
            ],
            "{:?}",
            out.rejections
        );
        // An existing series declared with another type: rejected, not converted.
        let out = p
            .submit_blocking(
                "test",
                batch(
                    2,
                    vec![
                        typed("i32", FieldValue::Int(5), TypeHint::Int64),
                        typed("plain", FieldValue::Int(4), TypeHint::Int64),
                        Field::new("f", FieldValue::Int(2)),
                    ],
                ),
                Instant::now(),
            )
            .unwrap();
        assert_eq!(out.accepted, 2);
        assert_eq!(
            out.rejections.iter().map(|r| r.reason).collect::<Vec<_>>(),
            vec![RejectReason::DeclaredTypeConflict]
        );
        assert!(
            out.rejections[0]
                .message
                .contains("declared type INT64 differs from the series' type INT32"),
            "{}",
            out.rejections[0].message
        );
        assert!(metrics.render().contains(
            r#"tsfiled_points_rejected_total{pipeline="t",reason="declared_type_conflict",source="test"} 2"#
        ));
        p.shutdown_blocking();
        let (points, _) = read_dir_points(tmp.path());
        let mut got: Vec<_> = points
            .iter()
            .map(|(_, m, t, v)| (m.as_str(), *t, v.clone()))
            .collect();
        got.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        assert_eq!(
            got,
            vec![
                ("f", 1, Value::Float(0.1)),
                ("f", 2, Value::Float(2.0)),
                ("i32", 1, Value::Int32(-7)),
                ("plain", 1, Value::Int64(3)),
                ("plain", 2, Value::Int64(4)),
            ]
        );
    }

    #[test]
    fn a_refused_batch_leaves_the_registry_untouched() {
        let tmp = tempfile::tempdir().unwrap();
        let mut opts = PipelineOptions::new("t", tmp.path());
        opts.wal.max_bytes = 4096;
        let journal = opts.engine.state_dir.join("schema.tsv");
        let p = Pipeline::open(opts, Metrics::new()).unwrap();
        // 1,000 floats need about 16 KB of log: more than the whole budget.
        let big = Batch {
            records: (0..1000)
                .map(|t| rec("root.sg.d1", t, &[("x", FieldValue::Float(0.5))]))
                .collect(),
            rejections: vec![],
        };
        match p.submit_blocking("test", big, Instant::now()) {
            Err(Error::Refused(Refusal::Full { .. })) => {}
            other => panic!("{other:?}"),
        }
        assert!(p.registry.lock().unwrap().get("root.sg.d1", "x").is_none());
        assert_eq!(p.registry.lock().unwrap().len(), 0);
        assert_eq!(std::fs::read_to_string(&journal).unwrap(), "");
        // The first accepted point types the series.
        let out = p
            .submit_blocking(
                "test",
                Batch {
                    records: vec![rec("root.sg.d1", 5, &[("x", FieldValue::Int(7))])],
                    rejections: vec![],
                },
                Instant::now(),
            )
            .unwrap();
        assert_eq!(out.accepted, 1);
        p.shutdown_blocking();
        assert_eq!(
            std::fs::read_to_string(&journal).unwrap(),
            "root.sg.d1\tx\tINT64\tTS_2DIFF\tSNAPPY\n"
        );
        let (points, _) = read_dir_points(tmp.path());
        assert_eq!(
            points,
            vec![("root.sg.d1".into(), "x".into(), 5, Value::Int64(7))]
        );
    }

    /// The value of `name{pipeline="t"}` in a rendering.
    fn sample(text: &str, name: &str) -> Option<u64> {
        let prefix = format!("{name}{{pipeline=\"t\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .and_then(|v| v.parse().ok())
    }

    #[test]
    fn wal_fsyncs_are_a_counter_of_the_logs_syncs() {
        let tmp = tempfile::tempdir().unwrap();
        let metrics = Metrics::new();
        let p = Pipeline::open(PipelineOptions::new("t", tmp.path()), metrics.clone()).unwrap();
        let text = metrics.render();
        assert!(
            text.contains("# TYPE tsfiled_wal_fsyncs_total counter"),
            "{text}"
        );
        let at_start = sample(&text, "tsfiled_wal_fsyncs_total").unwrap();
        for t in 0..3 {
            let b = Batch {
                records: vec![rec("root.sg.d1", t, &[("s", FieldValue::Int(t))])],
                rejections: vec![],
            };
            p.submit_blocking("test", b, Instant::now()).unwrap();
        }
        let syncs = p.wal.stats().syncs.load(Ordering::Relaxed);
        assert!(
            syncs >= 3,
            "each blocking submission waits for its own fsync: {syncs}"
        );
        let text = metrics.render();
        assert_eq!(
            sample(&text, "tsfiled_wal_fsyncs_total"),
            Some(syncs),
            "{text}"
        );
        // Scraping again adds nothing.
        let text = metrics.render();
        assert_eq!(
            sample(&text, "tsfiled_wal_fsyncs_total"),
            Some(syncs),
            "{text}"
        );
        assert!(syncs > at_start);
        assert!(!text.contains("tsfiled_wal_fsyncs{"), "{text}");
        p.shutdown_blocking();
    }

    #[test]
    fn submit_seal_and_read_back() {
        let _ = tracing_subscriber::fmt().with_test_writer().try_init();
        let tmp = tempfile::tempdir().unwrap();
        let metrics = Metrics::new();
        let mut opts = PipelineOptions::new("t", tmp.path());
        opts.rules = vec![SchemaRule {
            pattern: schema::PathPattern::parse("root.sg.*.b").unwrap(),
            data_type: None,
            encoding: Some(tsfile::Encoding::PLAIN),
            compression: None,
        }];
        let p = Pipeline::open(opts.clone(), metrics.clone()).unwrap();
        let batch = Batch {
            records: vec![
                rec(
                    "root.sg.d1",
                    10,
                    &[("a", FieldValue::Int(1)), ("b", FieldValue::Float(0.5))],
                ),
                rec("root.sg.d1", 5, &[("a", FieldValue::Int(2))]),
                rec("root.sg.d1", 10, &[("a", FieldValue::Int(3))]), // last write wins
                rec("root.sg.d1", 11, &[("a", FieldValue::Float(3.5))]), // type mismatch
                rec("root.sg.d1", 12, &[("b", FieldValue::Int(4))]), // int into DOUBLE is fine
                rec(
                    "root.sg2.d9",
                    1,
                    &[
                        ("s", FieldValue::Text("x".into())),
                        ("ok", FieldValue::Bool(true)),
                    ],
                ),
                rec("bad.path", 1, &[("s", FieldValue::Int(1))]),
                rec("root.sg.d1", 13, &[("time", FieldValue::Int(1))]),
            ],
            rejections: vec![],
        };
        let out = p.submit_blocking("test", batch, Instant::now()).unwrap();
        assert_eq!(out.accepted, 7);
        assert_eq!(out.rejected, 3);
        let reasons: Vec<_> = out.rejections.iter().map(|r| r.reason).collect();
        assert_eq!(
            reasons,
            vec![
                RejectReason::TypeMismatch,
                RejectReason::InvalidPath,
                RejectReason::InvalidPath
            ]
        );
        p.shutdown_blocking();
        drop(p);
        let (points, files) = read_dir_points(tmp.path());
        assert_eq!(files.len(), 2, "{files:?}");
        assert!(files
            .iter()
            .all(|f| f.to_string_lossy().contains("/sequence/")));
        let expect = vec![
            ("root.sg.d1", "a", 5, Value::Int64(2)),
            ("root.sg.d1", "a", 10, Value::Int64(3)),
            ("root.sg.d1", "b", 10, Value::Double(0.5)),
            ("root.sg.d1", "b", 12, Value::Double(4.0)),
            ("root.sg2.d9", "ok", 1, Value::Boolean(true)),
            ("root.sg2.d9", "s", 1, Value::Text(b"x".to_vec())),
        ];
        let mut got: Vec<_> = points
            .iter()
            .map(|(d, m, t, v)| (d.as_str(), m.as_str(), *t, v.clone()))
            .collect();
        got.sort_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)));
        assert_eq!(got, expect);
        // Resource files match the files' device ranges.
        for f in &files {
            let res = std::fs::read(crate::engine::files::with_suffix(f, ".resource")).unwrap();
            let devs = crate::engine::files::parse_resource(&res).unwrap();
            for d in devs {
                let ts: Vec<i64> = points
                    .iter()
                    .filter(|p| p.0 == d.device)
                    .map(|p| p.2)
                    .collect();
                assert_eq!(d.start_time, *ts.iter().min().unwrap());
                assert_eq!(d.end_time, *ts.iter().max().unwrap());
            }
        }
        // Shutdown sealed both files.
        let text = metrics.render();
        assert!(
            text.contains("tsfiled_files_sealed_total{pipeline=\"t\",reason=\"shutdown\"} 2"),
            "{text}"
        );
        // A restart replays nothing new and keeps types frozen.
        assert!(
            Pipeline::open(opts.clone(), Metrics::new()).is_ok(),
            "the lock is released with the pipeline"
        );
        let p = Pipeline::open(opts, Metrics::new()).unwrap();
        // Two pipelines never share a data directory; the error names the pipeline and why.
        match Pipeline::open(PipelineOptions::new("t2", tmp.path()), Metrics::new()) {
            Err(e @ Error::Pipeline { .. }) => {
                let m = e.to_string();
                assert!(m.starts_with("pipeline t2: "), "{m}");
                assert!(
                    m.ends_with("is locked: another tsfiled uses this data directory"),
                    "{m}"
                );
            }
            Err(e) => panic!("{e:?}"),
            Ok(_) => panic!("a second pipeline opened the same data directory"),
        }
        let out = p
            .submit_blocking(
                "test",
                Batch {
                    records: vec![rec("root.sg.d1", 20, &[("a", FieldValue::Float(1.5))])],
                    rejections: vec![],
                },
                Instant::now(),
            )
            .unwrap();
        assert_eq!(out.rejected, 1);
        p.shutdown_blocking();
        // After shutdown a submission is refused (not failed): the source retries elsewhere.
        let late = Batch {
            records: vec![rec("root.sg.d1", 30, &[("a", FieldValue::Int(1))])],
            rejections: vec![],
        };
        match p.submit_blocking("test", late, Instant::now()) {
            Err(Error::Refused(Refusal::Closed)) => {}
            other => panic!("{other:?}"),
        }
        let (points2, _) = read_dir_points(tmp.path());
        assert_eq!(points2.len(), points.len(), "nothing replayed twice");
    }

    #[test]
    fn late_points_go_to_unsequence_and_replay_survives_a_crash() {
        let tmp = tempfile::tempdir().unwrap();
        let mut opts = PipelineOptions::new("t", tmp.path());
        opts.engine.memtable_bytes = 1; // flush after every batch
        {
            let p = Pipeline::open(opts.clone(), Metrics::new()).unwrap();
            for t in [100, 200, 150, 50] {
                let b = Batch {
                    records: vec![rec("root.sg.d1", t, &[("a", FieldValue::Int(t))])],
                    rejections: vec![],
                };
                p.submit_blocking("test", b, Instant::now()).unwrap();
            }
            // Simulate a crash: stop without sealing.
            p.abandon_blocking();
        }
        // Whatever was sealed before the "crash" is complete: each point there is one of
        // those submitted, with its value, at most once (the rest is in temporaries and
        // in the WAL; how much was sealed depends on the engine's timing).
        let want = [50, 100, 150, 200].map(|t| {
            (
                "root.sg.d1".to_string(),
                "a".to_string(),
                t,
                Value::Int64(t),
            )
        });
        let (mut before, sealed) = read_dir_points(tmp.path());
        before.sort_by_key(|p| p.2);
        let n = before.len();
        before.dedup();
        assert_eq!(before.len(), n, "a point sealed twice: {sealed:?}");
        assert!(before.iter().all(|p| want.contains(p)), "{before:?}");
        let p = Pipeline::open(opts, Metrics::new()).unwrap();
        p.shutdown_blocking();
        let (points, files) = read_dir_points(tmp.path());
        let mut got: Vec<_> = points
            .iter()
            .map(|(d, m, t, v)| (d.as_str(), m.as_str(), *t, v.clone()))
            .collect();
        got.sort_by_key(|p| p.2);
        assert_eq!(
            got,
            [50, 100, 150, 200]
                .map(|t| ("root.sg.d1", "a", t, Value::Int64(t)))
                .to_vec()
        );
        assert!(
            files
                .iter()
                .any(|f| f.to_string_lossy().contains("/unsequence/")),
            "{files:?}"
        );
    }

    fn one(device: &str, t: i64, v: i64) -> Batch {
        Batch {
            records: vec![rec(device, t, &[("s", FieldValue::Int(v))])],
            rejections: vec![],
        }
    }

    fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
        let start = Instant::now();
        while !cond() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "timed out waiting for {what}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn a_newer_time_partition_seals_the_older_one() {
        let tmp = tempfile::tempdir().unwrap();
        let mut opts = PipelineOptions::new("t", tmp.path());
        opts.engine.partition_interval = Some(1000);
        let metrics = Metrics::new();
        let p = Pipeline::open(opts, metrics.clone()).unwrap();
        p.submit_blocking("test", one("root.sg.d1", 100, 1), Instant::now())
            .unwrap();
        p.submit_blocking("test", one("root.sg.d1", 999, 2), Instant::now())
            .unwrap();
        p.submit_blocking("test", one("root.sg.d1", 1500, 3), Instant::now())
            .unwrap();
        // Partition 0 is sealed as soon as partition 1 receives data.
        wait_for("partition 0 sealed", || {
            read_dir_points(tmp.path())
                .1
                .iter()
                .any(|f| f.to_string_lossy().contains("/sequence/root.sg/0/"))
        });
        wait_for("the seal counted", || {
            metrics
                .render()
                .contains(r#"tsfiled_files_sealed_total{pipeline="t",reason="partition"} 1"#)
        });
        // A late point for partition 0 opens a new file there; a batch spanning two
        // partitions is split.
        p.submit_blocking(
            "test",
            Batch {
                records: vec![
                    rec("root.sg.d1", 50, &[("s", FieldValue::Int(4))]),
                    rec("root.sg.d1", 2500, &[("s", FieldValue::Int(5))]),
                ],
                rejections: vec![],
            },
            Instant::now(),
        )
        .unwrap();
        p.shutdown_blocking();
        let (points, files) = read_dir_points(tmp.path());
        let mut got: Vec<_> = points
            .iter()
            .map(|(d, m, t, v)| (d.as_str(), m.as_str(), *t, v.clone()))
            .collect();
        got.sort_by_key(|p| p.2);
        assert_eq!(
            got,
            [(50, 4), (100, 1), (999, 2), (1500, 3), (2500, 5)]
                .map(|(t, v)| ("root.sg.d1", "s", t, Value::Int64(v)))
                .to_vec()
        );
        for f in &files {
            let part: i64 = f
                .parent()
                .unwrap()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .parse()
                .unwrap();
            let r = TsFileReader::open_path(f).unwrap();
            for (dev, ts) in r.all_series().unwrap() {
                for pt in r.series_reader_for(&dev, &ts).unwrap().points() {
                    assert_eq!(pt.unwrap().0.div_euclid(1000), part, "{}", f.display());
                }
            }
        }
        // Partition 0 has its first file plus the late point's (the device already
        // flushed 999 there, so 50 is unsequence).
        assert!(
            files
                .iter()
                .any(|f| f.to_string_lossy().contains("/unsequence/root.sg/0/")),
            "{files:?}"
        );
        assert!(
            files
                .iter()
                .any(|f| f.to_string_lossy().contains("/sequence/root.sg/2/")),
            "{files:?}"
        );
    }

    #[test]
    fn idle_and_age_seal_without_shutdown() {
        let tmp = tempfile::tempdir().unwrap();
        let mut opts = PipelineOptions::new("t", tmp.path());
        opts.engine.file_idle = Duration::from_millis(50);
        opts.engine.file_max_age = Duration::from_secs(3600);
        opts.engine.tick = Duration::from_millis(10);
        let metrics = Metrics::new();
        let p = Pipeline::open(opts, metrics.clone()).unwrap();
        p.submit_blocking("test", one("root.sg.d1", 1, 1), Instant::now())
            .unwrap();
        wait_for("idle seal", || read_dir_points(tmp.path()).1.len() == 1);
        wait_for("the seal counted", || {
            metrics.render().contains(r#"reason="idle"} 1"#)
        });
        // The WAL is trimmed once everything is sealed: only the active segment stays.
        wait_for("WAL trimmed", || {
            std::fs::read_dir(tmp.path().join("wal")).unwrap().count() == 1
        });
        p.shutdown_blocking();
        drop(p);

        let tmp = tempfile::tempdir().unwrap();
        let mut opts = PipelineOptions::new("t", tmp.path());
        opts.engine.file_idle = Duration::from_secs(3600);
        opts.engine.file_max_age = Duration::from_millis(100);
        opts.engine.tick = Duration::from_millis(10);
        let metrics = Metrics::new();
        let p = Pipeline::open(opts, metrics.clone()).unwrap();
        let mut t = 0;
        // Keep writing so the partition is never idle; it is sealed by age.
        while !metrics.render().contains(r#"reason="age"}"#) {
            t += 1;
            p.submit_blocking("test", one("root.sg.d1", t, t), Instant::now())
                .unwrap();
            std::thread::sleep(Duration::from_millis(5));
            assert!(t < 4000, "no age seal");
        }
        // One more point after the age seal goes into a new file.
        t += 1;
        p.submit_blocking("test", one("root.sg.d1", t, t), Instant::now())
            .unwrap();
        p.shutdown_blocking();
        let (points, files) = read_dir_points(tmp.path());
        assert_eq!(points.len() as i64, t);
        assert!(files.len() >= 2);
    }

    #[test]
    fn size_limits_roll_files_and_everything_reads_back() {
        let tmp = tempfile::tempdir().unwrap();
        let mut opts = PipelineOptions::new("t", tmp.path());
        opts.engine.memtable_bytes = 64 * 1024;
        opts.engine.chunk_group_bytes = 16 * 1024;
        opts.engine.file_max_bytes = 8 * 1024;
        let metrics = Metrics::new();
        let p = Pipeline::open(opts, metrics.clone()).unwrap();
        let mut expect = 0;
        for b in 0..40i64 {
            let records = (0..200i64)
                .map(|i| {
                    let t = b * 200 + i;
                    rec(
                        &format!("root.sg{}.d{}", t % 3, t % 5),
                        t,
                        &[
                            ("v", FieldValue::Float(t as f64 * 0.5)),
                            ("n", FieldValue::Int(t)),
                        ],
                    )
                })
                .collect();
            expect += p
                .submit_blocking(
                    "test",
                    Batch {
                        records,
                        rejections: vec![],
                    },
                    Instant::now(),
                )
                .unwrap()
                .accepted;
        }
        p.shutdown_blocking();
        let (points, files) = read_dir_points(tmp.path());
        assert_eq!(points.len() as u64, expect);
        assert!(
            files.len() > 3,
            "three storage groups, at least one rolled: {}",
            files.len()
        );
        for (d, m, t, v) in &points {
            assert!(d.ends_with(&format!("d{}", t % 5)));
            match m.as_str() {
                "v" => assert_eq!(*v, Value::Double(*t as f64 * 0.5)),
                _ => assert_eq!(*v, Value::Int64(*t)),
            }
        }
        assert!(metrics.render().contains(r#"reason="size"}"#));
    }

    #[test]
    fn a_filling_wal_seals_files_so_intake_continues() {
        let tmp = tempfile::tempdir().unwrap();
        let mut opts = PipelineOptions::new("t", tmp.path());
        opts.wal.max_bytes = 256 * 1024;
        opts.wal.segment_bytes = 32 * 1024;
        opts.engine.tick = Duration::from_millis(5);
        let metrics = Metrics::new();
        let p = Pipeline::open(opts, metrics.clone()).unwrap();
        let mut accepted = 0u64;
        let mut refused = 0u64;
        let mut t = 0i64;
        // Write four times the WAL budget: the engine seals ("wal") and trims as the log
        // fills; appends refused meanwhile are retried.
        while accepted < 4 * 256 * 1024 / 16 {
            let records = (0..100).map(|_| {
                t += 1;
                rec("root.sg.d1", t, &[("s", FieldValue::Int(t))])
            });
            let b = Batch {
                records: records.collect(),
                rejections: vec![],
            };
            match p.submit_blocking("test", b.clone(), Instant::now()) {
                Ok(o) => accepted += o.accepted,
                Err(Error::Refused(Refusal::Full { .. })) => {
                    refused += 1;
                    t -= 100;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => panic!("{e}"),
            }
            assert!(refused < 10_000, "the WAL never drained");
        }
        assert!(metrics.render().contains(r#"reason="wal"}"#));
        p.shutdown_blocking();
        let (points, _) = read_dir_points(tmp.path());
        assert_eq!(points.len() as u64, accepted);
        // Exactly the accepted points 1..=accepted, each once, with its value.
        let mut got: Vec<_> = points
            .iter()
            .map(|(d, m, t, v)| (d.as_str(), m.as_str(), *t, v.clone()))
            .collect();
        got.sort_by_key(|p| p.2);
        let want: Vec<_> = (1..=accepted as i64)
            .map(|t| ("root.sg.d1", "s", t, Value::Int64(t)))
            .collect();
        assert_eq!(got, want);
    }
}
