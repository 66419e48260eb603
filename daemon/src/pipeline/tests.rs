use super::*;
use std::path::Path;
use tsfile::file::reader::TsFileReader;
use tsfile::Value;
use tsfiled_connectors::{DataType, Field, FieldValue, Record};

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

/// The points of the TsFiles under `dir` as a reader of them gets them: of the points of a
/// series at one time, the one of the last file (unsequence files after sequence files, each
/// space in name order, which is write order), as IoTDB lets the newer version win.
fn read_dir_latest(dir: &Path) -> Points {
    let mut latest = std::collections::BTreeMap::new();
    for (d, m, t, v) in read_dir_points(dir).0 {
        latest.insert((d, m, t), v);
    }
    latest
        .into_iter()
        .map(|((d, m, t), v)| (d, m, t, v))
        .collect()
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
fn typed(m: &str, value: FieldValue, hint: DataType) -> Field {
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
                    typed("i32", FieldValue::Int(-7), DataType::INT32),
                    typed("f", FieldValue::Float(0.1), DataType::FLOAT),
                    typed("big", FieldValue::Int(1 << 40), DataType::INT32),
                    typed("pinned", FieldValue::Float(1.5), DataType::FLOAT),
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
                    typed("i32", FieldValue::Int(5), DataType::INT64),
                    typed("plain", FieldValue::Int(4), DataType::INT64),
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
    // Every fdatasync of the log is observed in the duration histogram.
    assert!(
        text.contains("# TYPE tsfiled_wal_fsync_seconds histogram"),
        "{text}"
    );
    assert_eq!(
        sample(&text, "tsfiled_wal_fsync_seconds_count"),
        Some(syncs),
        "{text}"
    );
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
    // Write until the engine sealed for the log's sake ("wal"), and at least four times the
    // budget at 16 bytes a point (the log stores these points in fewer: about 2.3 bytes, so
    // the loop's end could come before an engine tick saw the log fill); appends refused
    // meanwhile are retried.
    let sealed_for_wal = || metrics.render().contains(r#"reason="wal"}"#);
    while accepted < 4 * 256 * 1024 / 16 || !sealed_for_wal() {
        assert!(
            accepted < 2_000_000,
            "no seal for the log after {accepted} points"
        );
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

/// A NaN for a series encoded GORILLA (the default for DOUBLE; NaN is its end-of-page
/// marker) is rejected at intake as a type mismatch, naming the series; the record's other
/// points, and NaN in a PLAIN series, are kept and sealed.
#[test]
fn a_value_the_encoding_cannot_store_is_rejected_at_intake() {
    let tmp = tempfile::tempdir().unwrap();
    let mut opts = PipelineOptions::new("t", tmp.path());
    opts.rules = vec![SchemaRule {
        pattern: schema::PathPattern::parse("root.sg.d1.plain").unwrap(),
        data_type: Some(tsfile::DataType::DOUBLE),
        encoding: Some(tsfile::Encoding::PLAIN),
        compression: None,
    }];
    let p = Pipeline::open(opts, Metrics::new()).unwrap();
    let rec = |time: i64, v: f64| Record {
        device: "root.sg.d1".into(),
        time,
        fields: vec![
            Field::new("g", FieldValue::Float(v)),
            Field::new("plain", FieldValue::Float(v)),
        ],
    };
    let out = p
        .submit_blocking(
            "test",
            Batch {
                records: vec![rec(1, 1.5), rec(2, f64::NAN), rec(3, 2.5)],
                rejections: vec![],
            },
            Instant::now(),
        )
        .unwrap();
    assert_eq!(out.accepted, 5);
    assert_eq!(out.rejections.len(), 1, "{:?}", out.rejections);
    let r = &out.rejections[0];
    assert_eq!(r.reason, RejectReason::TypeMismatch);
    assert_eq!(
        r.location,
        Location::Record {
            index: 1,
            point: Some(PointAt {
                device: "root.sg.d1".into(),
                measurement: "g".into(),
                time: 2,
            }),
        }
    );
    assert_eq!(r.location.to_string(), "record 1 (root.sg.d1.g at 2)");
    assert!(r.message.contains("(DOUBLE GORILLA)"), "{}", r.message);
    p.shutdown_blocking();
    let (points, files) = read_dir_points(tmp.path());
    assert_eq!(files.len(), 1);
    let g: Vec<_> = points.iter().filter(|p| p.1 == "g").map(|p| p.2).collect();
    assert_eq!(g, vec![1, 3]);
    let plain: Vec<_> = points.iter().filter(|p| p.1 == "plain").collect();
    assert_eq!(plain.len(), 3);
    assert!(matches!(plain[1].3, Value::Double(x) if x.is_nan()));
}

/// `admit` queues a batch at the call, in call order (a batch admitted later is typed by
/// the series an earlier one created, before either is durable); `durable` then resolves in
/// any order; a closed pipeline refuses at `admit`.
#[test]
fn admitted_batches_are_ordered_at_the_call_and_awaited_later() {
    let tmp = tempfile::tempdir().unwrap();
    let p = Pipeline::open(PipelineOptions::new("t", tmp.path()), Metrics::new()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let now = Instant::now();
    let first = p.admit("test", one("root.sg.d1", 1, 7), now).unwrap();
    let float = Batch {
        records: vec![rec("root.sg.d1", 2, &[("s", FieldValue::Float(2.5))])],
        rejections: vec![],
    };
    let second = p.admit("test", float, now).unwrap();
    let third = p.admit("test", one("root.sg.d1", 3, 9), now).unwrap();
    let out = rt.block_on(p.durable("test", third)).unwrap();
    assert_eq!((out.accepted, out.rejected), (1, 0));
    let out = rt.block_on(p.durable("test", second)).unwrap();
    assert_eq!((out.accepted, out.rejected), (0, 1));
    assert_eq!(out.rejections[0].reason, RejectReason::TypeMismatch);
    let out = rt.block_on(p.durable("test", first)).unwrap();
    assert_eq!((out.accepted, out.rejected), (1, 0));
    p.shutdown_blocking();
    assert!(matches!(
        p.admit("test", one("root.sg.d1", 4, 1), now),
        Err(Error::Refused(Refusal::Closed))
    ));
    let (points, _) = read_dir_points(tmp.path());
    let expected = |t: i64, v: i64| {
        (
            "root.sg.d1".to_string(),
            "s".to_string(),
            t,
            Value::Int64(v),
        )
    };
    assert_eq!(points, vec![expected(1, 7), expected(3, 9)]);
}

#[test]
fn device_records_counts_the_records_of_each_device_and_all_fields() {
    // Two records share one device string, a later one repeats the name in a string of its
    // own, as parsers that do not share names make them.
    let d1: Arc<str> = Arc::from("root.a.d1");
    let shared = |time, fields: &[(&str, FieldValue)]| Record {
        device: d1.clone(),
        ..rec("root.a.d1", time, fields)
    };
    let records = vec![
        shared(1, &[("s1", FieldValue::Int(1)), ("s2", FieldValue::Int(2))]),
        shared(2, &[("s1", FieldValue::Int(3))]),
        rec("root.a.d2", 1, &[("s1", FieldValue::Float(0.5))]),
        rec("root.a.d1", 3, &[]),
    ];
    let (counts, fields) = device_records(&records);
    assert_eq!(fields, 4);
    assert_eq!(counts.len(), 2);
    assert_eq!(counts.get("root.a.d1"), Some(&3));
    assert_eq!(counts.get("root.a.d2"), Some(&1));
    assert_eq!(device_records(&[]), (HashMap::default(), 0));
}

/// Records alternating between more devices than are matched by pointer, and one device also
/// in strings of its own, all reach their own series, each point once.
#[test]
fn records_alternating_between_many_devices_reach_their_series() {
    let tmp = tempfile::tempdir().unwrap();
    let p = Pipeline::open(PipelineOptions::new("t", tmp.path()), Metrics::new()).unwrap();
    let devices: Vec<Arc<str>> = (0..10)
        .map(|d| Arc::from(format!("root.sg.d{d}")))
        .collect();
    let mut records = Vec::new();
    for t in 0..3i64 {
        for (d, device) in devices.iter().enumerate() {
            records.push(Record {
                device: device.clone(),
                time: t,
                fields: vec![Field::new("s", FieldValue::Int(100 * d as i64 + t))],
            });
        }
        records.push(rec("root.sg.d3", 10 + t, &[("s", FieldValue::Int(-t))]));
    }
    records.push(Record {
        device: devices[9].clone(),
        time: 5,
        fields: vec![Field::new("s", FieldValue::Float(0.5))],
    });
    let batch = Batch {
        records,
        rejections: vec![],
    };
    let out = p.submit_blocking("test", batch, Instant::now()).unwrap();
    assert_eq!(out.accepted, 33);
    assert_eq!(out.rejections.len(), 1, "{:?}", out.rejections);
    assert_eq!(out.rejections[0].reason, RejectReason::TypeMismatch);
    assert_eq!(
        out.rejections[0].location,
        Location::Record {
            index: 33,
            point: Some(PointAt {
                device: "root.sg.d9".into(),
                measurement: "s".into(),
                time: 5,
            }),
        }
    );
    p.shutdown_blocking();
    let (mut points, _) = read_dir_points(tmp.path());
    points.sort_by(|a, b| (&a.0, a.2).cmp(&(&b.0, b.2)));
    let mut expected = Vec::new();
    for d in 0..10i64 {
        for t in 0..3 {
            expected.push((
                format!("root.sg.d{d}"),
                "s".to_string(),
                t,
                Value::Int64(100 * d + t),
            ));
        }
        if d == 3 {
            for t in 0..3 {
                expected.push(("root.sg.d3".into(), "s".into(), 10 + t, Value::Int64(-t)));
            }
        }
    }
    assert_eq!(points, expected);
}

/// Records sharing their name strings in the same order (as the MQTT IoTDB JSON reader makes
/// them) go through normalization's positional path; what that path does not store itself —
/// a NaN the encoding refuses, an integer for a DOUBLE series, a float for an INT64 one, a
/// declared type, fields in another order — is typed as any other field.
#[test]
fn records_sharing_their_names_by_position_are_typed_as_any_other() {
    let tmp = tempfile::tempdir().unwrap();
    let mut opts = PipelineOptions::new("t", tmp.path());
    opts.rules = vec![SchemaRule {
        pattern: schema::PathPattern::parse("root.sg.d1.plain").unwrap(),
        data_type: Some(tsfile::DataType::DOUBLE),
        encoding: Some(tsfile::Encoding::PLAIN),
        compression: None,
    }];
    let p = Pipeline::open(opts, Metrics::new()).unwrap();
    let device: Arc<str> = Arc::from("root.sg.d1");
    let [g, i, plain]: [Arc<str>; 3] = ["g", "i", "plain"].map(Arc::from);
    let rec = |time: i64, fields: Vec<Field>| Record {
        device: device.clone(),
        time,
        fields,
    };
    let f = |m: &Arc<str>, value: FieldValue| Field::new(m.clone(), value);
    use FieldValue::{Float, Int};
    let records = vec![
        rec(
            1,
            vec![f(&g, Float(1.5)), f(&i, Int(7)), f(&plain, Float(1.5))],
        ),
        rec(
            2,
            vec![
                f(&g, Float(f64::NAN)),
                f(&i, Int(i64::MIN)),
                f(&plain, Float(f64::NAN)),
            ],
        ),
        rec(
            3,
            vec![f(&g, Int(3)), f(&i, Float(2.5)), f(&plain, Float(3.5))],
        ),
        rec(
            4,
            vec![
                f(&g, Float(4.5)),
                Field {
                    type_hint: Some(DataType::INT32),
                    ..f(&i, Int(9))
                },
                f(&plain, Float(4.5)),
            ],
        ),
        rec(
            5,
            vec![f(&plain, Float(5.5)), f(&g, Float(5.5)), f(&i, Int(5))],
        ),
        rec(
            6,
            vec![
                f(&g, Float(-0.0)),
                f(&i, Int(i64::MAX)),
                f(&plain, Float(6.5)),
            ],
        ),
    ];
    let batch = Batch {
        records,
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
                "record 2 (root.sg.d1.i at 3)".to_string()
            ),
            (
                RejectReason::DeclaredTypeConflict,
                "record 3 (root.sg.d1.i at 4)".to_string()
            ),
        ]
    );
    assert_eq!(out.accepted, 15);
    p.shutdown_blocking();
    let (points, _) = read_dir_points(tmp.path());
    let series = |m: &str| -> Vec<(i64, Value)> {
        points
            .iter()
            .filter(|p| p.1 == m)
            .map(|p| (p.2, p.3.clone()))
            .collect()
    };
    let d = |t: i64, v: f64| (t, Value::Double(v));
    assert_eq!(
        series("g"),
        [d(1, 1.5), d(3, 3.0), d(4, 4.5), d(5, 5.5), d(6, -0.0)]
    );
    assert!(matches!(series("g")[4].1, Value::Double(x) if x.is_sign_negative()));
    let l = |t: i64, v: i64| (t, Value::Int64(v));
    assert_eq!(
        series("i"),
        [l(1, 7), l(2, i64::MIN), l(5, 5), l(6, i64::MAX)]
    );
    let plain = series("plain");
    assert_eq!(plain.len(), 6);
    assert!(matches!(plain[1], (2, Value::Double(x)) if x.is_nan()));
    assert_eq!(
        [&plain[..1], &plain[2..]].concat(),
        [d(1, 1.5), d(3, 3.5), d(4, 4.5), d(5, 5.5), d(6, 6.5)]
    );
}

/// 10 records of `device` at times `t0..t0 + 10`, each with the INT64 fields `m0..m9` (the
/// value of `mK` at time `t` is `t * 10 + K`): 100 points.
fn block(device: &str, t0: i64) -> Batch {
    let names: Vec<String> = (0..10).map(|k| format!("m{k}")).collect();
    Batch {
        records: (t0..t0 + 10)
            .map(|t| {
                let fields: Vec<(&str, FieldValue)> = names
                    .iter()
                    .enumerate()
                    .map(|(k, m)| (m.as_str(), FieldValue::Int(t * 10 + k as i64)))
                    .collect();
                rec(device, t, &fields)
            })
            .collect(),
        rejections: vec![],
    }
}

/// The points of `block(device, t0)` for `t0` in `starts`, sorted.
fn block_points(device: &str, starts: impl Iterator<Item = i64>) -> Points {
    let mut out = Vec::new();
    for t0 in starts {
        for t in t0..t0 + 10 {
            for k in 0..10 {
                out.push((
                    device.to_string(),
                    format!("m{k}"),
                    t,
                    Value::Int64(t * 10 + k),
                ));
            }
        }
    }
    out.sort_by(|a, b| (&a.0, &a.1, a.2).cmp(&(&b.0, &b.1, b.2)));
    out
}

/// Submits `block(device, 10 * k)` for k = 0, 1, ... on another thread, reporting each
/// acknowledgement (its k) or the first error; it stops after k = `last`.
fn submit_blocks(
    p: &Arc<Pipeline>,
    device: &'static str,
    last: Arc<std::sync::atomic::AtomicI64>,
) -> std::sync::mpsc::Receiver<std::result::Result<i64, Error>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let p = p.clone();
    std::thread::spawn(move || {
        let mut k = 0i64;
        while k <= last.load(Ordering::SeqCst) {
            match p.submit_blocking("test", block(device, k * 10), Instant::now()) {
                Ok(out) => {
                    assert_eq!(out.accepted, 100);
                    let _ = tx.send(Ok(k));
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            }
            k += 1;
        }
    });
    rx
}

/// The acknowledgements `rx` reported so far (without waiting).
fn acked(rx: &std::sync::mpsc::Receiver<std::result::Result<i64, Error>>, seen: &mut i64) {
    while let Ok(r) = rx.try_recv() {
        assert_eq!(r.unwrap(), *seen);
        *seen += 1;
    }
}

#[test]
fn acks_go_on_while_the_engine_is_held_then_intake_waits_and_resumes_without_refusal() {
    let tmp = tempfile::tempdir().unwrap();
    let metrics = Metrics::new();
    let mut opts = PipelineOptions::new("t", tmp.path());
    // A budget of 4 MiB: the backlog's memory limit is a quarter of it, its floor, 1 MiB.
    opts.engine.memtable_bytes = 4 << 20;
    // A log of 8 MiB: the lag limit is a quarter of it, 2 MiB. Past 1 MiB, records stay in
    // the log, and the engine reads them back from there.
    opts.wal.max_bytes = 8 << 20;
    let gate = crate::hooks::Gate::default();
    opts.engine.hooks.engine_gate = Some(gate.clone());
    let p = Pipeline::open(opts, metrics.clone()).unwrap();
    // The engine applies nothing until the gate opens.
    let last = Arc::new(std::sync::atomic::AtomicI64::new(i64::MAX));
    let rx = submit_blocks(&p, "root.sg.d1", last.clone());
    wait_for("a submission waiting for room", || p.backlog.waiters() == 1);
    let mut seen = 0;
    acked(&rx, &mut seen);
    // Before, the log handed records over through a channel of 64: its thread stopped at
    // the 65th unapplied record and no acknowledgement came after it.
    assert!(seen > 64, "waiting after {seen} records");
    assert!(p.backlog.over());
    // Waiting, nothing was refused.
    let text = metrics.render();
    assert!(
        !text.contains("tsfiled_backpressure_total{pipeline=\"t\",source=\"test\"} 1"),
        "{text}"
    );
    // The engine goes on: the waiting submission and 20 more are acknowledged.
    let waiting = seen;
    last.store(waiting + 20, Ordering::SeqCst);
    gate.open();
    while let Ok(r) = rx.recv_timeout(Duration::from_secs(60)) {
        assert_eq!(r.unwrap(), seen);
        seen += 1;
    }
    assert_eq!(seen, waiting + 21);
    p.shutdown_blocking();
    // The records past the memory limit were read back from the log (by the shutdown at the
    // latest: intake may resume before the engine gets to them).
    let read_back = sample(&metrics.render(), "tsfiled_wal_records_read_back_total").unwrap();
    assert!(read_back > 0, "{read_back}");
    let (mut points, _) = read_dir_points(tmp.path());
    points.sort_by(|a, b| (&a.0, &a.1, a.2).cmp(&(&b.0, &b.1, b.2)));
    // Every acknowledged batch, once.
    assert_eq!(
        points,
        block_points("root.sg.d1", (0..seen).map(|r| r * 10))
    );
}

/// Submits blocks of root.sg.d1 (times 0, 10, …) until the backlog is over its lag limit;
/// how many, each acknowledged.
fn fill_past_the_lag_limit(p: &Arc<Pipeline>) -> i64 {
    let mut k = 0i64;
    while !p.backlog.over() {
        let out = p
            .submit_blocking("test", block("root.sg.d1", k * 10), Instant::now())
            .unwrap();
        assert_eq!(out.accepted, 100);
        k += 1;
    }
    k
}

/// A pipeline in `dir` (memory limit 1 MiB, lag limit 2 MiB, see the test above) whose
/// engine is held at the gate, filled past its lag limit: its options (without the gate), the
/// gate, the pipeline and the number of blocks acknowledged (all records past the first MiB are
/// left in the log).
fn held_past_the_lag_limit(
    dir: &Path,
) -> (PipelineOptions, crate::hooks::Gate, Arc<Pipeline>, i64) {
    let mut opts = PipelineOptions::new("t", dir);
    opts.engine.memtable_bytes = 4 << 20;
    opts.wal.max_bytes = 8 << 20;
    let mut held = opts.clone();
    let gate = crate::hooks::Gate::default();
    held.engine.hooks.engine_gate = Some(gate.clone());
    let p = Pipeline::open(held, Metrics::new()).unwrap();
    let k = fill_past_the_lag_limit(&p);
    assert!(p.backlog.left_upto().is_some());
    (opts, gate, p, k)
}

/// Acknowledged records that stayed in the log while the engine was held survive a crash
/// (the pipeline gone without stopping, its engine still held and having applied nothing):
/// the next start replays them from the log, and every acknowledged batch is in the files
/// once.
#[test]
fn records_left_in_the_log_survive_a_crash() {
    let tmp = tempfile::tempdir().unwrap();
    let (opts, _gate, p, k) = held_past_the_lag_limit(tmp.path());
    // The crash: the pipeline is dropped as it is (its engine stays held at the gate).
    drop(p);
    let p = Pipeline::open(opts, Metrics::new()).unwrap();
    p.shutdown_blocking();
    let (mut points, _) = read_dir_points(tmp.path());
    points.sort_by(|a, b| (&a.0, &a.1, a.2).cmp(&(&b.0, &b.1, b.2)));
    assert_eq!(points, block_points("root.sg.d1", (0..k).map(|r| r * 10)));
}

#[test]
fn an_engine_that_stays_stuck_past_the_bound_gets_intake_refused_then_resumed() {
    let tmp = tempfile::tempdir().unwrap();
    let metrics = Metrics::new();
    let mut opts = PipelineOptions::new("t", tmp.path());
    opts.engine.memtable_bytes = 4 << 20;
    opts.wal.max_bytes = 8 << 20;
    // A short bound: the engine stays held past it.
    opts.backlog_wait = Duration::from_millis(50);
    let gate = crate::hooks::Gate::default();
    opts.engine.hooks.engine_gate = Some(gate.clone());
    let p = Pipeline::open(opts, metrics.clone()).unwrap();
    let rx = submit_blocks(&p, "root.sg.d1", Arc::new(i64::MAX.into()));
    let mut seen = 0i64;
    let refusal = loop {
        match rx.recv_timeout(Duration::from_secs(120)).unwrap() {
            Ok(k) => {
                assert_eq!(k, seen);
                seen += 1;
            }
            Err(e) => break e,
        }
    };
    assert!(
        matches!(
            refusal,
            Error::Refused(Refusal::Full {
                reason: "engine backlog",
                ..
            })
        ),
        "{refusal:?}"
    );
    assert!(seen > 64, "refused after {seen} records");
    let text = metrics.render();
    assert!(
        text.contains("tsfiled_backpressure_total{pipeline=\"t\",source=\"test\"} 1\n"),
        "{text}"
    );
    // Intake resumes once the engine has caught up.
    gate.open();
    wait_for("the backlog to drain", || !p.backlog.over());
    let out = p
        .submit_blocking("test", block("root.sg.d1", seen * 10), Instant::now())
        .unwrap();
    assert_eq!(out.accepted, 100);
    p.shutdown_blocking();
    let (mut points, _) = read_dir_points(tmp.path());
    points.sort_by(|a, b| (&a.0, &a.1, a.2).cmp(&(&b.0, &b.1, b.2)));
    // Every acknowledged batch, the refused one (it had the same times as the one after
    // the resume) once.
    assert_eq!(
        points,
        block_points("root.sg.d1", (0..=seen).map(|r| r * 10))
    );
}

/// `block(device, t0)` with every value plus `delta`.
fn block_plus(device: &str, t0: i64, delta: i64) -> Batch {
    let mut b = block(device, t0);
    for r in &mut b.records {
        for f in &mut r.fields {
            if let FieldValue::Int(v) = &mut f.value {
                *v += delta;
            }
        }
    }
    b
}

#[test]
fn a_source_batch_admitted_while_intake_must_wait_is_acknowledged_in_order_once_the_engine_goes_on()
{
    use tsfiled_connectors::sink::BatchSink;
    let tmp = tempfile::tempdir().unwrap();
    let mut opts = PipelineOptions::new("t", tmp.path());
    opts.engine.memtable_bytes = 4 << 20;
    opts.wal.max_bytes = 8 << 20;
    let gate = crate::hooks::Gate::default();
    opts.engine.hooks.engine_gate = Some(gate.clone());
    let p = Pipeline::open(opts, Metrics::new()).unwrap();
    // Fill the backlog past its limit (one thread submits: it stops right after).
    let k = fill_past_the_lag_limit(&p);
    // Two batches of another device at the same times, the second with other values: the
    // source admits both (as the MQTT source does) without a refusal.
    let sink = Arc::new(crate::sources::PipelineSink::new(p.clone(), "mqtt"));
    let first = sink
        .clone()
        .admit(block("root.sg.d2", 0), Instant::now())
        .expect("admitted, to wait");
    let second = sink
        .clone()
        .admit(block_plus("root.sg.d2", 0, 1000), Instant::now())
        .expect("admitted, to wait");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let opener = {
        let (p, gate) = (p.clone(), gate.clone());
        std::thread::spawn(move || {
            wait_for("the source's batch waiting for room", || {
                p.backlog.waiters() == 1
            });
            gate.open();
        })
    };
    // Awaited in order, as the source does.
    let (a, b) = rt.block_on(async { (first.await, second.await) });
    opener.join().unwrap();
    assert_eq!(a.unwrap().accepted, 100);
    assert_eq!(b.unwrap().accepted, 100);
    p.shutdown_blocking();
    // What a reader of the files gets: d2's first batch may be in a sequence file and its
    // second in an unsequence one (the second's times are not after the flushed first's),
    // which then holds the values of those times.
    let points = read_dir_latest(tmp.path());
    // d2 holds the second batch's values: it entered the log after the first.
    let mut expected = block_points("root.sg.d1", (0..k).map(|r| r * 10));
    expected.extend(
        block_points("root.sg.d2", std::iter::once(0))
            .into_iter()
            .map(|(d, m, t, v)| match v {
                Value::Int64(v) => (d, m, t, Value::Int64(v + 1000)),
                v => (d, m, t, v),
            }),
    );
    expected.sort_by(|a, b| (&a.0, &a.1, a.2).cmp(&(&b.0, &b.1, b.2)));
    assert_eq!(points, expected);
}

#[test]
fn a_flush_for_memory_takes_in_waiting_records_between_its_slices_and_loses_none() {
    let tmp = tempfile::tempdir().unwrap();
    let mut opts = PipelineOptions::new("t", tmp.path());
    // Every record makes its partition's memtable flush for memory.
    opts.engine.chunk_group_bytes = 1;
    // A log of 64 MiB has no room for a lag past the backlog's memory limit (a quarter of it
    // is 16 MiB, the limit itself): intake waits for the engine, so a flush takes in.
    opts.wal.max_bytes = 64 << 20;
    let gate = crate::hooks::Gate::default();
    opts.engine.hooks.engine_gate = Some(gate.clone());
    let p = Pipeline::open(opts, Metrics::new()).unwrap();
    // 8 records of 60 devices x 10 series (600 series, two slices), each record 10 newer
    // times: all acknowledged while the engine is held, so when it goes on, the first
    // record's flush finds the other 7 waiting.
    let devices: Vec<String> = (0..60).map(|d| format!("root.sg.d{d:02}")).collect();
    let wide = |k: i64| Batch {
        records: devices
            .iter()
            .flat_map(|d| block(d, k * 10).records)
            .collect(),
        rejections: vec![],
    };
    let admitted: Vec<Admitted> = (0..8)
        .map(|k| p.admit("test", wide(k), Instant::now()).unwrap())
        .collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    for a in admitted {
        assert_eq!(rt.block_on(p.durable("test", a)).unwrap().accepted, 6000);
    }
    gate.open();
    p.shutdown_blocking();
    let (mut points, _) = read_dir_points(tmp.path());
    points.sort_by(|a, b| (&a.0, &a.1, a.2).cmp(&(&b.0, &b.1, b.2)));
    let mut expected: Points = devices
        .iter()
        .flat_map(|d| block_points(d, (0..8).map(|k| k * 10)))
        .collect();
    expected.sort_by(|a, b| (&a.0, &a.1, a.2).cmp(&(&b.0, &b.1, b.2)));
    assert_eq!(points.len(), 48_000);
    assert_eq!(points, expected);
}

#[test]
fn a_flush_of_more_series_than_a_slice_writes_every_point() {
    let tmp = tempfile::tempdir().unwrap();
    let metrics = Metrics::new();
    let p = Pipeline::open(PipelineOptions::new("t", tmp.path()), metrics.clone()).unwrap();
    // 53 devices of 10 series: 530 series, more than a slice of 512; the slice's end
    // falls inside the 52nd device, whose series all go to the first slice.
    let devices: Vec<String> = (0..53).map(|d| format!("root.sg.d{d:03}")).collect();
    for d in &devices {
        let out = p
            .submit_blocking("test", block(d, 0), Instant::now())
            .unwrap();
        assert_eq!(out.accepted, 100);
    }
    // One flush of all 530 series, at the seal.
    p.seal_all_blocking(SealReason::Request);
    p.shutdown_blocking();
    let (mut points, files) = read_dir_points(tmp.path());
    assert_eq!(files.len(), 1, "{files:?}");
    points.sort_by(|a, b| (&a.0, &a.1, a.2).cmp(&(&b.0, &b.1, b.2)));
    let expected: Points = devices
        .iter()
        .flat_map(|d| block_points(d, std::iter::once(0)))
        .collect();
    assert_eq!(points.len(), 5_300);
    assert_eq!(points, expected);
}

/// Normalization stores a double other than NaN and an INT64 other than the minimum without
/// asking `schema::storable`: every encoding must take them (and only NaN, and the minimum,
/// may be refused).
#[test]
fn every_encoding_takes_what_normalization_stores_unasked() {
    for &e in tsfile::Encoding::ALL {
        for v in [
            0.0,
            -0.0,
            1.5,
            -2.25e300,
            f64::MIN_POSITIVE,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            assert_eq!(schema::storable(&Value::Double(v), e), Ok(()), "{e:?} {v}");
        }
        for v in [0, 1, -1, i64::MAX, i64::MIN + 1] {
            assert_eq!(schema::storable(&Value::Int64(v), e), Ok(()), "{e:?} {v}");
        }
    }
}

/// The WAL directory removed (`rm -rf`) while acknowledged records are left in the log (the
/// engine held past the lag limit): the log keeps its segments open for reading, so the
/// engine still reads every one of them back and seals it, and intake goes on in a new
/// directory. (Reading by name, the test found 44,200 of 492,800 points sealed.)
#[test]
fn records_left_in_the_log_survive_its_directory_being_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let (opts, gate, p, k) = held_past_the_lag_limit(tmp.path());
    std::fs::remove_dir_all(&opts.wal.dir).unwrap();
    gate.open();
    let mut expected = block_points("root.sg.d1", (0..k).map(|r| r * 10));
    let mut accepted = Vec::new();
    for j in 0..20 {
        // The first group after the removal is refused (its segment is unlinked).
        if let Ok(out) = p.submit_blocking("test", block("root.sg.d2", j * 10), Instant::now()) {
            assert_eq!(out.accepted, 100);
            accepted.push(j * 10);
        }
    }
    assert!(accepted.len() >= 10, "{accepted:?}");
    p.shutdown_blocking();
    assert_eq!(p.backlog.lag(), 0);
    assert_eq!(p.backlog.left_upto(), None);
    expected.extend(block_points("root.sg.d2", accepted.into_iter()));
    expected.sort_by(|a, b| (&a.0, &a.1, a.2).cmp(&(&b.0, &b.1, b.2)));
    let (mut points, _) = read_dir_points(tmp.path());
    points.sort_by(|a, b| (&a.0, &a.1, a.2).cmp(&(&b.0, &b.1, b.2)));
    assert_eq!(points.len(), expected.len());
    assert_eq!(points, expected);
}
