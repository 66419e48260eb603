//! The CSV watch-directory source end to end against a `MemorySink`: completeness detection,
//! done/error handling with reports, checkpoints across a crash, backpressure, many files.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tsfiled_connectors::csv::{
    run, CountingMetrics, CsvFormat, CsvRun, CsvSourceConfig, CsvTable, OnSuccess,
};
use tsfiled_connectors::sink::{BatchSink, MemoryMode, MemorySink, SinkFuture};
use tsfiled_connectors::source::validate_table;
use tsfiled_connectors::{Batch, DataType, Error, FieldValue, Record};

struct Source {
    token: CancellationToken,
    handle: JoinHandle<Result<(), Error>>,
    metrics: Arc<CountingMetrics>,
}

impl Source {
    fn start(o: Options, sink: Arc<dyn BatchSink>) -> Source {
        let token = CancellationToken::new();
        let metrics = Arc::new(CountingMetrics::default());
        let handle = tokio::spawn(run(o.config, o.run, sink, token.clone(), metrics.clone()));
        Source {
            token,
            handle,
            metrics,
        }
    }

    async fn stop(self) -> Result<(), Error> {
        self.token.cancel();
        self.handle.await.unwrap()
    }

    fn get(&self, f: impl Fn(&CountingMetrics) -> &AtomicU64) -> u64 {
        f(&self.metrics).load(Ordering::Relaxed)
    }
}

struct Dirs {
    _tmp: tempfile::TempDir,
    watch: PathBuf,
    state: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let watch = tmp.path().join("in");
    fs::create_dir(&watch).unwrap();
    let state = tmp.path().join("state");
    Dirs {
        watch,
        state,
        _tmp: tmp,
    }
}

/// A source's settings (validated from its table, so every default is the configuration's)
/// and the context of its run.
#[derive(Clone)]
struct Options {
    config: CsvSourceConfig,
    run: CsvRun,
}

fn options(d: &Dirs) -> Options {
    let mut config = validate_table::<CsvTable>(&format!(
        "directories = [{:?}]\n",
        d.watch.display().to_string()
    ))
    .unwrap();
    config.settle = Duration::from_millis(200);
    config.rescan_interval = Duration::from_millis(500);
    Options {
        config,
        run: CsvRun::new(d.state.clone()),
    }
}

/// Waits for `cond` (a generous safety limit only: a test never asserts on timing).
async fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Writes a file that looks old (mtime an hour ago), as if it had been there before.
fn write_old(path: &Path, content: &str) {
    fs::write(path, content).unwrap();
    let f = File::options().write(true).open(path).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(3600))
        .unwrap();
}

fn wide(rows: std::ops::Range<i64>) -> String {
    let mut s = String::from("Time,root.sg.d1.a,root.sg.d1.b(DOUBLE)\n");
    for t in rows {
        s.push_str(&format!("{t},{t},{}.5\n", t * 2));
    }
    s
}

/// One point as the sink received it: device, time, measurement, value, declared type.
type Point = (String, i64, String, FieldValue, Option<DataType>);

/// Every point of `records`, sorted (the order of files and batches is not specified).
fn points(records: &[Record]) -> Vec<Point> {
    let mut v: Vec<Point> = records
        .iter()
        .flat_map(|r| {
            r.fields.iter().map(|f| {
                (
                    r.device.to_string(),
                    r.time,
                    f.measurement.to_string(),
                    f.value.clone(),
                    f.type_hint,
                )
            })
        })
        .collect();
    v.sort_by(|a, b| (&a.0, a.1, &a.2).cmp(&(&b.0, b.1, &b.2)));
    v
}

/// The points of [`wide`]`(rows)` for `device`, written out by hand from the CSV text:
/// `a` is an undeclared integer column, `b` a `(DOUBLE)` column holding `2t + 0.5`.
fn wide_points(device: &str, rows: std::ops::Range<i64>) -> Vec<Point> {
    rows.flat_map(|t| {
        [
            (
                device.to_string(),
                t,
                "a".to_string(),
                FieldValue::Int(t),
                None,
            ),
            (
                device.to_string(),
                t,
                "b".to_string(),
                FieldValue::Float(2.0 * t as f64 + 0.5),
                Some(DataType::DOUBLE),
            ),
        ]
    })
    .collect()
}

