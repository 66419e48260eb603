//! Plain MQTT values: device and measurement come from the topic through a template, the
//! payload is one value.
//!
//! # Topic templates
//!
//! The grammar is `tsfiled_core::TopicTemplate`'s (one parser for the configuration and the
//! source). A template is a `/`-separated list of topic levels, each one of:
//! - a literal (must equal the topic level);
//! - `+`: any one level, ignored; `#` (last level only): any number of levels, ignored;
//! - `{device}`: one level, appended to the device path as one node;
//! - `{device+}`: one or more levels (as many as the rest of the template leaves), each
//!   appended as a node; at most one per template, not together with `#`;
//! - `{measurement}`: exactly once, the measurement name.
//!
//! The device path is the configured prefix (e.g. `root.plant`) followed by the captured
//! levels in order. Captured levels are sanitized into path nodes (see
//! [`sanitize_node`](crate::path::sanitize_node): `line-1` → `line_1`); an empty captured level
//! is rejected. Example: template `plant/{device}/{measurement}`, prefix `root.plant`, topic
//! `plant/press-7/temp` → device `root.plant.press_7`, measurement `temp`.
//!
//! # Payloads
//!
//! After trimming whitespace (and a UTF-8 BOM) the payload is, in this order:
//! - `{"ts": <integer>, "value": <scalar>}` (`timestamp` is accepted for `ts`; `ts` optional):
//!   the value with its own time, in [`TopicValueOptions::input_unit`];
//! - a JSON string `"..."` → Text;
//! - `true`/`false` (any case) → Bool;
//! - `null` → no point (nothing accepted, nothing rejected);
//! - an integer (`-12`) → Int (out of the i64 range: TypeMismatch);
//! - a decimal number (`1.5`, `2e3`), `nan`, `inf`, `-inf` (any case) → Float;
//! - anything else → Text (the trimmed payload).
//!
//! Without `ts`, the time is [`TopicValueOptions::now`] (the caller's clock, stored unit).

use tsfiled_core::TopicLevel;

use crate::error::Error;
use crate::model::{Batch, Field, FieldValue, Location, Record, RejectReason, TimeUnit};
use crate::path::{sanitize_measurement, sanitize_node_into, validate_device, MAX_DEVICE_BYTES};
use crate::reject::reject;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Level {
    Lit(String),
    Any,
    Rest,
    Device,
    DeviceMulti,
    Measurement,
}

/// A parsed topic template with its device-path prefix (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicTemplate {
    source: String,
    prefix: String,
    levels: Vec<Level>,
}

impl TopicTemplate {
    /// Parses `template` with the device-path `prefix` (`root`, or a valid device path; a bare
    /// `root` needs a `{device}` level).
    pub fn parse(template: &str, prefix: &str) -> Result<TopicTemplate, Error> {
        // The one grammar of topic templates (the configuration validates with it too).
        let levels: Vec<Level> = tsfiled_core::TopicTemplate::parse_levels(template)
            .map_err(|(level, message)| Error::TopicTemplate {
                template: template.to_owned(),
                level,
                message,
            })?
            .into_iter()
            .map(|l| match l {
                TopicLevel::Literal(s) => Level::Lit(s),
                TopicLevel::Skip => Level::Any,
                TopicLevel::Rest => Level::Rest,
                TopicLevel::Device => Level::Device,
                TopicLevel::DeviceMulti => Level::DeviceMulti,
                TopicLevel::Measurement => Level::Measurement,
            })
            .collect();
        let has_device = levels
            .iter()
            .any(|l| matches!(l, Level::Device | Level::DeviceMulti));
        if prefix != "root" || !has_device {
            validate_device(prefix).map_err(|reason| Error::Path {
                path: prefix.to_owned(),
                reason,
            })?;
        }
        Ok(TopicTemplate {
            source: template.to_owned(),
            prefix: prefix.to_owned(),
            levels,
        })
    }

