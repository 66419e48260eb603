//! Limits: a full buffer (429/503 with `Retry-After`, nothing of the request kept), the
//! request timeout (503 with `Retry-After`), and the shutdown deadline (exit in time,
//! nothing acknowledged lost). Slowness comes from the test hooks of `tsfiled-e2e-hooks`:
//! `--wal-sync-delay-ms` (after every WAL fsync) and `--seal-delay-ms` (every seal).
//! Each test has a `_v4` twin, run with `storage.format_version = 4`.

use std::path::Path;
use std::time::{Duration, Instant};

use tsfile::Value;

use crate::harness::*;

fn config(data: &Path, shutdown: &str, request: &str, storage: &str, fmt: Fmt) -> String {
    format!(
        r#"
data_dir = "{}"
shutdown_timeout = "{shutdown}"

[http]
listen = "127.0.0.1:0"
request_timeout = "{request}"

[[pipeline]]
name = "main"

[pipeline.storage]
{storage}
{}
[[pipeline.source]]
type = "http"
name = "push"
"#,
        data.display(),
        fmt.storage_lines()
    )
}

fn write_config(dir: &Path, text: &str) -> String {
    let f = dir.join("tsfiled.toml");
    std::fs::write(&f, text).unwrap();
    f.to_str().unwrap().to_string()
}

/// A batch of `n` points for `root.sg.d<dev>.s` at times `t0..t0+n`, value `t * 3`.
fn batch(dev: usize, t0: i64, n: i64) -> Vec<u8> {
    let ts: Vec<i64> = (t0..t0 + n).collect();
    // IoTDB's batch form: one row (one value, of `s`) per timestamp.
    let vs: Vec<[i64; 1]> = ts.iter().map(|t| [t * 3]).collect();
    serde_json::json!({
        "device": format!("root.sg.d{dev}"),
        "measurements": ["s"],
        "timestamps": ts,
        "values": vs,
    })
    .to_string()
    .into_bytes()
}

fn check_present(map: &PointMap, dev: usize, t0: i64, n: i64) {
    for t in t0..t0 + n {
        let k = (format!("root.sg.d{dev}"), "s".to_string(), t);
        let v = map
            .get(&k)
            .unwrap_or_else(|| panic!("acknowledged point {k:?} missing"));
        assert!(v.iter().all(|v| *v == Value::Int64(t * 3)), "{k:?}: {v:?}");
    }
}

#[test]
fn full_buffer_refuses_whole_requests_with_retry_after() {
    full_buffer_refuses_whole_requests_with_retry_after_in(Fmt::V2);
}

#[test]
fn full_buffer_refuses_whole_requests_with_retry_after_v4() {
    full_buffer_refuses_whole_requests_with_retry_after_in(Fmt::V4);
}