fn times(records: &[Record]) -> Vec<i64> {
    let mut t: Vec<i64> = records.iter().map(|r| r.time).collect();
    t.sort();
    t
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn complete_files_are_ingested_and_moved_to_done() {
    let d = dirs();
    write_old(&d.watch.join("a.csv"), &wide(0..10));
    write_old(&d.watch.join("b.csv"), &wide(10..20));
    // Ignored by default globs or not matching the patterns.
    write_old(&d.watch.join("c.csv.tmp"), &wide(100..101));
    write_old(&d.watch.join("d.csv.part"), &wide(100..101));
    write_old(&d.watch.join(".e.csv"), &wide(100..101));
    write_old(&d.watch.join("f.txt"), &wide(100..101));
    let sink = Arc::new(MemorySink::new());
    let src = Source::start(options(&d), sink.clone());
    until("two files done", || src.get(|m| &m.files_done) == 2).await;
    assert_eq!(points(&sink.records()), wide_points("root.sg.d1", 0..20));
    assert_eq!(names(&d.watch.join("done")), vec!["a.csv", "b.csv"]);
    assert_eq!(
        names(&d.watch),
        vec![".e.csv", "c.csv.tmp", "d.csv.part", "done", "f.txt"]
    );
    assert_eq!(src.get(|m| &m.rows), 20);
    assert_eq!(src.get(|m| &m.points), 40);
    assert_eq!(
        src.get(|m| &m.bytes),
        (wide(0..10).len() + wide(10..20).len()) as u64
    );
    // A new file with a clashing name gets a unique name in done/.
    fs::write(d.watch.join("a.csv.part"), wide(20..25)).unwrap();
    fs::rename(d.watch.join("a.csv.part"), d.watch.join("a.csv")).unwrap();
    until("third file done", || src.get(|m| &m.files_done) == 3).await;
    assert_eq!(
        names(&d.watch.join("done")),
        vec!["a.csv", "a.csv.1", "b.csv"]
    );
    assert_eq!(sink.records().len(), 25);
    // Checkpoints are gone once files are done.
    src.stop().await.unwrap();
    assert!(names(&d.state).is_empty(), "{:?}", names(&d.state));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_rows_go_to_error_with_a_report_and_good_rows_are_ingested() {
    let d = dirs();
    let content = "Time,root.sg.d1.a(INT32),root.sg.d1.b\n\
                   1,1,1\n\
                   2,abc,2\n\
                   3,3\n\
                   4,4,4\n\
                   later,5,5\n\
                   6,6,6";
    write_old(&d.watch.join("bad.csv"), content);
    write_old(&d.watch.join("header.csv"), "Zeit,root.sg.d1.a\n1,1\n");
    let sink = Arc::new(MemorySink::new());
    let src = Source::start(options(&d), sink.clone());
    until("two files in error", || src.get(|m| &m.files_error) == 2).await;
    assert_eq!(times(&sink.records()), vec![1, 4, 6]);
    assert_eq!(
        names(&d.watch.join("error")),
        vec![
            "bad.csv",
            "bad.csv.report",
            "header.csv",
            "header.csv.report"
        ]
    );
    let report = fs::read_to_string(d.watch.join("error/bad.csv.report")).unwrap();
    let lines: Vec<&str> = report.lines().collect();
    assert!(
        lines[0].starts_with("# tsfiled csv report for "),
        "{report}"
    );
    assert_eq!(
        lines[1],
        "# rows: 3 ingested, 3 rejected; points: 6 ingested, 5 rejected"
    );
    assert_eq!(
        &lines[2..],
        &[
            "line 3: type_mismatch: column 2: \"abc\" is not an INT32",
            "line 4: parse: expected 3 fields, found 2",
            "line 6: invalid_time: \"later\" is not an epoch time in milliseconds, an RFC 3339 time or an ISO 8601 date-time",
        ]
    );
    let report = fs::read_to_string(d.watch.join("error/header.csv.report")).unwrap();
    assert!(
        report
            .ends_with("file: line 1: expected the first column to be \"Time\", found \"Zeit\"\n"),
        "{report}"
    );
    assert_eq!(
        fs::read_to_string(d.watch.join("error/bad.csv")).unwrap(),
        content
    );
    assert_eq!(src.get(|m| &m.rows_rejected), 3);
    src.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_written_slowly_is_not_read_before_it_is_complete() {
    let d = dirs();
    let mut o = options(&d);
    // Longer than any gap between the writer's pieces (50 ms) by a wide margin.
    o.config.settle = Duration::from_secs(3);
    let sink = Arc::new(MemorySink::new());
    let src = Source::start(o, sink.clone());
    let content = wide(0..200);
    let path = d.watch.join("slow.csv");
    let mut f = File::create(&path).unwrap();
    // Pieces that cut lines in the middle (e.g. "2,2,4" of "2,2,4.5").
    for piece in content.as_bytes().chunks(97) {
        f.write_all(piece).unwrap();
        f.flush().unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(sink.submits(), 0, "read before the file was complete");
    }
    drop(f);
    until("the file done", || src.get(|m| &m.files_done) == 1).await;
    assert_eq!(times(&sink.records()), (0..200).collect::<Vec<_>>());
    src.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_without_final_newline_waits_for_settle_then_takes_the_last_line() {
    let d = dirs();
    let mut o = options(&d);
    o.config.settle = Duration::from_millis(600);
    let sink = Arc::new(MemorySink::new());
    let src = Source::start(o, sink.clone());
    // Closed after writing, but the last line has no line break: not complete on close.
    fs::write(d.watch.join("x.csv"), "Time,root.sg.d1.a\n1,1\n2,2").unwrap();
    until("the file done", || src.get(|m| &m.files_done) == 1).await;
    assert_eq!(times(&sink.records()), vec![1, 2]);
    src.stop().await.unwrap();
}

/// Accepts `allow` submissions, then never answers (as if the process died while the sink was
/// making the next batch durable).
struct Gate {
    inner: MemorySink,
    allow: u64,
    seen: AtomicU64,
}

impl BatchSink for Gate {
    fn submit(&self, batch: Batch, received: Instant) -> SinkFuture<'_> {
        let n = self.seen.fetch_add(1, Ordering::SeqCst);
        if n < self.allow {
            self.inner.submit(batch, received)
        } else {
            Box::pin(std::future::pending())
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_mid_file_then_restart_loses_and_doubles_nothing() {
    let d = dirs();
    let mut content = String::from("Time,root.sg.d1.a,root.sg.d2.b\n");
    for t in 0..5000 {
        if t % 997 == 0 {
            content.push_str("broken\n");
        }
        content.push_str(&format!("{t},{t},\"{t}\"\r\n"));
    }
    write_old(&d.watch.join("big.csv"), &content);
    let gz_path = d.watch.join("big2.csv.gz");
    {
        let mut gz = flate2::write::GzEncoder::new(
            File::create(&gz_path).unwrap(),
            flate2::Compression::fast(),
        );
        gz.write_all(wide(10_000..13_000).as_bytes()).unwrap();
        gz.finish().unwrap();
    }
    let old = SystemTime::now() - Duration::from_secs(3600);
    File::options()
        .write(true)
        .open(&gz_path)
        .unwrap()
        .set_modified(old)
        .unwrap();

    let mut o = options(&d);
    o.run.max_batch_points = 700;
    o.config.max_concurrent_files = 2;
    for allow in [3u64, 5] {
        let gate = Arc::new(Gate {
            inner: MemorySink::new(),
            allow,
            seen: AtomicU64::new(0),
        });
        let src = Source::start(o.clone(), gate.clone());
        until("the gate to close", || {
            gate.seen.load(Ordering::SeqCst) > allow + 1
        })
        .await;
        // Kill: drop the running source without any shutdown.
        src.handle.abort();
        let _ = src.handle.await;
        let first = gate.inner.records();
        assert!(!first.is_empty());
        // Give the aborted parser threads a moment to notice (not needed for correctness).
        let sink = Arc::new(MemorySink::new());
        let src = Source::start(o.clone(), sink.clone());
        until("both files finished", || {
            src.get(|m| &m.files_done) + src.get(|m| &m.files_error) == 2
        })
        .await;
        let mut all = first.clone();
        all.extend(sink.records());
        // Every point exactly once: two records per CSV row of big.csv, one per row of big2.
        let mut got: Vec<(String, i64)> =
            all.iter().map(|r| (r.device.to_string(), r.time)).collect();
        got.sort();
        let mut want: Vec<(String, i64)> = Vec::new();
        for t in 0..5000 {
            want.push(("root.sg.d1".into(), t));
            want.push(("root.sg.d2".into(), t));
        }
        for t in 10_000..13_000 {
            want.push(("root.sg.d1".into(), t));
        }
        want.sort();
        assert_eq!(got.len(), want.len(), "allow {allow}");
        assert_eq!(got, want, "allow {allow}");
        // big.csv had bad rows: error/ with a report of all of them, across the restart.
        let report = fs::read_to_string(d.watch.join("error/big.csv.report")).unwrap();
        let bad: Vec<&str> = report.lines().filter(|l| l.starts_with("line ")).collect();
        assert_eq!(bad.len(), 6, "{report}");
        assert!(
            report.contains("# rows: 5000 ingested, 6 rejected"),
            "{report}"
        );
        assert_eq!(names(&d.watch.join("done")), vec!["big2.csv.gz"]);
        src.stop().await.unwrap();
        // Put the files back for the second round.
        fs::rename(d.watch.join("error/big.csv"), d.watch.join("big.csv")).unwrap();
        fs::rename(d.watch.join("done/big2.csv.gz"), &gz_path).unwrap();
        fs::remove_dir_all(d.watch.join("error")).unwrap();
        fs::remove_dir_all(d.watch.join("done")).unwrap();
        assert!(names(&d.state).is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_sink_delays_but_neither_loses_nor_doubles() {
    let d = dirs();
    write_old(&d.watch.join("a.csv"), &wide(0..1000));
    let sink = Arc::new(MemorySink::new());
    sink.script([
        MemoryMode::Accept,
        MemoryMode::Full(Duration::from_millis(50)),
        MemoryMode::Full(Duration::from_millis(50)),
        MemoryMode::Accept,
        MemoryMode::Full(Duration::from_millis(10)),
    ]);
    let mut o = options(&d);
    o.run.max_batch_points = 100;
    let src = Source::start(o, sink.clone());
    until("the file done", || src.get(|m| &m.files_done) == 1).await;
    assert_eq!(points(&sink.records()), wide_points("root.sg.d1", 0..1000));
    assert_eq!(src.get(|m| &m.backpressure), 3);
    assert_eq!(sink.fulls(), 3);
    src.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_sink_stops_the_source_and_keeps_the_file() {
    let d = dirs();
    write_old(&d.watch.join("a.csv"), &wide(0..10));
    let sink = Arc::new(MemorySink::new());
    sink.set_mode(MemoryMode::Closed);
    let src = Source::start(options(&d), sink.clone());
    let r = src.handle.await.unwrap();
    assert_eq!(r, Err(Error::SinkClosed));
    assert!(d.watch.join("a.csv").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_on_success_recursive_dirs_and_device_formats() {
    let d = dirs();
    let sub = d.watch.join("line1");
    fs::create_dir(&sub).unwrap();
    write_old(
        &sub.join("x.csv"),
        "Time,Device,s1\n1,root.sg.d1,1\n2,root.sg.d2,2\n",
    );
    let mut o = options(&d);
    o.config.recursive = true;
    o.config.on_success = OnSuccess::Delete;
    o.config.rows.format = CsvFormat::IotdbDevice;
    let sink = Arc::new(MemorySink::new());
    let src = Source::start(o, sink.clone());
    until("first file", || src.get(|m| &m.files_deleted) == 1).await;
    // A directory created later, with a file renamed into it.
    let later = d.watch.join("line2/deeper");
    fs::create_dir_all(&later).unwrap();
    fs::write(later.join("y.part"), "Time,Device,s1\n3,root.sg.d3,3\n").unwrap();
    fs::rename(later.join("y.part"), later.join("y.csv")).unwrap();
    until("second file", || src.get(|m| &m.files_deleted) == 2).await;
    let devices: Vec<String> = sink
        .records()
        .iter()
        .map(|r| r.device.to_string())
        .collect();
    assert_eq!(devices, vec!["root.sg.d1", "root.sg.d2", "root.sg.d3"]);
    assert!(names(&sub).is_empty());
    assert!(names(&later).is_empty());
    src.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_file_is_read_from_the_start_and_a_grown_one_from_its_checkpoint() {
    let d = dirs();
    let mut o = options(&d);
    o.run.max_batch_points = 10;
    // First run: a sink that takes one batch and then hangs; abort.
    let path = d.watch.join("a.csv");
    write_old(&path, &wide(0..100));
    let gate = Arc::new(Gate {
        inner: MemorySink::new(),
        allow: 1,
        seen: AtomicU64::new(0),
    });
    let src = Source::start(o.clone(), gate.clone());
    until("gate", || gate.seen.load(Ordering::SeqCst) > 1).await;
    src.handle.abort();
    let _ = src.handle.await;
    assert_eq!(gate.inner.records().len(), 5);
    // Replace the file by another one with the same name (new inode, other content).
    fs::remove_file(&path).unwrap();
    write_old(&path, &wide(500..520).replace("root.sg.d1", "root.sg.dx"));
    let sink = Arc::new(MemorySink::new());
    let src = Source::start(o.clone(), sink.clone());
    until("the replaced file done", || {
        assert!(!src.handle.is_finished());
        src.get(|m| &m.files_done) == 1
    })
    .await;
    assert_eq!(points(&sink.records()), wide_points("root.sg.dx", 500..520));
    src.stop().await.unwrap();

    // A file that grows after a checkpoint (appended in place) continues where it was.
    let path = d.watch.join("b.csv");
    write_old(&path, &wide(0..30));
    let gate = Arc::new(Gate {
        inner: MemorySink::new(),
        allow: 2,
        seen: AtomicU64::new(0),
    });
    let src = Source::start(o.clone(), gate.clone());
    until("gate", || gate.seen.load(Ordering::SeqCst) > 2).await;
    src.handle.abort();
    let _ = src.handle.await;
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    for t in 30..40 {
        writeln!(f, "{t},{t},{}.5", t * 2).unwrap();
    }
    drop(f);
    let sink = Arc::new(MemorySink::new());
    let src = Source::start(o, sink.clone());
    until("the grown file done", || src.get(|m| &m.files_done) == 1).await;
    let mut all = gate.inner.records();
    all.extend(sink.records());
    assert_eq!(points(&all), wide_points("root.sg.d1", 0..40));
    src.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_small_files() {
    let d = dirs();
    const N: i64 = 10_000;
    for i in 0..N {
        let p = d.watch.join(format!("f{i:05}.csv"));
        fs::write(
            &p,
            format!(
                "Time,root.sg.d{}.v\n{},{i}\n{},{i}\n",
                i % 7,
                2 * i,
                2 * i + 1
            ),
        )
        .unwrap();
    }
    let mut o = options(&d);
    o.config.max_concurrent_files = 8;
    let sink = Arc::new(MemorySink::new());
    let src = Source::start(o, sink.clone());
    until("all files done", || src.get(|m| &m.files_done) == N as u64).await;
    assert_eq!(times(&sink.records()), (0..2 * N).collect::<Vec<_>>());
    assert_eq!(names(&d.watch.join("done")).len(), N as usize);
    assert_eq!(names(&d.watch), vec!["done"]);
    assert!(src.get(|m| &m.in_progress_max) <= 8);
    src.stop().await.unwrap();
    assert!(names(&d.state).is_empty());
}

/// Rejects the second record of every batch, as the daemon does for a type conflict.
struct Rejecting(MemorySink);

impl BatchSink for Rejecting {
    fn submit(&self, mut batch: Batch, received: Instant) -> SinkFuture<'_> {
        let rejected = if batch.records.len() > 1 {
            let r = batch.records.remove(1);
            Some((r.fields.len() as u64, r.time))
        } else {
            None
        };
        Box::pin(async move {
            let mut out = self.0.submit(batch, received).await?;
            if let Some((points, time)) = rejected {
                out.rejected = points;
                out.rejections.push(tsfiled_connectors::Rejection {
                    location: tsfiled_connectors::Location::Record {
                        index: 1,
                        point: Some(tsfiled_connectors::PointAt {
                            device: "root.sg.d1".into(),
                            measurement: "a".into(),
                            time,
                        }),
                    },
                    reason: tsfiled_connectors::RejectReason::TypeMismatch,
                    message: "an integer does not fit this series' type (BOOLEAN)".into(),
                    points,
                });
            }
            Ok(out)
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn points_the_sink_rejects_are_reported_by_line() {
    let d = dirs();
    write_old(&d.watch.join("a.csv"), &wide(0..5));
    let sink = Arc::new(Rejecting(MemorySink::new()));
    let src = Source::start(options(&d), sink.clone());
    until("the file in error", || src.get(|m| &m.files_error) == 1).await;
    assert_eq!(times(&sink.0.records()), vec![0, 2, 3, 4]);
    let report = fs::read_to_string(d.watch.join("error/a.csv.report")).unwrap();
    assert!(
        report.contains("# rows: 5 ingested, 0 rejected; points: 8 ingested, 2 rejected\n"),
        "{report}"
    );
    assert!(
        report.ends_with(
            "line 3: type_mismatch: an integer does not fit this series' type (BOOLEAN) \
             (sink: record 1 (root.sg.d1.a at 1))\n"
        ),
        "{report}"
    );
    assert_eq!(src.get(|m| &m.points_rejected), 2);
    src.stop().await.unwrap();
}
