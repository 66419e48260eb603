//! The `exec` source against real programs (small `sh` scripts): line protocol and IoTDB JSON
//! from stdout, restarts with backoff, stderr, stop on cancellation; and its configuration
//! table's validation.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tsfiled_connectors::exec::{ExecFormat, ExecSourceConfig, ExecTable};
use tsfiled_connectors::sink::MemorySink;
use tsfiled_connectors::source::{
    validate_table, RecordingMetrics, SourceContext, SourceSettings, StatusReporter,
};
use tsfiled_connectors::{FieldValue, Record};

struct Running {
    sink: Arc<MemorySink>,
    metrics: Arc<RecordingMetrics>,
    status: StatusReporter,
    token: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), String>>,
}

fn start(cfg: &ExecSourceConfig) -> Running {
    let sink = Arc::new(MemorySink::new());
    let metrics = Arc::new(RecordingMetrics::default());
    let cx = SourceContext::for_test(
        "exec",
        sink.clone(),
        metrics.clone(),
        PathBuf::from("unused"),
    );
    let (token, status) = (cx.shutdown.clone(), cx.status.clone());
    let task = tokio::spawn(cfg.start(cx));
    Running {
        sink,
        metrics,
        status,
        token,
        task,
    }
}

impl Running {
    /// Waits (up to a minute, for a loaded machine) until `done` holds.
    async fn until(&self, what: &str, done: impl Fn(&Running) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !done(self) {
            assert!(Instant::now() < deadline, "gave up waiting for {what}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn stop(self) -> Result<(), String> {
        self.token.cancel();
        self.task.await.unwrap()
    }
}

/// A `sh -c` command running `script`.
fn sh(script: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), script.into()]
}

fn line_format(prefix: &str) -> ExecFormat {
    let settings = validate_table::<ExecTable>(&format!(
        "command = [\"true\"]\npath_prefix = \"{prefix}\"\nprecision = \"ms\"\n"
    ))
    .unwrap();
    settings.format
}

