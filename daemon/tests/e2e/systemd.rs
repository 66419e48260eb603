//! systemd integration, played by the test: it binds the `NOTIFY_SOCKET` datagram socket,
//! starts the real binary with `NOTIFY_SOCKET` and `WATCHDOG_USEC`, and reads `READY=1`,
//! `WATCHDOG=1` pings and `STOPPING=1`. A stalled engine (the test-only hook
//! `TSFILED_TEST_STALL_ENGINE=1`, which makes the engine stop processing writes) stops the
//! pings.

use std::io::{BufRead, BufReader};
use std::os::unix::net::UnixDatagram;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::post;

struct FakeSystemd {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    socket: UnixDatagram,
}

impl FakeSystemd {
    fn new() -> FakeSystemd {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let socket = UnixDatagram::bind(&path).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        FakeSystemd {
            _dir: dir,
            path,
            socket,
        }
    }

    /// Next datagram, or `None` after the read timeout.
    fn recv(&self) -> Option<String> {
        let mut buf = [0u8; 4096];
        match self.socket.recv(&mut buf) {
            Ok(n) => Some(String::from_utf8_lossy(&buf[..n]).into_owned()),
            Err(_) => None,
        }
    }

    /// Reads until a datagram contains `what`; returns everything read. Panics after 60 s.
    fn until(&self, what: &str) -> Vec<String> {
        let start = Instant::now();
        let mut seen = Vec::new();
        loop {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "no {what:?}; got {seen:?}"
            );
            if let Some(m) = self.recv() {
                let hit = m.lines().any(|l| l == what || l.starts_with(what));
                seen.push(m);
                if hit {
                    return seen;
                }
            }
        }
    }
}

/// Starts `tsfiled run` on a temporary data dir with the notify socket and a 1 s watchdog;
/// returns the child and its HTTP address.
fn start(sd: &FakeSystemd, data: &std::path::Path, stall: bool) -> (Child, std::net::SocketAddr) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tsfiled"));
    cmd.args(["run", "--data-dir", data.to_str().unwrap()])
        .args(["--http-listen", "127.0.0.1:0"])
        .env("NOTIFY_SOCKET", &sd.path)
        .env("WATCHDOG_USEC", "1000000")
        .env_remove("WATCHDOG_PID")
        .env("TSFILED_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if stall {
        cmd.env("TSFILED_TEST_STALL_ENGINE", "1");
    }
    let mut child = cmd.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Some(i) = line.find("HTTP listening on http://") {
                let a = line[i + 25..]
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
                    .to_string();
                if let Some(tx) = tx.take() {
                    let _ = tx.send(a);
                }
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("daemon started")
        .parse()
        .unwrap();
    (child, addr)
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(child.id() as i32, sig);
    }
}

#[test]
fn ready_watchdog_pings_and_stopping() {
    let sd = FakeSystemd::new();
    let tmp = tempfile::tempdir().unwrap();
    let (mut child, addr) = start(&sd, tmp.path(), false);
    sd.until("READY=1");
    let r = post(
        addr,
        "/ingest/iotdb-json",
        &[],
        br#"{"device":"root.sg.d1","timestamp":1,"measurements":["a"],"values":[1]}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    sd.until("WATCHDOG=1");
    sd.until("WATCHDOG=1");
    signal(&child, libc::SIGHUP);
    sd.until("RELOADING=1");
    sd.until("READY=1");
    signal(&child, libc::SIGTERM);
    sd.until("STOPPING=1");
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
}

#[test]
fn stalled_engine_stops_the_pings() {
    let sd = FakeSystemd::new();
    let tmp = tempfile::tempdir().unwrap();
    let (mut child, addr) = start(&sd, tmp.path(), true);
    sd.until("READY=1");
    sd.until("WATCHDOG=1");
    // Acknowledged (durable in the WAL), but the stalled engine never applies it.
    let r = post(
        addr,
        "/ingest/iotdb-json",
        &[],
        br#"{"device":"root.sg.d1","timestamp":1,"measurements":["a"],"values":[1]}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let seen = sd.until("STATUS=watchdog: wedged");
    assert!(
        seen.last().is_some_and(|m| m.contains("engine")),
        "the wedged component is named: {seen:?}"
    );
    // No ping after the wedge: read for several ping intervals (0.5 s each).
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3) {
        if let Some(m) = sd.recv() {
            assert!(!m.contains("WATCHDOG=1"), "ping while wedged: {m}");
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}
