//! The Modbus source against a real Modbus TCP server: the PyPI `pymodbus` simulator, started
//! per test on a free loopback port. The register contents are set by the simulator script
//! from Python's `struct` packing of literal values, independent of the source's decoding.
//! These tests fail, never skip, when `python3` or `pymodbus` is missing
//! (`ops/ci-deps.sh` installs it).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio_util::sync::CancellationToken;
use tsfiled_connectors::modbus::ModbusTable;
use tsfiled_connectors::sink::MemorySink;
use tsfiled_connectors::source::{
    validate_table, RecordingMetrics, SourceContext, SourceSettings, StatusReporter,
};
use tsfiled_connectors::{DataType, FieldValue, Record};

/// The simulator: unit 17 with registers packed by `struct` (`>`: big endian, `<`: little),
/// printing each request it receives as `REQ fc=.. unit=.. address=.. count=..`.
/// Holding 31 holds the generation given on the command line.
const SIMULATOR: &str = r#"
import asyncio, struct, sys
from pymodbus.server import ModbusTcpServer
from pymodbus.simulator import SimData, SimDevice, DataType

port, generation = int(sys.argv[1]), int(sys.argv[2])

def regs(b):
    return [int.from_bytes(b[i:i + 2], "big") for i in range(0, len(b), 2)]

def abcd(fmt, v):
    return regs(struct.pack(">" + fmt, v))

def dcba(fmt, v):
    return regs(struct.pack("<" + fmt, v))

def cdab(fmt, v):  # big-endian bytes, words reversed
    b = struct.pack(">" + fmt, v)
    words = [b[i:i + 2] for i in range(0, len(b), 2)]
    return regs(b"".join(reversed(words)))

def badc(fmt, v):  # big-endian words, bytes swapped within each word
    b = struct.pack(">" + fmt, v)
    return regs(b"".join(b[i + 1:i + 2] + b[i:i + 1] for i in range(0, len(b), 2)))

holding = (abcd("h", -12345) + abcd("H", 54321) + abcd("i", -123456789)
           + cdab("I", 3000000000) + badc("f", 21.5) + dcba("f", -0.15625)
           + abcd("q", -1234567890123) + dcba("d", 3.141592653589793)
           + cdab("d", -0.0025) + badc("q", 81985529216486895))
assert len(holding) == 26, len(holding)
hr = [SimData(0, values=holding, datatype=DataType.REGISTERS),
      SimData(30, values=[655, generation] + badc("h", -2), datatype=DataType.REGISTERS)]
ir = [SimData(0, values=abcd("f", 1013.25) + [7], datatype=DataType.REGISTERS)]
co = [SimData(0, values=[True, False, True], datatype=DataType.BITS)]
di = [SimData(0, values=[False] * 5 + [True, False, False], datatype=DataType.BITS)]
device = SimDevice(17, simdata=(co, di, hr, ir))

def trace(sending, pdu):
    if not sending:
        print(f"REQ fc={pdu.function_code} unit={pdu.dev_id} address={pdu.address} count={pdu.count}", flush=True)
    return pdu

