//! SIGKILL during ingest, repeatedly: every acknowledged point is in the sealed files
//! after restart, no sealed file is ever corrupt, and no acknowledged point appears twice.
//!
//! `TSFILED_CRASH_CYCLES` sets the number of kill/restart cycles (default 4; the
//! acceptance run uses 20). The same test runs in TsFile v4 with as many cycles.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tsfile::Value;

use crate::harness::*;

type Acked = Arc<Mutex<BTreeMap<(String, String, i64), i64>>>;

/// Pushes batches until `stop`; returns how many were acknowledged. A connection error is
/// the end of the run only once `killing` is set (the daemon is being killed); before that
/// it fails the test, naming the error.
fn pusher(
    addr: std::net::SocketAddr,
    thread: usize,
    next_time: Arc<Mutex<i64>>,
    acked: Acked,
    stop: Arc<AtomicBool>,
    killing: Arc<AtomicBool>,
) -> u64 {
    let mut oks = 0;
    let mut conn = match Conn::new(addr) {
        Ok(c) => c,
        Err(_) if killing.load(Ordering::SeqCst) => return oks,
        Err(e) => panic!("pusher {thread}: cannot connect to the running daemon: {e}"),
    };
    let device = format!("root.sg{}.d{thread}", thread % 2);
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        if n.is_multiple_of(40) {
            // Pause now and then so idle sealing happens mid-cycle too.
            std::thread::sleep(Duration::from_millis(200));
        }
        let t0 = {
            let mut t = next_time.lock().unwrap();
            let v = *t;
            *t += 50;
            v
        };
        let times: Vec<i64> = (t0..t0 + 50).collect();
        let a: Vec<i64> = times.iter().map(|t| t * 3 + thread as i64).collect();
        let b: Vec<i64> = times.iter().map(|t| -t).collect();
        // IoTDB's batch form: one row [a, b] per timestamp.
        let rows: Vec<[i64; 2]> = a.iter().zip(&b).map(|(a, b)| [*a, *b]).collect();
        let body = serde_json::json!({"device": device, "timestamps": times, "measurements": ["a", "b"], "values": rows}).to_string();
        match conn.request("POST", "/ingest/iotdb-json", &[], body.as_bytes()) {
            Ok(r) if r.status == 200 => {
                oks += 1;
                let mut acked = acked.lock().unwrap();
                for (i, t) in times.iter().enumerate() {
                    acked.insert((device.clone(), "a".into(), *t), a[i]);
                    acked.insert((device.clone(), "b".into(), *t), b[i]);
                }
            }
            Ok(r) if r.status == 503 || r.status == 429 => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Ok(r) => panic!("unexpected answer {}: {}", r.status, r.body),
            Err(_) if killing.load(Ordering::SeqCst) => return oks,
            Err(e) => panic!("pusher {thread}: request failed before the kill: {e}"),
        }
    }
    oks
}

fn cycles() -> usize {
    std::env::var("TSFILED_CRASH_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4)
}

#[test]
fn sigkill_during_ingest_loses_no_acknowledged_point() {
    sigkill_during_ingest(Fmt::V2, cycles());
}

#[test]
fn sigkill_during_ingest_loses_no_acknowledged_point_v4() {
    sigkill_during_ingest(Fmt::V4, cycles());
}

fn sigkill_during_ingest(fmt: Fmt, cycles: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let acked: Acked = Arc::default();
    let threads = 3;
    let clocks: Vec<Arc<Mutex<i64>>> = (0..threads).map(|_| Arc::new(Mutex::new(1_000))).collect();
    // Small memtables and files, quick idle sealing: kills land during flushes and seals.
    let tuning = [
        "--memtable-bytes",
        "200000",
        "--file-max-bytes",
        "20000",
        "--seal-idle-ms",
        "150",
    ];
    let mut acked_requests = vec![0u64; threads];
    for cycle in 0..cycles {
        let d = DaemonProc::start_fmt(&data, &tuning, fmt);
        let stop = Arc::new(AtomicBool::new(false));
        let killing = Arc::new(AtomicBool::new(false));
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (c, a, s, k) = (
                    clocks[t].clone(),
                    acked.clone(),
                    stop.clone(),
                    killing.clone(),
                );
                let addr = d.addr;
                std::thread::spawn(move || pusher(addr, t, c, a, s, k))
            })
            .collect();
        // Deterministic, varied kill times.
        let ms = 300 + (cycle as u64 * 337) % 900;
        std::thread::sleep(Duration::from_millis(ms));
        killing.store(true, Ordering::SeqCst);
        d.kill();
        stop.store(true, Ordering::Relaxed);
        for (t, h) in handles.into_iter().enumerate() {
            acked_requests[t] += h.join().expect("a pusher failed");
        }
        // Whatever is under a final name must be a complete file with a matching .resource.
        let _ = read_all_in(&data, fmt);
    }
    assert!(
        acked_requests.iter().all(|&n| n > 0),
        "every pusher had requests acknowledged: {acked_requests:?}"
    );
    let d = DaemonProc::start_fmt(&data, &tuning, fmt);
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    assert!(temporaries(&data).is_empty());
    let (points, files) = read_all_in(&data, fmt);
    let acked = acked.lock().unwrap();
    assert!(
        acked.len() > 1000,
        "too few acknowledged points ({}) to mean anything",
        acked.len()
    );
    let mut missing = 0;
    let mut dup_acked = 0;
    for (k, v) in acked.iter() {
        match points.get(k) {
            None => missing += 1,
            Some(vals) => {
                assert!(
                    vals.iter().all(|x| *x == Value::Int64(*v)),
                    "{k:?}: {vals:?} != {v}"
                );
                if vals.len() > 1 {
                    dup_acked += 1;
                }
            }
        }
    }
    let duplicates: usize = points.values().filter(|v| v.len() > 1).count();
    let unacked_extra = points.keys().filter(|k| !acked.contains_key(*k)).count();
    eprintln!(
        "crash test ({fmt:?}): {cycles} cycles, {} acknowledged points, {} points in {} sealed files, {missing} missing, {duplicates} duplicated ({dup_acked} of them acknowledged), {unacked_extra} written but unacknowledged",
        acked.len(),
        points.len(),
        files.len()
    );
    // Every sealed file also passes the format tool's full dump.
    for f in &files {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_tsfiled-e2e"))
            .arg("dump")
            .arg(f)
            .stdout(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "tsfiled dump {}: {}",
            f.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    if fmt == Fmt::V4 {
        // The Apache TsFile library reads the same points as our reader.
        let ours = canonical_lines(points.iter().flat_map(|((d, m, t), vals)| {
            vals.iter().map(move |v| (d.as_str(), m.as_str(), *t, v))
        }));
        let theirs = pytsfile_lines(&files);
        assert!(
            theirs == ours,
            "the PyPI tsfile library reads {} points, our reader {}",
            theirs.len(),
            ours.len()
        );
    }
    assert_eq!(missing, 0, "acknowledged points missing");
    assert_eq!(dup_acked, 0, "acknowledged points written twice");
}
