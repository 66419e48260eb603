//! Property test: random schemas (every type × accepted encoding × compression), random
//! page / group / index settings, random rows, tablets, flushes and version records.
//! Every file must pass the structural checker and read back point for point.

mod common;

use common::check_file;
use proptest::prelude::*;
use std::collections::BTreeMap;
use tsfile::basic::{Column, Compression, DataType, Encoding, Value};
use tsfile::file::properties::{MeasurementSchema, WriterProperties};
use tsfile::file::reader::TsFileReader;
use tsfile::file::writer::TsFileWriter;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// Per-series generator state.
struct Series {
    device: String,
    schema: MeasurementSchema,
    /// For REGULAR: next value and step of the progression.
    next: i64,
    step: i64,
    written: Vec<(i64, Value)>,
}

impl Series {
    fn value(&mut self, rng: &mut Rng) -> Value {
        let lossy_float = matches!(self.schema.encoding, Encoding::RLE | Encoding::TS_2DIFF);
        match (self.schema.data_type, self.schema.encoding) {
            (DataType::INT32, Encoding::REGULAR) | (DataType::INT64, Encoding::REGULAR) => {
                let v = self.next;
                self.next += self.step;
                if self.schema.data_type == DataType::INT32 {
                    Value::Int32(v as i32)
                } else {
                    Value::Int64(v)
                }
            }
            (DataType::BOOLEAN, _) => Value::Boolean(rng.chance(30)),
            (DataType::INT32, _) => Value::Int32(match rng.below(3) {
                0 => rng.next() as i32,
                1 => rng.below(10) as i32,
                _ => 7,
            }),
            (DataType::INT64, _) => Value::Int64(match rng.below(3) {
                0 => rng.next() as i64,
                1 => rng.below(1000) as i64 - 500,
                _ => -3,
            }),
            // RLE / TS_2DIFF store round(v * 100): use values exact at 2 decimals.
            (DataType::FLOAT, _) if lossy_float => {
                Value::Float(((rng.below(200_001) as i64 - 100_000) as f64 / 100.0) as f32)
            }
            (DataType::DOUBLE, _) if lossy_float => {
                Value::Double((rng.below(20_000_001) as i64 - 10_000_000) as f64 / 100.0)
            }
            (DataType::FLOAT, e) => {
                let v = f32::from_bits(rng.next() as u32);
                Value::Float(if v.is_nan() && e == Encoding::GORILLA {
                    1.5
                } else {
                    v
                })
            }
            (DataType::DOUBLE, e) => {
                let v = match rng.below(3) {
                    0 => f64::from_bits(rng.next()),
                    1 => (rng.below(1000) as f64) / 8.0,
                    _ => 20.25,
                };
                Value::Double(if v.is_nan() && e == Encoding::GORILLA {
                    -0.0
                } else {
                    v
                })
            }
            (_, _) => {
                let n = rng.below(12) as usize;
                Value::Text((0..n).map(|_| rng.next() as u8).collect())
            }
        }
    }
}

fn random_schema(rng: &mut Rng, name: String) -> MeasurementSchema {
    let dt = DataType::ALL[rng.below(6) as usize];
    let encs: Vec<Encoding> = Encoding::ALL
        .iter()
        .copied()
        .filter(|e| e.supports(dt))
        .collect();
    let enc = encs[rng.below(encs.len() as u64) as usize];
    let comp = if rng.chance(50) {
        Compression::SNAPPY
    } else {
        Compression::UNCOMPRESSED
    };
    MeasurementSchema::new(name, dt, enc, comp)
}

/// Equal as stored: floats by Java's canonical bits (every NaN is one NaN).
fn same(a: &Value, b: &Value) -> bool {
    use tsfile::util::io::{java_double_bits, java_float_bits};
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => java_float_bits(*x) == java_float_bits(*y),
        (Value::Double(x), Value::Double(y)) => java_double_bits(*x) == java_double_bits(*y),
        _ => a == b,
    }
}

fn column_of(values: &[Value], dt: DataType) -> Column {
    let mut c = Column::new(dt);
    for v in values {
        c.push(v.clone()).unwrap();
    }
    c
}

