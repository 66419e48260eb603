//! The status page served by the real daemon under load: headless Chromium loads `/`, and the
//! figures it shows match `/metrics`. The load is stopped before the page is read, so the
//! counters it shows are frozen and compared exactly.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::harness::*;

#[path = "../support/browser.rs"]
mod browser;

#[test]
fn status_page_figures_match_metrics_under_load() {
    let tmp = tempfile::tempdir().unwrap();
    let d = DaemonProc::start(tmp.path(), &[]);
    let addr = d.addr;
    let stop = Arc::new(AtomicBool::new(false));
    let pusher = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut conn = Conn::new(addr).expect("connect");
            let mut t = 0i64;
            let mut acked = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let times: Vec<i64> = (t..t + 100).collect();
                t += 100;
                let rows: Vec<[i64; 1]> = times.iter().map(|t| [*t]).collect();
                let body = serde_json::json!({"device": "root.sg.d1", "timestamps": times,
                    "measurements": ["a"], "values": rows})
                .to_string();
                let r = conn
                    .request("POST", "/ingest/iotdb-json", &[], body.as_bytes())
                    .expect("push");
                assert_eq!(r.status, 200, "{}", r.body);
                acked += 100;
            }
            acked
        })
    };
    let recv = "tsfiled_points_received_total{pipeline=\"default\",source=\"http\"}";
    let start = Instant::now();
    while metric(&get(addr, "/metrics").body, recv).unwrap_or(0.0) < 5_000.0 {
        assert!(start.elapsed() < Duration::from_secs(60), "no load");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The page under load first: it must render and poll.
    let chromium = browser::Chromium::find();
    let url = format!("http://{addr}/");
    let dom = chromium.dump_dom(&url, 5_000);
    let body = browser::first_tag(&dom, "body");
    assert_eq!(body.attr("data-state"), Some("ok"), "{body:?}");

    // Freeze the counters, then compare exactly.
    stop.store(true, Ordering::Relaxed);
    let acked = pusher.join().expect("pusher");
    let m = get(addr, "/metrics").body;
    assert_eq!(metric(&m, recv), Some(acked as f64));
    let dom = chromium.dump_dom(&url, 5_000);
    let body = browser::first_tag(&dom, "body");
    assert_eq!(body.attr("data-state"), Some("ok"), "{body:?}");
    let fig = |id: &str| browser::by_id(&dom, id).value();
    let pm = |name: &str| {
        metric(&m, &format!("{name}{{pipeline=\"default\"}}"))
            .unwrap_or_else(|| panic!("{name} missing:\n{m}"))
    };
    assert_eq!(fig("fig-default-http-received"), acked as f64);
    assert_eq!(fig("fig-default-received"), acked as f64);
    assert_eq!(fig("fig-default-http-rejected"), 0.0);
    assert_eq!(fig("fig-default-rejected"), 0.0);
    assert_eq!(
        fig("fig-default-wal_max_bytes"),
        pm("tsfiled_wal_max_bytes")
    );
    assert_eq!(
        fig("fig-default-memtable_max_bytes"),
        pm("tsfiled_memtable_max_bytes")
    );
    assert!(pm("tsfiled_wal_max_bytes") > 0.0);
    assert!(pm("tsfiled_memtable_max_bytes") > 0.0);
    // Gauges that flushes may move: within the limits the page shows.
    assert!(fig("fig-default-memtable_bytes") <= pm("tsfiled_memtable_max_bytes"));
    assert!(fig("fig-default-wal_bytes") <= pm("tsfiled_wal_max_bytes"));
    assert_eq!(fig("fig-default-series"), 1.0);

    // /api/status names the pipeline and its source.
    let st = get(addr, "/api/status").json();
    assert_eq!(st["pipelines"][0]["name"], "default");
    assert_eq!(st["pipelines"][0]["sources"][0]["type"], "http");
    assert_eq!(st["pipelines"][0]["accepting"], true);
    assert_eq!(
        st["pipelines"][0]["wal"]["max_bytes"].as_f64(),
        Some(pm("tsfiled_wal_max_bytes"))
    );
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
}
