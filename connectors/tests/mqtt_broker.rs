//! The MQTT source against a real Mosquitto (started per test on a free loopback port).
//! These tests fail, never skip, when Mosquitto is not installed.

mod mqtt_harness;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use mqtt_harness::*;
use rumqttc::QoS;
use tsfiled_connectors::mqtt::{
    CountingMetrics, MqttPayload, MqttProtocol, MqttSourceConfig, MqttTls, Qos,
};
use tsfiled_connectors::sink::{MemoryMode, MemorySink};
use tsfiled_connectors::source::Secret;
use tsfiled_connectors::TimeUnit;
use tsfiled_core::ByteSize;

fn base(url: &str, client_id: &str, protocol: MqttProtocol) -> MqttSourceConfig {
    let mut o = MqttSourceConfig::new(url, client_id).unwrap();
    o.protocol = protocol;
    o.runtime.reconnect_initial_backoff = Duration::from_millis(50);
    o.reconnect_max_backoff = Duration::from_millis(500);
    o
}

fn json() -> MqttPayload {
    MqttPayload::IotdbJson
}

fn k(d: &str, t: i64, m: &str, v: &str) -> Key {
    (d.into(), t, m.into(), v.into())
}

fn msg(t: &str, p: &str) -> (String, Vec<u8>) {
    (t.to_string(), p.as_bytes().to_vec())
}

