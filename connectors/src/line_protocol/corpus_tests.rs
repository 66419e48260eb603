//! The InfluxDB line-protocol parser against influxdata's published test cases
//! (`connectors/tests/fixtures/line-protocol/cases.json`, see the README there): every case runs
//! through our parser and must give the published parse, or, for the cases listed in
//! `deviations.json`, the behaviour given there with its reason.
//!
//! How a published point maps to ours: the device is the default template's
//! `root.lp.{measurement}.{tags}` (tag values ordered by tag key) with each name made a
//! valid IoTDB node, field keys become measurement names the same way (the IoTDB path
//! rules, [`crate::path`]); times are in ns; `float`, `int`, `string` and
//! `bool` values are FLOAT, INT, TEXT and BOOLEAN (with the type hint the syntax declares:
//! `i`/`u` INT64, quoted TEXT, booleans BOOLEAN); a `uint` is an INT when it fits. A
//! published error means at least one line of the input is rejected (we reject lines, the
//! rest of the payload still ingests).

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::{parse_line_protocol, LineProtocolOptions};
use crate::path::{sanitize_measurement, sanitize_node};
use crate::{Batch, DataType, DeviceTemplate, Field, FieldValue, Record, RejectReason, TimeUnit};
use serde_json::Value as Json;

fn fixture(name: &str) -> Json {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/line-protocol")
        .join(name);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn unit(p: &str) -> TimeUnit {
    match p {
        "s" => TimeUnit::Seconds,
        "ms" => TimeUnit::Millis,
        "us" => TimeUnit::Micros,
        "ns" => TimeUnit::Nanos,
        other => panic!("precision {other}"),
    }
}

fn input(case: &Json) -> Vec<u8> {
    match (case.get("input"), case.get("input_bytes")) {
        (Some(Json::String(s)), _) => s.as_bytes().to_vec(),
        (_, Some(Json::Array(b))) => b.iter().map(|x| x.as_u64().unwrap() as u8).collect(),
        _ => panic!("case without input: {case}"),
    }
}

fn parse(case: &Json) -> Batch {
    let t = DeviceTemplate::default();
    let opts = LineProtocolOptions {
        device_template: &t,
        precision: unit(case["precision"].as_str().unwrap()),
        stored_unit: TimeUnit::Nanos,
        now: case["default_time"].as_i64().unwrap(),
    };
    parse_line_protocol(&input(case), &opts)
}

/// A published value as ours, with the type the syntax declares (`1i`/`1u` INT64, a
/// quoted string TEXT, `true` BOOLEAN; a plain number declares nothing); `None` for a
/// `uint` beyond INT64 (see the deviations).
fn value(v: &Json) -> Option<(FieldValue, Option<DataType>)> {
    let (kind, x) = v.as_object().unwrap().iter().next().unwrap();
    Some(match kind.as_str() {
        "float" => (FieldValue::Float(x.as_f64().unwrap()), None),
        "int" => (FieldValue::Int(x.as_i64().unwrap()), Some(DataType::INT64)),
        "uint" => (
            FieldValue::Int(i64::try_from(x.as_u64().unwrap()).ok()?),
            Some(DataType::INT64),
        ),
        "string" => (
            FieldValue::Text(x.as_str().unwrap().to_string()),
            Some(DataType::TEXT),
        ),
        "bool" => (
            FieldValue::Bool(x.as_bool().unwrap()),
            Some(DataType::BOOLEAN),
        ),
        other => panic!("value kind {other}"),
    })
}

/// The records the published points map to.
fn expected(points: &[Json]) -> Vec<Record> {
    points
        .iter()
        .map(|p| {
            let mut device = format!(
                "root.lp.{}",
                sanitize_node(p["measurement"].as_str().unwrap())
            );
            let tags: BTreeMap<&str, &str> = p["tags"]
                .as_array()
                .unwrap()
                .iter()
                .map(|kv| (kv[0].as_str().unwrap(), kv[1].as_str().unwrap()))
                .collect();
            for v in tags.values() {
                device.push('.');
                device.push_str(&sanitize_node(v));
            }
            Record {
                device: device.into(),
                time: p["time"].as_i64().unwrap(),
                fields: p["fields"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|kv| {
                        let (v, hint) = value(&kv[1])?;
                        let mut f = Field::new(sanitize_measurement(kv[0].as_str().unwrap()), v);
                        f.type_hint = hint;
                        Some(f)
                    })
                    .collect(),
            }
        })
        .collect()
}

fn reason(name: &str) -> RejectReason {
    match name {
        "parse" => RejectReason::Parse,
        "type_mismatch" => RejectReason::TypeMismatch,
        "invalid_time" => RejectReason::InvalidTime,
        "invalid_path" => RejectReason::InvalidPath,
        other => panic!("reason {other}"),
    }
}

#[test]
fn every_published_case() {
    let cases = fixture("cases.json");
    let cases = cases.as_array().unwrap();
    let deviations = fixture("deviations.json");
    let deviations = deviations.as_object().unwrap();
    assert!(cases.len() >= 200, "{} cases", cases.len());
    let mut failures = Vec::new();
    let mut used = 0;
    for case in cases {
        let key = case["key"].as_str().unwrap();
        let b = parse(case);
        let shown = String::from_utf8_lossy(&input(case)).into_owned();
        let problem = if let Some(dev) = deviations.get(key) {
            used += 1;
            // Ours differs on purpose: the records and rejection reasons listed instead.
            let want_records = expected(dev["points"].as_array().unwrap());
            let want_reasons: Vec<RejectReason> = dev["rejected"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| reason(r.as_str().unwrap()))
                .collect();
            let got_reasons: Vec<RejectReason> = b.rejections.iter().map(|r| r.reason).collect();
            (b.records != want_records || got_reasons != want_reasons).then(|| {
                format!(
                    "deviation ({}): records {:?} rejections {:?}",
                    dev["reason"], b.records, b.rejections
                )
            })
        } else if let Some(points) = case.get("points") {
            let want = expected(points.as_array().unwrap());
            (b.records != want || !b.rejections.is_empty()).then(|| {
                format!(
                    "want {want:?}\n   got {:?} rejections {:?}",
                    b.records, b.rejections
                )
            })
        } else {
            b.rejections.is_empty().then(|| {
                format!(
                    "published error {:?}, but nothing rejected: {:?}",
                    case["error"], b.records
                )
            })
        };
        if let Some(p) = problem {
            failures.push(format!("{key} {shown:?}: {p}"));
        }
    }
    assert_eq!(used, deviations.len(), "a deviation names no case");
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