    /// The template text.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The device-path prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The MQTT topic filter that covers every topic this template matches
    /// (`plant/{device}/{measurement}` → `plant/+/+`; from `{device+}` on: `#`).
    pub fn subscription_filter(&self) -> String {
        let mut out = Vec::with_capacity(self.levels.len());
        for l in &self.levels {
            match l {
                Level::Lit(s) => out.push(s.as_str()),
                Level::Any | Level::Device | Level::Measurement => out.push("+"),
                Level::Rest | Level::DeviceMulti => {
                    out.push("#");
                    break;
                }
            }
        }
        out.join("/")
    }

    /// Matches `topic`: the device path and measurement name, or why it does not match.
    pub fn resolve(&self, topic: &str) -> Result<(String, String), String> {
        let topic_levels: Vec<&str> = topic.split('/').collect();
        let fixed = self.levels.len() - 1; // all levels but a {device+} or `#`
        let multi = self.levels.contains(&Level::DeviceMulti);
        let rest = self.levels.contains(&Level::Rest);
        let ok_len = if multi {
            topic_levels.len() > fixed
        } else if rest {
            topic_levels.len() >= fixed
        } else {
            topic_levels.len() == self.levels.len()
        };
        if !ok_len {
            return Err(format!(
                "topic {topic:?} does not match the template {:?} (number of levels)",
                self.source
            ));
        }
        let mut device = String::with_capacity(self.prefix.len() + topic.len() + 4);
        device.push_str(&self.prefix);
        let mut measurement = None;
        let mut t = 0;
        for l in &self.levels {
            match l {
                Level::Rest => break,
                Level::DeviceMulti => {
                    let n = topic_levels.len().saturating_sub(fixed);
                    for level in topic_levels.get(t..t + n).unwrap_or(&[]) {
                        push_node(&mut device, level, topic)?;
                    }
                    t += n;
                    continue;
                }
                _ => {}
            }
            let Some(&level) = topic_levels.get(t) else {
                return Err(format!("topic {topic:?} has too few levels"));
            };
            t += 1;
            match l {
                Level::Lit(s) if s == level => {}
                Level::Lit(s) => {
                    return Err(format!(
                        "topic {topic:?} does not match the template {:?} (level {} is {level:?}, expected {s:?})",
                        self.source,
                        t - 1
                    ))
                }
                Level::Any => {}
                Level::Device => push_node(&mut device, level, topic)?,
                Level::Measurement => {
                    if level.is_empty() {
                        return Err(format!("topic {topic:?} has an empty measurement level"));
                    }
                    measurement = Some(sanitize_measurement(level));
                }
                Level::Rest | Level::DeviceMulti => {}
            }
        }
        if device.len() > MAX_DEVICE_BYTES {
            return Err(format!(
                "device path from topic {topic:?} is longer than {MAX_DEVICE_BYTES} bytes"
            ));
        }
        match measurement {
            Some(m) => Ok((device, m)),
            None => Err(format!("topic {topic:?} has no measurement level")),
        }
    }
}

fn push_node(device: &mut String, level: &str, topic: &str) -> Result<(), String> {
    if level.is_empty() {
        return Err(format!("topic {topic:?} has an empty device level"));
    }
    device.push('.');
    sanitize_node_into(level, false, device);
    Ok(())
}

/// Options of the plain-value parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicValueOptions {
    /// Unit of `ts` in `{"ts":..,"value":..}` payloads (default ms).
    pub input_unit: TimeUnit,
    /// The pipeline's stored precision.
    pub stored_unit: TimeUnit,
    /// Time for payloads without `ts`, in `stored_unit`.
    pub now: i64,
}

impl Default for TopicValueOptions {
    fn default() -> Self {
        TopicValueOptions {
            input_unit: TimeUnit::Millis,
            stored_unit: TimeUnit::Millis,
            now: 0,
        }
    }
}

