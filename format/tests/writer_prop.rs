//! Property test: random schemas (every type × accepted encoding × compression), random
//! page / group / index settings, random rows, tablets, flushes and version records.
//! Every file must pass the structural checker and read back point for point.
//!
//! Everything is drawn by proptest (schemas, steps, values), so a failure shrinks to a
//! small plan. Floats include NaN, ±∞, -0.0 and subnormals where the encoding stores them
//! exactly (PLAIN, GORILLA); a NaN under GORILLA must be refused, leaving the file as if the
//! row or tablet had never been written (GORILLA's end-of-page marker is NaN).

mod common;

use common::check_file;
use proptest::prelude::*;
use std::collections::BTreeMap;
use tsfile::basic::{Column, Compression, DataType, Encoding, Value};
use tsfile::file::properties::{MeasurementSchema, WriterProperties};
use tsfile::file::reader::TsFileReader;
use tsfile::file::writer::TsFileWriter;

/// One series: type, encoding, compression; for REGULAR the first value and the step of
/// its progression (REGULAR stores arithmetic progressions).
#[derive(Debug, Clone, Copy)]
struct Spec {
    dt: DataType,
    enc: Encoding,
    comp: Compression,
    first: i64,
    step: i64,
}

/// Most series per device.
const MAX_SERIES: usize = 5;

/// A type-independent value seed: the series' type and encoding turn it into a value
/// ([`Seed::value`]), so steps are drawn without knowing the schema (and shrink simply).
#[derive(Debug, Clone)]
enum Seed {
    /// Raw bits (floats of any kind: normal, subnormal, infinite, NaN).
    Bits(u64),
    /// A small number.
    Small(i64),
    /// An edge value of the type (NaN, ±∞, -0.0, subnormals, extremes).
    Edge(u8),
    Bytes(Vec<u8>),
}

#[derive(Debug, Clone)]
enum Step {
    /// A row at the device's time plus `advance` (0 repeats the time), over the series
    /// whose cell is `Some` (REGULAR cells take the progression's next value instead).
    Row {
        /// Device number, modulo the number of devices.
        dev: usize,
        advance: i64,
        cells: Vec<Option<Seed>>,
    },
    /// A tablet: per row the gap to the previous time and one seed per series; the
    /// series with `present` set are the tablet's columns.
    Tablet {
        /// Device number, modulo the number of devices.
        dev: usize,
        present: Vec<bool>,
        rows: Vec<(i64, Vec<Seed>)>,
    },
    Flush,
    Version(i64),
}

#[derive(Debug, Clone)]
struct Plan {
    /// Per device: its first time and its series.
    devices: Vec<(i64, Vec<Spec>)>,
    steps: Vec<Step>,
}

fn arb_spec() -> impl Strategy<Value = Spec> {
    let pairs: Vec<(DataType, Encoding)> = DataType::ALL
        .iter()
        .flat_map(|&dt| {
            Encoding::ALL
                .iter()
                .copied()
                .filter(move |e| e.check(dt).is_ok())
                .map(move |e| (dt, e))
        })
        .collect();
    (
        proptest::sample::select(pairs),
        any::<bool>(),
        -500i64..500,
        -5i64..=5,
    )
        .prop_map(|((dt, enc), snappy, first, step)| Spec {
            dt,
            enc,
            comp: if snappy {
                Compression::SNAPPY
            } else {
                Compression::UNCOMPRESSED
            },
            first,
            step,
        })
}

fn arb_seed() -> impl Strategy<Value = Seed> {
    prop_oneof![
        4 => any::<u64>().prop_map(Seed::Bits),
        4 => (-100_000i64..=100_000).prop_map(Seed::Small),
        2 => any::<u8>().prop_map(Seed::Edge),
        1 => proptest::collection::vec(any::<u8>(), 0..12).prop_map(Seed::Bytes),
    ]
}