async def main():
    server = ModbusTcpServer(device, address=("127.0.0.1", port), trace_pdu=trace)
    await server.serve_forever(background=True)
    print("READY", flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"#;

/// A running simulator; killed on drop.
struct Simulator {
    child: Child,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Simulator {
    fn start(port: u16, generation: u16) -> Simulator {
        let mut child = Command::new("python3")
            .args(["-c", SIMULATOR, &port.to_string(), &generation.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3 is needed for the Modbus tests (ops/ci-deps.sh installs it)");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let stdout = child.stdout.take().expect("stdout");
        let reqs = requests.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line == "READY" {
                    let _ = ready_tx.send(());
                } else if let Some(r) = line.strip_prefix("REQ ") {
                    reqs.lock().unwrap().push(r.to_string());
                }
            }
        });
        let stderr = child.stderr.take().expect("stderr");
        let errors = Arc::new(Mutex::new(String::new()));
        let errs = errors.clone();
        let stderr_reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let mut e = errs.lock().unwrap();
                if e.len() < 4000 {
                    e.push_str(&line);
                    e.push('\n');
                }
            }
        });
        if ready_rx.recv_timeout(Duration::from_secs(60)).is_err() {
            let _ = child.kill();
            let _ = child.wait();
            let _ = stderr_reader.join();
            panic!(
                "the pymodbus simulator did not start (is pymodbus installed? ops/ci-deps.sh \
                 installs it):\n{}",
                errors.lock().unwrap()
            );
        }
        Simulator { child, requests }
    }

    fn requests(&self) -> BTreeSet<String> {
        self.requests.lock().unwrap().iter().cloned().collect()
    }

    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Simulator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Waits (up to a generous deadline, for slow CI machines) until `cond` holds.
async fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

struct Running {
    sink: Arc<MemorySink>,
    metrics: Arc<RecordingMetrics>,
    status: StatusReporter,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), String>>,
}

/// Starts a source with the keys of one `type = "modbus"` table (`[[device]]` sub-tables);
/// timestamps in milliseconds.
fn start(config_toml: &str) -> Running {
    let settings = validate_table::<ModbusTable>(config_toml).unwrap();
    let sink = Arc::new(MemorySink::new());
    let metrics = Arc::new(RecordingMetrics::default());
    let cx = SourceContext::for_test("modbus", sink.clone(), metrics.clone(), "state".into());
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
    /// The counter `tsfiled_modbus_<name>_total`.
    fn count(&self, name: &str) -> u64 {
        self.metrics
            .counter_value(&format!("tsfiled_modbus_{name}_total"))
    }

    async fn finish(self) {
        assert!(!self.task.is_finished(), "the source stopped on its own");
        self.stop.cancel();
        let r = self.task.await.expect("the source panicked");
        assert_eq!(r, Ok(()));
    }
}

fn fields(r: &Record) -> BTreeMap<String, (FieldValue, Option<DataType>)> {
    r.fields
        .iter()
        .map(|f| (f.measurement.to_string(), (f.value.clone(), f.type_hint)))
        .collect()
}

fn entry(name: &str, kind: &str, address: u16, extra: &str) -> String {
    format!(
        "[[device.register]]\nmeasurement = \"{name}\"\nkind = \"{kind}\"\naddress = {address}\n{extra}\n"
    )
}

fn device(port: u16, unit: u8, extra: &str) -> String {
    format!(
        "[[device]]\naddress = \"127.0.0.1:{port}\"\nunit_id = {unit}\npath = \"root.plant.plc{unit}\"\n\
         poll_interval = \"50ms\"\ntimeout = \"500ms\"\nreconnect_initial_backoff = \"50ms\"\n\
         reconnect_max_backoff = \"200ms\"\n{extra}\n"
    )
}

