//! Parse throughput of the payload parsers (points or fields per second).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use tsfiled_connectors::iotdb_json::{self, JsonOptions};
use tsfiled_connectors::line_protocol::{self, LineProtocolOptions};
use tsfiled_connectors::{DeviceTemplate, FieldValue, TimeUnit};

/// Deterministic pseudo-random values.
fn lcg(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *state >> 33
}

/// A batch-form payload: `devices` records of `measurements` × `times` points each.
fn json_tablets(devices: usize, measurements: usize, times: usize) -> String {
    let mut rng = 42;
    let mut s = String::from("[");
    for d in 0..devices {
        if d > 0 {
            s.push(',');
        }
        let names: Vec<String> = (0..measurements).map(|m| format!("s{m}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let ts: Vec<i64> = (0..times as i64)
            .map(|t| 1_600_000_000_000 + t * 1000)
            .collect();
        let rows: Vec<Vec<Option<FieldValue>>> = (0..times)
            .map(|_| {
                (0..measurements)
                    .map(|m| {
                        let r = lcg(&mut rng);
                        Some(if m % 2 == 0 {
                            FieldValue::Float((r % 100_000) as f64 / 1000.0)
                        } else {
                            FieldValue::Int((r % 100_000) as i64)
                        })
                    })
                    .collect()
            })
            .collect();
        iotdb_json::write_tablet(&mut s, &format!("root.sg.d{d}"), &ts, &names, &rows);
    }
    s.push(']');
    s
}

fn bench_json(c: &mut Criterion) {
    let opts = JsonOptions::default();
    let mut g = c.benchmark_group("iotdb_json");
    for (name, payload) in [
        ("tablet_1x10x100", json_tablets(1, 10, 100)),
        ("tablet_10x10x10", json_tablets(10, 10, 10)),
        ("tablet_1x1x1000", json_tablets(1, 1, 1000)),
    ] {
        let points = iotdb_json::parse_iotdb_json(payload.as_bytes(), &opts).point_count();
        assert_eq!(points, 1000);
        g.throughput(Throughput::Elements(points));
        g.bench_function(name, |b| {
            b.iter(|| iotdb_json::parse_iotdb_json(black_box(payload.as_bytes()), &opts))
        });
    }
    // Single-record form: 100 records of 10 points.
    let mut s = String::from("[");
    let b = iotdb_json::parse_iotdb_json(json_tablets(1, 10, 100).as_bytes(), &opts);
    for (i, r) in b.records.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        iotdb_json::write_record(&mut s, r);
    }
    s.push(']');
    g.throughput(Throughput::Elements(1000));
    g.bench_function("records_100x10", |b| {
        b.iter(|| iotdb_json::parse_iotdb_json(black_box(s.as_bytes()), &opts))
    });
    g.finish();
}

/// Telegraf-like line protocol: `lines` lines of `fields` fields over `series` series.
pub fn line_payload(lines: usize, fields: usize, series: usize, floats: bool) -> String {
    let mut rng = 7;
    let mut s = String::new();
    let names: Vec<String> = (0..fields).map(|f| format!("usage_{f}")).collect();
    for l in 0..lines {
        let host = format!("gw-{}", l % series);
        let cpu = format!("cpu{}", (l / series) % 4);
        let values: Vec<FieldValue> = (0..fields)
            .map(|f| {
                let r = lcg(&mut rng);
                if floats || f % 2 == 0 {
                    FieldValue::Float((r % 100_000) as f64 / 1000.0)
                } else {
                    FieldValue::Int((r % 100_000) as i64)
                }
            })
            .collect();
        let fv: Vec<(&str, &FieldValue)> = names
            .iter()
            .map(String::as_str)
            .zip(values.iter())
            .collect();
        line_protocol::write_line(
            &mut s,
            "cpu",
            &[("cpu", &cpu), ("host", &host)],
            &fv,
            Some(1_600_000_000_000_000_000 + l as i64 * 1_000_000_000),
        );
    }
    s
}

fn bench_line_protocol(c: &mut Criterion) {
    let template = DeviceTemplate::default();
    let opts = LineProtocolOptions {
        device_template: &template,
        precision: TimeUnit::Nanos,
        stored_unit: TimeUnit::Millis,
        now: 0,
    };
    let mut g = c.benchmark_group("line_protocol");
    for (name, payload) in [
        ("100x10_mixed_10series", line_payload(100, 10, 10, false)),
        ("100x10_floats_10series", line_payload(100, 10, 10, true)),
        ("1000x1_mixed_100series", line_payload(1000, 1, 100, false)),
    ] {
        let fields = line_protocol::parse_line_protocol(payload.as_bytes(), &opts).point_count();
        assert!(fields >= 1000);
        g.throughput(Throughput::Elements(fields));
        g.bench_function(name, |b| {
            b.iter(|| line_protocol::parse_line_protocol(black_box(payload.as_bytes()), &opts))
        });
    }
    g.finish();
}

criterion_group!(benches, bench_json, bench_line_protocol);
criterion_main!(benches);
