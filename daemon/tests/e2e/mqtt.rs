//! MQTT sources in pipelines: a real Mosquitto on a free loopback port, the real binary with
//! an MQTT source at QoS 1, IoTDB JSON published with `mosquitto_pub`, and every point read
//! back from the sealed files — after a SIGTERM, and after a SIGKILL mid-stream and restart
//! (the broker redelivers what was not acknowledged: zero acknowledged points lost).

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
struct Broker {
    _dir: tempfile::TempDir,
    port: u16,
    child: Child,
}

impl Broker {
    fn start() -> Broker {
        let dir = tempfile::tempdir().expect("tempdir");
        let port = free_port();
        let conf = dir.path().join("mosquitto.conf");
        std::fs::write(
            &conf,
            format!(
                "listener {port} 127.0.0.1\nallow_anonymous true\nmax_inflight_messages 100\n\
                 max_queued_messages 1000000\nmessage_size_limit 0\n"
            ),
        )
        .expect("write mosquitto.conf");
        let child = Command::new(mosquitto_path())
            .arg("-c")
            .arg(&conf)
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
        Broker {
            _dir: dir,
            port,
            child,
        }
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
fn publish(port: u16, topic: &str, lines: &[String]) {
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
            writeln!(stdin, "{l}").expect("write to mosquitto_pub");
        }
    }
    let out = child.wait_with_output().expect("mosquitto_pub");
    assert!(
        out.status.success(),
        "mosquitto_pub failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn config(data: &Path, port: u16, client_id: &str) -> String {
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
client_id = "{client_id}"

[[pipeline.source.topic]]
filter = "plant/#"
qos = 1
payload = "iotdb-json"
"#,
        data.display()
    )
}

fn metrics(d: &DaemonProc) -> String {
    get(d.addr, "/metrics").body
}

fn until(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "timed out: {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
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

fn check_all(data: &Path, n: i64) {
    let (points, files) = read_all(data);
    assert!(!files.is_empty(), "no sealed file");
    for i in 0..n {
        let dev = format!("root.plant.d{}", i % 3);
        for (m, v) in [("a", i), ("b", -2 * i)] {
            let got = points.get(&(dev.clone(), m.to_string(), 1_000 + i));
            assert!(
                got.is_some_and(
                    |vals| !vals.is_empty() && vals.iter().all(|x| *x == Value::Int64(v))
                ),
                "{dev}.{m} at {}: {got:?}",
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
    let broker = Broker::start();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let file = tmp.path().join("tsfiled.toml");
    std::fs::write(
        &file,
        config(&data, broker.port, &format!("e2e-{}", std::process::id())),
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
    check_all(&data, n);
}

#[test]
fn mqtt_sigkill_mid_stream_then_restart_loses_nothing() {
    let broker = Broker::start();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let file = tmp.path().join("tsfiled.toml");
    std::fs::write(
        &file,
        config(
            &data,
            broker.port,
            &format!("e2e-kill-{}", std::process::id()),
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
    check_all(&data, n);
}
