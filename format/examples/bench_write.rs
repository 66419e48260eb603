//! Write benchmark on the conformance README's workload ("Benchmark workload"):
//! SplitMix64 seeded 42, `for i in 0..N { for d in 0..D { jitter; for m in 0..M {..} } }`,
//! one row per (i, d) holding all M measurements — the same points, in the same order,
//! as the Java figures.
//!
//! ```text
//! cargo run --release -p tsfile --example bench_write -- --devices 100 --measurements 10 \
//!     --points 10000 --type DOUBLE --encoding GORILLA --compression SNAPPY --out /tmp/b.tsfile
//! ```
//!
//! The points are generated in memory first; the timed part runs from creating the
//! writer to `close()` (rows: one `write_record` per row; `--tablet-rows R`: tablets of
//! R rows per device instead). The last line printed is
//! `points_per_s=<n> file_bytes=<n>`.
//!
//! `--format-version 4` writes TsFile v4 instead (encoding names as TsFile 2.x gives them,
//! so `GORILLA` is 2.x's; one chunk group per device and tablet, `--tablet-rows` defaults
//! to all rows). `--dump-workload PATH` also writes the points for another writer
//! (`scripts/bench-v4-write`): per device, its times then each measurement's values, as
//! little-endian i64 / f64 (DOUBLE workloads only).

use std::fs::File;
use std::io::BufWriter;
use std::time::Instant;
use tsfile::basic::{Column, Compression, DataType, Encoding, Value};
use tsfile::file::properties::{MeasurementSchema, WriterProperties};
use tsfile::file::writer::TsFileWriter;

struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

