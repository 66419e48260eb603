//! Tests added for mutants of normalization that no other test caught (docs/mutants.md, the
//! MQTT runtime side).

use super::*;
use crate::engine::files::FormatVersion;
use tsfile::file::v4::TsFileReaderV4;
use tsfile::Value;
use tsfiled_connectors::Field;

/// Every (measurement, time, value) of the sealed v4 files under `dir`, sorted.
fn v4_points(dir: &std::path::Path) -> Vec<(String, i64, Value)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "tsfile") {
                let r = TsFileReaderV4::open_path(&p).unwrap();
                for d in r.devices().unwrap() {
                    for ts in &d.series {
                        for (t, v) in r.series_points(ts, None).unwrap() {
                            out.push((ts.measurement.clone(), t, v));
                        }
                    }
                }
            }
        }
    }
    out.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    out
}

/// INT64 series pinned to TsFile 2.x's GORILLA and to CHIMP (format v4), whose end-of-page
/// marker is the INT64 minimum (the format library's encoders refuse `i64::MIN`, as TsFile
/// 2.x's `Long.MIN_VALUE` marker implies): records sharing their
/// name strings in the same order take normalization's positional path after the first, and
/// there too an `i64::MIN` is rejected at intake as a type mismatch naming the series and its
/// encoding, while the other points (`i64::MIN + 1`, `i64::MAX`) are kept and sealed.
#[test]
fn the_int64_minimum_is_rejected_by_position_for_v4_gorilla_and_chimp_series() {
    let tmp = tempfile::tempdir().unwrap();
    let mut opts = PipelineOptions::new("t", tmp.path());
    opts.engine.format = FormatVersion::V4;
    let rule = |m: &str, e| SchemaRule {
        pattern: schema::PathPattern::parse(&format!("root.sg.d1.{m}")).unwrap(),
        data_type: Some(tsfile::DataType::INT64),
        encoding: Some(e),
        compression: None,
    };
    opts.rules = vec![
        rule("g", tsfile::Encoding::GORILLA_V2),
        rule("c", tsfile::Encoding::CHIMP),
    ];
    let p = Pipeline::open(opts, Metrics::new()).unwrap();
    let device: Arc<str> = Arc::from("root.sg.d1");
    let [g, c]: [Arc<str>; 2] = ["g", "c"].map(Arc::from);
    let rec = |time: i64, vg: i64, vc: i64| Record {
        device: device.clone(),
        time,
        fields: vec![
            Field::new(g.clone(), FieldValue::Int(vg)),
            Field::new(c.clone(), FieldValue::Int(vc)),
        ],
    };
    let batch = Batch {
        records: vec![
            rec(1, 1, 2),
            rec(2, i64::MIN, 5),
            rec(3, 3, i64::MIN),
            rec(4, i64::MIN + 1, i64::MAX),
        ],
        rejections: vec![],
    };
    let out = p.submit_blocking("test", batch, Instant::now()).unwrap();
    let rejected: Vec<_> = out
        .rejections
        .iter()
        .map(|r| (r.reason, r.location.to_string()))
        .collect();
    assert_eq!(
        rejected,
        [
            (
                RejectReason::TypeMismatch,
                "record 1 (root.sg.d1.g at 2)".to_string()
            ),
            (
                RejectReason::TypeMismatch,
                "record 2 (root.sg.d1.c at 3)".to_string()
            ),
        ]
    );
    assert!(
        out.rejections[0].message.contains("(INT64 GORILLA_V2)"),
        "{}",
        out.rejections[0].message
    );
    assert!(
        out.rejections[1].message.contains("(INT64 CHIMP)"),
        "{}",
        out.rejections[1].message
    );
    assert_eq!(out.accepted, 6);
    p.shutdown_blocking();
    let l = |m: &str, t: i64, v: i64| (m.to_string(), t, Value::Int64(v));
    assert_eq!(
        v4_points(tmp.path()),
        [
            l("c", 1, 2),
            l("c", 2, 5),
            l("c", 4, i64::MAX),
            l("g", 1, 1),
            l("g", 3, 3),
            l("g", 4, i64::MIN + 1),
        ]
    );
}

