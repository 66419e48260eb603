//! Test harness: a real Mosquitto on a free loopback port, a QoS-aware publisher, and a
//! connector running in its own runtime (so a "crash" drops every task at once).
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rumqttc::{AsyncClient, Event, MqttOptions, Outgoing, Packet, QoS};
use tokio_util::sync::CancellationToken;
use tsfiled_connectors::mqtt::{run, CountingMetrics, MqttSourceConfig};
use tsfiled_connectors::sink::MemorySink;
use tsfiled_connectors::Error;
use tsfiled_connectors::{FieldValue, Record};

static UNIQUE: AtomicU64 = AtomicU64::new(0);

/// A process-unique suffix.
pub fn unique() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        UNIQUE.fetch_add(1, Ordering::Relaxed)
    )
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("local addr").port()
}

/// Fails loudly when Mosquitto is not installed: these tests must run, never skip.
pub fn mosquitto_path() -> PathBuf {
    for p in [
        "/usr/sbin/mosquitto",
        "/usr/bin/mosquitto",
        "/usr/local/sbin/mosquitto",
    ] {
        if Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    panic!(
        "mosquitto is not installed: the MQTT tests need a real broker \
         (apt-get install -y mosquitto); they never skip"
    );
}

/// A Mosquitto broker on 127.0.0.1 with its own config and persistence directory.
pub struct Broker {
    pub dir: tempfile::TempDir,
    pub port: u16,
    child: Option<Child>,
    conf: PathBuf,
}

impl Broker {
    /// Starts a broker with anonymous access and generous queues; `extra` is appended to the
    /// config (use `{dir}` for the broker's directory).
    pub fn start(extra: &str) -> Broker {
        Broker::start_on(free_port(), extra)
    }

    /// Like [`Broker::start`] on a given port.
    pub fn start_on(port: u16, extra: &str) -> Broker {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path().display().to_string();
        let conf = dir.path().join("mosquitto.conf");
        let has_listener = extra.contains("listener");
        let mut text = String::new();
        text.push_str("user root\n");
        text.push_str(&format!("persistence_location {d}/\n"));
        text.push_str(&format!("log_dest file {d}/mosquitto.log\n"));
        text.push_str("log_type all\n");
        text.push_str("max_inflight_messages 100\n");
        text.push_str("max_queued_messages 1000000\n");
        text.push_str("message_size_limit 0\n");
        if !has_listener {
            text.push_str(&format!("listener {port} 127.0.0.1\n"));
            text.push_str("allow_anonymous true\n");
        }
        text.push_str(
            &extra
                .replace("{dir}", &d)
                .replace("{port}", &port.to_string()),
        );
        text.push('\n');
        std::fs::write(&conf, text).expect("write mosquitto.conf");
        let mut b = Broker {
            dir,
            port,
            child: None,
            conf,
        };
        b.launch();
        b
    }

    fn launch(&mut self) {
        let child = Command::new(mosquitto_path())
            .arg("-c")
            .arg(&self.conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start mosquitto");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            if let Some(c) = self.child.as_mut() {
                if let Ok(Some(status)) = c.try_wait() {
                    panic!("mosquitto exited ({status}); log:\n{}", self.log());
                }
            }
            assert!(
                Instant::now() < deadline,
                "mosquitto did not listen on {}; log:\n{}",
                self.port,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The broker's log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("mosquitto.log")).unwrap_or_default()
    }

    /// Stops the broker with SIGTERM (it saves its persistence database) and waits.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(c.id().to_string())
                .status();
            let _ = c.wait();
        }
    }

    /// Stops and starts the broker again on the same port with the same config.
    pub fn restart(&mut self) {
        self.stop();
        self.launch();
    }

    /// `mqtt://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("mqtt://127.0.0.1:{}", self.port)
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Publishes every (topic, payload) in order and returns once the broker acknowledged all
/// of them (QoS 1/2) or they were written (QoS 0).
pub async fn publish(port: u16, msgs: &[(String, Vec<u8>)], qos: QoS) {
    let mut o = MqttOptions::new(format!("pub-{}", unique()), "127.0.0.1", port);
    o.set_max_packet_size(16 << 20, 16 << 20);
    o.set_inflight(100);
    let (client, mut el) = AsyncClient::new(o, 1000);
    let done = Arc::new(AtomicUsize::new(0));
    let d = done.clone();
    let lp = tokio::spawn(async move {
        loop {
            match el.poll().await {
                Ok(Event::Incoming(Packet::PubAck(_)))
                | Ok(Event::Incoming(Packet::PubComp(_)))
                    if qos != QoS::AtMostOnce =>
                {
                    d.fetch_add(1, Ordering::Relaxed);
                }
                Ok(Event::Outgoing(Outgoing::Publish(_))) if qos == QoS::AtMostOnce => {
                    d.fetch_add(1, Ordering::Relaxed);
                }
                Ok(Event::Outgoing(Outgoing::Disconnect)) => break,
                Ok(_) => {}
                Err(e) => panic!("publisher connection failed: {e}"),
            }
        }
    });
    for (t, p) in msgs {
        client
            .publish(t.clone(), qos, false, p.clone())
            .await
            .expect("queue publish");
    }
    let n = msgs.len();
    wait_for("the broker to acknowledge every publish", 30, || {
        done.load(Ordering::Relaxed) >= n
    })
    .await;
    client.disconnect().await.expect("disconnect");
    let _ = tokio::time::timeout(Duration::from_secs(5), lp).await;
}

/// Waits until `f` holds; panics (naming `what`) after `secs` seconds.
pub async fn wait_for(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if f() {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A connector running in its own runtime.
pub struct Connector {
    rt: Option<tokio::runtime::Runtime>,
    token: CancellationToken,
    handle: Option<tokio::task::JoinHandle<Result<(), Error>>>,
    pub sink: Arc<MemorySink>,
    pub metrics: Arc<CountingMetrics>,
}

impl Connector {
    /// Starts `run(opts)` into `sink`.
    pub fn start(opts: MqttSourceConfig, sink: Arc<MemorySink>) -> Connector {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let token = CancellationToken::new();
        let metrics = Arc::new(CountingMetrics::default());
        let handle = rt.spawn(run(opts, sink.clone(), token.clone(), metrics.clone()));
        Connector {
            rt: Some(rt),
            token,
            handle: Some(handle),
            sink,
            metrics,
        }
    }

    /// Waits until the broker confirmed the subscriptions `n` times in total.
    pub async fn subscribed(&self, n: u64) {
        let m = self.metrics.clone();
        wait_for("the connector's SUBACK", 20, move || {
            CountingMetrics::get(&m.subscribed) >= n
        })
        .await;
    }

    /// Whether `run` has returned.
    pub fn finished(&self) -> bool {
        self.handle.as_ref().is_none_or(|h| h.is_finished())
    }

    /// Simulates a crash: every task of the connector is dropped at once, nothing more is
    /// acknowledged, the TCP connection closes without DISCONNECT.
    pub fn crash(mut self) {
        if let Some(rt) = self.rt.take() {
            // Drops every task (and so the socket) before returning.
            tokio::task::block_in_place(|| rt.shutdown_timeout(Duration::from_secs(2)));
        }
    }

    /// Graceful stop; returns what `run` returned.
    pub async fn stop(mut self) -> Result<(), Error> {
        self.token.cancel();
        let h = self.handle.take().expect("running");
        let r = tokio::time::timeout(Duration::from_secs(20), h)
            .await
            .expect("run() returned after shutdown")
            .expect("run() did not panic");
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
        r
    }

    /// Waits for `run` to return on its own.
    pub async fn join(mut self) -> Result<(), Error> {
        let h = self.handle.take().expect("running");
        let r = tokio::time::timeout(Duration::from_secs(20), h)
            .await
            .expect("run() returned")
            .expect("run() did not panic");
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
        r
    }
}

impl Drop for Connector {
    fn drop(&mut self) {
        self.token.cancel();
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// A point as a comparable key: (device, time, measurement, value as text).
pub type Key = (String, i64, String, String);

fn value_text(v: &FieldValue) -> String {
    match v {
        FieldValue::Bool(b) => format!("bool:{b}"),
        FieldValue::Int(i) => format!("int:{i}"),
        FieldValue::Float(f) => format!("float:{f}"),
        FieldValue::Text(s) => format!("text:{s}"),
    }
}

/// Every point of `records`, as keys (duplicates kept).
pub fn keys(records: &[Record]) -> Vec<Key> {
    let mut out = Vec::new();
    for r in records {
        for f in &r.fields {
            out.push((
                r.device.to_string(),
                r.time,
                f.measurement.to_string(),
                value_text(&f.value),
            ));
        }
    }
    out
}

/// The distinct keys.
pub fn key_set(records: &[Record]) -> BTreeSet<Key> {
    keys(records).into_iter().collect()
}

/// IoTDB JSON message `i`: device `root.t.d{i % 4}`, time `i`, one INT point `v = i`.
pub fn json_msg(topic_prefix: &str, i: u64) -> (String, Vec<u8>) {
    (
        format!("{topic_prefix}/{}", i % 4),
        format!(
            r#"{{"device":"root.t.d{}","timestamp":{i},"measurements":["v"],"values":[{i}]}}"#,
            i % 4
        )
        .into_bytes(),
    )
}

/// The key of [`json_msg`] `i`.
pub fn json_key(i: u64) -> Key {
    (
        format!("root.t.d{}", i % 4),
        i as i64,
        "v".into(),
        format!("int:{i}"),
    )
}
