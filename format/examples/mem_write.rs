//! Memory check: writes the benchmark workload (conformance README, SplitMix64 seeded
//! 42) generated on the fly, row by row, with a chunk-group budget, so that the peak
//! RSS shows what the writer itself holds.
//!
//! ```text
//! cargo build --release -p tsfile --example mem_write
//! /usr/bin/time -v target/release/examples/mem_write --devices 100 --measurements 10 \
//!     --points 10000 --group-size 16777216 --out /tmp/m.tsfile
//! ```
//!
//! Prints `points=<n> file_bytes=<n> chunk_groups=<n> max_buffered_bytes=<n>`.

use std::fs::File;
use std::io::BufWriter;
use tsfile::basic::{Compression, DataType, Encoding, Value};
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

fn main() -> tsfile::Result<()> {
    let mut devices = 100usize;
    let mut measurements = 10usize;
    let mut points = 10_000usize;
    let mut group = 16usize << 20;
    let mut data_type = DataType::DOUBLE;
    let mut encoding = Encoding::GORILLA;
    let mut compression = Compression::SNAPPY;
    let mut out = String::from("mem_write.tsfile");
    let mut args = std::env::args().skip(1);
    while let Some(k) = args.next() {
        let v = args
            .next()
            .ok_or_else(|| tsfile::Error::invalid(format!("{k} needs a value")))?;
        let num = |s: &str| {
            s.parse::<usize>()
                .map_err(|e| tsfile::Error::invalid(format!("{k}: {e}")))
        };
        match k.as_str() {
            "--devices" => devices = num(&v)?,
            "--measurements" => measurements = num(&v)?,
            "--points" => points = num(&v)?,
            "--group-size" => group = num(&v)?,
            "--type" => data_type = v.parse()?,
            "--encoding" => encoding = v.parse()?,
            "--compression" => compression = v.parse()?,
            "--out" => out = v,
            _ => return Err(tsfile::Error::invalid(format!("unknown option {k}"))),
        }
    }
    let props = WriterProperties {
        group_size_bytes: group,
        ..WriterProperties::default()
    };
    let file = BufWriter::with_capacity(1 << 16, File::create(&out)?);
    let mut w = TsFileWriter::new(file, props)?;
    let dev_names: Vec<String> = (0..devices)
        .map(|d| format!("root.bench.d{d:03}"))
        .collect();
    let names: Vec<String> = (0..measurements).map(|m| format!("m{m:02}")).collect();
    for d in &dev_names {
        for m in &names {
            w.register(
                d,
                MeasurementSchema::new(m.clone(), data_type, encoding, compression),
            )?;
        }
    }
    let mut rng = SplitMix64(42);
    let base = |d: usize, m: usize| (10 + (7 * d + 3 * m) % 40) as f64;
    let mut x: Vec<f64> = (0..devices * measurements)
        .map(|k| base(k / measurements, k % measurements))
        .collect();
    let mut counter: Vec<i64> = (0..devices * measurements)
        .map(|k| 1_000_000 * (k / measurements) as i64 + 1000 * (k % measurements) as i64)
        .collect();
    let mut flag = vec![true; devices * measurements];
    let mut row: Vec<(&str, Value)> = Vec::with_capacity(measurements);
    let mut max_buffered = 0usize;
    for i in 0..points {
        for (d, dev) in dev_names.iter().enumerate() {
            let jitter = ((rng.next() >> 32) % 21) as i64 - 10;
            let t = 1_600_000_000_000 + 1000 * i as i64 + jitter;
            row.clear();
            for (m, name) in names.iter().enumerate() {
                let z = rng.next();
                let k = d * measurements + m;
                let mut double = || {
                    let u = (z >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
                    x[k] = x[k] + (u - 0.5) * 0.2 + (base(d, m) - x[k]) * 0.01;
                    (x[k] * 100.0 + 0.5).floor() / 100.0
                };
                let v = match data_type {
                    DataType::DOUBLE => Value::Double(double()),
                    DataType::FLOAT => Value::Float(double() as f32),
                    DataType::INT64 => {
                        counter[k] += ((z >> 32) % 10) as i64;
                        Value::Int64(counter[k])
                    }
                    DataType::INT32 => Value::Int32(((z >> 40) % 1000) as i32),
                    DataType::BOOLEAN => {
                        if z >> 58 == 0 {
                            flag[k] = !flag[k];
                        }
                        Value::Boolean(flag[k])
                    }
                    _ => Value::Text(format!("state-{}", z >> 61).into_bytes()),
                };
                row.push((name.as_str(), v));
            }
            w.write_record(dev, t, &row)?;
        }
        if i % 64 == 0 {
            max_buffered = max_buffered.max(w.buffered_bytes());
        }
    }
    let (_, s) = w.close()?;
    println!(
        "points={} file_bytes={} chunk_groups={} max_buffered_bytes={max_buffered}",
        s.points, s.file_size, s.chunk_groups
    );
    Ok(())
}
