//! Encode and decode throughput of every encoding the 0.10 writer accepts, 100k values
//! per iteration, through the same factories the file writer and reader use.

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use std::hint::black_box;
use std::time::Duration;
use tsfile::basic::{Column, DataType, Encoding, Value};
use tsfile::encoding::{
    decode_times, decode_values, get_encoder, time_encoder, DEFAULT_FLOAT_PRECISION,
};

const N: usize = 100_000;

/// Deterministic xorshift64* generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Typical data for each type and encoding (sensor-like, as in the benchmark workload).
fn column(t: DataType, e: Encoding) -> Column {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    match t {
        DataType::BOOLEAN => {
            let mut v = false;
            Column::Boolean(
                (0..N)
                    .map(|_| {
                        if r.below(20) == 0 {
                            v = !v;
                        }
                        v
                    })
                    .collect(),
            )
        }
        DataType::INT32 => Column::Int32(match e {
            Encoding::REGULAR => (0..N as i32).map(|i| 1000 + 5 * i).collect(),
            _ => {
                let mut x = 500i32;
                (0..N)
                    .map(|_| {
                        if r.below(4) == 0 {
                            x += r.below(21) as i32 - 10;
                        }
                        x
                    })
                    .collect()
            }
        }),
        DataType::INT64 => Column::Int64(match e {
            Encoding::REGULAR => (0..N as i64)
                .map(|i| 1_593_302_400_000 + 1000 * i)
                .collect(),
            _ => {
                let mut x = 1_000_000i64;
                (0..N)
                    .map(|_| {
                        x += r.below(2001) as i64 - 1000;
                        x
                    })
                    .collect()
            }
        }),
        DataType::FLOAT => {
            let mut x = 20.0f64;
            Column::Float(
                (0..N)
                    .map(|_| {
                        x += (r.below(21) as f64 - 10.0) / 100.0;
                        ((x * 100.0).round() / 100.0) as f32
                    })
                    .collect(),
            )
        }
        DataType::DOUBLE => {
            let mut x = 20.0f64;
            Column::Double(
                (0..N)
                    .map(|_| {
                        x += (r.below(21) as f64 - 10.0) / 100.0;
                        (x * 100.0).round() / 100.0
                    })
                    .collect(),
            )
        }
        _ => Column::Text(
            (0..N)
                .map(|i| format!("value-{}", i as u64 * r.below(1000)).into_bytes())
                .collect(),
        ),
    }
}

/// Encodes the whole column as one page with a fresh encoder.
fn encode(t: DataType, e: Encoding, col: &Column, out: &mut Vec<u8>) {
    let mut enc = get_encoder(e, t, DEFAULT_FLOAT_PRECISION).unwrap();
    let r = match col {
        Column::Boolean(v) => v.iter().try_for_each(|x| enc.encode_bool(*x, out)),
        Column::Int32(v) => v.iter().try_for_each(|x| enc.encode_i32(*x, out)),
        Column::Int64(v) => v.iter().try_for_each(|x| enc.encode_i64(*x, out)),
        Column::Float(v) => v.iter().try_for_each(|x| enc.encode_f32(*x, out)),
        Column::Double(v) => v.iter().try_for_each(|x| enc.encode_f64(*x, out)),
        Column::Text(v) => v.iter().try_for_each(|x| enc.encode_binary(x, out)),
    };
    r.unwrap();
    enc.flush(out).unwrap();
}

fn bench_pair(
    g: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>,
    t: DataType,
    e: Encoding,
) {
    let col = column(t, e);
    let mut encoded = Vec::new();
    encode(t, e, &col, &mut encoded);
    let mut out = Vec::with_capacity(encoded.len() + 64);
    g.bench_function(format!("encode {e} {t}"), |b| {
        b.iter(|| {
            out.clear();
            encode(t, e, black_box(&col), &mut out);
            black_box(out.len())
        })
    });
    // Sanity check (independent of which benches a filter selects).
    let mut back = Column::new(t);
    decode_values(e, t, &encoded, N, &mut back).unwrap();
    assert_eq!(back.len(), N);
    let lossy = matches!(e, Encoding::RLE | Encoding::TS_2DIFF)
        && matches!(t, DataType::FLOAT | DataType::DOUBLE);
    if !lossy {
        let (a, b) = (col.get(N - 1), back.get(N - 1));
        assert!(a.zip(b).is_some_and(|(a, b): (Value, Value)| a.bit_eq(&b)));
    }
    g.bench_function(format!("decode {e} {t}"), |b| {
        b.iter(|| {
            back = Column::new(t);
            decode_values(e, t, black_box(&encoded), N, &mut back).unwrap();
            black_box(back.len())
        })
    });
}

fn encoded_times(times: &[i64]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut e = time_encoder();
    for x in times {
        e.encode_i64(*x, &mut out).unwrap();
    }
    e.flush(&mut out).unwrap();
    out
}

fn encodings(c: &mut Criterion) {
    let mut g = c.benchmark_group("encodings");
    g.throughput(Throughput::Elements(N as u64))
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));

    // The time column (TS_2DIFF INT64 through the dedicated entry points).
    let mut r = Rng(1);
    let mut t = 1_593_302_400_000i64;
    let times: Vec<i64> = (0..N)
        .map(|_| {
            t += 1000 + r.below(40) as i64;
            t
        })
        .collect();
    let mut encoded = encoded_times(&times);
    g.bench_function("encode time column", |b| {
        b.iter(|| {
            encoded.clear();
            let mut e = time_encoder();
            for x in black_box(&times) {
                e.encode_i64(*x, &mut encoded).unwrap();
            }
            e.flush(&mut encoded).unwrap();
            black_box(encoded.len())
        })
    });
    let mut back = Vec::with_capacity(N);
    decode_times(&encoded_times(&times), &mut back).unwrap();
    assert_eq!(back, times);
    g.bench_function("decode time column", |b| {
        b.iter(|| {
            back.clear();
            decode_times(black_box(&encoded), &mut back).unwrap();
            black_box(back.len())
        })
    });

    for t in DataType::ALL {
        for e in Encoding::ALL {
            if e.supports(*t) {
                bench_pair(&mut g, *t, *e);
            }
        }
    }
    g.finish();
}

criterion_group!(benches, encodings);
criterion_main!(benches);