fn full_buffer_refuses_whole_requests_with_retry_after_in(fmt: Fmt) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let storage = r#"memtable_budget = "128KiB"
wal_commit_size = "16KiB"
wal_max_size = "128KiB""#;
    let file = write_config(tmp.path(), &config(&data, "30s", "30s", storage, fmt));
    // Each fsync takes 300 ms more: concurrent requests queue up past the WAL budget.
    let d = DaemonProc::start_hooked(
        &["--wal-sync-delay-ms=300"],
        &["run", "--config", &file],
        &[],
    );
    let a = d.addr;
    const N: i64 = 2000;
    let threads: Vec<_> = (0..16usize)
        .map(|dev| {
            std::thread::spawn(move || {
                (0..3i64)
                    .map(|round| {
                        let t0 = 1_000_000 + round * N;
                        let r = post(a, "/ingest/iotdb-json", &[], &batch(dev, t0, N));
                        (dev, t0, r)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let results: Vec<(usize, i64, Resp)> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let mut acked = Vec::new();
    let mut refused = Vec::new();
    for (dev, t0, r) in results {
        match r.status {
            200 => acked.push((dev, t0)),
            429 | 503 => {
                let ra: u64 = r
                    .header("retry-after")
                    .unwrap_or_else(|| panic!("{} without Retry-After", r.status))
                    .parse()
                    .expect("Retry-After in seconds");
                assert!(ra >= 1, "Retry-After {ra}");
                assert!(r.body.contains("buffer full"), "{}", r.body);
                refused.push((dev, t0));
            }
            s => panic!("unexpected status {s}: {}", r.body),
        }
    }
    assert!(!acked.is_empty(), "nothing was accepted");
    assert!(!refused.is_empty(), "the buffer never filled");
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    let (map, files) = read_all_in(&data, fmt);
    assert!(!files.is_empty());
    for &(dev, t0) in &acked {
        check_present(&map, dev, t0, N);
    }
    for &(dev, t0) in &refused {
        for t in t0..t0 + N {
            let k = (format!("root.sg.d{dev}"), "s".to_string(), t);
            assert!(!map.contains_key(&k), "refused point {k:?} was stored");
        }
    }
    assert_eq!(map.len() as i64, acked.len() as i64 * N);
}

#[test]
fn request_timeout_answers_503_with_retry_after() {
    request_timeout_answers_503_with_retry_after_in(Fmt::V2);
}

#[test]
fn request_timeout_answers_503_with_retry_after_v4() {
    request_timeout_answers_503_with_retry_after_in(Fmt::V4);
}

fn request_timeout_answers_503_with_retry_after_in(fmt: Fmt) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let file = write_config(tmp.path(), &config(&data, "30s", "1s", "", fmt));
    // Durability takes 3 s, the request may take 1 s.
    let d = DaemonProc::start_hooked(
        &["--wal-sync-delay-ms=3000"],
        &["run", "--config", &file],
        &[],
    );
    let r = post(d.addr, "/ingest/iotdb-json", &[], &batch(1, 100, 10));
    assert_eq!(r.status, 503, "{}", r.body);
    assert_eq!(r.header("retry-after"), Some("1"));
    assert!(r.body.contains("request timeout"), "{}", r.body);
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    // The points were not acknowledged; if they landed, they are whole and correct.
    let (map, _) = read_all_in(&data, fmt);
    assert!(map.is_empty() || map.len() == 10, "{map:?}");
    if !map.is_empty() {
        check_present(&map, 1, 100, 10);
    }
}

#[test]
fn shutdown_deadline_exits_in_time_and_loses_nothing_acknowledged() {
    shutdown_deadline_exits_in_time_and_loses_nothing_acknowledged_in(Fmt::V2);
}

#[test]
fn shutdown_deadline_exits_in_time_and_loses_nothing_acknowledged_v4() {
    shutdown_deadline_exits_in_time_and_loses_nothing_acknowledged_in(Fmt::V4);
}

fn shutdown_deadline_exits_in_time_and_loses_nothing_acknowledged_in(fmt: Fmt) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let file = write_config(tmp.path(), &config(&data, "1s", "30s", "", fmt));
    // Every seal takes 60 s: the stop cannot finish within its 1 s deadline.
    let d = DaemonProc::start_hooked(&["--seal-delay-ms=60000"], &["run", "--config", &file], &[]);
    for dev in 0..4 {
        let r = post(d.addr, "/ingest/iotdb-json", &[], &batch(dev, 5_000, 500));
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let started = Instant::now();
    let (code, log) = d.stop();
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(1 + 10),
        "exit took {took:?} with a 1 s deadline:\n{log}"
    );
    assert_ne!(code, 0, "a missed deadline is not a clean stop:\n{log}");
    assert!(
        sealed_files(&data).is_empty(),
        "the seal cannot have finished"
    );
    // A normal start recovers everything acknowledged from the WAL.
    let d = DaemonProc::start_with(&["run", "--config", &file]);
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    assert!(temporaries(&data).is_empty(), "{:?}", temporaries(&data));
    let (map, _) = read_all_in(&data, fmt);
    for dev in 0..4 {
        check_present(&map, dev, 5_000, 500);
    }
    assert_eq!(map.len(), 4 * 500);
}
