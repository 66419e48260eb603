//! CSV ingest benchmark: generates an IoTDB wide CSV (`Time` + 10 value columns) and measures
//! (1) the parser alone and (2) the watch-directory source end to end into a counting
//! `MemorySink`, with the peak resident memory of each phase.
//!
//! ```text
//! cargo run --release -p tsfiled-connectors --example csv_bench -- [--rows N] [--gb] [--dir DIR]
//! ```
//! `--rows` defaults to 1,000,000 (10 million points); `--gb` generates about 1 GB instead.
//! The file is written into a temporary directory (or `DIR`) and removed afterwards.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tsfiled_connectors::csv::{
    parse_path, run, CountingMetrics, CsvParseOptions, CsvRun, CsvTable,
};
use tsfiled_connectors::sink::MemorySink;

const COLUMNS: usize = 10;

fn generate(path: &Path, rows: u64) -> std::io::Result<u64> {
    let mut w = BufWriter::with_capacity(1 << 20, fs::File::create(path)?);
    write!(w, "Time")?;
    for c in 0..COLUMNS {
        if c % 2 == 0 {
            write!(w, ",root.bench.d1.s{c}(DOUBLE)")?;
        } else {
            write!(w, ",root.bench.d1.s{c}")?;
        }
    }
    writeln!(w)?;
    let t0: i64 = 1_700_000_000_000;
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for r in 0..rows {
        write!(w, "{}", t0 + r as i64 * 10)?;
        for c in 0..COLUMNS {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if c % 2 == 0 {
                write!(w, ",{}.{:03}", (x >> 40) % 1000, x % 1000)?;
            } else {
                write!(w, ",{}", (x >> 20) % 100_000)?;
            }
        }
        writeln!(w)?;
    }
    w.flush()?;
    Ok(fs::metadata(path)?.len())
}

/// Resets the peak-RSS counter of this process (Linux `clear_refs` 5).
fn reset_peak() {
    let _ = fs::write("/proc/self/clear_refs", "5");
}

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

/// CPU seconds (user + system) of this process (`self`) or this thread (`thread-self`), from
/// /proc: on a shared machine the figure per CPU second is the meaningful one.
fn cpu_secs(who: &str) -> f64 {
    let stat = fs::read_to_string(format!("/proc/{who}/stat")).unwrap_or_default();
    // Fields after the parenthesized command name; utime and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11).and_then(|v| v.parse().ok()).unwrap_or(0.0)
        + f.get(12).and_then(|v| v.parse().ok()).unwrap_or(0.0);
    ticks / 100.0
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let mut rows: u64 = 1_000_000;
    let mut dir: Option<String> = None;
    let mut i = 1;
    while i < args.len() {
        match args[i].as_str() {
            "--rows" => {
                rows = args
                    .get(i + 1)
                    .ok_or_else(|| anyhow::anyhow!("--rows N"))?
                    .parse()?;
                i += 1;
            }
            "--gb" => rows = 12_100_000,
            "--dir" => {
                dir = Some(
                    args.get(i + 1)
                        .ok_or_else(|| anyhow::anyhow!("--dir DIR"))?
                        .clone(),
                );
                i += 1;
            }
            a => anyhow::bail!("unknown argument {a}; expected --rows N, --gb, --dir DIR"),
        }
        i += 1;
    }
    let tmp = match &dir {
        Some(d) => tempfile::tempdir_in(d)?,
        None => tempfile::tempdir()?,
    };
    let watch = tmp.path().join("in");
    fs::create_dir(&watch)?;
    let gen_path = tmp.path().join("bench.csv");
    let t = Instant::now();
    let bytes = generate(&gen_path, rows)?;
    let points = rows * COLUMNS as u64;
    println!(
        "generated {rows} rows, {points} points, {:.1} MB in {:.2} s",
        bytes as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );

    // 1. The parser alone.
    let opts = CsvParseOptions::default();
    reset_peak();
    let base = status_kib("VmRSS:");
    let t = Instant::now();
    let cpu0 = cpu_secs("thread-self");
    let mut got = 0u64;
    let sum = parse_path::<tsfiled_connectors::Error, _>(&gen_path, &opts, |c| {
        got += c.points;
        Ok(())
    })?;
    let secs = t.elapsed().as_secs_f64();
    let cpu = cpu_secs("thread-self") - cpu0;
    assert_eq!(sum.points, points);
    assert_eq!(got, points);
    println!(
        "parser:     {:>6.2} s  {:>6.2} M points/s  ({:.2} CPU s: {:>6.2} M points per CPU s)  {:>7.1} MB/s  peak RSS {} MiB (+{} MiB)",
        secs,
        points as f64 / secs / 1e6,
        cpu,
        points as f64 / cpu.max(0.01) / 1e6,
        bytes as f64 / secs / 1e6,
        status_kib("VmHWM:") / 1024,
        status_kib("VmHWM:").saturating_sub(base) / 1024
    );

    // 2. The source end to end into a counting sink.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let sink = Arc::new(MemorySink::counting());
    let metrics = Arc::new(CountingMetrics::default());
    let mut o = tsfiled_connectors::source::validate_table::<CsvTable>(&format!(
        "directories = [{:?}]\n",
        watch.display().to_string()
    ))
    .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    o.settle = Duration::from_millis(100);
    let csv_run = CsvRun::new(tmp.path().join("state"));
    reset_peak();
    let base = status_kib("VmRSS:");
    let t = Instant::now();
    let cpu0 = cpu_secs("self");
    let r = rt.block_on(async {
        let token = CancellationToken::new();
        let h = tokio::spawn(run(
            o,
            csv_run,
            sink.clone(),
            token.clone(),
            metrics.clone(),
        ));
        fs::rename(&gen_path, watch.join("bench.csv"))?;
        while CountingMetrics::get(&metrics.files_done) == 0 {
            if h.is_finished() {
                anyhow::bail!("the source stopped: {:?}", h.await);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let secs = t.elapsed().as_secs_f64();
        token.cancel();
        h.await??;
        Ok(secs)
    });
    let secs = r?;
    let cpu = cpu_secs("self") - cpu0;
    assert_eq!(sink.points(), points);
    println!(
        "end to end: {:>6.2} s  {:>6.2} M points/s  ({:.2} CPU s: {:>6.2} M points per CPU s)  {:>7.1} MB/s  peak RSS {} MiB (+{} MiB), {} batches",
        secs,
        points as f64 / secs / 1e6,
        cpu,
        points as f64 / cpu.max(0.01) / 1e6,
        bytes as f64 / secs / 1e6,
        status_kib("VmHWM:") / 1024,
        status_kib("VmHWM:").saturating_sub(base) / 1024,
        sink.submits()
    );
    Ok(())
}
