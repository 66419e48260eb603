//! Push over HTTP, SIGTERM, read back point for point. The first three tests run in both
//! TsFile formats (`…_v4`); in v4 the PyPI `tsfile` library reads the sealed files too.

use std::io::Write;

use tsfile::Value;

use crate::harness::*;

fn gzip(b: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

#[test]
fn push_every_format_then_sigterm_reads_back_point_for_point() {
    push_every_format(Fmt::V2);
}

#[test]
fn push_every_format_then_sigterm_reads_back_point_for_point_v4() {
    push_every_format(Fmt::V4);
}

fn push_every_format(fmt: Fmt) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let d = DaemonProc::start_fmt(&data, &[], fmt);
    let a = d.addr;
    // IoTDB JSON: single record.
    let r = post(a, "/ingest/iotdb-json", &[], br#"{"device":"root.sg.d1","timestamp":1000,"measurements":["i","f","b","t"],"values":[7,1.25,true,"hello"]}"#);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["accepted"], 4);
    // Batch form (one row per timestamp) with a null, and an array of both forms.
    let r = post(a, "/ingest/iotdb-json", &[], br#"[{"device":"root.sg.d1","timestamps":[2000,3000],"measurements":["i","f"],"values":[[8,2.5],[9,null]]},{"device":"root.sg.d2","timestamp":1500,"measurements":["x"],"values":[-3]}]"#);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["accepted"], 4);
    // Seconds precision for JSON; last write wins for a duplicate (series, time).
    let r = post(
        a,
        "/ingest/iotdb-json?precision=s",
        &[],
        br#"{"device":"root.sg.d1","timestamp":2,"measurements":["i"],"values":[80]}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // Line protocol v1 and v2 with precision (db, org, bucket ignored); gzip.
    let r = post(
        a,
        "/write?db=tele&precision=ms",
        &[],
        b"cpu,host=h1 usage=0.5,n=3i 5000\ncpu,host=h1 usage=0.75 6000\n",
    );
    assert_eq!(r.status, 204, "{}", r.body);
    let r = post(
        a,
        "/api/v2/write?org=o&bucket=tele&precision=s",
        &[("Content-Encoding", "gzip")],
        &gzip(b"cpu,host=h1 usage=1 7\nmem,host=h1 free=10u 7\n"),
    );
    assert_eq!(r.status, 204, "{}", r.body);
    // Late point for root.sg.d1 after nothing was flushed: still sequence.
    let r = post(
        a,
        "/ingest/iotdb-json",
        &[],
        br#"{"device":"root.sg.d1","timestamp":500,"measurements":["i"],"values":[5]}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let m = get(a, "/metrics").body;
    assert_eq!(
        metric(
            &m,
            r#"tsfiled_points_received_total{pipeline="default",source="http"}"#
        ),
        Some(15.0),
        "{m}"
    );
    assert_eq!(get(a, "/health").status, 200);
    assert_eq!(get(a, "/ready").status, 200);
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    assert!(temporaries(&data).is_empty(), "{:?}", temporaries(&data));
    let (points, files) = read_all_in(&data, fmt);
    let flat: Vec<(String, String, i64, Value)> = points
        .into_iter()
        .map(|((d, m, t), v)| {
            assert_eq!(v.len(), 1, "duplicate {d}.{m}@{t}");
            (d, m, t, v[0].clone())
        })
        .collect();
    let s = |x: &str| x.to_string();
    let expected = vec![
        (s("root.lp.cpu.h1"), s("n"), 5000, Value::Int64(3)),
        (s("root.lp.cpu.h1"), s("usage"), 5000, Value::Double(0.5)),
        (s("root.lp.cpu.h1"), s("usage"), 6000, Value::Double(0.75)),
        (s("root.lp.cpu.h1"), s("usage"), 7000, Value::Double(1.0)),
        (s("root.lp.mem.h1"), s("free"), 7000, Value::Int64(10)),
        (s("root.sg.d1"), s("b"), 1000, Value::Boolean(true)),
        (s("root.sg.d1"), s("f"), 1000, Value::Double(1.25)),
        (s("root.sg.d1"), s("f"), 2000, Value::Double(2.5)),
        (s("root.sg.d1"), s("i"), 500, Value::Int64(5)),
        (s("root.sg.d1"), s("i"), 1000, Value::Int64(7)),
        (s("root.sg.d1"), s("i"), 2000, Value::Int64(80)),
        (s("root.sg.d1"), s("i"), 3000, Value::Int64(9)),
        (
            s("root.sg.d1"),
            s("t"),
            1000,
            Value::Text(b"hello".to_vec()),
        ),
        (s("root.sg.d2"), s("x"), 1500, Value::Int64(-3)),
    ];
    assert_eq!(flat, expected);
    if fmt == Fmt::V4 {
        // The Apache TsFile library reads the same points from the files.
        let want = canonical_lines(
            expected
                .iter()
                .map(|(d, m, t, v)| (d.as_str(), m.as_str(), *t, v)),
        );
        assert_eq!(pytsfile_lines(&files), want);
    }
    // One sequence file per storage group.
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(files
        .iter()
        .all(|f| f.to_string_lossy().contains("/sequence/")));
    // Restart: nothing is replayed twice, and the frozen type of root.sg.d1.i
    // (INT64) refuses a float.
    let d = DaemonProc::start_fmt(&data, &[], fmt);
    let r = post(
        d.addr,
        "/ingest/iotdb-json",
        &[],
        br#"{"device":"root.sg.d1","timestamp":9000,"measurements":["i"],"values":[1.5]}"#,
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["errors"][0]["reason"], "type_mismatch");
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    let (points, files) = read_all_in(&data, fmt);
    assert_eq!(points.len(), 14);
    assert_eq!(files.len(), 2);
}

#[test]
fn late_points_after_a_flush_go_to_unsequence() {
    late_points(Fmt::V2);
}

/// In v4 the restart finds the device's newest time in the IoTDB 2.x `.resource`.
#[test]
fn late_points_after_a_flush_go_to_unsequence_v4() {
    late_points(Fmt::V4);
}

fn late_points(fmt: Fmt) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    // First run: seal at shutdown (so the device's newest time is 200 in a sequence file).
    let d = DaemonProc::start_fmt(&data, &[], fmt);
    let r = post(
        d.addr,
        "/ingest/iotdb-json",
        &[],
        br#"{"device":"root.sg.d1","timestamps":[100,200],"measurements":["s"],"values":[[1],[2]]}"#,
    );
    assert_eq!(r.status, 200);
    assert_eq!(d.stop().0, 0);
    // Second run: 150 is older than what the sequence space holds for the device.
    let d = DaemonProc::start_fmt(&data, &[], fmt);
    let r = post(
        d.addr,
        "/ingest/iotdb-json",
        &[],
        br#"{"device":"root.sg.d1","timestamps":[150,300],"measurements":["s"],"values":[[15],[3]]}"#,
    );
    assert_eq!(r.status, 200);
    assert_eq!(d.stop().0, 0);
    let (points, files) = read_all_in(&data, fmt);
    // Every point once, with the value posted for it.
    let want: Vec<_> = [(100, 1), (150, 15), (200, 2), (300, 3)]
        .map(|(t, v)| {
            (
                ("root.sg.d1".to_string(), "s".to_string(), t),
                vec![Value::Int64(v)],
            )
        })
        .into_iter()
        .collect();
    assert_eq!(points.into_iter().collect::<Vec<_>>(), want);
    let unseq: Vec<_> = files
        .iter()
        .filter(|f| f.to_string_lossy().contains("/unsequence/"))
        .collect();
    assert_eq!(unseq.len(), 1, "{files:?}");
    assert_eq!(files.len(), 3);
    if fmt == Fmt::V4 {
        // The Apache TsFile library reads the sequence and unsequence files alike.
        let want = canonical_lines(
            want.iter()
                .map(|((d, m, t), v)| (d.as_str(), m.as_str(), *t, &v[0])),
        );
        assert_eq!(pytsfile_lines(&files), want);
    }
}

#[test]
fn status_page_and_api_status_show_open_and_sealed_files() {
    status_page_and_api_status_show_open_and_sealed_files_in(Fmt::V2);
}

#[test]
fn status_page_and_api_status_show_open_and_sealed_files_v4() {
    status_page_and_api_status_show_open_and_sealed_files_in(Fmt::V4);
}

fn status_page_and_api_status_show_open_and_sealed_files_in(fmt: Fmt) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let d = DaemonProc::start_fmt(&data, &["--seal-idle-ms", "300"], fmt);
    let page = get(d.addr, "/");
    assert_eq!(page.status, 200);
    assert!(page.body.contains("<title>tsfiled status</title>"));
    // The points seal after 300 ms without new ones.
    let r = post(
        d.addr,
        "/ingest/iotdb-json",
        &[],
        br#"{"device":"root.sg.d1","timestamps":[1,2,3],"measurements":["s"],"values":[[1],[2],[3]]}"#,
    );
    assert_eq!(r.status, 200);
    let start = std::time::Instant::now();
    let sealed = loop {
        let st = get(d.addr, "/api/status").json();
        let p = &st["pipelines"][0];
        assert_eq!(p["name"], "default");
        assert_eq!(p["sources"][0]["type"], "http");
        assert!(p["wal"]["max_bytes"].as_u64().unwrap() > 0);
        if let Some(f) = p["recent_sealed"]
            .as_array()
            .and_then(|a| a.first())
            .cloned()
        {
            assert_eq!(p["open_files"].as_array().unwrap().len(), 0);
            break f;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "no seal: {st}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(sealed["reason"], "idle");
    assert_eq!(sealed["points"], 3);
    assert_eq!(sealed["storage_group"], "root.sg");
    let path = data.join(sealed["path"].as_str().unwrap());
    assert!(path.exists(), "{}", path.display());
    assert_eq!(
        sealed["bytes"].as_u64().unwrap(),
        std::fs::metadata(&path).unwrap().len()
    );
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
}

/// A data directory written in format 2, then by the daemon configured for v4: the 000002
/// files stay, their `.resource` still tells which points are late, and series typed in
/// format 2 with encodings v4 does not write (BOOLEAN RLE, DOUBLE GORILLA) go on in v4.
#[test]
fn switching_from_format_2_to_4_keeps_old_files_and_series() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let body = |times: &str, vals: &str| {
        format!(
            r#"{{"device":"root.sg.d1","timestamps":{times},"measurements":["b","f"],"values":{vals}}}"#
        )
    };
    let d = DaemonProc::start_fmt(&data, &[], Fmt::V2);
    let r = post(
        d.addr,
        "/ingest/iotdb-json",
        &[],
        body("[100,200]", "[[true,0.5],[false,1.5]]").as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(d.stop().0, 0);
    let d = DaemonProc::start_fmt(&data, &[], Fmt::V4);
    let r = post(
        d.addr,
        "/ingest/iotdb-json",
        &[],
        body("[150,300]", "[[true,2.5],[true,3.5]]").as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    assert!(
        log.contains("is not written in TsFile v4; the series is written PLAIN"),
        "{log}"
    );
    let (points, files) = read_all(&data);
    let s = |x: &str| x.to_string();
    let got: Vec<_> = points.into_iter().collect();
    let want: Vec<_> = [
        (100, Value::Boolean(true), Value::Double(0.5)),
        (150, Value::Boolean(true), Value::Double(2.5)),
        (200, Value::Boolean(false), Value::Double(1.5)),
        (300, Value::Boolean(true), Value::Double(3.5)),
    ]
    .into_iter()
    .flat_map(|(t, b, f)| {
        [
            ((s("root.sg.d1"), s("b"), t), vec![b]),
            ((s("root.sg.d1"), s("f"), t), vec![f]),
        ]
    })
    .collect::<std::collections::BTreeMap<_, _>>()
    .into_iter()
    .collect();
    assert_eq!(got, want);
    let head = |f: &std::path::PathBuf| std::fs::read(f).unwrap()[..7].to_vec();
    let v2: Vec<_> = files.iter().filter(|f| head(f) == b"TsFile0").collect();
    let v4: Vec<_> = files.iter().filter(|f| head(f) == b"TsFile\x04").collect();
    assert_eq!((v2.len(), v4.len()), (1, 2), "{files:?}");
    // 150 is older than the 200 sealed in format 2: the v4 run put it in unsequence.
    assert!(
        v4.iter()
            .any(|f| f.to_string_lossy().contains("/unsequence/")),
        "{files:?}"
    );
}