const F32_EDGES: [f32; 9] = [
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    -0.0,
    f32::from_bits(1),       // smallest subnormal
    f32::MIN_POSITIVE / 3.0, // a subnormal
    f32::MAX,
    f32::from_bits(0x7fc0_1234), // NaN with another payload
    f32::from_bits(0xff80_0001), // a signalling NaN, negative
];

const F64_EDGES: [f64; 9] = [
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    -0.0,
    f64::from_bits(1),
    f64::MIN_POSITIVE / 3.0,
    f64::MIN,
    f64::from_bits(0xfff8_0000_dead_beef),
    f64::from_bits(0x7ff0_0000_0000_0001),
];

impl Seed {
    /// The value this seed gives in series `s` (REGULAR: a placeholder, replaced when
    /// written). RLE / TS_2DIFF floats store round(v * 100) (lossy by design, see the
    /// encoding's unit tests): they get values exact at 2 decimals.
    fn value(&self, s: &Spec) -> Value {
        let lossy_float = matches!(s.enc, Encoding::RLE | Encoding::TS_2DIFF);
        let n = match self {
            Seed::Bits(b) => *b as i64,
            Seed::Small(k) => *k,
            Seed::Edge(e) => *e as i64,
            Seed::Bytes(b) => b.len() as i64,
        };
        match s.dt {
            _ if s.enc == Encoding::REGULAR => Value::Int64(0),
            DataType::BOOLEAN => Value::Boolean(n & 1 == 1),
            DataType::INT32 => Value::Int32(match self {
                Seed::Edge(e) => [i32::MIN, i32::MAX, 0, -1, 7][*e as usize % 5],
                _ => n as i32,
            }),
            DataType::INT64 => Value::Int64(match self {
                Seed::Edge(e) => [i64::MIN, i64::MAX, 0, -1, -3][*e as usize % 5],
                _ => n,
            }),
            DataType::FLOAT if lossy_float => Value::Float(((n % 100_001) as f64 / 100.0) as f32),
            DataType::DOUBLE if lossy_float => Value::Double((n % 10_000_001) as f64 / 100.0),
            DataType::FLOAT => Value::Float(match self {
                Seed::Bits(b) => f32::from_bits(*b as u32),
                Seed::Edge(e) => F32_EDGES[*e as usize % F32_EDGES.len()],
                _ => n as f32 / 8.0,
            }),
            DataType::DOUBLE => Value::Double(match self {
                Seed::Bits(b) => f64::from_bits(*b),
                Seed::Edge(e) => F64_EDGES[*e as usize % F64_EDGES.len()],
                _ => n as f64 / 8.0,
            }),
            _ => Value::Text(match self {
                Seed::Bytes(b) => b.clone(),
                Seed::Bits(b) => b.to_le_bytes()[..(*b as usize % 9)].to_vec(),
                Seed::Small(k) => k.to_string().into_bytes(),
                Seed::Edge(_) => Vec::new(),
            }),
        }
    }
}

fn arb_step() -> impl Strategy<Value = Step> {
    let row = (
        0usize..4,
        0i64..3,
        proptest::collection::vec(proptest::option::weighted(0.7, arb_seed()), MAX_SERIES),
    )
        .prop_map(|(dev, advance, cells)| Step::Row {
            dev,
            advance,
            cells,
        });
    let tablet = (
        0usize..4,
        proptest::collection::vec(proptest::bool::weighted(0.6), MAX_SERIES),
        proptest::collection::vec(
            (
                1i64..1000,
                proptest::collection::vec(arb_seed(), MAX_SERIES),
            ),
            1..600,
        ),
    )
        .prop_map(|(dev, present, rows)| Step::Tablet { dev, present, rows });
    prop_oneof![
        65 => row,
        25 => tablet,
        6 => Just(Step::Flush),
        4 => (1i64..6).prop_map(Step::Version),
    ]
}