fn run(seed: u64, props: WriterProperties) -> Result<(), String> {
    let mut rng = Rng(seed);
    let mut w = TsFileWriter::new(Vec::new(), props).map_err(|e| e.to_string())?;
    let n_dev = 1 + rng.below(4) as usize;
    let mut devices: Vec<(String, Vec<Series>, i64)> = Vec::new();
    for d in 0..n_dev {
        let dev = format!("root.p.d{d}");
        let n_meas = 1 + rng.below(5) as usize;
        let mut series = Vec::new();
        for m in 0..n_meas {
            let schema = random_schema(&mut rng, format!("m{m}"));
            w.register(&dev, schema.clone())
                .map_err(|e| e.to_string())?;
            series.push(Series {
                device: dev.clone(),
                schema,
                next: rng.below(1000) as i64 - 500,
                step: rng.below(11) as i64 - 5,
                written: Vec::new(),
            });
        }
        devices.push((dev, series, rng.below(1 << 40) as i64 - (1 << 39)));
    }
    let steps = 1 + rng.below(120);
    let mut version = 0i64;
    for _ in 0..steps {
        let d = rng.below(n_dev as u64) as usize;
        let (dev, series, t) = &mut devices[d];
        match rng.below(100) {
            0..=64 => {
                // A row over a random subset of the device's series.
                *t += rng.below(3) as i64; // equal times happen
                let mut row = Vec::new();
                let mut used = Vec::new();
                for (i, s) in series.iter_mut().enumerate() {
                    if rng.chance(70) {
                        let v = s.value(&mut rng);
                        row.push((s.schema.measurement.clone(), v.clone()));
                        used.push((i, v));
                    }
                }
                let row_ref: Vec<(&str, Value)> =
                    row.iter().map(|(m, v)| (m.as_str(), v.clone())).collect();
                w.write_record(dev, *t, &row_ref)
                    .map_err(|e| e.to_string())?;
                for (i, v) in used {
                    series[i].written.push((*t, v));
                }
            }
            65..=89 => {
                // A tablet of 1..600 rows over a subset.
                let rows = 1 + rng.below(600) as usize;
                let mut times = Vec::with_capacity(rows);
                for _ in 0..rows {
                    *t += 1 + rng.below(1000) as i64;
                    times.push(*t);
                }
                let mut cols: Vec<(String, Column)> = Vec::new();
                for s in series.iter_mut() {
                    if rng.chance(60) {
                        let vals: Vec<Value> = (0..rows).map(|_| s.value(&mut rng)).collect();
                        cols.push((
                            s.schema.measurement.clone(),
                            column_of(&vals, s.schema.data_type),
                        ));
                        s.written.extend(times.iter().copied().zip(vals));
                    }
                }
                let col_ref: Vec<(&str, &Column)> =
                    cols.iter().map(|(m, c)| (m.as_str(), c)).collect();
                w.write_tablet(dev, &times, &col_ref)
                    .map_err(|e| e.to_string())?;
            }
            90..=95 => w.flush_chunk_groups().map_err(|e| e.to_string())?,
            _ => {
                version += 1 + rng.below(5) as i64;
                w.write_version(version).map_err(|e| e.to_string())?;
            }
        }
    }
    let (bytes, summary) = w.close().map_err(|e| e.to_string())?;
    if summary.file_size != bytes.len() as u64 {
        return Err("summary size".into());
    }
    let walk = check_file(&bytes)?;
    let expected: BTreeMap<(String, String), &Vec<(i64, Value)>> = devices
        .iter()
        .flat_map(|(_, s, _)| s.iter())
        .filter(|s| !s.written.is_empty())
        .map(|s| ((s.device.clone(), s.schema.measurement.clone()), &s.written))
        .collect();
    let keys: Vec<_> = walk.series.keys().cloned().collect();
    if keys != expected.keys().cloned().collect::<Vec<_>>() {
        return Err(format!("series in the file: {keys:?}"));
    }
    let total: usize = expected.values().map(|v| v.len()).sum();
    if summary.points != total as u64 {
        return Err(format!("summary points {} != {total}", summary.points));
    }
    let reader = TsFileReader::open(bytes.clone()).map_err(|e| e.to_string())?;
    for ((d, m), want) in expected {
        let sr = reader
            .series_reader(&d, &m)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("{d}.{m} not found by the reader"))?;
        let got: Vec<(i64, Value)> = sr
            .points()
            .collect::<tsfile::Result<_>>()
            .map_err(|e| format!("{d}.{m}: {e}"))?;
        if got.len() != want.len()
            || got
                .iter()
                .zip(want.iter())
                .any(|(a, b)| a.0 != b.0 || !same(&a.1, &b.1))
        {
            let at = got
                .iter()
                .zip(want.iter())
                .position(|(a, b)| a.0 != b.0 || !same(&a.1, &b.1));
            let schema = reader
                .timeseries_metadata(&d, &m)
                .ok()
                .flatten()
                .map(|t| t.data_type);
            let show = at.map(|i| (got.get(i).cloned(), want.get(i).cloned()));
            return Err(format!(
                "{d}.{m} ({schema:?}): {} points read, {} written; first difference at {at:?}: {show:?}",
                got.len(),
                want.len()
            ));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn random_files_parse_and_read_back(
        seed in any::<u64>(),
        max_points in prop_oneof![1usize..20, 20usize..400, Just(1_048_576usize)],
        page_size in prop_oneof![64usize..2048, Just(65_536usize)],
        group_size in prop_oneof![256usize..20_000, Just(128usize << 20)],
        degree in 2usize..6,
    ) {
        let props = WriterProperties {
            max_points_per_page: max_points,
            page_size_bytes: page_size,
            group_size_bytes: group_size,
            max_degree: degree,
            ..WriterProperties::default()
        };
        if let Err(e) = run(seed, props) {
            return Err(TestCaseError::fail(e));
        }
    }
}
