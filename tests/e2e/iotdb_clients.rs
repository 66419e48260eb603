//! Data as IoTDB's own clients and formats send it, through the real daemon, read back from the
//! sealed files value for value. Expected values are IoTDB's semantics written out by hand:
//! - IoTDB JSON batch form (IoTDB's `JSONPayloadFormatter`): `values[i]` is the row of
//!   `timestamps[i]`, over HTTP and over a real Mosquitto.

use std::path::Path;

use tsfile::Value;

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

#[test]
fn square_json_batch_over_http_is_stored_row_by_row() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let d = DaemonProc::start(&data, &[]);
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
    let (points, _) = read_all(&data);
    let mut expected = square_expected();
    for (m, t, v) in [("a", 1, 1), ("b", 1, 2), ("a", 3, 5), ("b", 3, 6)] {
        expected.insert(
            ("root.sq.d2".to_string(), m.to_string(), t),
            vec![Value::Int64(v)],
        );
    }
    assert_eq!(points, expected);
}

fn mqtt_config(data: &Path, port: u16) -> String {
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
        std::process::id()
    )
}

#[test]
fn square_json_batch_over_mosquitto_is_stored_row_by_row() {
    let broker = Broker::start();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let file = tmp.path().join("tsfiled.toml");
    std::fs::write(&file, mqtt_config(&data, broker.port)).unwrap();
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
    let (points, _) = read_all(&data);
    assert_eq!(points, square_expected());
}
