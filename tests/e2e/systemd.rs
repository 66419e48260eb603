//! The daemon under a fake systemd: READY=1 once the pipelines are up, RELOADING=1 and
//! READY=1 around a SIGHUP reload, STOPPING=1 on SIGTERM, WATCHDOG=1 pings while healthy.

use std::os::unix::net::UnixDatagram;
use std::time::{Duration, Instant};

use crate::harness::*;

fn next_message(sock: &UnixDatagram, want: &str, seen: &mut Vec<String>) {
    let start = Instant::now();
    let mut buf = vec![0u8; 4096];
    loop {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no {want:?}; saw {seen:?}"
        );
        match sock.recv(&mut buf) {
            Ok(n) => {
                let msg = String::from_utf8_lossy(&buf[..n]).to_string();
                let hit = msg.lines().any(|l| l == want);
                seen.push(msg);
                if hit {
                    return;
                }
            }
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn notifies_ready_reloading_stopping_and_pings_the_watchdog() {
    let tmp = tempfile::tempdir().unwrap();
    let sock_path = tmp.path().join("notify.sock");
    let sock = UnixDatagram::bind(&sock_path).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let data = tmp.path().join("data");
    let d = DaemonProc::start_env(
        &[
            "run",
            "--data-dir",
            data.to_str().unwrap(),
            "--http-listen",
            "127.0.0.1:0",
        ],
        &[
            ("NOTIFY_SOCKET", sock_path.to_str().unwrap()),
            ("WATCHDOG_USEC", "200000"),
        ],
    );
    let mut seen = Vec::new();
    next_message(&sock, "READY=1", &mut seen);
    assert!(
        seen.iter().any(|m| m.contains("STATUS=1 pipeline(s) up")),
        "{seen:?}"
    );
    // The status line carries each source's state as its status reporter shows it.
    assert!(
        seen.iter()
            .any(|m| m.contains("; sources: default/http listening")),
        "{seen:?}"
    );
    next_message(&sock, "WATCHDOG=1", &mut seen);
    let r = post(
        d.addr,
        "/ingest/iotdb-json",
        &[],
        br#"{"device":"root.sg.d1","timestamp":1,"measurements":["s"],"values":[1]}"#,
    );
    assert_eq!(r.status, 200);
    next_message(&sock, "WATCHDOG=1", &mut seen);
    d.signal(libc::SIGHUP);
    next_message(&sock, "RELOADING=1", &mut seen);
    next_message(&sock, "READY=1", &mut seen);
    d.signal(libc::SIGTERM);
    next_message(&sock, "STOPPING=1", &mut seen);
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
}
