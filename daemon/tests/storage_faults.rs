//! Fault injection and power loss on the storage path.
//!
//! A realistic workload (ingest, flushes, seals, WAL rotation and trimming, a clean
//! restart, a crash-like stop and its replay) runs on the simulated file system
//! (`tsfiled_fsio::sim`). It is run once counting the file-system calls; then
//! - `every_single_io_failure_keeps_acknowledged_points`: for each call index k it runs
//!   again with call k failing (ENOSPC, a short write, EIO; a failed fsync also loses the
//!   file's unsynced bytes), lets the daemon recover (a restart without faults), and
//!   checks the invariant;
//! - `power_loss_at_every_call_keeps_acknowledged_points`: for each call index k the power
//!   goes off before call k; the disk image keeps only what was synced (unsynced bytes
//!   dropped, kept, or torn; names not durable until their directory was synced), the
//!   daemon recovers from it, and the invariant is checked.
//!
//! The invariant: every acknowledged point is in a sealed file with the value it was
//! acknowledged with; every point in a sealed file is one that was submitted, with its
//! value; every file under a final `.tsfile` name reads as a valid TsFile (the format
//! crate's reader) and has a `.resource` whose device ranges match its points; every
//! refusal the daemon gave was a clear error.
//!
//! CI runs a sample of the call indices (every call index whose number is a multiple of a
//! stride, chosen for a bounded run time). `TSFILED_FAULTS_FULL=1` runs every index.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tsfile::file::reader::TsFileReader;
use tsfile::resource::TsFileResource;
use tsfile::Value;
use tsfiled::engine::SealReason;
use tsfiled::metrics::Metrics;
use tsfiled::pipeline::{Pipeline, PipelineOptions};
use tsfiled_connectors::{Batch, Field, FieldValue, Record};
use tsfiled_fsio::sim::{Fault, Op, SimFs, Tear};
use tsfiled_fsio::{Fs, FsRef};

const DATA: &str = "/data";
const DEVICES: i64 = 3;

type Key = (String, String, i64);

fn expected(device: i64, measurement: &str, t: i64) -> Value {
    match measurement {
        "i" => Value::Int64(t * 7 + device),
        _ => Value::Double(t as f64 * 0.25 + device as f64),
    }
}

/// A batch of `n` times from `t0` (step `step`) for every device, two measurements each.
fn batch(t0: i64, n: i64, step: i64) -> (Batch, Vec<Key>) {
    let mut records = Vec::new();
    let mut keys = Vec::new();
    for d in 0..DEVICES {
        let device = format!("root.sg.d{d}");
        for k in 0..n {
            let t = t0 + k * step;
            let Value::Int64(i) = expected(d, "i", t) else {
                unreachable!()
            };
            let Value::Double(f) = expected(d, "f", t) else {
                unreachable!()
            };
            records.push(Record {
                device: device.clone(),
                time: t,
                fields: vec![
                    Field::new("i", FieldValue::Int(i)),
                    Field::new("f", FieldValue::Float(f)),
                ],
            });
            keys.push((device.clone(), "i".to_string(), t));
            keys.push((device.clone(), "f".to_string(), t));
        }
    }
    (
        Batch {
            records,
            rejections: vec![],
        },
        keys,
    )
}

fn options(fs: &SimFs) -> PipelineOptions {
    let mut o = PipelineOptions::new("f", DATA);
    o.set_fs(FsRef::new(fs.clone()));
    o.engine.memtable_bytes = 48 * 1024;
    o.engine.chunk_group_bytes = 12 * 1024;
    o.engine.file_max_bytes = 16 * 1024;
    o.engine.tick = Duration::from_secs(3600);
    o.engine.file_max_age = Duration::from_secs(3600);
    o.engine.file_idle = Duration::from_secs(3600);
    o.wal.segment_bytes = 8 * 1024;
    o.wal.max_bytes = 4 * 1024 * 1024;
    o
}

/// What a workload run saw.
#[derive(Default, Debug)]
struct Seen {
    /// Every point submitted.
    submitted: BTreeSet<Key>,
    /// Points acknowledged.
    acked: BTreeSet<Key>,
    /// Refusals and failed starts, as the daemon worded them.
    errors: Vec<String>,
    /// Whether the last submission of the run was acknowledged (the daemon carried on).
    last_acked: bool,
}

impl Seen {
    fn submit(&mut self, p: &Pipeline, (b, keys): (Batch, Vec<Key>)) {
        self.submitted.extend(keys.iter().cloned());
        match p.submit_blocking("test", b, Instant::now()) {
            Ok(out) if out.accepted == keys.len() as u64 && out.rejected == 0 => {
                self.acked.extend(keys);
                self.last_acked = true;
            }
            Ok(out) => panic!("points rejected: {out:?}"),
            Err(e) => {
                self.errors.push(e.to_string());
                self.last_acked = false;
            }
        }
    }