/// Parses one MQTT message (see the module docs): a batch with one record, or one rejection
/// (location `topic` or `payload...`), or nothing for a `null` value. Never panics.
pub fn parse_topic_value(
    template: &TopicTemplate,
    topic: &str,
    payload: &[u8],
    opts: &TopicValueOptions,
) -> Batch {
    let mut batch = Batch::default();
    let (device, measurement) = match template.resolve(topic) {
        Ok(x) => x,
        Err(m) => {
            reject(
                &mut batch,
                RejectReason::InvalidPath,
                1,
                || Location::Topic,
                || m,
            );
            return batch;
        }
    };
    match parse_value(payload, opts) {
        Ok(None) => {}
        Ok(Some((time, value))) => batch.records.push(Record {
            device: device.into(),
            time,
            fields: vec![Field::new(measurement, value)],
        }),
        Err((location, reason, m)) => reject(&mut batch, reason, 1, || location, || m),
    }
    batch
}

/// Fuzzing entry point: the input's first line is the topic, the rest the payload; template
/// `plant/{device+}/{measurement}` with prefix `root.plant`.
pub fn parse_topic_value_default(input: &[u8]) -> Batch {
    let (topic, payload) = match input.iter().position(|&b| b == b'\n') {
        Some(i) => (&input[..i], &input[i + 1..]),
        None => (input, &[][..]),
    };
    let topic = String::from_utf8_lossy(topic);
    match TopicTemplate::parse("plant/{device+}/{measurement}", "root.plant") {
        Ok(t) => parse_topic_value(&t, &topic, payload, &TopicValueOptions::default()),
        Err(_) => Batch::default(),
    }
}

type ValueError = (Location, RejectReason, String);

/// The whole payload.
const PAYLOAD: Location = Location::Payload {
    key: None,
    at: None,
};

/// A key of the payload's JSON object.
fn payload_key(key: &'static str) -> Location {
    Location::Payload {
        key: Some(key),
        at: None,
    }
}

/// The payload's (time, value); `None` for `null`.
fn parse_value(
    payload: &[u8],
    opts: &TopicValueOptions,
) -> Result<Option<(i64, FieldValue)>, ValueError> {
    let perr = |m: &str| Err((PAYLOAD, RejectReason::Parse, m.to_owned()));
    let payload = payload.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(payload);
    let Ok(text) = std::str::from_utf8(payload) else {
        return perr("payload is not valid UTF-8");
    };
    let text = text.trim();
    if text.is_empty() {
        return perr("empty payload");
    }
    if text.starts_with('{') {
        return parse_object(text, opts);
    }
    let value = scalar(text)?;
    Ok(value.map(|v| (opts.now, v)))
}

fn json_error(e: &serde_json::Error) -> ValueError {
    (
        Location::Payload {
            key: None,
            at: Some((e.line() as u64, e.column() as u64)),
        },
        RejectReason::Parse,
        format!("not valid JSON: {e}"),
    )
}

/// A scalar payload (not an object).
fn scalar(text: &str) -> Result<Option<FieldValue>, ValueError> {
    let mismatch = |m: String| Err((PAYLOAD, RejectReason::TypeMismatch, m));
    if text.starts_with('"') {
        return match serde_json::from_str::<String>(text) {
            Ok(s) => Ok(Some(FieldValue::Text(s))),
            Err(e) => Err(json_error(&e)),
        };
    }
    if text.eq_ignore_ascii_case("true") {
        return Ok(Some(FieldValue::Bool(true)));
    }
    if text.eq_ignore_ascii_case("false") {
        return Ok(Some(FieldValue::Bool(false)));
    }
    if text == "null" {
        return Ok(None);
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return match text.parse::<i64>() {
            Ok(i) => Ok(Some(FieldValue::Int(i))),
            Err(_) => mismatch(format!("integer {text} is out of the INT64 range")),
        };
    }
    // Rust's float syntax is a decimal number or (any case, signed) `nan`, `inf`, `infinity`.
    if let Ok(f) = text.parse::<f64>() {
        let special = ["nan", "inf", "infinity"]
            .iter()
            .any(|s| digits.eq_ignore_ascii_case(s));
        if f.is_finite() || special {
            return Ok(Some(FieldValue::Float(f)));
        }
        return mismatch(format!("number {text} is out of the DOUBLE range"));
    }
    Ok(Some(FieldValue::Text(text.to_owned())))
}