async fn every_type_and_format(protocol: MqttProtocol, json_qos: Qos) {
    let broker = Broker::start("");
    let mut o = base(&broker.url(), &format!("types-{}", unique()), protocol)
        .filter("json/#", json_qos, json())
        .filter(
            "lp/#",
            Qos::AtLeastOnce,
            MqttPayload::line("root.lp", TimeUnit::Millis).unwrap(),
        )
        .filter(
            "plant/+/+",
            Qos::AtMostOnce,
            MqttPayload::value("plant/{device}/{measurement}", "root.plant").unwrap(),
        );
    o.runtime.stored_unit = TimeUnit::Millis;
    let sink = Arc::new(MemorySink::new());
    let c = Connector::start(o, sink.clone());
    c.subscribed(1).await;

    let before = now_ms();
    publish(
        broker.port,
        &[
            msg(
                "json/one",
                r#"{"device":"root.sg.d1","timestamp":1000,"measurements":["b","i","f","s"],"values":[true,-7,2.5,"hi"]}"#,
            ),
            msg(
                "json/batch",
                r#"{"device":"root.sg.d2","timestamps":[1,2],"measurements":["x","y"],"values":[[10,0.5],[11,null]]}"#,
            ),
            msg(
                "json/array",
                r#"[{"device":"root.sg.d3","timestamp":5,"measurements":["a"],"values":[false]},{"device":"root.sg.d4","timestamps":[6],"measurements":["a"],"values":[["t"]]}]"#,
            ),
            msg(
                "lp/x",
                "cpu,host=gw1 i=3i,u=4u,f=1.25,s=\"txt\",b=t 2000\nmem,host=gw1 used=9i 3000",
            ),
        ],
        QoS::AtLeastOnce,
    )
    .await;
    publish(
        broker.port,
        &[
            msg("plant/line1/temp", "21.5"),
            msg("plant/line1/count", "42"),
            msg("plant/line1/on", "true"),
            msg("plant/line1/state", "running"),
        ],
        QoS::AtMostOnce,
    )
    .await;
    let expected_json: BTreeSet<Key> = [
        k("root.sg.d1", 1000, "b", "bool:true"),
        k("root.sg.d1", 1000, "i", "int:-7"),
        k("root.sg.d1", 1000, "f", "float:2.5"),
        k("root.sg.d1", 1000, "s", "text:hi"),
        k("root.sg.d2", 1, "x", "int:10"),
        k("root.sg.d2", 2, "x", "int:11"),
        k("root.sg.d2", 1, "y", "float:0.5"),
        k("root.sg.d3", 5, "a", "bool:false"),
        k("root.sg.d4", 6, "a", "text:t"),
        k("root.lp.cpu.gw1", 2000, "i", "int:3"),
        k("root.lp.cpu.gw1", 2000, "u", "int:4"),
        k("root.lp.cpu.gw1", 2000, "f", "float:1.25"),
        k("root.lp.cpu.gw1", 2000, "s", "text:txt"),
        k("root.lp.cpu.gw1", 2000, "b", "bool:true"),
        k("root.lp.mem.gw1", 3000, "used", "int:9"),
    ]
    .into_iter()
    .collect();
    let s = sink.clone();
    wait_for("every point", 20, move || s.points() >= 19).await;
    let records = sink.records();
    let got = key_set(&records);
    for e in &expected_json {
        assert!(got.contains(e), "missing {e:?} in {got:?}");
    }
    // Topic values carry the arrival time.
    let plant: Vec<_> = keys(&records)
        .into_iter()
        .filter(|k| k.0 == "root.plant.line1")
        .collect();
    let vals: BTreeSet<(String, String)> =
        plant.iter().map(|k| (k.2.clone(), k.3.clone())).collect();
    let want: BTreeSet<(String, String)> = [
        ("temp", "float:21.5"),
        ("count", "int:42"),
        ("on", "bool:true"),
        ("state", "text:running"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(vals, want);
    let after = now_ms();
    for p in &plant {
        assert!(p.1 >= before - 1000 && p.1 <= after + 1000, "time {}", p.1);
    }
    assert_eq!(keys(&records).len(), 19, "no duplicates without failures");
    assert_eq!(CountingMetrics::get(&c.metrics.messages), 8);
    assert_eq!(CountingMetrics::get(&c.metrics.errors), 0);
    assert_eq!(
        c.metrics
            .connected
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    c.stop().await.unwrap();
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_type_and_format_mqtt311() {
    every_type_and_format(MqttProtocol::V311, Qos::AtLeastOnce).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_type_and_format_mqtt5_qos2() {
    every_type_and_format(MqttProtocol::V5, Qos::ExactlyOnce).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_messages_are_dead_lettered_and_acknowledged() {
    let broker = Broker::start("");
    let dir = tempfile::tempdir().unwrap();
    let dl = dir.path().join("dead/mqtt.jsonl");
    let id = format!("bad-{}", unique());
    let opts = |sink| {
        let mut o = base(&broker.url(), &id, MqttProtocol::V311)
            .filter("json/#", Qos::AtLeastOnce, json())
            .filter(
                "plant/+/+",
                Qos::AtLeastOnce,
                MqttPayload::value("plant/{device}/{measurement}", "root.plant").unwrap(),
            );
        o.max_payload_size = ByteSize(1000);
        o.dead_letter_file = Some(dl.clone());
        (o, sink)
    };
    let (o, sink) = opts(Arc::new(MemorySink::new()));
    let c = Connector::start(o, sink.clone());
    c.subscribed(1).await;
    let big = format!(
        r#"{{"device":"root.sg.big","timestamp":1,"measurements":["s"],"values":["{}"]}}"#,
        "x".repeat(1500)
    );
    // Exactly `max_payload_size` bytes (whitespace before the closing brace): accepted.
    let head = r#"{"device":"root.sg.d","timestamp":9,"measurements":["ok"],"values":[4]"#;
    let at_limit = format!("{head}{}}}", " ".repeat(1000 - head.len() - 1));
    assert_eq!(at_limit.len(), 1000);
    // Records with 22 and 20 unusable measurements beside a good one: the dead letter's error
    // lists the first 20 rejections, joined by "; ", and says how many more there were.
    let many = |t: u64, bad: usize| {
        let names: Vec<String> = (0..bad).map(|i| format!("\"b.{i}\"")).collect();
        format!(
            r#"{{"device":"root.sg.d","timestamp":{t},"measurements":["ok",{}],"values":[{t}{}]}}"#,
            names.join(","),
            ",0".repeat(bad)
        )
    };
    let (many22, many20) = (many(10, 22), many(11, 20));
    assert!(many22.len() < 1000);
    publish(
        broker.port,
        &[
            msg("json/a", "{not json"),
            msg("json/a", &big),
            msg("plant/d/m", "   "),
            msg(
                "json/a",
                r#"{"device":"root.sg.d","timestamp":7,"measurements":["ok","bad.name"],"values":[1,2]}"#,
            ),
            msg(
                "json/a",
                r#"{"device":"root.sg.d","timestamp":8,"measurements":["ok"],"values":[3]}"#,
            ),
            msg("json/a", &at_limit),
            msg("json/a", &many22),
            msg("json/a", &many20),
        ],
        QoS::AtLeastOnce,
    )
    .await;
    let s = sink.clone();
    wait_for("the good points", 20, move || s.points() >= 5).await;
    let m = c.metrics.clone();
    wait_for("six dead letters", 20, move || {
        CountingMetrics::get(&m.dead_lettered) >= 6
    })
    .await;
    assert_eq!(
        key_set(&sink.records()),
        [
            k("root.sg.d", 7, "ok", "int:1"),
            k("root.sg.d", 8, "ok", "int:3"),
            k("root.sg.d", 9, "ok", "int:4"),
            k("root.sg.d", 10, "ok", "int:10"),
            k("root.sg.d", 11, "ok", "int:11")
        ]
        .into_iter()
        .collect()
    );
    assert_eq!(CountingMetrics::get(&c.metrics.too_large), 1);
    c.stop().await.unwrap();

    let text = std::fs::read_to_string(&dl).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    let reasons: Vec<(&str, &str, bool)> = lines
        .iter()
        .map(|v| {
            (
                v["topic"].as_str().unwrap(),
                v["reason"].as_str().unwrap(),
                v["partial"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        reasons,
        vec![
            ("json/a", "parse", false),
            ("json/a", "too_large", false),
            ("plant/d/m", "parse", false),
            ("json/a", "invalid_path", true),
            ("json/a", "invalid_path", true),
            ("json/a", "invalid_path", true),
        ]
    );
    let error22 = lines[4]["error"].as_str().unwrap();
    assert!(!error22.starts_with("; "), "{error22}");
    assert_eq!(error22.matches("; ").count(), 20, "{error22}");
    assert!(error22.ends_with("; … 2 more"), "{error22}");
    let error20 = lines[5]["error"].as_str().unwrap();
    assert_eq!(error20.matches("; ").count(), 19, "{error20}");
    assert!(!error20.contains("more"), "{error20}");
    assert_eq!(lines[0]["payload"], "{not json");
    assert_eq!(lines[1]["payload_bytes"], big.len());
    assert_eq!(lines[1]["truncated"], true);

    // Everything was acknowledged: a restart with the same session gets only new messages.
    let (o, sink2) = opts(Arc::new(MemorySink::new()));
    let c2 = Connector::start(o, sink2.clone());
    let m2 = c2.metrics.clone();
    wait_for("reconnection", 20, move || {
        m2.connected.load(std::sync::atomic::Ordering::Relaxed) == 1
    })
    .await;
    publish(
        broker.port,
        &[json_msg("json/marker", 99)],
        QoS::AtLeastOnce,
    )
    .await;
    let s2 = sink2.clone();
    wait_for("the marker", 20, move || s2.points() >= 1).await;
    assert_eq!(
        key_set(&sink2.records()),
        [json_key(99)].into_iter().collect()
    );
    assert_eq!(
        CountingMetrics::get(&c2.metrics.messages),
        1,
        "no redelivery"
    );
    c2.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_mid_stream_loses_no_acknowledged_point() {
    let broker = Broker::start("");
    let id = format!("crash-{}", unique());
    let opts = || {
        let mut o =
            base(&broker.url(), &id, MqttProtocol::V311).filter("c/#", Qos::AtLeastOnce, json());
        o.max_inflight = 20;
        o.runtime.max_batch_messages = 5;
        o
    };
    let sink1 = Arc::new(MemorySink::new());
    sink1.set_delay(Duration::from_millis(5));
    let c1 = Connector::start(opts(), sink1.clone());
    c1.subscribed(1).await;
    let n = 600u64;
    let msgs: Vec<_> = (0..n).map(|i| json_msg("c", i)).collect();
    publish(broker.port, &msgs, QoS::AtLeastOnce).await;
    let (s1, m1) = (sink1.clone(), c1.metrics.clone());
    wait_for(
        "some points in the first run, a full window",
        30,
        move || s1.points() >= 100 && CountingMetrics::get(&m1.in_flight) >= 5,
    )
    .await;
    c1.crash();
    let first = key_set(&sink1.records());
    assert!((first.len() as u64) < n, "the crash came mid-stream");

    let sink2 = Arc::new(MemorySink::new());
    let c2 = Connector::start(opts(), sink2.clone());
    let all: BTreeSet<Key> = (0..n).map(json_key).collect();
    let (a, b) = (sink1.clone(), sink2.clone());
    let target = all.clone();
    wait_for("every message after the restart", 60, move || {
        let mut u = key_set(&a.records());
        u.extend(key_set(&b.records()));
        u.is_superset(&target)
    })
    .await;
    let mut union = key_set(&sink1.records());
    union.extend(key_set(&sink2.records()));
    assert_eq!(union, all, "nothing lost, nothing invented");
    c2.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_restart_reconnects_without_losing_qos1() {
    let mut broker = Broker::start("persistence true\nautosave_interval 0\n");
    let id = format!("restart-{}", unique());
    let mut o =
        base(&broker.url(), &id, MqttProtocol::V311).filter("r/#", Qos::AtLeastOnce, json());
    o.max_inflight = 10;
    o.runtime.max_batch_messages = 5;
    let sink = Arc::new(MemorySink::new());
    sink.set_delay(Duration::from_millis(10));
    let c = Connector::start(o, sink.clone());
    c.subscribed(1).await;
    let first: Vec<_> = (0..300).map(|i| json_msg("r", i)).collect();
    publish(broker.port, &first, QoS::AtLeastOnce).await;
    let s = sink.clone();
    wait_for("a few points before the restart", 30, move || {
        s.points() >= 20
    })
    .await;
    broker.restart();
    let m = c.metrics.clone();
    wait_for("the reconnection", 30, move || {
        CountingMetrics::get(&m.reconnects) >= 1
            && m.connected.load(std::sync::atomic::Ordering::Relaxed) == 1
    })
    .await;
    let second: Vec<_> = (300..600).map(|i| json_msg("r", i)).collect();
    publish(broker.port, &second, QoS::AtLeastOnce).await;
    let all: BTreeSet<Key> = (0..600).map(json_key).collect();
    let s = sink.clone();
    let target = all.clone();
    wait_for("every message", 60, move || {
        key_set(&s.records()).is_superset(&target)
    })
    .await;
    assert_eq!(key_set(&sink.records()), all);
    assert!(CountingMetrics::get(&c.metrics.connection_errors) >= 1);
    c.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_subscription_splits_the_stream_exactly_once() {
    let broker = Broker::start("");
    let opts = |id: &str| {
        let mut o =
            base(&broker.url(), id, MqttProtocol::V5).filter("s/#", Qos::AtLeastOnce, json());
        o.shared_group = Some("tsfiled".into());
        o
    };
    let (s1, s2) = (Arc::new(MemorySink::new()), Arc::new(MemorySink::new()));
    let c1 = Connector::start(opts(&format!("a-{}", unique())), s1.clone());
    let c2 = Connector::start(opts(&format!("b-{}", unique())), s2.clone());
    c1.subscribed(1).await;
    c2.subscribed(1).await;
    let n = 1000u64;
    let msgs: Vec<_> = (0..n).map(|i| json_msg("s", i)).collect();
    publish(broker.port, &msgs, QoS::AtLeastOnce).await;
    let (a, b) = (s1.clone(), s2.clone());
    wait_for("every message", 30, move || a.points() + b.points() >= n).await;
    let mut all = keys(&s1.records());
    let (n1, n2) = (all.len(), s2.records().len());
    all.extend(keys(&s2.records()));
    let set: BTreeSet<Key> = all.iter().cloned().collect();
    assert_eq!(all.len() as u64, n, "exactly once: no duplicates");
    assert_eq!(set, (0..n).map(json_key).collect::<BTreeSet<_>>());
    assert!(
        n1 > 0 && n2 > 0,
        "both members received a share ({n1}, {n2})"
    );
    c1.stop().await.unwrap();
    c2.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_sink_pauses_reading_and_loses_nothing() {
    let broker = Broker::start("");
    let mut o = base(
        &broker.url(),
        &format!("full-{}", unique()),
        MqttProtocol::V5,
    )
    .filter("f/#", Qos::AtLeastOnce, json());
    o.max_inflight = 4;
    o.runtime.max_batch_messages = 2;
    let sink = Arc::new(MemorySink::new());
    sink.script(std::iter::repeat_n(
        MemoryMode::Full(Duration::from_millis(20)),
        6,
    ));
    let c = Connector::start(o, sink.clone());
    c.subscribed(1).await;
    let n = 200u64;
    let msgs: Vec<_> = (0..n).map(|i| json_msg("f", i)).collect();
    publish(broker.port, &msgs, QoS::AtLeastOnce).await;
    let s = sink.clone();
    wait_for("every message", 30, move || s.points() >= n).await;
    assert_eq!(keys(&sink.records()).len() as u64, n);
    assert_eq!(
        key_set(&sink.records()),
        (0..n).map(json_key).collect::<BTreeSet<_>>()
    );
    assert_eq!(sink.fulls(), 6);
    assert!(CountingMetrics::get(&c.metrics.backpressure) >= 6);
    let max = CountingMetrics::get(&c.metrics.in_flight_max);
    assert!((1..=4).contains(&max), "in-flight window respected: {max}");
    c.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_sink_stops_the_source_without_acknowledging() {
    let broker = Broker::start("");
    let id = format!("closed-{}", unique());
    let o = base(&broker.url(), &id, MqttProtocol::V311).filter("x/#", Qos::AtLeastOnce, json());
    let sink = Arc::new(MemorySink::new());
    sink.set_mode(MemoryMode::Closed);
    let c = Connector::start(o.clone(), sink.clone());
    c.subscribed(1).await;
    publish(broker.port, &[json_msg("x", 1)], QoS::AtLeastOnce).await;
    let r = c.join().await;
    assert!(
        matches!(r, Err(tsfiled_connectors::Error::SinkClosed)),
        "{r:?}"
    );
    // Not acknowledged: the broker redelivers it to the next run.
    let sink2 = Arc::new(MemorySink::new());
    let c2 = Connector::start(o, sink2.clone());
    let s = sink2.clone();
    wait_for("the redelivery", 20, move || s.points() >= 1).await;
    assert_eq!(
        key_set(&sink2.records()),
        [json_key(1)].into_iter().collect()
    );
    c2.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keeps_running_while_the_broker_is_down() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("mqtt://127.0.0.1:{port}");
    let o = base(&url, &format!("down-{}", unique()), MqttProtocol::V311).filter(
        "d/#",
        Qos::AtLeastOnce,
        json(),
    );
    let sink = Arc::new(MemorySink::new());
    let c = Connector::start(o, sink.clone());
    let m = c.metrics.clone();
    wait_for("several failed attempts", 20, move || {
        CountingMetrics::get(&m.connection_errors) >= 3
    })
    .await;
    assert!(!c.finished(), "the source keeps running");
    let broker = Broker::start_on(port, "");
    c.subscribed(1).await;
    publish(broker.port, &[json_msg("d", 5)], QoS::AtLeastOnce).await;
    let s = sink.clone();
    wait_for("the message", 20, move || s.points() >= 1).await;
    assert_eq!(
        CountingMetrics::get(&c.metrics.reconnects),
        0,
        "first connection"
    );
    c.stop().await.unwrap();
}

fn openssl(dir: &std::path::Path, args: &[&str]) {
    let st = std::process::Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("openssl is needed for the TLS test");
    assert!(st.success(), "openssl {args:?} failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_and_password_file() {
    let pki = tempfile::tempdir().unwrap();
    let d = pki.path();
    openssl(
        d,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=test-ca",
        ],
    );
    for name in ["server", "client"] {
        openssl(
            d,
            &[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.csr"),
                "-subj",
                &format!("/CN={name}"),
            ],
        );
        std::fs::write(
            d.join(format!("{name}.ext")),
            "subjectAltName=IP:127.0.0.1\n",
        )
        .unwrap();
        openssl(
            d,
            &[
                "x509",
                "-req",
                "-in",
                &format!("{name}.csr"),
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                &format!("{name}.pem"),
                "-days",
                "2",
                "-extfile",
                &format!("{name}.ext"),
            ],
        );
    }
    let pw = d.join("passwd");
    let st = std::process::Command::new("mosquitto_passwd")
        .args(["-b", "-c"])
        .arg(&pw)
        .args(["gw", "s3cret"])
        .status()
        .expect("mosquitto_passwd");
    assert!(st.success());
    let plain_port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let p = d.display();
    let broker = Broker::start(&format!(
        "per_listener_settings false\nallow_anonymous false\npassword_file {}\n\
         listener {{port}} 127.0.0.1\ncafile {p}/ca.pem\ncertfile {p}/server.pem\nkeyfile {p}/server.key\n\
         require_certificate true\nlistener {plain_port} 127.0.0.1\n",
        pw.display()
    ));
    let secret_file = d.join("mqtt-password");
    std::fs::write(&secret_file, "s3cret\n").unwrap();
    let mut o = base(
        &format!("mqtts://127.0.0.1:{}", broker.port),
        &format!("tls-{}", unique()),
        MqttProtocol::V5,
    )
    .filter("tls/#", Qos::AtLeastOnce, json());
    o.login.username = Some("gw".into());
    o.login.password = Some(Secret::File(secret_file));
    let tls = MqttTls {
        ca_file: Some(d.join("ca.pem")),
        client_auth: Some((d.join("client.pem"), d.join("client.key"))),
    };
    o.tls = Some(tls.clone());
    let sink = Arc::new(MemorySink::new());
    let c = Connector::start(o, sink.clone());
    c.subscribed(1).await;

    // Publish through the plain listener (same broker, password required).
    let mut po = rumqttc::MqttOptions::new(format!("p-{}", unique()), "127.0.0.1", plain_port);
    po.set_credentials("gw", "s3cret");
    let (pc, mut el) = rumqttc::AsyncClient::new(po, 10);
    let (topic, payload) = json_msg("tls", 3);
    pc.publish(topic, QoS::AtLeastOnce, false, payload)
        .await
        .unwrap();
    let pump = tokio::spawn(async move {
        loop {
            match el.poll().await {
                Ok(rumqttc::Event::Incoming(rumqttc::Packet::PubAck(_))) => break,
                Ok(_) => {}
                Err(e) => panic!("publisher: {e}"),
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(20), pump)
        .await
        .expect("publish acknowledged")
        .unwrap();
    let s = sink.clone();
    wait_for("the message over TLS", 20, move || s.points() >= 1).await;
    assert_eq!(
        key_set(&sink.records()),
        [json_key(3)].into_iter().collect()
    );
    c.stop().await.unwrap();

    // A wrong password is refused, retried with backoff, and never delivers.
    let mut o = base(
        &format!("mqtts://127.0.0.1:{}", broker.port),
        &format!("tls-bad-{}", unique()),
        MqttProtocol::V311,
    )
    .filter("tls/#", Qos::AtLeastOnce, json());
    o.login.username = Some("gw".into());
    o.login.password = Some(Secret::Inline("wrong".into()));
    o.tls = Some(tls);
    let c = Connector::start(o, Arc::new(MemorySink::new()));
    let m = c.metrics.clone();
    wait_for("refused connections", 20, move || {
        CountingMetrics::get(&m.connection_errors) >= 2
    })
    .await;
    assert_eq!(m_connected(&c), 0);
    c.stop().await.unwrap();
}

fn m_connected(c: &Connector) -> i64 {
    c.metrics
        .connected
        .load(std::sync::atomic::Ordering::Relaxed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resubscribes_when_the_broker_lost_the_session() {
    let mut broker = Broker::start("persistence false\n");
    let o = base(
        &broker.url(),
        &format!("resub-{}", unique()),
        MqttProtocol::V311,
    )
    .filter("n/#", Qos::AtLeastOnce, json());
    let sink = Arc::new(MemorySink::new());
    let c = Connector::start(o, sink.clone());
    c.subscribed(1).await;
    publish(broker.port, &[json_msg("n", 1)], QoS::AtLeastOnce).await;
    let s = sink.clone();
    wait_for("the first message", 20, move || s.points() >= 1).await;
    broker.restart();
    // A fresh broker has no session (session_present == false): the source subscribes again.
    c.subscribed(2).await;
    publish(broker.port, &[json_msg("n", 2)], QoS::AtLeastOnce).await;
    let s = sink.clone();
    wait_for("the message after the restart", 20, move || s.points() >= 2).await;
    assert_eq!(
        key_set(&sink.records()),
        [json_key(1), json_key(2)].into_iter().collect()
    );
    assert_eq!(CountingMetrics::get(&c.metrics.reconnects), 1);
    c.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_stop_acknowledges_what_became_durable() {
    let broker = Broker::start("");
    let id = format!("drain-{}", unique());
    let o = base(&broker.url(), &id, MqttProtocol::V5).filter("g/#", Qos::AtLeastOnce, json());
    let sink = Arc::new(MemorySink::new());
    sink.set_delay(Duration::from_millis(300));
    let c = Connector::start(o.clone(), sink.clone());
    c.subscribed(1).await;
    let msgs: Vec<_> = (0..5).map(|i| json_msg("g", i)).collect();
    publish(broker.port, &msgs, QoS::AtLeastOnce).await;
    let m = c.metrics.clone();
    wait_for("the messages to arrive", 20, move || {
        CountingMetrics::get(&m.messages) >= 5
    })
    .await;
    // Stop while the sink is still making them durable: the drain waits and acknowledges.
    c.stop().await.unwrap();
    assert_eq!(
        key_set(&sink.records()),
        (0..5).map(json_key).collect::<BTreeSet<_>>()
    );
    let sink2 = Arc::new(MemorySink::new());
    let c2 = Connector::start(o, sink2.clone());
    c2.subscribed(1).await;
    publish(broker.port, &[json_msg("g", 50)], QoS::AtLeastOnce).await;
    let s2 = sink2.clone();
    wait_for("the marker", 20, move || s2.points() >= 1).await;
    assert_eq!(
        key_set(&sink2.records()),
        [json_key(50)].into_iter().collect()
    );
    assert_eq!(
        CountingMetrics::get(&c2.metrics.messages),
        1,
        "no redelivery"
    );
    c2.stop().await.unwrap();
}

/// A unit holds at most a quarter of the window (`max_inflight` 40: 10 messages, one record
/// each) and takes everything queued up to that: while the first unit waits to be admitted
/// again, the broker fills the window, so the next unit is a full one of exactly 10.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unit_takes_a_quarter_of_the_window() {
    let broker = Broker::start("");
    let mut o = base(
        &broker.url(),
        &format!("quarter-{}", unique()),
        MqttProtocol::V5,
    )
    .filter("q/#", Qos::AtLeastOnce, json());
    o.max_inflight = 40;
    let sink = Arc::new(MemorySink::new());
    sink.script([MemoryMode::Full(Duration::from_millis(500))]);
    let c = Connector::start(o, sink.clone());
    c.subscribed(1).await;
    let n = 100u64;
    let msgs: Vec<_> = (0..n).map(|i| json_msg("q", i)).collect();
    publish(broker.port, &msgs, QoS::AtLeastOnce).await;
    let s = sink.clone();
    wait_for("every message", 30, move || s.points() >= n).await;
    assert_eq!(
        key_set(&sink.records()),
        (0..n).map(json_key).collect::<BTreeSet<_>>()
    );
    assert_eq!(sink.fulls(), 1);
    assert_eq!(
        sink.largest_batch(),
        10,
        "units of a quarter of the window, full ones"
    );
    c.stop().await.unwrap();
}