/// Each flush into a format 000002 file ends with a version record (IoTDB 0.10's
/// `writeVersion` after a memtable's chunk groups), its versions increasing: two batches
/// flushed one by one into one file give chunk group, version, chunk group, version, and
/// each chunk carries the version of the record after it (0 would be a chunk without one).
#[test]
fn each_flush_of_a_000002_file_ends_with_its_own_increasing_version() {
    use tsfile::file::reader::{SequentialWalk, TsFileReader, WalkEvent};
    let tmp = tempfile::tempdir().unwrap();
    let mut opts = PipelineOptions::new("t", tmp.path());
    opts.engine.memtable_bytes = 1; // a flush after every batch
    let p = Pipeline::open(opts, Metrics::new()).unwrap();
    for t in [1, 2] {
        let batch = Batch {
            records: vec![Record {
                device: "root.sg.d1".into(),
                time: t,
                fields: vec![Field::new("s", FieldValue::Int(t * 10))],
            }],
            rejections: vec![],
        };
        p.submit_blocking("test", batch, Instant::now()).unwrap();
    }
    p.shutdown_blocking();
    let (points, files) = super::tests::read_dir_points(tmp.path());
    assert_eq!(
        points,
        [
            ("root.sg.d1".into(), "s".into(), 1, Value::Int64(10)),
            ("root.sg.d1".into(), "s".into(), 2, Value::Int64(20)),
        ]
    );
    assert_eq!(files.len(), 1, "{files:?}");
    let r = TsFileReader::open_path(&files[0]).unwrap();
    // Chunks as `Some(offset)`, version records as `None` with their version.
    let mut events = Vec::new();
    for e in SequentialWalk::new(r.source()) {
        match e.unwrap() {
            WalkEvent::ChunkHeader { offset, .. } => events.push((Some(offset), 0)),
            WalkEvent::Version { version, .. } => events.push((None, version)),
            _ => {}
        }
    }
    let shape: Vec<bool> = events.iter().map(|e| e.0.is_some()).collect();
    assert_eq!(shape, [true, false, true, false], "{events:?}");
    let (first, second) = (events[1].1, events[3].1);
    assert!(0 < first && first < second, "{events:?}");
    assert_eq!(r.chunk_version(events[0].0.unwrap()), first);
    assert_eq!(r.chunk_version(events[2].0.unwrap()), second);
}

/// The count of `tsfiled_files_sealed_total` for `reason` in `metrics`.
fn sealed(metrics: &Metrics, reason: &str) -> u64 {
    let key = format!("tsfiled_files_sealed_total{{pipeline=\"t\",reason=\"{reason}\"}} ");
    metrics
        .render()
        .lines()
        .find_map(|l| l.strip_prefix(&key))
        .map_or(0, |v| v.parse().unwrap())
}

/// The series' part of an open file's metadata (400 bytes a series) is capped at a
/// thirty-second of the memtable budget when that is above the 2 MiB floor: with a 128 MiB
/// budget the cap is 4 MiB (4,194,304 bytes), which 10,500 series (4,200,000 bytes) reach at
/// their first flush, while all of the file's metadata (160 more bytes a chunk: 5,880,000
/// bytes) stays far below a quarter of the budget (32 MiB). A 1-byte chunk group flushes
/// every batch, so each of two batches seals its file for size and none is left for
/// shutdown.
#[test]
fn the_series_metadata_cap_is_a_thirty_second_of_a_large_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let mut opts = PipelineOptions::new("t", tmp.path());
    opts.engine.memtable_bytes = 128 << 20;
    opts.engine.chunk_group_bytes = 1;
    let metrics = Metrics::new();
    let p = Pipeline::open(opts, metrics.clone()).unwrap();
    for t in 1..=2 {
        let batch = Batch {
            records: vec![Record {
                device: "root.sg.d1".into(),
                time: t,
                fields: (0..10_500)
                    .map(|k| Field::new(format!("m{k}"), FieldValue::Int(t)))
                    .collect(),
            }],
            rejections: vec![],
        };
        let out = p.submit_blocking("test", batch, Instant::now()).unwrap();
        assert_eq!(out.accepted, 10_500);
    }
    p.shutdown_blocking();
    assert_eq!(sealed(&metrics, "size"), 2);
    assert_eq!(sealed(&metrics, "shutdown"), 0);
}

