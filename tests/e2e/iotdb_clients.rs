//! Data as IoTDB's own clients and formats send it, through the real daemon, read back from the
//! sealed files value for value. Expected values are IoTDB's semantics written out by hand:
//! - IoTDB JSON batch form (IoTDB's `JSONPayloadFormatter`): `values[i]` is the row of
//!   `timestamps[i]`, over HTTP and over a real Mosquitto;
//! - declared types: CSV `(TYPE)` headers (IoTDB `export-csv`, both layouts) and line-protocol
//!   suffixes create series of that type with the default encoding for it; a declared type that
//!   conflicts with a series' type is rejected (`declared_type_conflict`), never converted;
//! - a request refused for backpressure leaves no trace, not even a series type.
//!
//! Each test has a `_v4` twin, run with `storage.format_version = 4`.

use std::collections::BTreeMap;
use std::path::Path;

use tsfile::{DataType, Encoding, Value};

use crate::harness::*;
use crate::mqtt::{publish, Broker};

/// IoTDB's square batch: two timestamps, two measurements, one row per timestamp.
const SQUARE: &str = r#"{"device":"root.sq.d1","timestamps":[1000,2000],"measurements":["s1","s2"],"values":[[1,2],[3,4]]}"#;

/// What IoTDB stores for [`SQUARE`]: s1@1000=1, s2@1000=2, s1@2000=3, s2@2000=4.
fn square_expected() -> PointMap {
    [
        ("s1", 1000, 1),
        ("s2", 1000, 2),
        ("s1", 2000, 3),
        ("s2", 2000, 4),
    ]
    .into_iter()
    .map(|(m, t, v)| {
        (
            ("root.sq.d1".to_string(), m.to_string(), t),
            vec![Value::Int64(v)],
        )
    })
    .collect()
}

/// (device, measurement) → (data type, encodings of its chunks) over every sealed file.
fn series_types(data: &Path) -> BTreeMap<(String, String), (DataType, Vec<Encoding>)> {
    let mut out: BTreeMap<(String, String), (DataType, Vec<Encoding>)> = BTreeMap::new();
    for f in sealed_files(data) {
        for (dev, m, ty, encodings) in file_series(&f) {
            let e = out
                .entry((dev.clone(), m.clone()))
                .or_insert((ty, Vec::new()));
            assert_eq!(e.0, ty, "{dev}.{m} typed twice");
            for enc in encodings {
                if !e.1.contains(&enc) {
                    e.1.push(enc);
                }
            }
        }
    }
    out
}

#[test]
fn square_json_batch_over_http_is_stored_row_by_row() {
    square_json_batch_over_http_is_stored_row_by_row_in(Fmt::V2);
}

#[test]
fn square_json_batch_over_http_is_stored_row_by_row_v4() {
    square_json_batch_over_http_is_stored_row_by_row_in(Fmt::V4);
}

fn square_json_batch_over_http_is_stored_row_by_row_in(fmt: Fmt) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let d = DaemonProc::start_fmt(&data, &[], fmt);
    let r = post(d.addr, "/ingest/iotdb-json", &[], SQUARE.as_bytes());
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["accepted"], 4);
    // A row whose length differs from `measurements` is rejected alone, naming its index.
    let r = post(
        d.addr,
        "/ingest/iotdb-json",
        &[],
        br#"{"device":"root.sq.d2","timestamps":[1,2,3],"measurements":["a","b"],"values":[[1,2],[3],[5,6]]}"#,
    );
    assert_eq!(r.status, 400, "{}", r.body);
    let j = r.json();
    assert_eq!(j["accepted"], 4, "{j}");
    assert_eq!(j["rejected"], 1, "{j}");
    assert_eq!(j["errors"][0]["location"], "$.values[1]", "{j}");
    assert_eq!(j["errors"][0]["reason"], "parse", "{j}");
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    let (points, _) = read_all_in(&data, fmt);
    let mut expected = square_expected();
    for (m, t, v) in [("a", 1, 1), ("b", 1, 2), ("a", 3, 5), ("b", 3, 6)] {
        expected.insert(
            ("root.sq.d2".to_string(), m.to_string(), t),
            vec![Value::Int64(v)],
        );
    }
    assert_eq!(points, expected);
}