fn arb_plan() -> impl Strategy<Value = Plan> {
    (
        proptest::collection::vec(
            (
                -(1i64 << 39)..(1i64 << 39),
                proptest::collection::vec(arb_spec(), 1..=MAX_SERIES),
            ),
            1..5,
        ),
        proptest::collection::vec(arb_step(), 1..121),
    )
        .prop_map(|(devices, steps)| Plan { devices, steps })
}

/// Whether the writer must refuse `v` in series `s`: NaN under GORILLA.
fn refused(s: &Spec, v: &Value) -> bool {
    s.enc == Encoding::GORILLA
        && match v {
            Value::Float(x) => x.is_nan(),
            Value::Double(x) => x.is_nan(),
            _ => false,
        }
}

/// The next value of a REGULAR series' progression.
fn regular_value(s: &Spec, k: i64) -> Value {
    let v = s.first + s.step * k;
    if s.dt == DataType::INT32 {
        Value::Int32(v as i32)
    } else {
        Value::Int64(v)
    }
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

fn run(plan: &Plan, props: WriterProperties) -> Result<(), String> {
    let mut w = TsFileWriter::new(Vec::new(), props).map_err(|e| e.to_string())?;
    struct Series {
        device: String,
        measurement: String,
        spec: Spec,
        /// Values of the REGULAR progression taken so far.
        taken: i64,
        written: Vec<(i64, Value)>,
    }
    let mut devices: Vec<(String, Vec<Series>, i64)> = Vec::new();
    for (d, (t0, specs)) in plan.devices.iter().enumerate() {
        let dev = format!("root.p.d{d}");
        let mut series = Vec::new();
        for (m, spec) in specs.iter().enumerate() {
            let name = format!("m{m}");
            w.register(
                &dev,
                MeasurementSchema::new(name.clone(), spec.dt, spec.enc, spec.comp),
            )
            .map_err(|e| e.to_string())?;
            series.push(Series {
                device: dev.clone(),
                measurement: name,
                spec: *spec,
                taken: 0,
                written: Vec::new(),
            });
        }
        devices.push((dev, series, *t0));
    }
    let mut version = 0i64;
    for step in &plan.steps {
        match step {
            Step::Row {
                dev,
                advance,
                cells,
            } => {
                let n = devices.len();
                let (dev, series, t) = &mut devices[dev % n];
                *t += advance; // equal times happen
                let mut row = Vec::new();
                let mut used = Vec::new();
                let mut must_refuse = false;
                for (i, (s, cell)) in series.iter().zip(cells).enumerate() {
                    let Some(seed) = cell else { continue };
                    let v = if s.spec.enc == Encoding::REGULAR {
                        regular_value(&s.spec, s.taken)
                    } else {
                        seed.value(&s.spec)
                    };
                    must_refuse |= refused(&s.spec, &v);
                    row.push((s.measurement.clone(), v.clone()));
                    used.push((i, v));
                }
                let row_ref: Vec<(&str, Value)> =
                    row.iter().map(|(m, v)| (m.as_str(), v.clone())).collect();
                match (w.write_record(dev, *t, &row_ref), must_refuse) {
                    (Ok(()), false) => {
                        for (i, v) in used {
                            let s = &mut series[i];
                            s.taken += i64::from(s.spec.enc == Encoding::REGULAR);
                            s.written.push((*t, v));
                        }
                    }
                    (Err(e), true) if e.to_string().contains("NaN") => {}
                    (r, _) => return Err(format!("row {row:?} at {t}: {r:?}")),
                }
            }
            Step::Tablet { dev, present, rows } => {
                let n = devices.len();
                let (dev, series, t) = &mut devices[dev % n];
                let mut times = Vec::with_capacity(rows.len());
                let mut time = *t;
                for (gap, _) in rows {
                    time += gap;
                    times.push(time);
                }
                let mut columns: Vec<(usize, Vec<Value>)> = Vec::new();
                let mut must_refuse = false;
                for (i, (s, &here)) in series.iter().zip(present).enumerate() {
                    if !here {
                        continue;
                    }
                    let vals: Vec<Value> = if s.spec.enc == Encoding::REGULAR {
                        (0..rows.len() as i64)
                            .map(|k| regular_value(&s.spec, s.taken + k))
                            .collect()
                    } else {
                        rows.iter()
                            .map(|(_, seeds)| seeds[i].value(&s.spec))
                            .collect()
                    };
                    must_refuse |= vals.iter().any(|v| refused(&s.spec, v));
                    columns.push((i, vals));
                }
                let built: Vec<(String, Column)> = columns
                    .iter()
                    .map(|(i, vals)| {
                        let s = &series[*i];
                        (s.measurement.clone(), column_of(vals, s.spec.dt))
                    })
                    .collect();
                let col_ref: Vec<(&str, &Column)> =
                    built.iter().map(|(m, c)| (m.as_str(), c)).collect();
                match (w.write_tablet(dev, &times, &col_ref), must_refuse) {
                    (Ok(()), false) => {
                        *t = time;
                        for (i, vals) in columns {
                            let s = &mut series[i];
                            if s.spec.enc == Encoding::REGULAR {
                                s.taken += vals.len() as i64;
                            }
                            s.written.extend(times.iter().copied().zip(vals));
                        }
                    }
                    // A refused tablet changes nothing; the device's time stays.
                    (Err(e), true) if e.to_string().contains("NaN") => {}
                    (r, _) => return Err(format!("tablet at {times:?}: {r:?}")),
                }
            }
            Step::Flush => w.flush_chunk_groups().map_err(|e| e.to_string())?,
            Step::Version(inc) => {
                version += inc;
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
        .map(|s| ((s.device.clone(), s.measurement.clone()), &s.written))
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
        plan in arb_plan(),
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
        if let Err(e) = run(&plan, props) {
            return Err(TestCaseError::fail(e));
        }
    }
}

/// The refusal is exercised on every run, not only when proptest happens to draw it: a NaN
/// under GORILLA is refused in a row and in a tablet, and the file holds only the rest.
#[test]
fn gorilla_refuses_nan_and_the_file_keeps_the_rest() {
    let spec = |dt| Spec {
        dt,
        enc: Encoding::GORILLA,
        comp: Compression::UNCOMPRESSED,
        first: 0,
        step: 0,
    };
    let dev = 0;
    // Edge 0 is NaN, 1 is +∞, 3 is -0.0; Small(k) is k / 8.
    let plan = Plan {
        devices: vec![(100, vec![spec(DataType::DOUBLE), spec(DataType::FLOAT)])],
        steps: vec![
            Step::Row {
                dev,
                advance: 1,
                cells: vec![Some(Seed::Small(12)), Some(Seed::Edge(3)), None, None, None],
            },
            Step::Row {
                dev,
                advance: 1,
                cells: vec![Some(Seed::Edge(0)), Some(Seed::Small(16)), None, None, None],
            },
            Step::Tablet {
                dev,
                present: vec![false, true, false, false, false],
                rows: vec![(1, vec![Seed::Small(0); 5]), (1, vec![Seed::Edge(0); 5])],
            },
            Step::Row {
                dev,
                advance: 1,
                cells: vec![Some(Seed::Edge(1)), None, None, None, None],
            },
        ],
    };
    run(&plan, WriterProperties::default()).unwrap();
    // And directly: the refusal names NaN and GORILLA.
    let mut w = TsFileWriter::new(Vec::new(), WriterProperties::default()).unwrap();
    w.register(
        "root.p.d0",
        MeasurementSchema::new(
            "m0",
            DataType::DOUBLE,
            Encoding::GORILLA,
            Compression::UNCOMPRESSED,
        ),
    )
    .unwrap();
    let e = w
        .write_record("root.p.d0", 1, &[("m0", Value::Double(f64::NAN))])
        .unwrap_err()
        .to_string();
    assert!(e.contains("NaN") && e.contains("GORILLA"), "{e}");
}