struct Args {
    devices: usize,
    measurements: usize,
    points: usize,
    data_type: DataType,
    encoding: Encoding,
    compression: Compression,
    out: String,
    tablet_rows: usize,
    group_size: Option<usize>,
    format_version: u8,
    encoding_name: String,
    dump_workload: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        devices: 100,
        measurements: 10,
        points: 10_000,
        data_type: DataType::DOUBLE,
        encoding: Encoding::GORILLA,
        compression: Compression::SNAPPY,
        out: "bench_write.tsfile".into(),
        tablet_rows: 0,
        group_size: None,
        format_version: 2,
        encoding_name: "GORILLA".into(),
        dump_workload: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().ok_or_else(|| format!("{k} needs a value"));
        let num = |s: String| s.parse::<usize>().map_err(|e| format!("{k}: {e}"));
        match k.as_str() {
            "--devices" => a.devices = num(v()?)?,
            "--measurements" => a.measurements = num(v()?)?,
            "--points" => a.points = num(v()?)?,
            "--type" => a.data_type = v()?.parse().map_err(|e| format!("{e}"))?,
            "--encoding" => a.encoding_name = v()?,
            "--format-version" => {
                a.format_version = match v()?.as_str() {
                    "2" => 2,
                    "4" => 4,
                    o => return Err(format!("--format-version {o}: expected 2 or 4")),
                }
            }
            "--dump-workload" => a.dump_workload = Some(v()?),
            "--compression" => a.compression = v()?.parse().map_err(|e| format!("{e}"))?,
            "--out" => a.out = v()?,
            "--tablet-rows" => a.tablet_rows = num(v()?)?,
            "--group-size" => a.group_size = Some(num(v()?)?),
            "--help" | "-h" => {
                return Err("options: --devices D --measurements M --points N --type T \
                     --encoding E --compression C --out PATH [--tablet-rows R] [--group-size B]"
                    .into())
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    a.encoding = if a.format_version == 4 {
        Encoding::from_v4_name(&a.encoding_name).map_err(|e| format!("{e}"))?
    } else {
        a.encoding_name.parse().map_err(|e| format!("{e}"))?
    };
    if a.format_version == 4 && a.tablet_rows == 0 {
        a.tablet_rows = a.points;
    }
    Ok(a)
}

/// The pre-generated workload: times per (i, d), values per (i, d, m) in loop order.
struct Workload {
    times: Vec<i64>,
    values: Column,
}

fn generate(a: &Args) -> Workload {
    let (n, nd, nm) = (a.points, a.devices, a.measurements);
    let mut rng = SplitMix64(42);
    let mut times = Vec::with_capacity(n * nd);
    let total = n * nd * nm;
    let base = |d: usize, m: usize| (10 + (7 * d + 3 * m) % 40) as f64;
    let mut x: Vec<f64> = (0..nd * nm).map(|k| base(k / nm, k % nm)).collect();
    let mut counter: Vec<i64> = (0..nd * nm)
        .map(|k| 1_000_000 * (k / nm) as i64 + 1000 * (k % nm) as i64)
        .collect();
    let mut flag = vec![true; nd * nm];
    let mut values = match a.data_type.storage_type() {
        DataType::BOOLEAN => Column::Boolean(Vec::with_capacity(total)),
        DataType::INT32 => Column::Int32(Vec::with_capacity(total)),
        DataType::INT64 => Column::Int64(Vec::with_capacity(total)),
        DataType::FLOAT => Column::Float(Vec::with_capacity(total)),
        DataType::DOUBLE => Column::Double(Vec::with_capacity(total)),
        _ => Column::Text(Vec::with_capacity(total)),
    };
    for i in 0..n {
        for d in 0..nd {
            let jitter = ((rng.next() >> 32) % 21) as i64 - 10;
            times.push(1_600_000_000_000 + 1000 * i as i64 + jitter);
            for m in 0..nm {
                let z = rng.next();
                let k = d * nm + m;
                let double = |x: &mut f64| {
                    let u = (z >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
                    *x = *x + (u - 0.5) * 0.2 + (base(d, m) - *x) * 0.01;
                    (*x * 100.0 + 0.5).floor() / 100.0
                };
                match &mut values {
                    Column::Double(v) => v.push(double(&mut x[k])),
                    Column::Float(v) => v.push(double(&mut x[k]) as f32),
                    Column::Int64(v) => {
                        counter[k] += ((z >> 32) % 10) as i64;
                        v.push(counter[k]);
                    }
                    Column::Int32(v) => v.push(((z >> 40) % 1000) as i32),
                    Column::Boolean(v) => {
                        if z >> 58 == 0 {
                            flag[k] = !flag[k];
                        }
                        v.push(flag[k]);
                    }
                    Column::Text(v) => v.push(format!("state-{}", z >> 61).into_bytes()),
                }
            }
        }
    }
    Workload { times, values }
}

fn value_at(c: &Column, k: usize) -> Value {
    match c {
        Column::Boolean(v) => Value::Boolean(v[k]),
        Column::Int32(v) => Value::Int32(v[k]),
        Column::Int64(v) => Value::Int64(v[k]),
        Column::Float(v) => Value::Float(v[k]),
        Column::Double(v) => Value::Double(v[k]),
        Column::Text(v) => Value::Text(v[k].clone()),
    }
}

/// Gathers the tablet column of (d, m) for rows `rows` from the loop-ordered values.
fn tablet_column(c: &Column, a: &Args, d: usize, m: usize, rows: std::ops::Range<usize>) -> Column {
    let idx = |i: usize| (i * a.devices + d) * a.measurements + m;
    match c {
        Column::Boolean(v) => Column::Boolean(rows.map(|i| v[idx(i)]).collect()),
        Column::Int32(v) => Column::Int32(rows.map(|i| v[idx(i)]).collect()),
        Column::Int64(v) => Column::Int64(rows.map(|i| v[idx(i)]).collect()),
        Column::Float(v) => Column::Float(rows.map(|i| v[idx(i)]).collect()),
        Column::Double(v) => Column::Double(rows.map(|i| v[idx(i)]).collect()),
        Column::Text(v) => Column::Text(rows.map(|i| v[idx(i)].clone()).collect()),
    }
}

/// CPU time of this thread in seconds (Linux `/proc/thread-self/schedstat`), if known.
fn thread_cpu_secs() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 / 1e9)
}

/// Minor page faults of the process so far (Linux `/proc/self/stat`, field 10).
fn minor_faults() -> u64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = &s[s.rfind(')')? + 2..];
            rest.split_whitespace().nth(7)?.parse().ok()
        })
        .unwrap_or(0)
}

