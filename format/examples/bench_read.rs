//! Read benchmark: decodes every point of every series of a TsFile through the index
//! (TimeseriesMetadata → chunks → pages), the file held in memory.
//!
//! `cargo run --release -p tsfile --example bench_read -- PATH [SECONDS]`
//!
//! Repeats full reads for at least SECONDS (default 3) after one warm-up read and
//! prints the median rate; the last line is `points_per_s=<n> file_bytes=<n>`.

use std::time::{Duration, Instant};
use tsfile::basic::Column;
use tsfile::file::reader::{PageData, TsFileReader};

/// Reads every point once; returns (points, a checksum that keeps the work alive).
fn read_all(reader: &TsFileReader<&[u8]>) -> tsfile::Result<(u64, u64)> {
    let mut points = 0u64;
    let mut check = 0u64;
    let mut page = PageData::new(tsfile::DataType::INT64);
    for d in reader.index_tree()?.devices {
        for (_, ts) in &d.series {
            let mut sr = reader.series_reader_for(&d.device, ts)?;
            while sr.next_page(&mut page)? {
                points += page.len() as u64;
                if let Some(t) = page.times.last() {
                    check = check.wrapping_add(*t as u64);
                }
                check = check.wrapping_add(match &page.values {
                    Column::Boolean(v) => v.len() as u64,
                    Column::Int32(v) => v.last().map_or(0, |x| *x as u64),
                    Column::Int64(v) => v.last().map_or(0, |x| *x as u64),
                    Column::Float(v) => v.last().map_or(0, |x| x.to_bits() as u64),
                    Column::Double(v) => v.last().map_or(0, |x| x.to_bits()),
                    Column::Text(v) => v.last().map_or(0, |x| x.len() as u64),
                });
            }
        }
    }
    Ok((points, check))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: bench_read PATH [SECONDS]");
        std::process::exit(2);
    };
    let secs: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(3.0);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let run = || -> tsfile::Result<(u64, u64, Duration)> {
        let start = Instant::now();
        let reader = TsFileReader::open(&bytes[..])?;
        let (p, c) = read_all(&reader)?;
        Ok((p, c, start.elapsed()))
    };
    let (points, check, _) = match run() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let mut rates = Vec::new();
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    while rates.len() < 3 || Instant::now() < deadline {
        let (p, c, t) = run().expect("the warm-up read succeeded");
        assert_eq!((p, c), (points, check));
        rates.push(p as f64 / t.as_secs_f64().max(1e-9));
    }
    rates.sort_by(f64::total_cmp);
    let median = rates[rates.len() / 2];
    eprintln!(
        "{path}: {points} points, {} runs, min {:.0} / median {:.0} / max {:.0} points/s (checksum {check:x})",
        rates.len(),
        rates[0],
        median,
        rates[rates.len() - 1]
    );
    println!("points_per_s={:.0} file_bytes={}", median, bytes.len());
}
