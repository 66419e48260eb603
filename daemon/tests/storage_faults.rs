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
//! stride, chosen for a bounded run time). `TSFILED_FAULTS_FULL=1` runs every index. Every
//! test runs again (`…_v4`) with the pipeline sealing TsFile v4.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tsfile::file::reader::TsFileReader;
use tsfile::file::v4::TsFileReaderV4;
use tsfile::resource::TsFileResource;
use tsfile::Value;
use tsfiled::engine::files::{parse_resource_v4, FormatVersion};
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
                device: device.as_str().into(),
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

fn options_in(fs: &SimFs, format: FormatVersion) -> PipelineOptions {
    let mut o = small_options(DATA);
    o.set_fs(FsRef::new(fs.clone()));
    o.engine.format = format;
    o
}

/// Small memtables, files and WAL segments (many flushes, seals, rotations), no timed seals.
fn small_options(dir: impl Into<PathBuf>) -> PipelineOptions {
    let mut o = PipelineOptions::new("f", dir);
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

    fn open(&mut self, fs: &SimFs, format: FormatVersion) -> Option<std::sync::Arc<Pipeline>> {
        match Pipeline::open(options_in(fs, format), Metrics::new()) {
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
fn workload(fs: &SimFs, format: FormatVersion) -> Seen {
    let mut seen = Seen::default();
    let mut t = 1_000;
    if let Some(p) = seen.open(fs, format) {
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
    if let Some(p) = seen.open(fs, format) {
        for _ in 0..4 {
            seen.submit(&p, batch(t, 60, 1));
            t += 60;
        }
        seen.submit(&p, batch(t - 200, 10, 2));
        p.abandon_blocking();
    }
    if let Some(p) = seen.open(fs, format) {
        seen.submit(&p, batch(t, 40, 1));
        p.shutdown_blocking();
    }
    seen
}

/// Starts the daemon on `fs` without faults and stops it cleanly (every file sealed).
fn recover(fs: &SimFs, format: FormatVersion) {
    fs.clear_faults();
    let p = Pipeline::open(options_in(fs, format), Metrics::new())
        .unwrap_or_else(|e| panic!("recovery does not start: {e}"));
    p.shutdown_blocking();
}

/// Checks the invariant on `fs` after recovery; returns the number of sealed files.
fn check(fs: &SimFs, seen: &Seen, what: &str) -> usize {
    verify(fs, seen).unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// The invariant on `fs` (see the module doc): the number of sealed files, or what broke.
fn verify(fs: &SimFs, seen: &Seen) -> Result<usize, String> {
    verify_files(&fs.files().into_iter().collect(), Path::new(DATA), seen)
}

/// The invariant on the files of a data directory `root` (path → bytes).
fn verify_files(
    files: &BTreeMap<PathBuf, Vec<u8>>,
    root: &Path,
    seen: &Seen,
) -> Result<usize, String> {
    let mut got: BTreeMap<Key, Value> = BTreeMap::new();
    let mut sealed = 0;
    for (path, bytes) in files {
        let name = path.to_string_lossy();
        if !name.ends_with(".tsfile") || path.starts_with(root.join("state")) {
            continue;
        }
        sealed += 1;
        let v4 = tsfile::file::v4::is_v4(bytes);
        let points = if v4 {
            read_v4(bytes).map_err(|e| format!("{name} is not a valid TsFile v4: {e}"))?
        } else {
            read_v2(bytes).map_err(|e| format!("{name} is not a valid TsFile: {e}"))?
        };
        let mut ranges: BTreeMap<String, (i64, i64)> = BTreeMap::new();
        {
            for (dev, measurement, t, v) in points {
                let e = ranges.entry(dev.clone()).or_insert((t, t));
                e.0 = e.0.min(t);
                e.1 = e.1.max(t);
                let key = (dev.clone(), measurement.clone(), t);
                if !seen.submitted.contains(&key) {
                    return Err(format!("{name} holds a point never submitted: {key:?}"));
                }
                let d: i64 = dev.trim_start_matches("root.sg.d").parse().unwrap();
                if v != expected(d, &measurement, t) {
                    return Err(format!("{name}: wrong value {v:?} for {key:?}"));
                }
                got.insert(key, v);
            }
        }
        let res_path = PathBuf::from(format!("{name}.resource"));
        let res = files
            .get(&res_path)
            .ok_or_else(|| format!("{name} has no .resource"))?;
        let res_ranges: BTreeMap<String, (i64, i64)> = if v4 {
            parse_resource_v4(res)
                .map_err(|e| format!("{name}.resource is invalid: {e}"))?
                .into_iter()
                .map(|d| (d.device, (d.start_time, d.end_time)))
                .collect()
        } else {
            TsFileResource::deserialize(res)
                .map_err(|e| format!("{name}.resource is invalid: {e}"))?
                .devices
                .iter()
                .map(|d| (d.device.clone(), (d.start_time, d.end_time)))
                .collect()
        };
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

/// Every (device, measurement, time, value) of a format 000002 file.
fn read_v2(bytes: &[u8]) -> tsfile::Result<Vec<(String, String, i64, Value)>> {
    let r = TsFileReader::open(bytes.to_vec())?;
    let mut out = Vec::new();
    for (dev, ts) in r.all_series()? {
        for pt in r.series_reader_for(&dev, &ts)?.points() {
            let (t, v) = pt?;
            out.push((dev.clone(), ts.measurement.clone(), t, v));
        }
    }
    Ok(out)
}

/// Every (device, measurement, time, value) of a v4 file.
fn read_v4(bytes: &[u8]) -> tsfile::Result<Vec<(String, String, i64, Value)>> {
    let r = TsFileReaderV4::open(bytes.to_vec())?;
    let mut out = Vec::new();
    for d in r.devices()? {
        let dev = d.device.path();
        for ts in &d.series {
            for (t, v) in r.series_points(ts, None)? {
                out.push((dev.clone(), ts.measurement.clone(), t, v));
            }
        }
    }
    Ok(out)
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
fn reference(format: FormatVersion) -> (Vec<tsfiled_fsio::sim::Call>, Seen) {
    let fs = SimFs::new();
    fs.record(true);
    let seen = workload(&fs, format);
    let log = fs.log();
    assert!(seen.errors.is_empty(), "{:?}", seen.errors);
    recover(&fs, format);
    let sealed = check(&fs, &seen, "reference run");
    assert!(sealed >= 4, "the workload seals several files: {sealed}");
    for (path, bytes) in fs.files() {
        if path.to_string_lossy().ends_with(".tsfile") {
            let v4 = tsfile::file::v4::is_v4(&bytes);
            assert_eq!(v4, format == FormatVersion::V4, "{}", path.display());
        }
    }
    (log, seen)
}

#[test]
fn every_single_io_failure_keeps_acknowledged_points() {
    every_single_io_failure(FormatVersion::V2);
}

#[test]
fn every_single_io_failure_keeps_acknowledged_points_v4() {
    every_single_io_failure(FormatVersion::V4);
}

fn every_single_io_failure(format: FormatVersion) {
    let started = Instant::now();
    let (log, reference) = reference(format);
    let n = log.len() as u64;
    let ops: BTreeSet<Op> = log.iter().map(|c| c.op).collect();
    let mut runs = 0;
    let mut carried_on = 0;
    let mut sites: BTreeSet<(Op, String)> = BTreeSet::new();
    let mut failures = Vec::new();
    for k in indices(n, 3) {
        let op = log[k as usize].op;
        for &fault in Fault::for_op(op) {
            let fs = SimFs::new();
            fs.fail_at(k, fault);
            let seen = workload(&fs, format);
            let injected = fs.injected();
            recover(&fs, format);
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
        "fault injection ({format:?}): {n} calls in the workload ({} acknowledged points, ops {ops:?}); \
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
    power_loss_at_every_call(FormatVersion::V2);
}

#[test]
fn power_loss_at_every_call_keeps_acknowledged_points_v4() {
    power_loss_at_every_call(FormatVersion::V4);
}

fn power_loss_at_every_call(format: FormatVersion) {
    let started = Instant::now();
    let (log, _) = reference(format);
    let n = log.len() as u64;
    let mut points = 0;
    let mut images = 0;
    for k in indices(n, 3) {
        let fs = SimFs::new();
        fs.crash_at(k);
        let seen = workload(&fs, format);
        assert!(fs.crashed() || k >= fs.calls(), "crash point {k} reached");
        let tears = [Tear::Drop, Tear::Keep, Tear::Torn(k)];
        for tear in tears {
            let img = fs.crash_image(tear);
            recover(&img, format);
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
        "power loss ({format:?}): {n} calls in the workload; {points} crash points × 3 disk images \
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
    sim_fs_is_the_only_file_system_the_pipeline_touches_in(FormatVersion::V2);
}

#[test]
fn sim_fs_is_the_only_file_system_the_pipeline_touches_v4() {
    sim_fs_is_the_only_file_system_the_pipeline_touches_in(FormatVersion::V4);
}

fn sim_fs_is_the_only_file_system_the_pipeline_touches_in(format: FormatVersion) {
    // Nothing of the workload lands on the real disk: `/data` does not exist here.
    let fs = SimFs::new();
    let seen = workload(&fs, format);
    assert!(seen.errors.is_empty(), "{:?}", seen.errors);
    assert!(!Path::new(DATA).join("wal").exists());
    assert!(fs.exists(&Path::new(DATA).join("wal")));
}

/// Every file under `dir` (real file system), path → bytes.
fn disk_files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// Polls `cond` (every 10 ms, at most 30 s) — for what another thread does.
fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The WAL directory removed (`rm -rf data/wal`) under a running pipeline: the segment's
/// records would be in an unlinked file no restart finds. The next group is refused with
/// a clear error, the engine seals what it holds (those acknowledged points are on disk
/// at once), the log starts a new segment in a recreated directory and intake goes on;
/// after a crash-like stop and a restart every acknowledged point is in a sealed file.
#[test]
fn wal_directory_deleted_under_a_running_daemon() {
    wal_directory_deleted_under_a_running_daemon_in(FormatVersion::V2);
}

#[test]
fn wal_directory_deleted_under_a_running_daemon_v4() {
    wal_directory_deleted_under_a_running_daemon_in(FormatVersion::V4);
}

fn wal_directory_deleted_under_a_running_daemon_in(format: FormatVersion) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut o = small_options(&data);
    o.engine.format = format;
    o.engine.tick = Duration::from_millis(20);
    let mut seen = Seen::default();
    let p = Pipeline::open(o.clone(), Metrics::new()).unwrap();
    seen.submit(&p, batch(1_000, 30, 1));
    assert!(seen.errors.is_empty(), "{:?}", seen.errors);
    let sealed_files = |data: &Path| {
        disk_files(data)
            .keys()
            .filter(|p| p.to_string_lossy().ends_with(".tsfile"))
            .count()
    };
    assert_eq!(sealed_files(&data), 0);
    std::fs::remove_dir_all(data.join("wal")).unwrap();
    seen.submit(&p, batch(2_000, 30, 1));
    assert_eq!(
        seen.errors.len(),
        1,
        "the first group after the deletion is refused"
    );
    assert!(
        seen.errors[0].contains("was deleted while in use"),
        "{}",
        seen.errors[0]
    );
    // The points acknowledged before the deletion are sealed without waiting for a limit.
    wait_for("the engine to seal the points of the lost segment", || {
        sealed_files(&data) > 0
    });
    seen.submit(&p, batch(3_000, 30, 1));
    assert_eq!(seen.errors.len(), 1, "{:?}", seen.errors);
    assert!(data.join("wal").is_dir(), "the directory is recreated");
    p.abandon_blocking();
    drop(p);
    let p = Pipeline::open(o, Metrics::new()).unwrap();
    p.shutdown_blocking();
    drop(p);
    let n = verify_files(&disk_files(&data), &data, &seen).unwrap();
    assert!(n >= 2, "{n}");
    // The refused batch was not written anywhere.
    let refused: BTreeSet<Key> = batch(2_000, 30, 1).1.into_iter().collect();
    assert!(seen.acked.is_disjoint(&refused));
}

/// A record in the middle of a WAL segment is damaged on disk (a bit flip) before the
/// daemon replays it: replay skips exactly that record (logged with the byte range),
/// replays the good records after it, and only the damaged record's points are missing.
#[test]
fn a_corrupt_wal_record_in_the_middle_loses_only_its_own_points() {
    a_corrupt_wal_record_in_the_middle_loses_only_its_own_points_in(FormatVersion::V2);
}

#[test]
fn a_corrupt_wal_record_in_the_middle_loses_only_its_own_points_v4() {
    a_corrupt_wal_record_in_the_middle_loses_only_its_own_points_in(FormatVersion::V4);
}

/// The same, and the first seal after the restart fails (a full disk): the partition's
/// points are read back from the log, past the stretch replay skipped, and sealed at
/// shutdown. (Reading back used to stop at the damaged record: the good record after it
/// was lost with it.)
#[test]
fn a_partition_read_back_after_a_failed_seal_passes_over_a_corrupt_wal_record() {
    corrupt_wal_record_in_the_middle(FormatVersion::V2, true);
}

fn a_corrupt_wal_record_in_the_middle_loses_only_its_own_points_in(format: FormatVersion) {
    corrupt_wal_record_in_the_middle(format, false);
}

fn corrupt_wal_record_in_the_middle(format: FormatVersion, fail_first_seal: bool) {
    let fs = SimFs::new();
    let mut o = options_in(&fs, format);
    o.wal.segment_bytes = 1 << 20;
    let mut seen = Seen::default();
    let p = Pipeline::open(o.clone(), Metrics::new()).unwrap();
    let batches: Vec<(Batch, Vec<Key>)> = (0..3).map(|i| batch(1_000 + i * 100, 5, 1)).collect();
    for b in batches.clone() {
        seen.submit(&p, b);
    }
    assert_eq!(seen.acked.len(), 3 * 30);
    // Crash-like stop: nothing sealed, everything is in the WAL only.
    p.abandon_blocking();
    drop(p);
    assert!(!fs
        .files()
        .iter()
        .any(|f| f.0.to_string_lossy().ends_with(".tsfile")));
    let (seg, mut bytes) = fs
        .files()
        .into_iter()
        .find(|(p, b)| p.starts_with("/data/wal") && b.len() > 8)
        .unwrap();
    // Segment layout: 8-byte header, then [len u32][crc u32][payload] records.
    let len0 = u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
    let second = 8 + 8 + len0;
    bytes[second + 8 + 5] ^= 0x40;
    fs.set_file(&seg, bytes).unwrap();
    let p = Pipeline::open(o, Metrics::new()).unwrap();
    if fail_first_seal {
        // Once the start-up's calls (the log's threads list their directory) are done, the
        // next call is the seal's.
        wait_for("the file system to be quiet", || {
            let before = fs.calls();
            std::thread::sleep(Duration::from_millis(50));
            fs.calls() == before
        });
        fs.fail_at(fs.calls(), Fault::NoSpace);
        p.seal_all_blocking(SealReason::Request);
        let failed = fs.injected().expect("the seal's first call failed");
        assert!(
            failed.path.starts_with(DATA) && !failed.path.starts_with("/data/wal"),
            "{failed:?}"
        );
        assert!(!fs
            .files()
            .iter()
            .any(|f| f.0.to_string_lossy().ends_with(".tsfile")));
    }
    p.shutdown_blocking();
    drop(p);
    let lost: BTreeSet<Key> = batches[1].1.iter().cloned().collect();
    seen.acked.retain(|k| !lost.contains(k));
    verify(&fs, &seen).unwrap();
    let files: BTreeMap<PathBuf, Vec<u8>> = fs.files().into_iter().collect();
    let mut in_files = BTreeSet::new();
    for (path, bytes) in &files {
        if path.to_string_lossy().ends_with(".tsfile") {
            let points = match format {
                FormatVersion::V2 => read_v2(bytes),
                FormatVersion::V4 => read_v4(bytes),
            };
            for (dev, m, t, _) in points.unwrap() {
                in_files.insert((dev, m, t));
            }
        }
    }
    assert!(in_files.is_disjoint(&lost), "the damaged record's points");
    assert_eq!(in_files.len(), 2 * 30, "the records before and after it");
}

/// The wall clock jumps back an hour and forward a year (and back), also across a
/// restart. IoTDB orders a partition's TsFiles by the first number of the name (the
/// creation time) and then the version, so names must stay unique and increase in the
/// order the files were written; partitions follow the points' times, not the clock; a
/// clock a year ahead does not make files look old (age sealing uses a monotonic clock).
#[test]
fn clock_jumps_keep_file_names_unique_ordered_and_partitions_right() {
    clock_jumps_keep_file_names_unique_ordered_and_partitions_right_in(FormatVersion::V2);
}

#[test]
fn clock_jumps_keep_file_names_unique_ordered_and_partitions_right_v4() {
    clock_jumps_keep_file_names_unique_ordered_and_partitions_right_in(FormatVersion::V4);
}

fn clock_jumps_keep_file_names_unique_ordered_and_partitions_right_in(format: FormatVersion) {
    use std::sync::atomic::{AtomicI64, Ordering};
    use std::sync::Arc;
    const DAY: i64 = 86_400_000;
    let now = Arc::new(AtomicI64::new(1_700_000_000_000));
    let fs = SimFs::new();
    let mut o = options_in(&fs, format);
    o.engine.partition_interval = Some(DAY);
    o.engine.tick = Duration::from_millis(5);
    o.engine.file_max_age = Duration::from_secs(3600);
    o.engine.file_max_bytes = 1 << 30;
    let clock = now.clone();
    o.engine.clock = tsfiled::engine::WallClock::new(move || clock.load(Ordering::SeqCst));
    let mut seen = Seen::default();
    let mut written: Vec<String> = Vec::new(); // file names in the order they were sealed
    let seal = |p: &Pipeline, written: &mut Vec<String>| {
        p.seal_all_blocking(SealReason::Request);
        let mut names: Vec<String> = fs
            .files()
            .into_iter()
            .map(|f| f.0.to_string_lossy().to_string())
            .filter(|n| n.ends_with(".tsfile") && n.contains("/sequence/"))
            .filter(|n| !written.contains(n))
            .collect();
        assert_eq!(names.len(), 1, "one new sequence file per seal: {names:?}");
        written.append(&mut names);
    };
    let t = std::cell::Cell::new(1_700_000_000_000 - 1000);
    let next = || {
        t.set(t.get() + 100);
        t.get() - 100
    };
    let step = |p: &Pipeline, seen: &mut Seen, written: &mut Vec<String>, jump: i64| {
        now.fetch_add(jump, Ordering::SeqCst);
        seen.submit(p, batch(next(), 10, 1));
        seal(p, written);
    };
    let p = Pipeline::open(o.clone(), Metrics::new()).unwrap();
    step(&p, &mut seen, &mut written, 0);
    step(&p, &mut seen, &mut written, -3_600_000); // back an hour
    p.shutdown_blocking();
    drop(p);
    // Restart with the clock still an hour behind the first file's name.
    let p = Pipeline::open(o.clone(), Metrics::new()).unwrap();
    step(&p, &mut seen, &mut written, 0);
    step(&p, &mut seen, &mut written, 365 * DAY); // forward a year
                                                  // A clock a year ahead: an open file is not sealed for age.
    seen.submit(&p, batch(next(), 10, 1));
    std::thread::sleep(Duration::from_millis(100)); // many engine ticks
    let sealed_now = fs
        .files()
        .iter()
        .filter(|f| f.0.to_string_lossy().ends_with(".tsfile"))
        .count();
    assert_eq!(
        sealed_now,
        written.len(),
        "nothing sealed for age while the clock is a year ahead"
    );
    seal(&p, &mut written);
    step(&p, &mut seen, &mut written, -365 * DAY); // and back
                                                   // Points a day later in data time go to the next partition, whatever the clock says.
    now.fetch_add(-3_600_000, Ordering::SeqCst);
    seen.submit(&p, batch(next() + DAY, 10, 1));
    seal(&p, &mut written);
    p.shutdown_blocking();
    drop(p);
    verify(&fs, &seen).unwrap();
    // (create millis, version) of each name, in the order written.
    let keys: Vec<(i64, i64)> = written
        .iter()
        .map(|n| {
            let name = Path::new(n)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .to_string();
            let mut it = name.trim_end_matches(".tsfile").split('-');
            (
                it.next().unwrap().parse().unwrap(),
                it.next().unwrap().parse().unwrap(),
            )
        })
        .collect();
    assert!(
        keys.windows(2).all(|w| w[0] < w[1]),
        "names increase in write order: {written:?}"
    );
    let uniq: BTreeSet<&(i64, i64)> = keys.iter().collect();
    assert_eq!(uniq.len(), keys.len());
    // Partition directories follow the data: the last file is one partition later.
    let part = |n: &str| -> i64 {
        Path::new(n)
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .parse()
            .unwrap()
    };
    let p0 = (1_700_000_000_000i64 - 1000) / DAY;
    assert!(
        written[..written.len() - 1].iter().all(|n| part(n) == p0),
        "{written:?}"
    );
    assert_eq!(part(written.last().unwrap()), p0 + 1);
}