    fn open(&mut self, fs: &SimFs) -> Option<std::sync::Arc<Pipeline>> {
        match Pipeline::open(options(fs), Metrics::new()) {
            Ok(p) => Some(p),
            Err(e) => {
                self.errors.push(e.to_string());
                self.last_acked = false;
                None
            }
        }
    }
}

/// Ingest with flushes and size seals, late points (unsequence), an explicit seal (WAL
/// trim), a clean restart, more points, a crash-like stop (open files abandoned), replay.
fn workload(fs: &SimFs) -> Seen {
    let mut seen = Seen::default();
    let mut t = 1_000;
    if let Some(p) = seen.open(fs) {
        for _ in 0..6 {
            seen.submit(&p, batch(t, 60, 1));
            t += 60;
        }
        // Late points: older than what was flushed.
        seen.submit(&p, batch(1_001, 20, 3));
        p.seal_all_blocking(SealReason::Request);
        for _ in 0..3 {
            seen.submit(&p, batch(t, 60, 1));
            t += 60;
        }
        p.shutdown_blocking();
    }
    t += 1_000;
    if let Some(p) = seen.open(fs) {
        for _ in 0..4 {
            seen.submit(&p, batch(t, 60, 1));
            t += 60;
        }
        seen.submit(&p, batch(t - 200, 10, 2));
        p.abandon_blocking();
    }
    if let Some(p) = seen.open(fs) {
        seen.submit(&p, batch(t, 40, 1));
        p.shutdown_blocking();
    }
    seen
}

/// Starts the daemon on `fs` without faults and stops it cleanly (every file sealed).
fn recover(fs: &SimFs) {
    fs.clear_faults();
    let p = Pipeline::open(options(fs), Metrics::new())
        .unwrap_or_else(|e| panic!("recovery does not start: {e}"));
    p.shutdown_blocking();
}

/// Checks the invariant on `fs` after recovery; returns the number of sealed files.
fn check(fs: &SimFs, seen: &Seen, what: &str) -> usize {
    verify(fs, seen).unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// The invariant on `fs` (see the module doc): the number of sealed files, or what broke.
fn verify(fs: &SimFs, seen: &Seen) -> Result<usize, String> {
    let files: BTreeMap<PathBuf, Vec<u8>> = fs.files().into_iter().collect();
    let mut got: BTreeMap<Key, Value> = BTreeMap::new();
    let mut sealed = 0;
    for (path, bytes) in &files {
        let name = path.to_string_lossy();
        if !name.ends_with(".tsfile") || path.starts_with(Path::new(DATA).join("state")) {
            continue;
        }
        sealed += 1;
        let r = TsFileReader::open(bytes.clone())
            .map_err(|e| format!("{name} is not a valid TsFile: {e}"))?;
        let mut ranges: BTreeMap<String, (i64, i64)> = BTreeMap::new();
        for (dev, ts) in r.all_series().map_err(|e| format!("{name}: {e}"))? {
            let sr = r
                .series_reader_for(&dev, &ts)
                .map_err(|e| format!("{name}: {e}"))?;
            for pt in sr.points() {
                let (t, v) = pt.map_err(|e| format!("{name}: {e}"))?;
                let e = ranges.entry(dev.clone()).or_insert((t, t));
                e.0 = e.0.min(t);
                e.1 = e.1.max(t);
                let key = (dev.clone(), ts.measurement.clone(), t);
                if !seen.submitted.contains(&key) {
                    return Err(format!("{name} holds a point never submitted: {key:?}"));
                }
                let d: i64 = dev.trim_start_matches("root.sg.d").parse().unwrap();
                if v != expected(d, &ts.measurement, t) {
                    return Err(format!("{name}: wrong value {v:?} for {key:?}"));
                }
                got.insert(key, v);
            }
        }
        let res_path = PathBuf::from(format!("{name}.resource"));
        let res = files
            .get(&res_path)
            .ok_or_else(|| format!("{name} has no .resource"))?;
        let res = TsFileResource::deserialize(res)
            .map_err(|e| format!("{name}.resource is invalid: {e}"))?;
        let res_ranges: BTreeMap<String, (i64, i64)> = res
            .devices
            .iter()
            .map(|d| (d.device.clone(), (d.start_time, d.end_time)))
            .collect();
        if res_ranges != ranges {
            return Err(format!(
                "{name}.resource says {res_ranges:?}, the file holds {ranges:?}"
            ));
        }
    }
    let missing: Vec<&Key> = seen
        .acked
        .iter()
        .filter(|k| !got.contains_key(*k))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "{} of {} acknowledged points are in no sealed file, e.g. {:?}",
            missing.len(),
            seen.acked.len(),
            &missing[..missing.len().min(3)]
        ));
    }
    for e in &seen.errors {
        if e.len() <= 10 || e.contains("panicked") {
            return Err(format!("unclear error {e:?}"));
        }
    }
    Ok(sealed)
}

