//! A 1 GB file under the memory bound: a wide CSV of at least 1,000,000,000 bytes (10 value
//! columns over two devices) dropped into a watched directory of the real daemon ends in
//! `done/`, the daemon's peak resident memory stays under its memtable budget plus 64 MiB,
//! and every point is read back from the sealed files exactly once with its value.
//!
//! This binary holds only this test, so it runs alone. `TSFILED_CSV_BYTES` sets another
//! file size (for a quick look while developing); the default is the issue's 1 GB. At its
//! peak the test uses about 1.6 GiB of the temp directory (the CSV, the WAL and the TsFiles;
//! 1,648,608 KiB measured); with less than twice the file size free it fails at once, saying so.

#[allow(dead_code)]
#[path = "e2e/harness.rs"]
mod harness;

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use harness::*;
use tsfile::basic::Column;
use tsfile::file::reader::{PageData, TsFileReader};

const BASE_TIME: i64 = 1_600_000_000_000;
const COLUMNS: usize = 10;
const BUDGET_MIB: u64 = 64;

/// Column `c` holds INT64 values when even, DOUBLE values (exact quarters) when odd.
fn int_value(row: i64, c: usize) -> i64 {
    (row * 31 + c as i64 * 1_000) % 1_000_003
}

fn double_value(row: i64, c: usize) -> f64 {
    let whole = (row + c as i64) % 100_000;
    let quarters = (row + c as i64) % 4;
    whole as f64 + quarters as f64 * 0.25
}

/// Writes rows until the file holds at least `min_bytes`; returns (rows, bytes).
fn write_csv(path: &Path, min_bytes: u64) -> (i64, u64) {
    let mut w = BufWriter::with_capacity(1 << 20, fs::File::create(path).unwrap());
    let mut header = String::from("Time");
    for c in 0..COLUMNS {
        let ty = if c % 2 == 0 { "INT64" } else { "DOUBLE" };
        header.push_str(&format!(",root.gb.d{}.s{c}({ty})", c % 2));
    }
    header.push('\n');
    w.write_all(header.as_bytes()).unwrap();
    let mut bytes = header.len() as u64;
    let mut line = Vec::with_capacity(256);
    let mut rows = 0i64;
    const FRACTIONS: [&str; 4] = [".0", ".25", ".5", ".75"];
    while bytes < min_bytes {
        line.clear();
        write!(line, "{}", BASE_TIME + rows).unwrap();
        for c in 0..COLUMNS {
            if c % 2 == 0 {
                write!(line, ",{}", int_value(rows, c)).unwrap();
            } else {
                let whole = (rows + c as i64) % 100_000;
                let q = ((rows + c as i64) % 4) as usize;
                write!(line, ",{whole}{}", FRACTIONS[q]).unwrap();
            }
        }
        line.push(b'\n');
        w.write_all(&line).unwrap();
        bytes += line.len() as u64;
        rows += 1;
    }
    w.flush().unwrap();
    (rows, bytes)
}

/// Free bytes on the filesystem holding `dir`.
fn free_bytes(dir: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).expect("path without NUL");
    // SAFETY: statvfs(3) writes into the zeroed struct we own; `c` is a valid C string.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    assert_eq!(rc, 0, "statvfs {}", dir.display());
    st.f_bavail as u64 * st.f_frsize as u64
}

fn status_kib(pid: u32, key: &str) -> Option<u64> {
    let s = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
}

