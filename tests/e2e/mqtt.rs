//! MQTT sources in pipelines: a real Mosquitto on a free loopback port, the real binary with
//! an MQTT source at QoS 1, IoTDB JSON published with `mosquitto_pub`, and every point read
//! back from the sealed files — after a SIGTERM, and after a SIGKILL mid-stream and restart
//! (the broker redelivers what was not acknowledged: zero acknowledged points lost).
//! Also: a persistent broker restarted mid-stream loses no QoS 1 message, and two daemons on
//! one MQTT 5 shared subscription write every point exactly once between them. Each test has a
//! `_v4` twin, run with `storage.format_version = 4`.

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tsfile::Value;

use crate::harness::*;

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("local addr").port()
}

/// Fails loudly when Mosquitto is not installed: these tests never skip.
fn mosquitto_path() -> PathBuf {
    for p in ["/usr/sbin/mosquitto", "/usr/bin/mosquitto"] {
        if Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    panic!("mosquitto is not installed (apt-get install -y mosquitto mosquitto-clients)");
}

/// A Mosquitto on 127.0.0.1 with generous queues for persistent sessions.
pub(crate) struct Broker {
    dir: tempfile::TempDir,
    pub(crate) port: u16,
    child: Child,
}

impl Broker {
    pub(crate) fn start() -> Broker {
        Broker::start_opts(false)
    }

    /// With `persistence`, sessions and queued messages survive a restart (saved to the
    /// broker's temp dir on a graceful stop).
    fn start_opts(persistence: bool) -> Broker {
        let dir = tempfile::tempdir().expect("tempdir");
        let port = free_port();
        let conf = dir.path().join("mosquitto.conf");
        let mut text = format!(
            "listener {port} 127.0.0.1\nallow_anonymous true\nmax_inflight_messages 100\n\
             max_queued_messages 1000000\nmessage_size_limit 0\n"
        );
        if persistence {
            let loc = dir.path().join("db");
            std::fs::create_dir_all(&loc).expect("persistence dir");
            // Run as root, Mosquitto drops to user `mosquitto`, which cannot write into
            // the root-owned temp dir; `user root` keeps it (ignored when not root).
            text.push_str(&format!(
                "user root\npersistence true\npersistence_location {}/\n",
                loc.display()
            ));
        }
        std::fs::write(&conf, text).expect("write mosquitto.conf");
        let child = Broker::spawn(&conf, port);
        Broker { dir, port, child }
    }

    fn spawn(conf: &Path, port: u16) -> Child {
        let child = Command::new(mosquitto_path())
            .arg("-c")
            .arg(conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start mosquitto");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "mosquitto did not listen");
            std::thread::sleep(Duration::from_millis(20));
        }
        child
    }

    /// Stops the broker with SIGTERM (it saves its persistence database) and waits for it.
    fn stop(&mut self) {
        let st = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(st.success(), "kill -TERM mosquitto");
        self.child.wait().expect("wait for mosquitto");
    }

    /// Starts the broker again on the same port with the same config and persistence dir.
    fn start_again(&mut self) {
        let conf = self.dir.path().join("mosquitto.conf");
        self.child = Broker::spawn(&conf, self.port);
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Publishes one message per line at QoS 1 and waits until `mosquitto_pub` exits (it
/// disconnects once the broker acknowledged every message).
pub(crate) fn publish(port: u16, topic: &str, lines: &[String]) {
    let (ok, err) = try_publish(port, topic, lines);
    assert!(ok, "mosquitto_pub failed: {err}");
}

/// Like [`publish`], returning whether `mosquitto_pub` succeeded and its stderr.
fn try_publish(port: u16, topic: &str, lines: &[String]) -> (bool, String) {
    let mut child = Command::new("mosquitto_pub")
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-q",
            "1",
            "-t",
            topic,
            "-l",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mosquitto_pub (package mosquitto-clients)");
    {
        let mut stdin = child.stdin.take().expect("stdin");
        for l in lines {
            if writeln!(stdin, "{l}").is_err() {
                break;
            }
        }
    }
    let out = child.wait_with_output().expect("mosquitto_pub");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn config(data: &Path, port: u16, client_id: &str, fmt: Fmt) -> String {
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
{storage}
[[pipeline.source]]
type = "mqtt"
name = "broker"
url = "mqtt://127.0.0.1:{port}"
client_id = "{client_id}"

[[pipeline.source.topic]]
filter = "plant/#"
qos = 1
payload = "iotdb-json"
"#,
        data.display(),
        storage = fmt.storage_lines(),
    )
}

fn metrics(d: &DaemonProc) -> String {
    get(d.addr, "/metrics").body
}

const SRC: &str = "{pipeline=\"main\",source=\"broker\"}";

fn connected(d: &DaemonProc) -> bool {
    metric(&metrics(d), &format!("tsfiled_mqtt_connected{SRC}")) == Some(1.0)
}

/// Messages `from..to`: device `root.plant.d<i % 3>`, time `i`, `a = i`, `b = -2i`.
fn messages(from: i64, to: i64) -> Vec<String> {
    (from..to)
        .map(|i| {
            format!(
                r#"{{"device":"root.plant.d{}","timestamp":{},"measurements":["a","b"],"values":[{},{}]}}"#,
                i % 3,
                1_000 + i,
                i,
                -2 * i
            )
        })
        .collect()
}

/// Whether a point may be in the files more than once.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Duplicates {
    /// No crash and no lost connection: every message was acknowledged once, so every
    /// point is in the files exactly once.
    None,
    /// After a SIGKILL or a broker restart QoS 1 redelivers what was written but not yet
    /// acknowledged: a point may appear more than once, always with its one value.
    Allowed,
}

fn check_all(data: &Path, n: i64, dups: Duplicates, fmt: Fmt) {
    let (points, files) = read_all_in(data, fmt);
    assert!(!files.is_empty(), "no sealed file");
    for i in 0..n {
        let dev = format!("root.plant.d{}", i % 3);
        for (m, v) in [("a", i), ("b", -2 * i)] {
            let got = points.get(&(dev.clone(), m.to_string(), 1_000 + i));
            assert!(
                got.is_some_and(|vals| {
                    let copies_ok = match dups {
                        Duplicates::None => vals.len() == 1,
                        Duplicates::Allowed => !vals.is_empty(),
                    };
                    copies_ok && vals.iter().all(|x| *x == Value::Int64(v))
                }),
                "{dev}.{m} at {} ({dups:?} duplicates): {got:?}",
                1_000 + i
            );
        }
    }
    assert_eq!(
        points.len(),
        2 * n as usize,
        "no points other than the published ones"
    );
}

#[test]
fn mqtt_qos1_every_point_sealed_after_sigterm() {
    qos1_sealed_after_sigterm(Fmt::V2);
}

#[test]
fn mqtt_qos1_every_point_sealed_after_sigterm_v4() {
    qos1_sealed_after_sigterm(Fmt::V4);
}

fn qos1_sealed_after_sigterm(fmt: Fmt) {
    let broker = Broker::start();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let file = tmp.path().join("tsfiled.toml");
    std::fs::write(
        &file,
        config(
            &data,
            broker.port,
            &format!("e2e-{}-{fmt:?}", std::process::id()),
            fmt,
        ),
    )
    .unwrap();
    let d = DaemonProc::start_with(&["run", "--config", file.to_str().unwrap()]);
    until("the MQTT source connects", 30, || connected(&d));
    let n = 2_000;
    publish(broker.port, "plant/line1", &messages(0, n));
    until("every message is durable", 60, || {
        let m = metrics(&d);
        metric(&m, &format!("tsfiled_mqtt_messages_total{SRC}")) == Some(n as f64)
            && metric(&m, &format!("tsfiled_mqtt_inflight_messages{SRC}")) == Some(0.0)
    });
    let m = metrics(&d);
    assert_eq!(
        metric(&m, &format!("tsfiled_points_received_total{SRC}")),
        Some(2.0 * n as f64),
        "{m}"
    );
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    check_all(&data, n, Duplicates::None, fmt);
}

#[test]
fn mqtt_sigkill_mid_stream_then_restart_loses_nothing() {
    sigkill_mid_stream(Fmt::V2);
}

#[test]
fn mqtt_sigkill_mid_stream_then_restart_loses_nothing_v4() {
    sigkill_mid_stream(Fmt::V4);
}

fn sigkill_mid_stream(fmt: Fmt) {
    let broker = Broker::start();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let file = tmp.path().join("tsfiled.toml");
    std::fs::write(
        &file,
        config(
            &data,
            broker.port,
            &format!("e2e-kill-{}-{fmt:?}", std::process::id()),
            fmt,
        ),
    )
    .unwrap();
    let cfg = file.to_str().unwrap().to_string();
    let d = DaemonProc::start_with(&["run", "--config", &cfg]);
    until("the MQTT source connects", 30, || connected(&d));
    let n = 6_000;
    let port = broker.port;
    let publisher = std::thread::spawn(move || {
        for k in 0..6 {
            publish(port, "plant/line2", &messages(k * 1_000, (k + 1) * 1_000));
        }
    });
    until("some messages arrived", 60, || {
        metric(&metrics(&d), &format!("tsfiled_mqtt_messages_total{SRC}"))
            .is_some_and(|v| v >= 500.0)
    });
    d.kill();
    // The broker keeps queueing for the persistent session while the daemon is down.
    publisher.join().expect("publisher");
    let d = DaemonProc::start_with(&["run", "--config", &cfg]);
    until("the MQTT source reconnects", 30, || connected(&d));
    // Everything not durable before the kill is redelivered: wait until no message arrived
    // for half a second and nothing is in flight (the file check below is the assertion).
    let mut last = -1.0;
    until("redelivery settles", 90, || {
        let m = metrics(&d);
        let v = metric(&m, &format!("tsfiled_mqtt_messages_total{SRC}")).unwrap_or(0.0);
        let idle =
            v == last && metric(&m, &format!("tsfiled_mqtt_inflight_messages{SRC}")) == Some(0.0);
        last = v;
        if !idle {
            std::thread::sleep(Duration::from_millis(500));
        }
        idle
    });
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    check_all(&data, n, Duplicates::Allowed, fmt);
}

#[test]
fn broker_restart_loses_no_qos1_message() {
    broker_restart_loses_no_qos1_message_in(Fmt::V2);
}

#[test]
fn broker_restart_loses_no_qos1_message_v4() {
    broker_restart_loses_no_qos1_message_in(Fmt::V4);
}

fn broker_restart_loses_no_qos1_message_in(fmt: Fmt) {
    let mut broker = Broker::start_opts(true);
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let file = tmp.path().join("tsfiled.toml");
    std::fs::write(
        &file,
        config(
            &data,
            broker.port,
            &format!("e2e-restart-{}-{fmt:?}", std::process::id()),
            fmt,
        ),
    )
    .unwrap();
    let d = DaemonProc::start_with(&["run", "--config", file.to_str().unwrap()]);
    until("the MQTT source connects", 30, || connected(&d));
    let (n, m) = (1_000, 1_000);
    publish(broker.port, "plant/line3", &messages(0, n));
    broker.stop();
    until("the daemon sees the broker gone", 30, || !connected(&d));
    broker.start_again();
    // Publish the rest while the daemon reconnects; retry until the broker accepts them.
    let start = Instant::now();
    loop {
        let (ok, err) = try_publish(broker.port, "plant/line3", &messages(n, n + m));
        if ok {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "publishing after the restart: {err}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    until("the MQTT source reconnects", 30, || connected(&d));
    until("every point is received", 90, || {
        let mm = metrics(&d);
        metric(&mm, &format!("tsfiled_points_received_total{SRC}"))
            .is_some_and(|v| v >= 2.0 * (n + m) as f64)
            && metric(&mm, &format!("tsfiled_mqtt_inflight_messages{SRC}")) == Some(0.0)
    });
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    check_all(&data, n + m, Duplicates::Allowed, fmt);
}

fn shared_config(data: &Path, port: u16, client_id: &str, fmt: Fmt) -> String {
    config(data, port, client_id, fmt).replace(
        "type = \"mqtt\"\n",
        "type = \"mqtt\"\nprotocol = \"v5\"\nshared_group = \"tsfiled\"\n",
    )
}

#[test]
fn two_daemons_on_a_shared_subscription_write_every_point_once() {
    two_daemons_on_a_shared_subscription_write_every_point_once_in(Fmt::V2);
}

#[test]
fn two_daemons_on_a_shared_subscription_write_every_point_once_v4() {
    two_daemons_on_a_shared_subscription_write_every_point_once_in(Fmt::V4);
}

fn two_daemons_on_a_shared_subscription_write_every_point_once_in(fmt: Fmt) {
    let broker = Broker::start();
    let tmp = tempfile::tempdir().unwrap();
    let mut daemons = Vec::new();
    let mut dirs = Vec::new();
    for k in 0..2 {
        let data = tmp.path().join(format!("data{k}"));
        let file = tmp.path().join(format!("tsfiled{k}.toml"));
        let text = shared_config(
            &data,
            broker.port,
            &format!("e2e-shared{k}-{}-{fmt:?}", std::process::id()),
            fmt,
        );
        assert!(text.contains("shared_group"), "{text}");
        std::fs::write(&file, text).unwrap();
        daemons.push(DaemonProc::start_with(&[
            "run",
            "--config",
            file.to_str().unwrap(),
        ]));
        dirs.push(data);
    }
    for d in &daemons {
        until("the MQTT source connects", 30, || connected(d));
    }
    // Let both SUBACKs settle so the broker shares among two subscribers.
    std::thread::sleep(Duration::from_millis(500));
    let k = 3_000;
    publish(broker.port, "plant/line4", &messages(0, k));
    let received = |d: &DaemonProc| {
        metric(&metrics(d), &format!("tsfiled_points_received_total{SRC}")).unwrap_or(0.0)
    };
    until("the daemons received every point between them", 60, || {
        daemons.iter().map(received).sum::<f64>() >= 2.0 * k as f64
    });
    let shares: Vec<f64> = daemons.iter().map(received).collect();
    assert_eq!(shares.iter().sum::<f64>(), 2.0 * k as f64, "{shares:?}");
    assert!(shares.iter().all(|s| *s > 0.0), "{shares:?}");
    for d in daemons {
        let (code, log) = d.stop();
        assert_eq!(code, 0, "{log}");
    }
    let mut union: std::collections::BTreeMap<(String, String, i64), Vec<Value>> =
        Default::default();
    for data in &dirs {
        let (points, files) = read_all_in(data, fmt);
        assert!(!files.is_empty(), "{}: no sealed file", data.display());
        assert!(!points.is_empty(), "{}: no share", data.display());
        for (key, vals) in points {
            union.entry(key).or_default().extend(vals);
        }
    }
    for i in 0..k {
        let dev = format!("root.plant.d{}", i % 3);
        for (m, v) in [("a", i), ("b", -2 * i)] {
            let got = union.get(&(dev.clone(), m.to_string(), 1_000 + i));
            assert_eq!(
                got,
                Some(&vec![Value::Int64(v)]),
                "{dev}.{m} at {}: exactly once",
                1_000 + i
            );
        }
    }
    assert_eq!(union.len(), 2 * k as usize, "no other points");
}