/// A batch of one record at `time` for each of `devices` devices `root.sg.dNNN`, each of
/// ten INT64 series `m0..m9` (the value of `mK` is `time * 10 + K`).
fn wide_batch(devices: usize, time: i64) -> Batch {
    Batch {
        records: (0..devices)
            .map(|d| Record {
                device: format!("root.sg.d{d:03}").into(),
                time,
                fields: (0..10)
                    .map(|k| Field::new(format!("m{k}"), FieldValue::Int(time * 10 + k)))
                    .collect(),
            })
            .collect(),
        rejections: vec![],
    }
}

/// The versions of the version records of a format 000002 file, in file order.
fn version_records(file: &std::path::Path) -> Vec<i64> {
    use tsfile::file::reader::{SequentialWalk, TsFileReader, WalkEvent};
    let r = TsFileReader::open_path(file).unwrap();
    SequentialWalk::new(r.source())
        .filter_map(|e| match e.unwrap() {
            WalkEvent::Version { version, .. } => Some(version),
            _ => None,
        })
        .collect()
}

/// The times of the points of each sealed format 000002 file under `dir` (files in path
/// order, which is creation order within a partition).
fn times_per_file(dir: &std::path::Path) -> Vec<std::collections::BTreeSet<i64>> {
    let (_, files) = super::tests::read_dir_points(dir);
    files
        .iter()
        .map(|f| {
            let r = tsfile::file::reader::TsFileReader::open_path(f).unwrap();
            let mut times = std::collections::BTreeSet::new();
            for (dev, ts) in r.all_series().unwrap() {
                for p in r.series_reader_for(&dev, &ts).unwrap().points() {
                    times.insert(p.unwrap().0);
                }
            }
            times
        })
        .collect()
}

/// A flush for memory takes in the records waiting for the engine between its slices (as
/// documented in `engine/inbox.rs`), into fresh memtables that it does not flush: four
/// records, each of 600 series (two slices of a flush), all waiting while the engine is
/// held, and a 1-byte chunk group (every record makes its memtable flush). When the engine
/// goes on, the first record's flush takes the other three in, and they are flushed
/// together at the shutdown seal: two flushes (two version records in the one file), not
/// four. Every point is written.
#[test]
fn a_flush_for_memory_takes_in_the_waiting_records_which_are_flushed_together_later() {
    // A log of 64 MiB has no room for a lag past the backlog's memory limit (a quarter of it
    // is 16 MiB, the limit itself): intake waits for the engine, so a flush takes in.
    assert_eq!(flushes_of_four_held_records(Some(64 << 20), false), 2);
}

/// With the default log, records past the backlog's memory limit stay in the log and intake
/// does not wait for the engine, so a flush takes nothing in (it would only grow the
/// memtables past their budget): the four records of the test above are flushed one by one,
/// four version records in the one file. Every point is written.
#[test]
fn where_records_can_stay_in_the_log_a_flush_takes_none_in() {
    assert_eq!(flushes_of_four_held_records(None, true), 4);
}

/// Four records of 600 series (two slices of a flush) acknowledged while the engine is held,
/// with a 1-byte chunk group and a log of `wal_max_bytes` (`None`: the default); `leaves`:
/// whether records can stay in that log. Checks that every point is written to one file in
/// time order; the flushes it took (version records in the file).
fn flushes_of_four_held_records(wal_max_bytes: Option<u64>, leaves: bool) -> usize {
    let tmp = tempfile::tempdir().unwrap();
    let mut opts = PipelineOptions::new("t", tmp.path());
    opts.engine.chunk_group_bytes = 1;
    if let Some(max) = wal_max_bytes {
        opts.wal.max_bytes = max;
    }
    let gate = crate::hooks::Gate::default();
    opts.engine.hooks.engine_gate = Some(gate.clone());
    let p = Pipeline::open(opts, Metrics::new()).unwrap();
    assert_eq!(p.backlog.leaves_in_log(), leaves);
    // Acknowledged after the log handed the record to the engine (it waits at the gate).
    for t in 1..=4 {
        let out = p
            .submit_blocking("test", wide_batch(60, t), Instant::now())
            .unwrap();
        assert_eq!(out.accepted, 600);
    }
    gate.open();
    p.shutdown_blocking();
    let (points, files) = super::tests::read_dir_points(tmp.path());
    assert_eq!(points.len(), 2_400);
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(times_per_file(tmp.path()), [(1..=4).collect()]);
    version_records(&files[0]).len()
}