fn run(a: &Args) -> tsfile::Result<(u64, f64, Option<f64>)> {
    let gen_start = Instant::now();
    let w = generate(a);
    eprintln!("generate_s={:.3}", gen_start.elapsed().as_secs_f64());
    let devices: Vec<String> = (0..a.devices)
        .map(|d| format!("root.bench.d{d:03}"))
        .collect();
    let names: Vec<String> = (0..a.measurements).map(|m| format!("m{m:02}")).collect();
    let mut props = WriterProperties::default();
    if let Some(g) = a.group_size {
        props.group_size_bytes = g;
    }
    // Tablets are cut before timing too.
    let mut tablets: Vec<(usize, Vec<i64>, Vec<Column>)> = Vec::new();
    if a.tablet_rows > 0 {
        let mut start = 0;
        while start < a.points {
            let end = (start + a.tablet_rows).min(a.points);
            for d in 0..a.devices {
                let times = (start..end).map(|i| w.times[i * a.devices + d]).collect();
                let cols = (0..a.measurements)
                    .map(|m| tablet_column(&w.values, a, d, m, start..end))
                    .collect();
                tablets.push((d, times, cols));
            }
            start = end;
        }
    }
    if let Some(path) = &a.dump_workload {
        dump_workload(a, &w, path)?;
    }
    let file = BufWriter::with_capacity(1 << 20, File::create(&a.out)?);
    if a.format_version == 4 {
        return run_v4(a, file, &devices, &names, &tablets);
    }

    let faults_start = minor_faults();
    let cpu_start = thread_cpu_secs();
    let started = Instant::now();
    let mut writer = TsFileWriter::new(file, props)?;
    for dev in &devices {
        for m in &names {
            writer.register(
                dev,
                MeasurementSchema::new(m.clone(), a.data_type, a.encoding, a.compression),
            )?;
        }
    }
    if a.tablet_rows == 0 {
        let mut row: Vec<(&str, Value)> = Vec::with_capacity(a.measurements);
        let mut k = 0;
        for i in 0..a.points {
            for (d, dev) in devices.iter().enumerate() {
                row.clear();
                for name in &names {
                    row.push((name.as_str(), value_at(&w.values, k)));
                    k += 1;
                }
                writer.write_record(dev, w.times[i * a.devices + d], &row)?;
            }
        }
    } else {
        for (d, times, cols) in &tablets {
            let columns: Vec<(&str, &Column)> =
                names.iter().map(|n| n.as_str()).zip(cols.iter()).collect();
            writer.write_tablet(&devices[*d], times, &columns)?;
        }
    }
    let (mut file, summary) = writer.close()?;
    std::io::Write::flush(&mut file)?;
    drop(file);
    let secs = started.elapsed().as_secs_f64();
    let cpu = cpu_start.zip(thread_cpu_secs()).map(|(a, b)| b - a);
    eprintln!("minor_faults={}", minor_faults() - faults_start);
    Ok((summary.file_size, secs, cpu))
}

/// Writes the workload for another writer: per device, its `points` times, then per
/// measurement its `points` values (little-endian i64 and f64).
fn dump_workload(a: &Args, w: &Workload, path: &str) -> tsfile::Result<()> {
    use std::io::Write;
    let Column::Double(v) = &w.values else {
        return Err(tsfile::Error::invalid(
            "--dump-workload: DOUBLE workloads only",
        ));
    };
    let mut out = BufWriter::new(File::create(path)?);
    for d in 0..a.devices {
        for i in 0..a.points {
            out.write_all(&w.times[i * a.devices + d].to_le_bytes())?;
        }
        for m in 0..a.measurements {
            for i in 0..a.points {
                out.write_all(&v[(i * a.devices + d) * a.measurements + m].to_le_bytes())?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// The timed part for format v4: one chunk group per tablet.
fn run_v4(
    a: &Args,
    file: BufWriter<File>,
    devices: &[String],
    names: &[String],
    tablets: &[(usize, Vec<i64>, Vec<Column>)],
) -> tsfile::Result<(u64, f64, Option<f64>)> {
    use tsfile::file::v4::{SeriesChunk, TsFileWriterV4};
    let schemas: Vec<MeasurementSchema> = names
        .iter()
        .map(|m| MeasurementSchema::new(m.clone(), a.data_type, a.encoding, a.compression))
        .collect();
    let cpu_start = thread_cpu_secs();
    let started = Instant::now();
    let mut writer = TsFileWriterV4::new(
        file,
        WriterProperties {
            max_points_per_page: 10_000,
            max_degree: 256,
            ..WriterProperties::default()
        },
    )?;
    for (d, times, cols) in tablets {
        let chunks: Vec<SeriesChunk<'_>> = schemas
            .iter()
            .zip(cols)
            .map(|(schema, values)| SeriesChunk {
                schema,
                times,
                values,
            })
            .collect();
        writer.write_chunk_group(&devices[*d], &chunks)?;
    }
    let (mut file, size) = writer.finish()?;
    std::io::Write::flush(&mut file)?;
    drop(file);
    let secs = started.elapsed().as_secs_f64();
    let cpu = cpu_start.zip(thread_cpu_secs()).map(|(a, b)| b - a);
    Ok((size, secs, cpu))
}

fn main() {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("bench_write: {e}");
            std::process::exit(2);
        }
    };
    match run(&a) {
        Ok((bytes, secs, cpu)) => {
            let points = (a.devices * a.measurements * a.points) as f64;
            if let Some(cpu) = cpu {
                // Diagnostic only (stderr): throughput per CPU second of the writing thread,
                // which is what a loaded machine does not distort.
                eprintln!(
                    "wall_s={secs:.3} cpu_s={cpu:.3} points_per_cpu_s={}",
                    (points / cpu) as u64
                );
            }
            println!("points_per_s={} file_bytes={bytes}", (points / secs) as u64);
        }
        Err(e) => {
            eprintln!("bench_write: {e}");
            std::process::exit(1);
        }
    }
}