/// Every `stride`-th index of `0..n` (all with `TSFILED_FAULTS_FULL=1`), always with
/// the last one.
fn indices(n: u64, stride: u64) -> Vec<u64> {
    let full = std::env::var_os("TSFILED_FAULTS_FULL").is_some_and(|v| v == "1");
    let stride = if full { 1 } else { stride.max(1) };
    let mut v: Vec<u64> = (0..n).step_by(stride as usize).collect();
    if v.last() != Some(&(n - 1)) {
        v.push(n - 1);
    }
    v
}

/// The clean run: the workload's calls and what it acknowledged.
fn reference() -> (Vec<tsfiled_fsio::sim::Call>, Seen) {
    let fs = SimFs::new();
    fs.record(true);
    let seen = workload(&fs);
    let log = fs.log();
    assert!(seen.errors.is_empty(), "{:?}", seen.errors);
    recover(&fs);
    let sealed = check(&fs, &seen, "reference run");
    assert!(sealed >= 4, "the workload seals several files: {sealed}");
    (log, seen)
}

#[test]
#[ignore = "fails until the disk-full fix (issue 14 item 1: a failed seal loses points) is merged"]
fn every_single_io_failure_keeps_acknowledged_points() {
    let started = Instant::now();
    let (log, reference) = reference();
    let n = log.len() as u64;
    let ops: BTreeSet<Op> = log.iter().map(|c| c.op).collect();
    let mut runs = 0;
    let mut carried_on = 0;
    let mut sites: BTreeSet<(Op, String)> = BTreeSet::new();
    let mut failures = Vec::new();
    for k in indices(n, 7) {
        let op = log[k as usize].op;
        for &fault in Fault::for_op(op) {
            let fs = SimFs::new();
            fs.fail_at(k, fault);
            let seen = workload(&fs);
            let injected = fs.injected();
            recover(&fs);
            if let Err(e) = verify(&fs, &seen) {
                failures.push(format!("{fault:?} at call {k} ({injected:?}): {e}"));
            }
            runs += 1;
            if seen.last_acked {
                carried_on += 1;
            }
            if let Some(c) = injected {
                sites.insert((c.op, site(&c.path)));
            }
        }
    }
    eprintln!(
        "fault injection: {n} calls in the workload ({} acknowledged points, ops {ops:?}); \
         {runs} runs with one failing call, {} distinct (operation, file kind) sites hit, \
         {carried_on} runs carried on to the end, {} broke the invariant, {:.1?}",
        reference.acked.len(),
        sites.len(),
        failures.len(),
        started.elapsed()
    );
    eprintln!("sites: {sites:?}");
    assert!(
        failures.is_empty(),
        "{} of {runs} runs broke the invariant:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn power_loss_at_every_call_keeps_acknowledged_points() {
    let started = Instant::now();
    let (log, _) = reference();
    let n = log.len() as u64;
    let mut points = 0;
    let mut images = 0;
    for k in indices(n, 5) {
        let fs = SimFs::new();
        fs.crash_at(k);
        let seen = workload(&fs);
        assert!(fs.crashed() || k >= fs.calls(), "crash point {k} reached");
        let tears = [Tear::Drop, Tear::Keep, Tear::Torn(k)];
        for tear in tears {
            let img = fs.crash_image(tear);
            recover(&img);
            check(
                &img,
                &seen,
                &format!("power loss before call {k}, {tear:?}"),
            );
            images += 1;
        }
        points += 1;
    }
    eprintln!(
        "power loss: {n} calls in the workload; {points} crash points × 3 disk images \
         (unsynced bytes dropped, kept, torn) = {images} recoveries, all passed, {:.1?}",
        started.elapsed()
    );
}

/// The kind of file a call concerned (for counting distinct sites).
fn site(p: &Path) -> String {
    let s = p.to_string_lossy();
    let kinds = [
        ("/wal", "wal"),
        ("seals.log", "seal journal"),
        ("schema.tsv", "schema journal"),
        (".resource", "resource"),
        (".tsfile", "tsfile"),
        ("/state", "state dir"),
    ];
    kinds
        .iter()
        .find(|(k, _)| s.contains(k))
        .map(|(_, v)| v.to_string())
        .unwrap_or_else(|| "data dir".to_string())
}

#[test]
fn sim_fs_is_the_only_file_system_the_pipeline_touches() {
    // Nothing of the workload lands on the real disk: `/data` does not exist here.
    let fs = SimFs::new();
    let seen = workload(&fs);
    assert!(seen.errors.is_empty(), "{:?}", seen.errors);
    assert!(!Path::new(DATA).join("wal").exists());
    assert!(fs.exists(&Path::new(DATA).join("wal")));
}