/// Taking records in stops at the first other message and keeps it for the engine's loop,
/// and a later slice of the same flush takes nothing in past it: records before a seal
/// request go to the sealed file, records after it to the next file. The first record's
/// flush has three slices (1,100 series: 520, 520 and 60); between the first two it takes
/// in the second record and meets the seal request; between the last two it must not take
/// in the third record.
#[test]
fn taking_records_in_stops_at_a_seal_request_and_keeps_the_order() {
    let tmp = tempfile::tempdir().unwrap();
    let mut opts = PipelineOptions::new("t", tmp.path());
    opts.engine.chunk_group_bytes = 1;
    // A log of 64 MiB has no room for a lag past the backlog's memory limit (a quarter of it
    // is 16 MiB, the limit itself): intake waits for the engine, so a flush takes in.
    opts.wal.max_bytes = 64 << 20;
    let gate = crate::hooks::Gate::default();
    opts.engine.hooks.engine_gate = Some(gate.clone());
    let p = Pipeline::open(opts, Metrics::new()).unwrap();
    let submit = |b: Batch| p.submit_blocking("test", b, Instant::now()).unwrap();
    assert_eq!(submit(wide_batch(110, 1)).accepted, 1_100);
    assert_eq!(submit(wide_batch(1, 2)).accepted, 10);
    // The seal request after the second record in the engine's channel.
    let (tx, rx) = tokio::sync::oneshot::channel();
    p.engine_tx
        .send(EngineMsg::SealAll {
            reason: SealReason::Request,
            done: tx,
        })
        .unwrap();
    assert_eq!(submit(wide_batch(1, 3)).accepted, 10);
    gate.open();
    rx.blocking_recv().unwrap();
    p.shutdown_blocking();
    let (points, _) = super::tests::read_dir_points(tmp.path());
    assert_eq!(points.len(), 1_120);
    assert_eq!(
        times_per_file(tmp.path()),
        [[1, 2].into_iter().collect(), [3].into_iter().collect()]
    );
}

/// A thread waiting for room is woken when the engine's applied records bring the backlog
/// down to its limit (documented on `Backlog::done`), here from one byte over it: its bound
/// is an hour, so a wake-up that does not come shows as a test that does not end (when the
/// thread got to wait before the backlog fell; the task's test below always does).
#[test]
fn a_waiting_thread_is_woken_when_the_backlog_falls_to_its_limit() {
    let b = Backlog::new(100);
    b.add(101);
    assert!(b.over());
    let waiter = {
        let b = b.clone();
        std::thread::spawn(move || b.wait_blocking(Duration::from_secs(3600)))
    };
    while b.waiters() == 0 {
        std::thread::yield_now();
    }
    b.done(1);
    assert!(waiter.join().unwrap());
    assert_eq!((b.bytes(), b.over(), b.waiters()), (100, false, 0));
}

/// The same for a task ([`Backlog::wait`]), made to wait before the backlog falls: on a
/// one-thread runtime the spawned task runs up to its wait when the test's task yields.
#[test]
fn a_waiting_task_is_woken_when_the_backlog_falls_to_its_limit() {
    let b = Backlog::new(100);
    b.add(101);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let woken = rt.block_on(async {
        let task = {
            let b = b.clone();
            tokio::spawn(async move { b.wait(Duration::from_secs(3600)).await })
        };
        tokio::task::yield_now().await;
        assert_eq!(b.waiters(), 1);
        b.done(1);
        task.await.unwrap()
    });
    assert!(woken);
    assert_eq!((b.bytes(), b.over(), b.waiters()), (100, false, 0));
}

/// A wait that outlasts its bound with the backlog still over its limit says so (`false`,
/// the refusal's cue), for a task and for a thread; a backlog at its limit lets both go on
/// at once (`true`).
#[test]
fn waiting_in_vain_for_room_ends_false_after_the_bound() {
    let b = Backlog::new(100);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    b.add(100);
    assert!(rt.block_on(b.wait(Duration::from_secs(3600))));
    assert!(b.wait_blocking(Duration::from_secs(3600)));
    b.add(1);
    assert!(!rt.block_on(b.wait(Duration::from_millis(10))));
    assert!(!b.wait_blocking(Duration::from_millis(10)));
    assert_eq!((b.bytes(), b.waiters()), (101, 0));
}