/// The register map of the simulator's unit 17 as entries.
fn all_entries() -> String {
    [
        entry("i16", "holding", 0, "type = \"int16\""),
        entry("u16", "holding", 1, ""),
        entry("i32", "holding", 2, "type = \"int32\""),
        entry(
            "u32_cdab",
            "holding",
            4,
            "type = \"uint32\"\nword_order = \"little\"",
        ),
        entry(
            "f32_badc",
            "holding",
            6,
            "type = \"float32\"\nbyte_order = \"little\"",
        ),
        entry(
            "f32_dcba",
            "holding",
            8,
            "type = \"float32\"\nbyte_order = \"little\"\nword_order = \"little\"",
        ),
        entry("i64", "holding", 10, "type = \"int64\""),
        entry(
            "f64_dcba",
            "holding",
            14,
            "type = \"float64\"\nbyte_order = \"little\"\nword_order = \"little\"",
        ),
        entry(
            "f64_cdab",
            "holding",
            18,
            "type = \"float64\"\nword_order = \"little\"",
        ),
        entry(
            "i64_badc",
            "holding",
            22,
            "type = \"int64\"\nbyte_order = \"little\"",
        ),
        entry("unmapped", "holding", 28, ""),
        entry("scaled", "holding", 30, "scale = 0.5\noffset = -40.0"),
        entry("generation", "holding", 31, ""),
        entry(
            "i16_ba",
            "holding",
            32,
            "type = \"int16\"\nbyte_order = \"little\"",
        ),
        entry("pressure", "input", 0, "type = \"float32\""),
        entry("count", "input", 2, ""),
        entry("coil1", "coil", 1, ""),
        entry("coil2", "coil", 2, ""),
        entry("di4", "discrete_input", 4, ""),
        entry("di5", "discrete_input", 5, ""),
    ]
    .concat()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_every_type_and_order_in_batched_requests() {
    let port = free_port();
    let sim = Simulator::start(port, 1);
    let before = now_ms();
    let src = start(&(device(port, 17, "") + &all_entries()));
    wait_for("two polls", || src.sink.records().len() >= 2).await;
    let records = src.sink.records();
    let after = now_ms();
    let exceptions = src.count("exceptions");
    let status = src.status.get();
    src.finish().await;

    let r = &records[0];
    assert_eq!(&*r.device, "root.plant.plc17");
    assert!(
        before <= r.time && r.time <= after,
        "{} not in [{before}, {after}]",
        r.time
    );
    use DataType::{
        BOOLEAN as Boolean, DOUBLE as Double, FLOAT as F32, INT32 as Int32, INT64 as Int64,
    };
    use FieldValue::{Bool, Float, Int};
    let expected: BTreeMap<String, (FieldValue, Option<DataType>)> = [
        ("i16", Int(-12345), Int32),
        ("u16", Int(54321), Int32),
        ("i32", Int(-123_456_789), Int32),
        ("u32_cdab", Int(3_000_000_000), Int64),
        ("f32_badc", Float(21.5), F32),
        ("f32_dcba", Float(-0.15625), F32),
        ("i64", Int(-1_234_567_890_123), Int64),
        ("f64_dcba", Float(std::f64::consts::PI), Double),
        ("f64_cdab", Float(-0.0025), Double),
        ("i64_badc", Int(81_985_529_216_486_895), Int64),
        ("scaled", Float(287.5), Double),
        ("generation", Int(1), Int32),
        ("i16_ba", Int(-2), Int32),
        ("pressure", Float(1013.25), F32),
        ("count", Int(7), Int32),
        ("coil1", Bool(false), Boolean),
        ("coil2", Bool(true), Boolean),
        ("di4", Bool(false), Boolean),
        ("di5", Bool(true), Boolean),
    ]
    .into_iter()
    .map(|(m, v, t)| (m.to_string(), (v, Some(t))))
    .collect();
    // `unmapped` (holding 28) is answered with an exception: absent, the rest is there.
    for r in &records {
        assert_eq!(fields(r), expected);
    }
    assert!(records[1].time >= records[0].time);

    // One request per contiguous range, each to unit 17.
    let want: BTreeSet<String> = [
        "fc=3 unit=17 address=0 count=26",
        "fc=3 unit=17 address=28 count=1",
        "fc=3 unit=17 address=30 count=3",
        "fc=4 unit=17 address=0 count=3",
        "fc=1 unit=17 address=1 count=2",
        "fc=2 unit=17 address=4 count=2",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(sim.requests(), want);
    assert!(exceptions >= 2, "{exceptions}");
    // An exception is an answer: the device counts as polled.
    assert_eq!(status, "polling");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_that_disappears_and_comes_back() {
    let port = free_port();
    let sim = Simulator::start(port, 1);
    let entries = entry("generation", "holding", 31, "")
        + &entry(
            "f32_badc",
            "holding",
            6,
            "type = \"float32\"\nbyte_order = \"little\"",
        );
    let src = start(&(device(port, 17, "retries = 1") + &entries));
    let generation = |r: &Record| fields(r).get("generation").map(|(v, _)| v.clone());
    wait_for("a poll of the first server", || {
        src.sink
            .records()
            .iter()
            .any(|r| generation(r) == Some(FieldValue::Int(1)))
    })
    .await;
    sim.stop();
    let errors = src.count("connect_errors");
    wait_for("failed reconnects while the server is down", || {
        src.count("connect_errors") >= errors + 2
    })
    .await;
    assert_eq!(src.status.get(), "degraded");
    let polled = src.sink.records().len();
    let sim = Simulator::start(port, 2);
    wait_for("a poll of the restarted server", || {
        src.sink
            .records()
            .iter()
            .any(|r| generation(r) == Some(FieldValue::Int(2)))
    })
    .await;
    let records = src.sink.records();
    assert!(records.len() > polled);
    wait_for("the status back to polling", || {
        src.status.get() == "polling"
    })
    .await;
    assert!(src.count("connects") >= 2);
    assert!(src.count("skipped_polls") >= 1);
    // A poll cut by the outage may lack a field; no value is ever wrong.
    for r in &records {
        for (m, (v, _)) in fields(r) {
            match m.as_str() {
                "generation" => assert!(v == FieldValue::Int(1) || v == FieldValue::Int(2)),
                _ => assert_eq!(v, FieldValue::Float(21.5)),
            }
        }
    }
    src.finish().await;
    drop(sim);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_unit_and_unreachable_device_do_not_stop_the_others() {
    let port = free_port();
    let _sim = Simulator::start(port, 7);
    let closed = free_port();
    let config = device(port, 17, "") // answers
        + &entry("generation", "holding", 31, "")
        + &device(port, 5, "") // the simulator has no unit 5: exceptions
        + &entry("generation", "holding", 31, "")
        + &device(closed, 6, "") // nothing listens
        + &entry("generation", "holding", 31, "");
    let src = start(&config);
    wait_for("exceptions, connection errors and polls", || {
        src.count("exceptions") >= 2
            && src.count("connect_errors") >= 2
            && src.sink.records().len() >= 3
    })
    .await;
    assert_eq!(src.status.get(), "degraded");
    let records = src.sink.records();
    for r in &records {
        assert_eq!(&*r.device, "root.plant.plc17");
        assert_eq!(r.fields[0].value, FieldValue::Int(7));
    }
    src.finish().await;
}

#[test]
fn invalid_settings_are_refused_before_connecting() {
    let errs = validate_table::<ModbusTable>(
        &(device(1, 17, "") + &entry("x", "coil", 0, "type = \"float32\"")),
    )
    .unwrap_err();
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].contains(": device[0].register[0].type: a coil is a bool"),
        "{errs:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_server_times_out_and_is_retried_on_new_connections() {
    // Accepts connections and reads requests but never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        let mut open = Vec::new();
        for stream in listener.incoming() {
            let Ok(stream) = stream else { break };
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            open.push(stream);
        }
    });
    let src = start(&format!(
        "[[device]]\naddress = \"127.0.0.1:{port}\"\npath = \"root.plant.silent\"\n\
         poll_interval = \"1h\"\ntimeout = \"100ms\"\nretries = 2\n{}",
        entry("x", "holding", 0, "")
    ));
    // One poll: the request and its 2 retries, each on a new connection.
    wait_for("three timed-out attempts", || {
        src.count("read_errors") >= 3 && accepted.load(std::sync::atomic::Ordering::SeqCst) >= 3
    })
    .await;
    assert_eq!(src.count("read_errors"), 3);
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 3);
    assert_eq!(src.count("skipped_polls"), 1);
    assert!(src.sink.records().is_empty());
    src.finish().await;
}