fn mqtt_config(data: &Path, port: u16, fmt: Fmt) -> String {
    format!(
        r#"
data_dir = "{}"
shutdown_timeout = "20s"

[http]
listen = "127.0.0.1:0"

[[pipeline]]
name = "main"

[pipeline.storage]
storage_group_level = 1
{}
[[pipeline.source]]
type = "mqtt"
name = "broker"
url = "mqtt://127.0.0.1:{port}"
client_id = "e2e-iotdb-json-{}"

[[pipeline.source.topic]]
filter = "sq/#"
qos = 1
payload = "iotdb-json"
"#,
        data.display(),
        fmt.storage_lines(),
        std::process::id()
    )
}

#[test]
fn square_json_batch_over_mosquitto_is_stored_row_by_row() {
    square_json_batch_over_mosquitto_is_stored_row_by_row_in(Fmt::V2);
}

#[test]
fn square_json_batch_over_mosquitto_is_stored_row_by_row_v4() {
    square_json_batch_over_mosquitto_is_stored_row_by_row_in(Fmt::V4);
}

fn square_json_batch_over_mosquitto_is_stored_row_by_row_in(fmt: Fmt) {
    let broker = Broker::start();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let file = tmp.path().join("tsfiled.toml");
    std::fs::write(&file, mqtt_config(&data, broker.port, fmt)).unwrap();
    let d = DaemonProc::start_with(&["run", "--config", file.to_str().unwrap()]);
    const SRC: &str = r#"{pipeline="main",source="broker"}"#;
    until("the MQTT source connects", 30, || {
        metric(
            &get(d.addr, "/metrics").body,
            &format!("tsfiled_mqtt_connected{SRC}"),
        ) == Some(1.0)
    });
    publish(broker.port, "sq/line1", &[SQUARE.to_string()]);
    until("the message is durable", 60, || {
        let m = get(d.addr, "/metrics").body;
        metric(&m, &format!("tsfiled_mqtt_messages_total{SRC}")) == Some(1.0)
            && metric(&m, &format!("tsfiled_mqtt_inflight_messages{SRC}")) == Some(0.0)
    });
    let m = get(d.addr, "/metrics").body;
    assert_eq!(
        metric(&m, &format!("tsfiled_points_received_total{SRC}")),
        Some(4.0),
        "{m}"
    );
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    let (points, _) = read_all_in(&data, fmt);
    assert_eq!(points, square_expected());
}

fn csv_config(data: &Path, wide: &Path, by_device: &Path, fmt: Fmt) -> String {
    format!(
        r#"
data_dir = "{}"
shutdown_timeout = "20s"

[http]
listen = "127.0.0.1:0"

[[pipeline]]
name = "main"

[pipeline.storage]
storage_group_level = 1
{}
[[pipeline.source]]
type = "csv"
name = "wide"
format = "iotdb-wide"
directories = ["{}"]
settle = "100ms"
rescan_interval = "1s"

[[pipeline.source]]
type = "csv"
name = "bydev"
format = "iotdb-device"
directories = ["{}"]
settle = "100ms"
rescan_interval = "1s"

[[pipeline.source]]
type = "http"
name = "http"
"#,
        data.display(),
        fmt.storage_lines(),
        wide.display(),
        by_device.display()
    )
}

/// Drops `text` as `name` into `dir` (written aside, then renamed) and waits until it is in
/// `dir/<to>/` (`done` or `error`).
fn drop_csv(dir: &Path, name: &str, text: &str, to: &str) {
    let part = dir.join(format!("{name}.part"));
    std::fs::write(&part, text).unwrap();
    std::fs::rename(&part, dir.join(name)).unwrap();
    until(&format!("{name} ends in {to}/"), 60, || {
        dir.join(to).join(name).exists()
    });
}

#[test]
fn csv_declared_types_are_the_sealed_series_types() {
    csv_declared_types_are_the_sealed_series_types_in(Fmt::V2);
}

#[test]
fn csv_declared_types_are_the_sealed_series_types_v4() {
    csv_declared_types_are_the_sealed_series_types_in(Fmt::V4);
}

