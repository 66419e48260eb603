//! A stalled pipeline stops the systemd watchdog pings: the test hook `--stall-engine` of
//! `tsfiled-e2e-hooks` makes the engine stop processing at its first write (it also shortens
//! the stall timeout to two ping intervals); the test plays systemd.

use std::os::unix::net::UnixDatagram;
use std::time::{Duration, Instant};

use crate::harness::*;

fn recv(sock: &UnixDatagram) -> Option<String> {
    let mut buf = [0u8; 4096];
    sock.recv(&mut buf)
        .ok()
        .map(|n| String::from_utf8_lossy(&buf[..n]).into_owned())
}

fn until(sock: &UnixDatagram, want: &str, seen: &mut Vec<String>) {
    let start = Instant::now();
    loop {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no {want:?}; saw {seen:?}"
        );
        if let Some(m) = recv(sock) {
            let hit = m.lines().any(|l| l.starts_with(want));
            seen.push(m);
            if hit {
                return;
            }
        }
    }
}

#[test]
fn stalled_engine_stops_the_watchdog_pings() {
    let tmp = tempfile::tempdir().unwrap();
    let sock_path = tmp.path().join("notify.sock");
    let sock = UnixDatagram::bind(&sock_path).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let data = tmp.path().join("data");
    let d = DaemonProc::start_hooked(
        &["--stall-engine"],
        &[
            "run",
            "--data-dir",
            data.to_str().unwrap(),
            "--http-listen",
            "127.0.0.1:0",
        ],
        &[
            ("NOTIFY_SOCKET", sock_path.to_str().unwrap()),
            ("WATCHDOG_USEC", "400000"),
        ],
    );
    let mut seen = Vec::new();
    until(&sock, "READY=1", &mut seen);
    until(&sock, "WATCHDOG=1", &mut seen);
    // Durable in the WAL (so acknowledged), but the stalled engine never applies it.
    let r = post(
        d.addr,
        "/ingest/iotdb-json",
        &[],
        br#"{"device":"root.sg.d1","timestamp":1,"measurements":["a"],"values":[1]}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    until(&sock, "STATUS=watchdog: wedged", &mut seen);
    assert!(
        seen.last().is_some_and(|m| m.contains("pipeline/default")),
        "the wedged pipeline is named: {seen:?}"
    );
    // No ping while wedged: listen for several ping intervals (0.2 s each).
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(2) {
        if let Some(m) = recv(&sock) {
            assert!(!m.contains("WATCHDOG=1"), "ping while wedged: {m}");
        }
    }
    d.kill();
}