/// Reads every sealed file page by page (the file is too large for a point map): each point
/// must carry its row's value, each (series, row) must appear exactly once, and each
/// `.resource` must equal its file's device time ranges.
fn verify_sealed(data: &Path, rows: i64) -> usize {
    let n = rows as usize;
    // One bit per (column, row).
    let mut seen = vec![0u64; (COLUMNS * n).div_ceil(64)];
    let mut points = 0u64;
    let files = sealed_files(data);
    let mut page = PageData::new(tsfile::DataType::INT64);
    for f in &files {
        let r = TsFileReader::open_path(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let mut ranges: BTreeMap<String, (i64, i64)> = BTreeMap::new();
        for (dev, ts) in r.all_series().unwrap() {
            let c: usize = ts.measurement[1..].parse().expect("measurement s<c>");
            assert_eq!(dev, format!("root.gb.d{}", c % 2), "{}", f.display());
            let mut sr = r.series_reader_for(&dev, &ts).unwrap();
            while sr
                .next_page(&mut page)
                .unwrap_or_else(|e| panic!("{}: {dev}.s{c}: {e}", f.display()))
            {
                let (Some(&lo), Some(&hi)) = (page.times.first(), page.times.last()) else {
                    continue;
                };
                let e = ranges.entry(dev.clone()).or_insert((lo, hi));
                e.0 = e.0.min(lo);
                e.1 = e.1.max(hi);
                for (i, &t) in page.times.iter().enumerate() {
                    let row = t - BASE_TIME;
                    assert!((0..rows).contains(&row), "{}: time {t}", f.display());
                    match &page.values {
                        Column::Int64(v) => assert_eq!(v[i], int_value(row, c), "s{c} at {t}"),
                        Column::Double(v) => {
                            assert_eq!(v[i], double_value(row, c), "s{c} at {t}")
                        }
                        other => panic!("s{c}: unexpected column {:?}", other.data_type()),
                    }
                    let bit = c * n + row as usize;
                    let (word, mask) = (bit / 64, 1u64 << (bit % 64));
                    assert!(seen[word] & mask == 0, "s{c} at {t} twice");
                    seen[word] |= mask;
                }
                points += page.times.len() as u64;
            }
        }
        let mut res_path = f.as_os_str().to_owned();
        res_path.push(".resource");
        let res = fs::read(&res_path).unwrap();
        let got: BTreeMap<String, (i64, i64)> = parse_resource(&res)
            .into_iter()
            .map(|(d, s, e)| (d, (s, e)))
            .collect();
        assert_eq!(got, ranges, "{}: .resource ranges", f.display());
    }
    assert_eq!(points, (COLUMNS * n) as u64, "points in sealed files");
    files.len()
}

#[test]
fn a_1gb_csv_ingests_completely_under_the_memory_bound() {
    let min_bytes: u64 = std::env::var("TSFILED_CSV_BYTES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000_000);
    let tmp = tempfile::tempdir().unwrap();
    let free = free_bytes(tmp.path());
    assert!(
        free >= 2 * min_bytes,
        "this test needs {} bytes free in {} (a {min_bytes}-byte CSV, the WAL and the TsFiles); \
         {free} are",
        2 * min_bytes,
        tmp.path().display()
    );
    let data = tmp.path().join("data");
    let watch = tmp.path().join("inbox");
    fs::create_dir_all(&watch).unwrap();
    let staged = tmp.path().join("big.csv");
    let started = Instant::now();
    let (rows, bytes) = write_csv(&staged, min_bytes);
    eprintln!(
        "wrote {bytes} bytes, {rows} rows, {} points in {:.1?}",
        rows * COLUMNS as i64,
        started.elapsed()
    );

    let config = tmp.path().join("tsfiled.toml");
    fs::write(
        &config,
        format!(
            r#"
data_dir = "{}"
shutdown_timeout = "120s"

[http]
listen = "127.0.0.1:0"

[[pipeline]]
name = "main"

[pipeline.storage]
storage_group_level = 1
memtable_budget = "{BUDGET_MIB}MiB"

[[pipeline.source]]
type = "csv"
name = "drop"
directories = ["{}"]
settle = "100ms"
rescan_interval = "1s"
"#,
            data.display(),
            watch.display()
        ),
    )
    .unwrap();
    let d = DaemonProc::start_with(&["run", "--config", config.to_str().unwrap()]);
    let pid = d.pid();

    // Samples the daemon's peak RSS until told to stop or the process is gone.
    let stop = Arc::new(AtomicBool::new(false));
    let peak_kib = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (stop, peak_kib) = (stop.clone(), peak_kib.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match status_kib(pid, "VmHWM:") {
                    Some(k) => peak_kib.fetch_max(k, Ordering::Relaxed),
                    None => break,
                };
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };

    let t0 = Instant::now();
    fs::rename(&staged, watch.join("big.csv")).unwrap();
    let done = watch.join("done").join("big.csv");
    while !done.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(1_500),
            "timed out; log:\n{}",
            d.log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let ingest = t0.elapsed();
    let m = get(d.addr, "/metrics").body;
    let l = |r: &str| format!("{{pipeline=\"main\",result=\"{r}\",source=\"drop\"}}");
    let metric_of = |name: &str, result: &str| metric(&m, &format!("{name}{}", l(result)));
    assert_eq!(
        metric_of("tsfiled_csv_rows_total", "accepted"),
        Some(rows as f64)
    );
    assert_eq!(
        metric_of("tsfiled_csv_points_total", "accepted"),
        Some((rows * COLUMNS as i64) as f64)
    );
    assert_eq!(
        metric_of("tsfiled_csv_rows_total", "rejected").unwrap_or(0.0),
        0.0
    );
    fs::remove_file(&done).unwrap();

    let (code, log) = d.stop();
    // SIGTERM seals the open files: from here every point is in a sealed file.
    let sealed = t0.elapsed();
    stop.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    assert_eq!(code, 0, "{log}");
    let peak = peak_kib.load(Ordering::Relaxed);
    let files = verify_sealed(&data, rows);
    let points = (rows * COLUMNS as i64) as f64;
    eprintln!(
        "ingested {bytes} bytes ({points} points): durable and in done/ after {:.3?} \
         ({:.0} points/s), in sealed files after {:.3?} ({:.0} points/s); {files} sealed \
         files; daemon peak RSS {peak} KiB (bound {} KiB)",
        ingest,
        points / ingest.as_secs_f64(),
        sealed,
        points / sealed.as_secs_f64(),
        (BUDGET_MIB + 64) * 1024
    );
    assert!(peak > 0, "no RSS sample");
    assert!(
        peak < (BUDGET_MIB + 64) * 1024,
        "daemon peak RSS {peak} KiB, bound {} KiB",
        (BUDGET_MIB + 64) * 1024
    );
}