fn csv_declared_types_are_the_sealed_series_types_in(fmt: Fmt) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let wide = tmp.path().join("wide");
    let bydev = tmp.path().join("bydev");
    std::fs::create_dir_all(&wide).unwrap();
    std::fs::create_dir_all(&bydev).unwrap();
    let file = tmp.path().join("tsfiled.toml");
    std::fs::write(&file, csv_config(&data, &wide, &bydev, fmt)).unwrap();
    let d = DaemonProc::start_with(&["run", "--config", file.to_str().unwrap()]);
    // IoTDB export-csv, aligned by time, with data types. Integers in FLOAT/DOUBLE columns and
    // digits in a TEXT column take the column's type; an empty cell is no point.
    drop_csv(
        &wide,
        "wide.csv",
        "Time,root.ty.w.b(BOOLEAN),root.ty.w.i32(INT32),root.ty.w.i64(INT64),root.ty.w.f(FLOAT),root.ty.w.d(DOUBLE),root.ty.w.t(TEXT)\n\
         1000,true,7,9,1.5,2.25,hello\n\
         2000,false,-2147483648,9223372036854775807,0.1,0.1,\"a,\"\"b\"\"\"\n\
         3000,,2147483647,,3,4,42\n",
        "done",
    );
    // IoTDB export-csv, aligned by device, with data types.
    drop_csv(
        &bydev,
        "bydev.csv",
        "Time,Device,b(BOOLEAN),i32(INT32),i64(INT64),f(FLOAT),d(DOUBLE),t(TEXT)\n\
         1000,root.ty.d1,TRUE,-5,5,-0.5,0.3,x\n\
         1000,root.ty.d2,false,100000,-1,16777217,16777217,\n",
        "done",
    );
    // A later value that declares another type for an existing series is rejected and counted
    // (the file goes to error/ with a report); nothing of it is converted. Undeclared JSON
    // integers still go into the INT32 series.
    drop_csv(
        &wide,
        "conflict.csv",
        "Time,root.ty.w.i32(INT64),root.ty.w.d(FLOAT)\n4000,8,1.5\n",
        "error",
    );
    let report = std::fs::read_to_string(wide.join("error").join("conflict.csv.report")).unwrap();
    assert!(report.contains("declared_type_conflict"), "{report}");
    let r = post(
        d.addr,
        "/ingest/iotdb-json",
        &[],
        br#"{"device":"root.ty.w","timestamp":5000,"measurements":["i32","d"],"values":[12,3]}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let m = get(d.addr, "/metrics").body;
    assert_eq!(
        metric(
            &m,
            r#"tsfiled_points_rejected_total{pipeline="main",reason="declared_type_conflict",source="wide"}"#
        ),
        Some(2.0),
        "{m}"
    );
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");

    let s = |x: &str| x.to_string();
    let types = series_types(&data);
    let mut expected_types = BTreeMap::new();
    // The encodings are the schema defaults' for each type (docs/configuration.md): in v4
    // BOOLEAN is PLAIN and GORILLA is TsFile 2.x's (code 8, `GORILLA_V2` in the format crate).
    let (boolean, gorilla) = match fmt {
        Fmt::V2 => (Encoding::RLE, Encoding::GORILLA),
        Fmt::V4 => (Encoding::PLAIN, Encoding::GORILLA_V2),
    };
    for dev in ["root.ty.w", "root.ty.d1", "root.ty.d2"] {
        for (m, ty, enc) in [
            ("b", DataType::BOOLEAN, boolean),
            ("i32", DataType::INT32, Encoding::TS_2DIFF),
            ("i64", DataType::INT64, Encoding::TS_2DIFF),
            ("f", DataType::FLOAT, gorilla),
            ("d", DataType::DOUBLE, gorilla),
            ("t", DataType::TEXT, Encoding::PLAIN),
        ] {
            if dev == "root.ty.d2" && m == "t" {
                continue; // only an empty cell
            }
            expected_types.insert((s(dev), s(m)), (ty, vec![enc]));
        }
    }
    assert_eq!(types, expected_types);

    let (points, _) = read_all_in(&data, fmt);
    let p = |d: &str, m: &str, t: i64, v: Value| ((s(d), s(m), t), vec![v]);
    let expected: PointMap = [
        p("root.ty.w", "b", 1000, Value::Boolean(true)),
        p("root.ty.w", "b", 2000, Value::Boolean(false)),
        p("root.ty.w", "i32", 1000, Value::Int32(7)),
        p("root.ty.w", "i32", 2000, Value::Int32(-2147483648)),
        p("root.ty.w", "i32", 3000, Value::Int32(2147483647)),
        p("root.ty.w", "i32", 5000, Value::Int32(12)),
        p("root.ty.w", "i64", 1000, Value::Int64(9)),
        p("root.ty.w", "i64", 2000, Value::Int64(9223372036854775807)),
        p("root.ty.w", "f", 1000, Value::Float(1.5)),
        p("root.ty.w", "f", 2000, Value::Float(0.1f32)),
        p("root.ty.w", "f", 3000, Value::Float(3.0)),
        p("root.ty.w", "d", 1000, Value::Double(2.25)),
        p("root.ty.w", "d", 2000, Value::Double(0.1)),
        p("root.ty.w", "d", 3000, Value::Double(4.0)),
        p("root.ty.w", "d", 5000, Value::Double(3.0)),
        p("root.ty.w", "t", 1000, Value::Text(b"hello".to_vec())),
        p("root.ty.w", "t", 2000, Value::Text(b"a,\"b\"".to_vec())),
        p("root.ty.w", "t", 3000, Value::Text(b"42".to_vec())),
        p("root.ty.d1", "b", 1000, Value::Boolean(true)),
        p("root.ty.d1", "i32", 1000, Value::Int32(-5)),
        p("root.ty.d1", "i64", 1000, Value::Int64(5)),
        p("root.ty.d1", "f", 1000, Value::Float(-0.5)),
        p("root.ty.d1", "d", 1000, Value::Double(0.3)),
        p("root.ty.d1", "t", 1000, Value::Text(b"x".to_vec())),
        p("root.ty.d2", "b", 1000, Value::Boolean(false)),
        p("root.ty.d2", "i32", 1000, Value::Int32(100000)),
        p("root.ty.d2", "i64", 1000, Value::Int64(-1)),
        // 16777217 (2^24 + 1) has no FLOAT representation: IEEE single rounds it to 2^24.
        p("root.ty.d2", "f", 1000, Value::Float(16777216.0)),
        p("root.ty.d2", "d", 1000, Value::Double(16777217.0)),
    ]
    .into_iter()
    .collect();
    assert_eq!(points, expected);
}

