//! The NATS JetStream source against real `nats-server`s (JetStream enabled) started per test
//! on free loopback ports: one server, or a 3-node cluster one of whose nodes is killed
//! mid-stream. Messages are published with JetStream publish acknowledgements by the real
//! client; every acknowledged message must reach the sink.
//! These tests fail, never skip, when `nats-server` is missing (`ops/ci-deps.sh` installs it).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, stream};
use tokio_util::sync::CancellationToken;
use tsfiled_connectors::nats::NatsTable;
use tsfiled_connectors::sink::{MemoryMode, MemorySink};
use tsfiled_connectors::source::{
    validate_table, RecordingMetrics, SourceContext, SourceSettings, StatusReporter,
};
use tsfiled_connectors::{Error, FieldValue, Record};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The `nats-server` binary: on PATH, or where Debian's package puts it (`/usr/sbin`, which a
/// non-root PATH may lack).
fn nats_server() -> PathBuf {
    for dir in ["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"] {
        let p = Path::new(dir).join("nats-server");
        if p.exists() {
            return p;
        }
    }
    PathBuf::from("nats-server")
}

/// One `nats-server` process; killed on drop.
struct Server {
    child: Option<Child>,
    port: u16,
    name: String,
}

impl Server {
    fn spawn(name: &str, port: u16, args: &[&str]) -> Server {
        let child = Command::new(nats_server())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server is needed for the NATS tests (ops/ci-deps.sh installs it)");
        let s = Server {
            child: Some(child),
            port,
            name: name.to_string(),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "nats-server {name} did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        s
    }

    /// A single JetStream server.
    fn single(dir: &std::path::Path) -> Server {
        let port = free_port();
        let store = dir.join("js");
        Server::spawn(
            "single",
            port,
            &[
                "-js",
                "-a",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-sd",
                store.to_str().unwrap(),
                "-n",
                "single",
            ],
        )
    }

    /// A 3-node JetStream cluster.
    fn cluster(dir: &std::path::Path) -> Vec<Server> {
        let ports: Vec<(u16, u16)> = (0..3).map(|_| (free_port(), free_port())).collect();
        let routes: Vec<String> = ports
            .iter()
            .map(|(_, c)| format!("\"nats-route://127.0.0.1:{c}\""))
            .collect();
        let mut servers = Vec::new();
        for (i, (port, cport)) in ports.iter().enumerate() {
            let name = format!("n{i}");
            let conf = dir.join(format!("{name}.conf"));
            let store = dir.join(&name);
            std::fs::write(
                &conf,
                format!(
                    "server_name: {name}\nlisten: \"127.0.0.1:{port}\"\n\
                     jetstream {{ store_dir: \"{}\" }}\n\
                     cluster {{ name: tsfiled, listen: \"127.0.0.1:{cport}\", routes: [{}] }}\n",
                    store.display(),
                    routes.join(", ")
                ),
            )
            .unwrap();
            servers.push(Server::spawn(&name, *port, &["-c", conf.to_str().unwrap()]));
        }
        servers
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Waits (up to a generous deadline, for slow CI machines) until `cond` holds.
async fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Connects the test's own client and creates the stream `TS` on `ts.>` (retrying while the
/// cluster elects its leaders).
async fn client_and_stream(urls: &[String], replicas: usize) -> jetstream::Context {
    let client = async_nats::ConnectOptions::new()
        .retry_on_initial_connect()
        .connect(urls.to_vec())
        .await
        .unwrap();
    let js = jetstream::new(client);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let made = js
            .get_or_create_stream(stream::Config {
                name: "TS".into(),
                subjects: vec!["ts.>".into()],
                num_replicas: replicas,
                ..Default::default()
            })
            .await;
        match made {
            Ok(_) => return js,
            Err(e) => {
                assert!(Instant::now() < deadline, "cannot create the stream: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

fn json(i: u64) -> String {
    format!(r#"{{"device":"root.js.d","timestamp":{i},"measurements":["v"],"values":[{i}]}}"#)
}

/// Publishes `json(i)` until the stream acknowledged it.
async fn publish_acked(js: &jetstream::Context, i: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = match js.publish(format!("ts.d.{}", i % 7), json(i).into()).await {
            Ok(ack) => ack.await.map(|_| ()).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match r {
            Ok(()) => return,
            Err(e) => {
                assert!(Instant::now() < deadline, "cannot publish {i}: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

fn times(records: &[Record]) -> BTreeSet<i64> {
    records.iter().map(|r| r.time).collect()
}

struct Running {
    sink: Arc<MemorySink>,
    metrics: Arc<RecordingMetrics>,
    status: StatusReporter,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), String>>,
}

/// Starts a source with the keys of one `type = "nats"` table; timestamps in milliseconds.
fn start(config_toml: &str, sink: Arc<MemorySink>) -> Running {
    let settings = validate_table::<NatsTable>(config_toml).unwrap();
    let metrics = Arc::new(RecordingMetrics::default());
    let cx = SourceContext::for_test("nats", sink.clone(), metrics.clone(), "state".into());
    let (stop, status) = (cx.shutdown.clone(), cx.status.clone());
    let task = tokio::spawn(settings.start(cx));
    Running {
        sink,
        metrics,
        status,
        stop,
        task,
    }
}

impl Running {
    /// The counter `tsfiled_nats_<name>_total`.
    fn count(&self, name: &str) -> u64 {
        self.metrics
            .counter_value(&format!("tsfiled_nats_{name}_total"))
    }

    async fn finish(self) {
        assert!(!self.task.is_finished(), "the source stopped on its own");
        self.stop.cancel();
        let r = self.task.await.expect("the source panicked");
        assert_eq!(r, Ok(()));
    }
}

fn config(urls: &[String], extra: &str) -> String {
    let servers: Vec<String> = urls.iter().map(|u| format!("\"{u}\"")).collect();
    format!(
        "servers = [{}]\nstream = \"TS\"\nconsumer = \"tsfiled\"\n\
         reconnect_initial_backoff = \"100ms\"\nreconnect_max_backoff = \"1s\"\n{extra}\n",
        servers.join(", ")
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_node_killed_mid_stream_loses_no_acknowledged_point() {
    let dir = tempfile::tempdir().unwrap();
    let mut servers = Server::cluster(dir.path());
    let urls: Vec<String> = servers.iter().map(Server::url).collect();
    let js = client_and_stream(&urls, 3).await;
    let src = start(
        &config(&urls, "batch = 50\nack_wait = \"5s\""),
        Arc::new(MemorySink::new()),
    );
    const N: u64 = 3000;
    for i in 0..N / 3 {
        publish_acked(&js, i).await;
    }
    wait_for("the first points", || src.sink.points() > 0).await;
    // Kill the node leading the consumer (it tracks the acknowledgements).
    let info = js
        .get_stream("TS")
        .await
        .unwrap()
        .consumer_info("tsfiled")
        .await
        .unwrap();
    let leader = info
        .cluster
        .and_then(|c| c.leader)
        .expect("a consumer leader");
    let victim = servers
        .iter_mut()
        .find(|s| s.name == leader)
        .expect("the leader is one of ours");
    victim.kill();
    for i in N / 3..N {
        publish_acked(&js, i).await;
    }
    let want: BTreeSet<i64> = (0..N as i64).collect();
    wait_for("every acknowledged point", || {
        times(&src.sink.records()).is_superset(&want)
    })
    .await;
    let records = src.sink.records();
    for r in &records {
        assert_eq!(&*r.device, "root.js.d");
        assert_eq!(r.fields[0].value, FieldValue::Int(r.time));
    }
    assert!(src.count("acked") >= N);
    src.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sources_on_one_durable_consumer_split_the_stream() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::single(dir.path());
    let urls = vec![server.url()];
    let js = client_and_stream(&urls, 1).await;
    const N: u64 = 1000;
    for i in 0..N {
        publish_acked(&js, i).await;
    }
    let (a, b) = (Arc::new(MemorySink::new()), Arc::new(MemorySink::new()));
    // Slow durability keeps each source busy, so the server hands the rest to the other.
    a.set_delay(Duration::from_millis(5));
    b.set_delay(Duration::from_millis(5));
    let cfg = config(&urls, "batch = 10\nmax_concurrent_submits = 1");
    let src_a = start(&cfg, a.clone());
    let src_b = start(&cfg, b.clone());
    let want: BTreeSet<i64> = (0..N as i64).collect();
    wait_for("every point in one of the sinks", || {
        let mut got = times(&a.records());
        got.extend(times(&b.records()));
        got == want
    })
    .await;
    // Split, not copied: each message went to one source.
    assert!(
        a.points() > 0 && b.points() > 0,
        "{} {}",
        a.points(),
        b.points()
    );
    assert_eq!(a.points() + b.points(), N);
    src_a.finish().await;
    src_b.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledges_only_durable_points() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::single(dir.path());
    let urls = vec![server.url()];
    let js = client_and_stream(&urls, 1).await;
    const N: u64 = 100;
    for i in 0..N {
        publish_acked(&js, i).await;
    }
    let cfg = config(&urls, "ack_wait = \"1s\"\nbatch = 20");
    // A sink that is closed: nothing becomes durable, nothing may be acknowledged.
    let closed = Arc::new(MemorySink::new());
    closed.set_mode(MemoryMode::Closed);
    let first = start(&cfg, closed.clone());
    let r = first.task.await.expect("no panic");
    assert_eq!(r, Err(Error::SinkClosed.to_string()));
    assert_eq!(first.metrics.counter_value("tsfiled_nats_acked_total"), 0);
    let info = js
        .get_stream("TS")
        .await
        .unwrap()
        .consumer_info("tsfiled")
        .await
        .unwrap();
    assert_eq!(info.ack_floor.stream_sequence, 0, "{info:?}");
    assert!(info.num_ack_pending > 0, "{info:?}");

    // A sink that is full at first, then accepts: every message arrives and is acknowledged.
    let sink = Arc::new(MemorySink::new());
    sink.script([MemoryMode::Full(Duration::from_millis(20)); 3]);
    let second = start(&cfg, sink.clone());
    let want: BTreeSet<i64> = (0..N as i64).collect();
    wait_for("every point after redelivery", || {
        times(&sink.records()) == want
    })
    .await;
    let stream = js.get_stream("TS").await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let info = stream.consumer_info("tsfiled").await.unwrap();
        if info.ack_floor.stream_sequence == N && info.num_ack_pending == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "not all acknowledged: {info:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(sink.fulls() >= 3);
    second.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_named_by_subject_and_unusable_messages_terminated() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::single(dir.path());
    let urls = vec![server.url()];
    let js = client_and_stream(&urls, 1).await;
    let publish = |subject: &'static str, payload: &'static str| {
        let js = js.clone();
        async move {
            js.publish(subject, payload.into())
                .await
                .unwrap()
                .await
                .unwrap();
        }
    };
    publish("ts.press-7.temp", "21.5").await;
    publish("ts.press-7.ok", "true").await;
    publish("ts.too.many.levels", "1").await; // does not match the template
    publish("ts.press-8.count", r#"{"ts": 1700000000000, "value": 42}"#).await;
    let src = start(
        &config(
            &urls,
            "payload = \"value\"\nsubject_template = \"ts.{device}.{measurement}\"\n\
             path_prefix = \"root.v\"\nack_wait = \"1s\"",
        ),
        Arc::new(MemorySink::new()),
    );
    wait_for("three points and one terminated message", || {
        src.sink.points() == 3 && src.count("terminated") == 1
    })
    .await;
    let mut got: Vec<(String, String, FieldValue)> = src
        .sink
        .records()
        .into_iter()
        .map(|r| {
            (
                r.device.to_string(),
                r.fields[0].measurement.to_string(),
                r.fields[0].value.clone(),
            )
        })
        .collect();
    got.sort_by(|x, y| (&x.0, &x.1).cmp(&(&y.0, &y.1)));
    assert_eq!(
        got,
        vec![
            ("root.v.press_7".into(), "ok".into(), FieldValue::Bool(true)),
            (
                "root.v.press_7".into(),
                "temp".into(),
                FieldValue::Float(21.5)
            ),
            ("root.v.press_8".into(), "count".into(), FieldValue::Int(42)),
        ]
    );
    let with_ts = src
        .sink
        .records()
        .into_iter()
        .find(|r| &*r.device == "root.v.press_8")
        .unwrap();
    assert_eq!(with_ts.time, 1_700_000_000_000);
    // The terminated message is not delivered again (ack wait 1 s).
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(src.count("messages"), 4);
    let info = js
        .get_stream("TS")
        .await
        .unwrap()
        .consumer_info("tsfiled")
        .await
        .unwrap();
    assert_eq!(info.num_ack_pending, 0, "{info:?}");
    assert_eq!(info.num_redelivered, 0, "{info:?}");
    src.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn password_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let store = dir.path().join("js");
    let _server = Server::spawn(
        "auth",
        port,
        &[
            "-js",
            "-a",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-sd",
            store.to_str().unwrap(),
            "--user",
            "ingest",
            "--pass",
            "s3cret",
        ],
    );
    let url = format!("nats://127.0.0.1:{port}");
    let client =
        async_nats::ConnectOptions::with_user_and_password("ingest".into(), "s3cret".into())
            .connect(url.as_str())
            .await
            .unwrap();
    let js = jetstream::new(client);
    js.create_stream(stream::Config {
        name: "TS".into(),
        subjects: vec!["ts.>".into()],
        ..Default::default()
    })
    .await
    .unwrap();
    publish_acked(&js, 7).await;
    let pw = dir.path().join("password");
    std::fs::write(&pw, "s3cret\n").unwrap();
    let src = start(
        &config(
            &[url],
            &format!(
                "username = \"ingest\"\npassword_file = {:?}",
                pw.display().to_string()
            ),
        ),
        Arc::new(MemorySink::new()),
    );
    wait_for("the point", || src.sink.points() == 1).await;
    wait_for("status consuming", || src.status.get() == "consuming").await;
    assert_eq!(times(&src.sink.records()), BTreeSet::from([7]));
    src.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_down_at_start_then_restarted() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let url = format!("nats://127.0.0.1:{port}");
    let store = dir.path().join("js");
    let args = [
        "-js",
        "-a",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "-sd",
        store.to_str().unwrap(),
    ]
    .map(String::from);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // Nothing listens yet: the source waits and keeps trying.
    let src = start(
        &config(std::slice::from_ref(&url), "batch = 20"),
        Arc::new(MemorySink::new()),
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut server = Server::spawn("restarted", port, &args);
    let js = client_and_stream(std::slice::from_ref(&url), 1).await;
    for i in 0..50 {
        publish_acked(&js, i).await;
    }
    let first: BTreeSet<i64> = (0..50).collect();
    wait_for("the points published after the server came up", || {
        times(&src.sink.records()) == first
    })
    .await;
    server.kill();
    let _server = Server::spawn("restarted", port, &args);
    for i in 50..100 {
        publish_acked(&js, i).await;
    }
    let all: BTreeSet<i64> = (0..100).collect();
    wait_for("the points published after the restart", || {
        times(&src.sink.records()) == all
    })
    .await;
    src.finish().await;
}
