//! Memory stays bounded while a large file streams through the source: a ~50 MB wide CSV
//! (10 value columns) goes end to end into a counting sink while a counting allocator tracks
//! the peak of live heap bytes, and /proc tracks peak RSS. This binary holds only this test, so
//! the process measures nothing else. (`examples/csv_bench.rs` does the same for 1 GB.)

use std::alloc::{GlobalAlloc, Layout, System};
use std::fs;
use std::io::{BufWriter, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tsfiled_connectors::csv::{run, CountingMetrics, CsvRun, CsvTable};
use tsfiled_connectors::sink::MemorySink;
use tsfiled_connectors::source::validate_table;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            if new >= l.size() {
                let now = LIVE.fetch_add(new - l.size(), Ordering::Relaxed) + (new - l.size());
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(l.size() - new, Ordering::Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static A: Counting = Counting;

fn status_kib(key: &str) -> u64 {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

const MIB: usize = 1 << 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_file_streams_in_bounded_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let watch = tmp.path().join("in");
    fs::create_dir(&watch).unwrap();
    let staged = tmp.path().join("big.csv");
    let rows: i64 = 600_000;
    {
        let mut w = BufWriter::new(fs::File::create(&staged).unwrap());
        write!(w, "Time").unwrap();
        for c in 0..10 {
            write!(w, ",root.mem.d{}.s{c}", c % 2).unwrap();
        }
        writeln!(w).unwrap();
        for r in 0..rows {
            write!(w, "{}", 1_600_000_000_000 + r).unwrap();
            for c in 0..10 {
                write!(w, ",{}.{:02}", r % 9973 + c, r % 97).unwrap();
            }
            writeln!(w).unwrap();
        }
        w.flush().unwrap();
    }
    let size = fs::metadata(&staged).unwrap().len();
    assert!(size > 50_000_000, "{size}");

    let sink = Arc::new(MemorySink::counting());
    let metrics = Arc::new(CountingMetrics::default());
    let mut o = validate_table::<CsvTable>(&format!(
        "directories = [{:?}]\n",
        watch.display().to_string()
    ))
    .unwrap();
    o.settle = Duration::from_millis(100);
    let csv_run = CsvRun::new(tmp.path().join("state"));
    let token = CancellationToken::new();
    let handle = tokio::spawn(run(
        o,
        csv_run,
        sink.clone(),
        token.clone(),
        metrics.clone(),
    ));
    tokio::time::sleep(Duration::from_millis(50)).await;

    // The measured region starts here.
    let _ = fs::write("/proc/self/clear_refs", "5");
    let rss_base = status_kib("VmRSS:");
    let heap_base = LIVE.load(Ordering::Relaxed);
    PEAK.store(heap_base, Ordering::Relaxed);
    fs::rename(&staged, watch.join("big.csv")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(600);
    while CountingMetrics::get(&metrics.files_done) == 0 {
        assert!(Instant::now() < deadline, "timed out");
        assert!(!handle.is_finished());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let heap_peak = PEAK.load(Ordering::Relaxed) - heap_base;
    let rss_peak = status_kib("VmHWM:").saturating_sub(rss_base);
    token.cancel();
    handle.await.unwrap().unwrap();

    assert_eq!(sink.points(), rows as u64 * 10);
    assert_eq!(CountingMetrics::get(&metrics.bytes), size);
    eprintln!(
        "{:.1} MB file: peak heap +{:.1} MiB, peak RSS +{:.1} MiB, {} batches",
        size as f64 / 1e6,
        heap_peak as f64 / MIB as f64,
        rss_peak as f64 / 1024.0,
        sink.submits()
    );
    // Three batches of at most 50,000 points in flight plus buffers: far below the file size.
    assert!(heap_peak < 24 * MIB, "peak heap {heap_peak} bytes");
    assert!(rss_peak < 64 * 1024, "peak RSS +{rss_peak} KiB");
}