#[test]
fn line_protocol_suffixes_declare_types() {
    line_protocol_suffixes_declare_types_in(Fmt::V2);
}

#[test]
fn line_protocol_suffixes_declare_types_v4() {
    line_protocol_suffixes_declare_types_in(Fmt::V4);
}

fn line_protocol_suffixes_declare_types_in(fmt: Fmt) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let d = DaemonProc::start_fmt(&data, &[], fmt);
    // `i` and `u` are integers (INT64), a quoted string TEXT, `t`/`f` BOOLEAN, a plain number
    // a float (DOUBLE by default). 18446744073709551615u does not fit INT64: rejected.
    let r = post(
        d.addr,
        "/write?precision=ms",
        &[],
        b"m,host=h i=-3i,u=7u,s=\"on\",b=t,x=2 1000\nm,host=h u=18446744073709551615u,b=f 2000\n",
    );
    assert_eq!(r.status, 400, "{}", r.body);
    let j = r.json();
    assert_eq!(j["accepted"], 6, "{j}");
    assert_eq!(j["errors"][0]["reason"], "type_mismatch", "{j}");
    // The series now have types; a value declaring another one is rejected, not converted.
    let r = post(
        d.addr,
        "/write?precision=ms",
        &[],
        b"m,host=h x=5i,i=4i 3000\n",
    );
    assert_eq!(r.status, 400, "{}", r.body);
    let j = r.json();
    assert_eq!(j["accepted"], 1, "{j}");
    assert_eq!(j["errors"][0]["reason"], "declared_type_conflict", "{j}");
    let m = get(d.addr, "/metrics").body;
    assert_eq!(
        metric(
            &m,
            r#"tsfiled_points_rejected_total{pipeline="default",reason="declared_type_conflict",source="http"}"#
        ),
        Some(1.0),
        "{m}"
    );
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    let dev = "root.lp.m.h";
    let s = |x: &str| x.to_string();
    let types: BTreeMap<_, _> = series_types(&data)
        .into_iter()
        .map(|(k, (t, _))| (k, t))
        .collect();
    let expected_types: BTreeMap<_, _> = [
        ("b", DataType::BOOLEAN),
        ("i", DataType::INT64),
        ("s", DataType::TEXT),
        ("u", DataType::INT64),
        ("x", DataType::DOUBLE),
    ]
    .into_iter()
    .map(|(m, t)| ((s(dev), s(m)), t))
    .collect();
    assert_eq!(types, expected_types);
    let (points, _) = read_all_in(&data, fmt);
    let p = |m: &str, t: i64, v: Value| ((s(dev), s(m), t), vec![v]);
    let expected: PointMap = [
        p("i", 1000, Value::Int64(-3)),
        p("i", 3000, Value::Int64(4)),
        p("u", 1000, Value::Int64(7)),
        p("s", 1000, Value::Text(b"on".to_vec())),
        p("b", 1000, Value::Boolean(true)),
        p("b", 2000, Value::Boolean(false)),
        p("x", 1000, Value::Double(2.0)),
    ]
    .into_iter()
    .collect();
    assert_eq!(points, expected);
}

