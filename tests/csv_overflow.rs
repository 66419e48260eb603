//! Lost file events: the kernel's inotify queue overflows, and every file still ends in
//! `done/` long before the next periodic rescan, because the overflow triggers a full
//! rescan at once.
//!
//! The overflow is forced: the daemon starts while `fs.inotify.max_queued_events` is 16 (a
//! queue takes the limit in force when it is created; the old value is restored right after),
//! is stopped with SIGSTOP while 300 files arrive (about 1,500 events), and continued. This
//! needs root (CI runs as root); without it the test fails, it does not skip. It is alone in
//! its binary because the limit applies to every inotify queue created meanwhile.

#[allow(dead_code)]
#[path = "e2e/harness.rs"]
mod harness;

use std::fs;
use std::path::Path;

use harness::*;
use tsfile::Value;

const MAX_QUEUED: &str = "/proc/sys/fs/inotify/max_queued_events";

/// Sets the inotify queue limit and puts the old one back when dropped.
struct QueueLimit(String);

impl QueueLimit {
    fn set(limit: u32) -> QueueLimit {
        let old = fs::read_to_string(MAX_QUEUED).expect("read fs.inotify.max_queued_events");
        fs::write(MAX_QUEUED, limit.to_string()).unwrap_or_else(|e| {
            panic!("this test needs root to set fs.inotify.max_queued_events: {e}")
        });
        QueueLimit(old.trim().to_string())
    }
}

impl Drop for QueueLimit {
    fn drop(&mut self) {
        let _ = fs::write(MAX_QUEUED, &self.0);
    }
}

fn drop_file(watch: &Path, name: &str, rows: std::ops::Range<i64>) {
    let mut s = String::from("Time,root.ov.d.v\n");
    for t in rows {
        s.push_str(&format!("{t},{}\n", t * 3));
    }
    let part = watch.join(format!("{name}.part"));
    fs::write(&part, s).unwrap();
    fs::rename(&part, watch.join(name)).unwrap();
}

#[test]
fn an_inotify_queue_overflow_rescans_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let watch = tmp.path().join("inbox");
    fs::create_dir_all(&watch).unwrap();
    let config = tmp.path().join("tsfiled.toml");
    // The periodic rescan is an hour away: within this test only events, or the rescan that
    // an overflow triggers, can find a file.
    fs::write(
        &config,
        format!(
            r#"
data_dir = "{}"

[http]
listen = "127.0.0.1:0"

[[pipeline]]
name = "main"

[pipeline.storage]
storage_group_level = 1

[[pipeline.source]]
type = "csv"
name = "drop"
directories = ["{}"]
settle = "100ms"
rescan_interval = "1h"
"#,
            data.display(),
            watch.display()
        ),
    )
    .unwrap();

    let limit = QueueLimit::set(16);
    let d = DaemonProc::start_with(&["run", "--config", config.to_str().unwrap()]);
    // A file found and ingested proves the source's watcher (and its queue) exists.
    drop_file(&watch, "probe.csv", 0..10);
    until("the probe file ends in done/", 60, || {
        watch.join("done/probe.csv").exists()
    });
    drop(limit);

    let files = 300;
    d.signal(libc::SIGSTOP);
    for i in 0..files {
        drop_file(
            &watch,
            &format!("f{i:03}.csv"),
            1_000 * (i + 1)..1_000 * (i + 1) + 10,
        );
    }
    d.signal(libc::SIGCONT);
    until("every file ends in done/", 120, || {
        (0..files).all(|i| watch.join(format!("done/f{i:03}.csv")).exists())
    });

    let m = get(d.addr, "/metrics").body;
    let rescans = |reason: &str| {
        metric(
            &m,
            &format!(
                "tsfiled_csv_rescans_total{{pipeline=\"main\",reason=\"{reason}\",source=\"drop\"}}"
            ),
        )
    };
    assert!(rescans("event_loss").unwrap_or(0.0) >= 1.0, "{m}");
    // Only the scan at start ran on schedule.
    assert_eq!(rescans("scheduled"), Some(1.0), "{m}");
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");

    // Every row of every file (the probe's 0..10 and each f<i>'s ten rows), once, with
    // its value, and nothing else.
    let (points, _) = read_all(&data);
    let want: Vec<_> = (0..files + 1)
        .flat_map(|i| 1_000 * i..1_000 * i + 10)
        .map(|t| {
            (
                ("root.ov.d".to_string(), "v".to_string(), t),
                vec![Value::Int64(t * 3)],
            )
        })
        .collect();
    assert_eq!(points.into_iter().collect::<Vec<_>>(), want);
}