/// `{"ts": .., "value": ..}`.
fn parse_object(
    text: &str,
    opts: &TopicValueOptions,
) -> Result<Option<(i64, FieldValue)>, ValueError> {
    let map: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(text).map_err(|e| json_error(&e))?;
    let ts = match (map.get("ts"), map.get("timestamp")) {
        (Some(_), Some(_)) => {
            return Err((
                PAYLOAD,
                RejectReason::Parse,
                "has both \"ts\" and \"timestamp\"".into(),
            ))
        }
        (Some(t), None) => Some(("ts", t)),
        (None, Some(t)) => Some(("timestamp", t)),
        (None, None) => None,
    };
    let time = match ts {
        None => opts.now,
        Some((key, t)) => {
            let terr = |m: String| (payload_key(key), RejectReason::InvalidTime, m);
            let t = t
                .as_i64()
                .ok_or_else(|| terr(format!("expected an integer timestamp, found {t}")))?;
            opts.input_unit
                .convert(t, opts.stored_unit)
                .ok_or_else(|| {
                    terr(format!(
                        "timestamp {t} {} overflows when converted to {}",
                        opts.input_unit, opts.stored_unit
                    ))
                })?
        }
    };
    let Some(value) = map.get("value") else {
        return Err((
            PAYLOAD,
            RejectReason::Parse,
            "expected {\"ts\": <integer>, \"value\": <value>}: missing key \"value\"".into(),
        ));
    };
    let mismatch = |m: String| (payload_key("value"), RejectReason::TypeMismatch, m);
    let value = match value {
        serde_json::Value::Null => return Ok(None),
        serde_json::Value::Bool(b) => FieldValue::Bool(*b),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => FieldValue::Int(i),
            (None, Some(u), _) => {
                return Err(mismatch(format!("integer {u} is out of the INT64 range")))
            }
            (None, None, Some(f)) => FieldValue::Float(f),
            _ => return Err(mismatch(format!("number {n} is not representable"))),
        },
        serde_json::Value::String(s) => FieldValue::Text(s.clone()),
        other => {
            let kind = if other.is_array() {
                "an array"
            } else {
                "an object"
            };
            return Err(mismatch(format!(
                "expected a number, boolean, string or null, found {kind}"
            )));
        }
    };
    Ok(Some((time, value)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use FieldValue::{Bool, Float, Int, Text};

    fn t(template: &str, prefix: &str) -> TopicTemplate {
        TopicTemplate::parse(template, prefix).unwrap()
    }

    fn one(
        tt: &TopicTemplate,
        topic: &str,
        payload: &str,
    ) -> Result<Record, (String, RejectReason)> {
        let opts = TopicValueOptions {
            input_unit: TimeUnit::Seconds,
            stored_unit: TimeUnit::Millis,
            now: 42,
        };
        let mut b = parse_topic_value(tt, topic, payload.as_bytes(), &opts);
        match (b.records.pop(), b.rejections.pop()) {
            (Some(r), None) => Ok(r),
            (None, Some(r)) => Err((r.location.to_string(), r.reason)),
            other => panic!("unexpected {other:?}"),
        }
    }

    fn value(payload: &str) -> Result<FieldValue, (String, RejectReason)> {
        let tt = t("p/{device}/{measurement}", "root.p");
        one(&tt, "p/d/m", payload).map(|mut r| r.fields.remove(0).value)
    }

    #[test]
    fn templates() {
        let tt = t("plant/{device}/{measurement}", "root.plant");
        let r = one(&tt, "plant/press-7/temp", "21.5").unwrap();
        assert_eq!(&*r.device, "root.plant.press_7");
        assert_eq!(r.time, 42);
        assert_eq!(r.fields, vec![Field::new("temp", Float(21.5))]);
        assert_eq!(tt.subscription_filter(), "plant/+/+");

        let tt = t("site/{device+}/{measurement}", "root.sg");
        assert_eq!(
            tt.resolve("site/a/b/c/m"),
            Ok(("root.sg.a.b.c".into(), "m".into()))
        );
        assert_eq!(tt.resolve("site/a/m"), Ok(("root.sg.a".into(), "m".into())));
        assert!(tt.resolve("site/m").is_err());
        assert_eq!(tt.subscription_filter(), "site/#");

        let tt = t("+/{device}/x/{device}/{measurement}/#", "root");
        assert_eq!(
            tt.resolve("any/a/x/b/time/extra/more"),
            Ok(("root.a.b".into(), "_time".into()))
        );
        assert_eq!(
            tt.resolve("any/a/x/b/m"),
            Ok(("root.a.b".into(), "m".into()))
        );
        assert!(tt
            .resolve("any/a/y/b/m")
            .unwrap_err()
            .contains("expected \"x\""));
        assert_eq!(tt.subscription_filter(), "+/+/x/+/+/#");

        let tt = t("gw/{measurement}", "root.gw.d1");
        assert_eq!(
            tt.resolve("gw/t.c"),
            Ok(("root.gw.d1".into(), "t_c".into()))
        );
        assert!(tt.resolve("gw/").unwrap_err().contains("empty measurement"));
        assert!(tt.resolve("gw/a/b").is_err());
        let tt = t("p/{device}/{measurement}", "root.p");
        assert!(tt.resolve("p//m").unwrap_err().contains("empty device"));
        assert_eq!(
            one(&tt, "q/d/m", "1"),
            Err(("topic".into(), RejectReason::InvalidPath))
        );
    }

    #[test]
    fn template_errors() {
        for (tpl, prefix) in [
            ("p/{device}", "root.p"),
            ("p/{measurement}/{measurement}", "root.p"),
            ("#/{measurement}", "root.p"),
            ("{device+}/{device+}/{measurement}", "root.p"),
            ("{device+}/{measurement}/#", "root.p"),
            ("p/a+/{measurement}", "root.p"),
            ("p/{dev}/{measurement}", "root.p"),
            ("p/{measurement}", "root"),
            ("{device}/{measurement}", "sg"),
            ("{device}/{measurement}", "root.a-b"),
        ] {
            assert!(TopicTemplate::parse(tpl, prefix).is_err(), "{tpl} {prefix}");
        }
        assert!(matches!(
            TopicTemplate::parse("{device}/{measurement}", "root.a-b"),
            Err(Error::Path { .. })
        ));
    }

    #[test]
    fn scalar_payloads() {
        assert_eq!(value(" 12 \n"), Ok(Int(12)));
        assert_eq!(value("-9223372036854775808"), Ok(Int(i64::MIN)));
        assert_eq!(value("+3"), Ok(Int(3)));
        assert_eq!(value("1.5"), Ok(Float(1.5)));
        assert_eq!(value("-2e3"), Ok(Float(-2000.0)));
        assert_eq!(value(".5"), Ok(Float(0.5)));
        assert!(matches!(value("NaN"), Ok(Float(f)) if f.is_nan()));
        assert_eq!(value("-inf"), Ok(Float(f64::NEG_INFINITY)));
        assert_eq!(value("true"), Ok(Bool(true)));
        assert_eq!(value("FALSE"), Ok(Bool(false)));
        assert_eq!(value("\"a\\\"b\""), Ok(Text("a\"b".into())));
        assert_eq!(value("on"), Ok(Text("on".into())));
        assert_eq!(value("12 °C"), Ok(Text("12 °C".into())));
        assert_eq!(value("1e"), Ok(Text("1e".into())));
        assert_eq!(value("\u{feff}7"), Ok(Int(7)));
        assert_eq!(
            value("9223372036854775808"),
            Err(("payload".into(), RejectReason::TypeMismatch))
        );
        assert_eq!(
            value("1e999"),
            Err(("payload".into(), RejectReason::TypeMismatch))
        );
        assert_eq!(value("  "), Err(("payload".into(), RejectReason::Parse)));
        assert_eq!(
            value("\"abc"),
            Err(("payload line 1, column 4".into(), RejectReason::Parse))
        );
        let b = parse_topic_value(
            &t("p/{device}/{measurement}", "root.p"),
            "p/d/m",
            b"\xff\xfe",
            &TopicValueOptions::default(),
        );
        assert_eq!(b.rejections[0].reason, RejectReason::Parse);
        assert!(b.rejections[0].message.contains("UTF-8"));
        // null: nothing at all.
        let b = parse_topic_value(
            &t("p/{device}/{measurement}", "root.p"),
            "p/d/m",
            b"null",
            &TopicValueOptions::default(),
        );
        assert_eq!(b, Batch::default());
    }

    #[test]
    fn object_payloads() {
        let tt = t("p/{device}/{measurement}", "root.p");
        let r = one(&tt, "p/d/m", r#"{"ts": 5, "value": 1.25}"#).unwrap();
        assert_eq!((r.time, &r.fields[0].value), (5000, &Float(1.25)));
        let r = one(
            &tt,
            "p/d/m",
            r#"{"timestamp": -1, "value": "x", "unit": "C"}"#,
        )
        .unwrap();
        assert_eq!((r.time, &r.fields[0].value), (-1000, &Text("x".into())));
        let r = one(&tt, "p/d/m", r#"{"value": 3}"#).unwrap();
        assert_eq!((r.time, &r.fields[0].value), (42, &Int(3)));
        assert_eq!(value(r#"{"value": true}"#), Ok(Bool(true)));
        for (payload, loc, reason) in [
            (r#"{"ts": 1}"#, "payload", RejectReason::Parse),
            (
                r#"{"ts": 1, "timestamp": 2, "value": 1}"#,
                "payload",
                RejectReason::Parse,
            ),
            (
                r#"{"ts": 1.5, "value": 1}"#,
                "payload.ts",
                RejectReason::InvalidTime,
            ),
            (
                r#"{"ts": "1", "value": 1}"#,
                "payload.ts",
                RejectReason::InvalidTime,
            ),
            (
                r#"{"timestamp": 9223372036854775807, "value": 1}"#,
                "payload.timestamp",
                RejectReason::InvalidTime,
            ),
            (
                r#"{"ts": 1, "value": [1]}"#,
                "payload.value",
                RejectReason::TypeMismatch,
            ),
            (
                r#"{"ts": 1, "value": {}}"#,
                "payload.value",
                RejectReason::TypeMismatch,
            ),
            (
                r#"{"ts": 1, "value": 18446744073709551615}"#,
                "payload.value",
                RejectReason::TypeMismatch,
            ),
            (
                r#"{"ts": 1, "value": 1"#,
                "payload line 1, column 20",
                RejectReason::Parse,
            ),
        ] {
            assert_eq!(
                one(&tt, "p/d/m", payload),
                Err((loc.into(), reason)),
                "{payload}"
            );
        }
        let b = parse_topic_value(
            &tt,
            "p/d/m",
            br#"{"ts":1,"value":null}"#,
            &TopicValueOptions::default(),
        );
        assert_eq!(b, Batch::default());
    }

    #[test]
    fn deep_payload_is_an_error() {
        let deep = format!("{{\"value\":{}", "[".repeat(100_000));
        let e = value(&deep).unwrap_err();
        assert_eq!(e.1, RejectReason::Parse);
        assert!(e.0.starts_with("payload line 1"), "{e:?}");
    }

    /// An integer value above the INT64 range is named as such (JSON has no such limit).
    #[test]
    fn object_integer_above_int64() {
        let tt = t("p/{device}/{measurement}", "root.p");
        let b = parse_topic_value(
            &tt,
            "p/d/m",
            br#"{"value": 18446744073709551615}"#,
            &TopicValueOptions::default(),
        );
        assert_eq!(b.records, vec![]);
        let r = &b.rejections[0];
        assert_eq!(
            (r.location.to_string(), r.reason),
            ("payload.value".to_string(), RejectReason::TypeMismatch)
        );
        assert!(
            r.message
                .contains("integer 18446744073709551615 is out of the INT64 range"),
            "{r}"
        );
    }

    /// The template text and the prefix, as given.
    #[test]
    fn template_text_and_prefix() {
        let tt = t("plant/{device}/{measurement}", "root.plant");
        assert_eq!(tt.as_str(), "plant/{device}/{measurement}");
        assert_eq!(tt.prefix(), "root.plant");
    }

    /// A literal level that differs is named by its index (from 0) in the message.
    #[test]
    fn literal_mismatch_names_the_level() {
        let tt = t("+/{device}/x/{device}/{measurement}", "root");
        let e = tt.resolve("any/a/y/b/m").unwrap_err();
        assert!(e.contains("(level 2 is \"y\", expected \"x\")"), "{e}");
    }

    /// A device path from a topic may be as long as IoTDB's limit (1024 bytes), not longer.
    #[test]
    fn device_path_length_limit() {
        let tt = t("p/{device+}/{measurement}", "root.p");
        // `root.p` (6 bytes), then `.` and a level four times: 6 + 3 × 255 + 253 = 1024.
        let a = "a".repeat(254);
        let topic = |last: usize| format!("p/{a}/{a}/{a}/{}/m", "b".repeat(last));
        let (device, m) = tt.resolve(&topic(252)).unwrap();
        assert_eq!(device, format!("root.p.{a}.{a}.{a}.{}", "b".repeat(252)));
        assert_eq!(device.len(), 1024);
        assert_eq!(m, "m");
        let e = tt.resolve(&topic(253)).unwrap_err();
        assert!(e.contains("longer than 1024 bytes"), "{e}");
    }

    /// A sign alone is no number: text, like anything else that is not one of the forms.
    #[test]
    fn sign_alone_is_text() {
        assert_eq!(value("+"), Ok(Text("+".into())));
        assert_eq!(value("-"), Ok(Text("-".into())));
        assert_eq!(value("-e"), Ok(Text("-e".into())));
        assert_eq!(value("1.2.3"), Ok(Text("1.2.3".into())));
        assert_eq!(value("+inf"), Ok(Float(f64::INFINITY)));
        assert_eq!(value("Infinity"), Ok(Float(f64::INFINITY)));
    }

    /// The fuzzing entry point (its documentation): the first line is the topic, the rest
    /// the payload; template `plant/{device+}/{measurement}` under `root.plant`.
    #[test]
    fn default_entry_point() {
        let b = parse_topic_value_default(b"plant/hall-1/press/temp\n\xEF\xBB\xBF21.5");
        assert_eq!(b.rejections, vec![]);
        assert_eq!(
            b.records,
            vec![Record {
                device: "root.plant.hall_1.press".into(),
                time: 0,
                fields: vec![Field::new("temp", Float(21.5))],
            }]
        );
        // No second line: an empty payload.
        let b = parse_topic_value_default(b"plant/a/temp");
        assert_eq!(b.records, vec![]);
        assert_eq!(
            (b.rejections[0].location.to_string(), b.rejections[0].reason),
            ("payload".to_string(), RejectReason::Parse)
        );
        assert!(b.rejections[0].message.contains("empty"));
    }

    proptest! {
        #[test]
        fn never_panics_on_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let b = parse_topic_value_default(&bytes);
            prop_assert!(b.records.len() + b.rejections.len() <= 1);
            for r in &b.records {
                prop_assert_eq!(validate_device(&r.device), Ok(()));
            }
        }

        #[test]
        fn never_panics_on_templates(tpl in "[a-z+#/{}]{0,30}", topic in "[a-z/]{0,20}") {
            if let Ok(tt) = TopicTemplate::parse(&tpl, "root.p") {
                let _ = tt.resolve(&topic);
                let _ = tt.subscription_filter();
            }
        }

        #[test]
        fn values_round_trip(v in prop_oneof![
            any::<i64>().prop_map(Int),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Float),
            any::<bool>().prop_map(Bool),
            any::<String>().prop_map(Text),
        ]) {
            let payload = match &v {
                Int(i) => i.to_string(),
                Float(f) => format!("{f:?}"),
                Bool(b) => b.to_string(),
                Text(s) => serde_json::to_string(s).unwrap(),
            };
            prop_assert_eq!(value(&payload), Ok(v));
        }
    }
}