#[test]
fn a_request_refused_for_backpressure_decides_no_type() {
    a_request_refused_for_backpressure_decides_no_type_in(Fmt::V2);
}

#[test]
fn a_request_refused_for_backpressure_decides_no_type_v4() {
    a_request_refused_for_backpressure_decides_no_type_in(Fmt::V4);
}

fn a_request_refused_for_backpressure_decides_no_type_in(fmt: Fmt) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let config = tmp.path().join("tsfiled.toml");
    std::fs::write(
        &config,
        format!(
            r#"
data_dir = "{}"

[http]
listen = "127.0.0.1:0"

[[pipeline]]
name = "main"

[pipeline.storage]
memtable_budget = "128KiB"
wal_commit_size = "16KiB"
wal_max_size = "128KiB"
{}
[[pipeline.source]]
type = "http"
name = "http"
"#,
            data.display(),
            fmt.storage_lines()
        ),
    )
    .unwrap();
    let d = DaemonProc::start_with(&["run", "--config", config.to_str().unwrap()]);
    // 20,000 doubles need at least 160,000 bytes of write-ahead log (8 bytes a value, plus
    // the times): more than the whole 128 KiB log, so the request is refused (503) however
    // empty the log is.
    let ts: Vec<i64> = (1..=20_000).collect();
    let rows: Vec<[f64; 1]> = ts.iter().map(|t| [*t as f64 + 0.5]).collect();
    let big = serde_json::json!({"device": "root.rf.d1", "timestamps": ts, "measurements": ["x"], "values": rows});
    let r = post(
        d.addr,
        "/ingest/iotdb-json",
        &[],
        big.to_string().as_bytes(),
    );
    assert_eq!(r.status, 503, "{}", r.body);
    assert!(r.body.contains("buffer full"), "{}", r.body);
    // Nothing of it remains: no series known, no point counted.
    let m = get(d.addr, "/metrics").body;
    assert_eq!(
        metric(&m, r#"tsfiled_series{pipeline="main"}"#),
        Some(0.0),
        "{m}"
    );
    assert_eq!(
        metric(
            &m,
            r#"tsfiled_backpressure_total{pipeline="main",source="http"}"#
        ),
        Some(1.0),
        "{m}"
    );
    let schema = std::fs::read_to_string(data.join("state").join("schema.tsv"))
        .expect("the schema journal exists from the start");
    assert_eq!(schema, "", "the refused request journalled a series");
    // So the first accepted point types the series: an integer makes it INT64 (had the
    // refused floats typed it, this would be stored as the DOUBLE 7.0).
    let r = post(
        d.addr,
        "/ingest/iotdb-json",
        &[],
        br#"{"device":"root.rf.d1","timestamp":20000,"measurements":["x"],"values":[7]}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    let (points, _) = read_all_in(&data, fmt);
    let expected: PointMap = [(
        ("root.rf.d1".to_string(), "x".to_string(), 20000),
        vec![Value::Int64(7)],
    )]
    .into_iter()
    .collect();
    assert_eq!(points, expected);
}