fn field(r: &Record) -> (&str, i64, &str, &FieldValue) {
    (
        &*r.device,
        r.time,
        &*r.fields[0].measurement,
        &r.fields[0].value,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn line_protocol_from_stdout_becomes_records() {
    // A program that writes three points, one with a bad value, and keeps running.
    let script = "printf 'cpu,host=gw1 usage=12.5 1700000000001\\n'; \
                  printf 'cpu,host=gw1 usage=oops 1700000000002\\n'; \
                  printf 'mem,host=gw2 used=7i 1700000000003\\n'; exec sleep 600";
    let cfg = ExecSourceConfig::new(sh(script), line_format("root.plant"));
    let r = start(&cfg);
    r.until("two records", |r| r.sink.records().len() >= 2)
        .await;
    r.until("status running", |r| r.status.get() == "running")
        .await;
    let records = r.sink.records();
    let got: Vec<_> = records.iter().map(field).collect();
    // Line protocol: device = prefix.measurement.tag values; `i` marks an integer.
    assert_eq!(
        got,
        [
            (
                "root.plant.cpu.gw1",
                1_700_000_000_001,
                "usage",
                &FieldValue::Float(12.5)
            ),
            (
                "root.plant.mem.gw2",
                1_700_000_000_003,
                "used",
                &FieldValue::Int(7)
            ),
        ]
    );
    assert_eq!(r.metrics.counter_value("tsfiled_exec_lines_total"), 3);
    r.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iotdb_json_lines_become_records() {
    let script = r#"echo '{"device":"root.sg.d1","timestamp":1700000000000,"measurements":["temp","ok"],"values":[21.5,true]}'; exec sleep 600"#;
    let cfg = ExecSourceConfig::new(sh(script), ExecFormat::IotdbJson);
    let r = start(&cfg);
    r.until("one record", |r| !r.sink.records().is_empty())
        .await;
    let rec = &r.sink.records()[0];
    assert_eq!(&*rec.device, "root.sg.d1");
    assert_eq!(rec.time, 1_700_000_000_000);
    let fields: Vec<(&str, &FieldValue)> = rec
        .fields
        .iter()
        .map(|f| (&*f.measurement, &f.value))
        .collect();
    assert_eq!(
        fields,
        [
            ("temp", &FieldValue::Float(21.5)),
            ("ok", &FieldValue::Bool(true))
        ]
    );
    r.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exiting_program_is_restarted_and_its_stderr_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let starts = tmp.path().join("starts");
    // Each run appends to a file, writes one point numbered by the run, complains on stderr,
    // and exits with status 3.
    let script = format!(
        "echo run >> '{f}'; n=$(wc -l < '{f}'); echo \"m v=${{n}}i ${{n}}\"; echo 'oh no' >&2; exit 3",
        f = starts.display()
    );
    let mut cfg = ExecSourceConfig::new(sh(&script), line_format("root.x"));
    cfg.restart_delay = Duration::from_millis(10);
    cfg.restart_max_delay = Duration::from_millis(40);
    let r = start(&cfg);
    r.until("three runs' points", |r| r.sink.records().len() >= 3)
        .await;
    r.until("three stderr lines", |r| {
        r.metrics.counter_value("tsfiled_exec_stderr_lines_total") >= 3
    })
    .await;
    let values: Vec<FieldValue> = r.sink.records()[..3]
        .iter()
        .map(|rec| rec.fields[0].value.clone())
        .collect();
    assert_eq!(
        values,
        [FieldValue::Int(1), FieldValue::Int(2), FieldValue::Int(3)]
    );
    assert!(r.metrics.counter_value("tsfiled_exec_restarts_total") >= 2);
    r.stop().await.unwrap();
    let runs = std::fs::read_to_string(&starts).unwrap().lines().count();
    assert!(runs >= 3, "{runs} runs");
}

fn alive(pid: &str) -> bool {
    Path::new("/proc").join(pid.trim()).exists()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_stops_the_program() {
    let tmp = tempfile::tempdir().unwrap();
    let pidfile = tmp.path().join("pid");
    // `exec` makes the shell's pid the program's: it writes it, then a point every 50 ms.
    let script = format!(
        "echo $$ > '{}'; exec sh -c 'while true; do echo \"m v=1i\"; sleep 0.05; done'",
        pidfile.display()
    );
    let cfg = ExecSourceConfig::new(sh(&script), line_format("root.x"));
    let r = start(&cfg);
    r.until("a record", |r| !r.sink.records().is_empty()).await;
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    assert!(alive(&pid));
    r.stop().await.unwrap();
    // The source returned only after the program was reaped.
    assert!(!alive(&pid), "program {pid} still running");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_ignoring_sigterm_is_killed() {
    let tmp = tempfile::tempdir().unwrap();
    let pidfile = tmp.path().join("pid");
    let script = format!(
        "trap '' TERM; echo $$ > '{}'; echo 'm v=1i'; while true; do sleep 0.05; done",
        pidfile.display()
    );
    let mut cfg = ExecSourceConfig::new(sh(&script), line_format("root.x"));
    cfg.stop_timeout = Duration::from_millis(200);
    let r = start(&cfg);
    r.until("a record", |r| !r.sink.records().is_empty()).await;
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    r.stop().await.unwrap();
    assert!(!alive(&pid), "program {pid} still running");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_that_closed_its_output_is_stopped_too() {
    let tmp = tempfile::tempdir().unwrap();
    let pidfile = tmp.path().join("pid");
    // Writes one point, closes stdout, and runs on.
    let script = format!(
        "echo $$ > '{}'; echo 'm v=1i'; exec >&-; while true; do sleep 0.05; done",
        pidfile.display()
    );
    let cfg = ExecSourceConfig::new(sh(&script), line_format("root.x"));
    let r = start(&cfg);
    r.until("a record", |r| !r.sink.records().is_empty()).await;
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    r.stop().await.unwrap();
    assert!(!alive(&pid), "program {pid} still running");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_program_is_retried_without_stopping_the_source() {
    let mut cfg = ExecSourceConfig::new(
        vec!["/nonexistent/tsfiled-exec-test-program".into()],
        ExecFormat::IotdbJson,
    );
    cfg.restart_delay = Duration::from_millis(10);
    cfg.restart_max_delay = Duration::from_millis(20);
    let r = start(&cfg);
    r.until("two failed restarts", |r| {
        r.metrics.counter_value("tsfiled_exec_restarts_total") >= 2
    })
    .await;
    assert_eq!(r.status.get(), "restarting");
    r.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_over_the_limit_is_dropped_alone() {
    let script = "head -c 100 /dev/zero | tr '\\0' x; echo; echo 'm v=2i 5'; exec sleep 600";
    let mut cfg = ExecSourceConfig::new(sh(script), line_format("root.x"));
    cfg.max_line_size = tsfiled_core::ByteSize(64);
    let r = start(&cfg);
    r.until("a record", |r| !r.sink.records().is_empty()).await;
    let rec = &r.sink.records()[0];
    assert_eq!((&*rec.device, rec.time), ("root.x.m", 5));
    assert_eq!(
        r.metrics.counter_value("tsfiled_exec_lines_too_long_total"),
        1
    );
    r.stop().await.unwrap();
}

#[test]
fn the_table_is_validated_with_line_and_key() {
    let ok = validate_table::<ExecTable>("command = [\"/usr/bin/reader\", \"-v\"]\n").unwrap();
    assert_eq!(ok.command, ["/usr/bin/reader", "-v"]);
    assert_eq!(ok.restart_delay, Duration::from_secs(1));
    assert_eq!(ok.restart_max_delay, Duration::from_secs(30));
    assert_eq!(ok.stop_timeout, Duration::from_secs(5));
    let ExecFormat::Line(m) = &ok.format else {
        panic!("default format is line protocol")
    };
    assert_eq!(m.path_prefix, "root.exec");

    let err = |text: &str| validate_table::<ExecTable>(text).unwrap_err();
    assert_eq!(
        err("name = \"e\"\n"),
        ["1:1: command: missing required key `command`"]
    );
    assert_eq!(
        err("command = []\n"),
        ["1:11: command: the first element must name the program, e.g. [\"/usr/local/bin/reader\"]"]
    );
    assert_eq!(
        err("command = [\"x\"]\nformat = \"iotdb-json\"\nprecision = \"ms\"\n"),
        ["3:1: precision: not used with format = \"iotdb-json\"; remove it"]
    );
    assert_eq!(
        err("command = [\"x\"]\nformat = \"csv\"\n"),
        ["2:10: format: unknown value \"csv\"; expected \"line\" or \"iotdb-json\""]
    );
    assert_eq!(
        err("command = [\"x\"]\nenv = [\"NOEQUALS\"]\n"),
        ["2:8: env[0]: \"NOEQUALS\" is not NAME=value"]
    );
    assert_eq!(
        err("command = [\"x\"]\nrestart_delay = \"10s\"\nrestart_max_delay = \"1s\"\n"),
        ["3:21: restart_max_delay: must not be less than restart_delay"]
    );
    let unknown = err("command = [\"x\"]\nrestart = 1\n");
    assert_eq!(unknown.len(), 1);
    assert!(
        unknown[0].starts_with("2:1: restart: unknown field `restart`"),
        "{unknown:?}"
    );
}
