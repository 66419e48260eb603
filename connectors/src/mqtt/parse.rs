//! Payload parsing per topic filter: each filter's [`PayloadFormat`] becomes a
//! [`PayloadParser`], and an incoming topic is routed to the first filter it matches.

use crate::iotdb_json::{parse_iotdb_json, JsonOptions};
use crate::line_protocol::{parse_line_protocol, LineProtocolOptions};
use crate::model::{Batch, Field, FieldValue, Record, RejectReason, Rejection, TimeUnit};
use crate::path::{sanitize_measurement, sanitize_node, validate_device, DeviceTemplate};

use super::error::MqttError;
use super::options::{split_shared, topic_matches, MqttSourceOptions, PayloadFormat};

/// Turns one message into records. `now` is the arrival time in the stored unit (for
/// payloads without timestamps).
pub(crate) trait PayloadParser: Send + Sync {
    fn parse(&self, topic: &str, payload: &[u8], now: i64) -> Batch;
}

struct IotdbJson(JsonOptions);

impl PayloadParser for IotdbJson {
    fn parse(&self, _topic: &str, payload: &[u8], _now: i64) -> Batch {
        parse_iotdb_json(payload, &self.0)
    }
}

struct LineProtocol {
    template: DeviceTemplate,
    precision: TimeUnit,
    stored: TimeUnit,
}

impl PayloadParser for LineProtocol {
    fn parse(&self, _topic: &str, payload: &[u8], now: i64) -> Batch {
        parse_line_protocol(
            payload,
            &LineProtocolOptions {
                device_template: &self.template,
                precision: self.precision,
                stored_unit: self.stored,
                now,
            },
        )
    }
}

/// A level of a topic template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Level {
    Lit(String),
    Device,
    Measurement,
    Skip,
}

/// A plain value whose device and measurement come from the topic.
#[derive(Debug)]
struct TopicValue {
    levels: Vec<Level>,
    prefix: String,
}

fn parse_template(template: &str) -> Result<Vec<Level>, String> {
    let mut levels = Vec::new();
    for (i, l) in template.split('/').enumerate() {
        levels.push(match l {
            "{device}" => Level::Device,
            "{measurement}" => Level::Measurement,
            "+" | "_" => Level::Skip,
            l if l.contains(['{', '}', '#', '+']) => {
                return Err(format!(
                    "topic template {template:?}, level {i}: {l:?}; expected literal text, \
                     {{device}}, {{measurement}}, + or _"
                ))
            }
            l => Level::Lit(l.to_string()),
        });
    }
    if !levels.contains(&Level::Measurement) {
        return Err(format!(
            "topic template {template:?} needs a {{measurement}} level"
        ));
    }
    if levels.iter().filter(|l| **l == Level::Measurement).count() > 1 {
        return Err(format!(
            "topic template {template:?} has more than one {{measurement}}"
        ));
    }
    Ok(levels)
}

/// Checks a topic-value template and its path prefix.
pub(crate) fn check_topic_value(template: &str, prefix: &str) -> Result<(), String> {
    parse_template(template)?;
    validate_device(prefix).map_err(|e| format!("path prefix {prefix:?}: {e}"))
}

/// Checks a line-protocol device template.
pub(crate) fn check_device_template(template: &str) -> Result<(), String> {
    DeviceTemplate::parse(template)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

fn reject_all(reason: RejectReason, location: &str, message: String) -> Batch {
    Batch {
        records: Vec::new(),
        rejections: vec![Rejection {
            location: location.to_string(),
            reason,
            message,
            points: 1,
        }],
    }
}

/// Parses a plain value: `true`/`false` (any case), an integer, a float, else text (a JSON
/// string literal is unquoted).
fn plain_value(s: &str) -> Option<FieldValue> {
    let t = s.trim();
    if t.is_empty() {
        return None;
    }
    if t.eq_ignore_ascii_case("true") {
        return Some(FieldValue::Bool(true));
    }
    if t.eq_ignore_ascii_case("false") {
        return Some(FieldValue::Bool(false));
    }
    if let Ok(i) = t.parse::<i64>() {
        return Some(FieldValue::Int(i));
    }
    let numeric = t
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'));
    if numeric {
        if let Ok(f) = t.parse::<f64>() {
            if f.is_finite() {
                return Some(FieldValue::Float(f));
            }
        }
    }
    if t.len() >= 2 && t.starts_with('"') && t.ends_with('"') {
        if let Ok(s) = serde_json::from_str::<String>(t) {
            return Some(FieldValue::Text(s));
        }
    }
    Some(FieldValue::Text(t.to_string()))
}

impl PayloadParser for TopicValue {
    fn parse(&self, topic: &str, payload: &[u8], now: i64) -> Batch {
        let parts: Vec<&str> = topic.split('/').collect();
        if parts.len() < self.levels.len()
            || (parts.len() > self.levels.len() && self.levels.last() != Some(&Level::Device))
        {
            return reject_all(
                RejectReason::InvalidPath,
                "topic",
                format!("topic {topic:?} does not fit the template"),
            );
        }
        let mut device = self.prefix.clone();
        let mut measurement = String::new();
        for (i, level) in self.levels.iter().enumerate() {
            let last = i + 1 == self.levels.len();
            let taken: &[&str] = if last && *level == Level::Device {
                parts.get(i..).unwrap_or(&[])
            } else {
                parts.get(i..i + 1).unwrap_or(&[])
            };
            match level {
                Level::Lit(l) => {
                    if taken.first() != Some(&l.as_str()) {
                        return reject_all(
                            RejectReason::InvalidPath,
                            "topic",
                            format!("topic {topic:?}: level {i} is not {l:?}"),
                        );
                    }
                }
                Level::Skip => {}
                Level::Device => {
                    for p in taken {
                        device.push('.');
                        device.push_str(&sanitize_node(p));
                    }
                }
                Level::Measurement => {
                    measurement = sanitize_measurement(taken.first().copied().unwrap_or(""));
                }
            }
        }
        if let Err(e) = validate_device(&device) {
            return reject_all(
                RejectReason::InvalidPath,
                "topic",
                format!("device {device:?} from topic {topic:?}: {e}"),
            );
        }
        let text = match std::str::from_utf8(payload) {
            Ok(t) => t,
            Err(e) => {
                return reject_all(
                    RejectReason::Parse,
                    "payload",
                    format!("not UTF-8 text: {e}"),
                )
            }
        };
        let Some(value) = plain_value(text) else {
            return reject_all(RejectReason::Parse, "payload", "empty payload".into());
        };
        Batch {
            records: vec![Record {
                device,
                time: now,
                fields: vec![Field::new(measurement, value)],
            }],
            rejections: Vec::new(),
        }
    }
}

/// The parsers of a source, in filter order.
pub(crate) struct Parsers {
    routes: Vec<(String, Box<dyn PayloadParser>)>,
}

impl Parsers {
    /// Builds one parser per filter.
    pub fn build(opts: &MqttSourceOptions) -> Result<Parsers, MqttError> {
        let stored = opts.stored_unit;
        let mut routes = Vec::with_capacity(opts.filters.len());
        for f in &opts.filters {
            let plain = split_shared(&f.filter)
                .map(|(_, p)| p)
                .unwrap_or(&f.filter)
                .to_string();
            let parser: Box<dyn PayloadParser> = match &f.format {
                PayloadFormat::IotdbJson { time_unit } => Box::new(IotdbJson(JsonOptions {
                    input_unit: *time_unit,
                    stored_unit: stored,
                })),
                PayloadFormat::LineProtocol {
                    precision,
                    device_template,
                } => {
                    let template = match device_template {
                        Some(t) => DeviceTemplate::parse(t)
                            .map_err(|e| MqttError::invalid("topics", e.to_string()))?,
                        None => DeviceTemplate::default(),
                    };
                    Box::new(LineProtocol {
                        template,
                        precision: *precision,
                        stored,
                    })
                }
                PayloadFormat::TopicValue {
                    template,
                    path_prefix,
                } => {
                    check_topic_value(template, path_prefix)
                        .map_err(|m| MqttError::invalid("topics", m))?;
                    Box::new(TopicValue {
                        levels: parse_template(template)
                            .map_err(|m| MqttError::invalid("topics", m))?,
                        prefix: path_prefix.clone(),
                    })
                }
            };
            routes.push((plain, parser));
        }
        Ok(Parsers { routes })
    }

    /// The parser of the first filter `topic` matches.
    pub fn route(&self, topic: &str) -> Option<&dyn PayloadParser> {
        self.routes
            .iter()
            .find(|(f, _)| topic_matches(f, topic))
            .map(|(_, p)| p.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mqtt::options::Qos;

    fn parsers() -> Parsers {
        let o = MqttSourceOptions::new("mqtt://h", "c")
            .filter(
                "json/#",
                Qos::AtLeastOnce,
                PayloadFormat::IotdbJson {
                    time_unit: TimeUnit::Millis,
                },
            )
            .filter(
                "$share/g/lp/+",
                Qos::AtLeastOnce,
                PayloadFormat::LineProtocol {
                    precision: TimeUnit::Nanos,
                    device_template: None,
                },
            )
            .filter(
                "plant/+/+/+",
                Qos::AtMostOnce,
                PayloadFormat::TopicValue {
                    template: "plant/{device}/_/{measurement}".into(),
                    path_prefix: "root.plant".into(),
                },
            );
        Parsers::build(&o).unwrap()
    }

    #[test]
    fn routes_by_filter() {
        let p = parsers();
        let b = p.route("json/a").unwrap().parse(
            "json/a",
            br#"{"device":"root.sg.d1","timestamp":5,"measurements":["s"],"values":[1]}"#,
            0,
        );
        assert_eq!(b.records.len(), 1);
        assert_eq!(b.records[0].time, 5);
        let b = p
            .route("lp/x")
            .unwrap()
            .parse("lp/x", b"cpu,host=a v=1.5 2000000", 0);
        assert_eq!(b.records[0].device, "root.cpu.a");
        assert_eq!(b.records[0].time, 2);
        assert!(p.route("other").is_none());
    }

    #[test]
    fn topic_values() {
        let p = parsers();
        let parse = |t: &str, v: &str| p.route(t).unwrap().parse(t, v.as_bytes(), 77);
        let b = parse("plant/line-1/x/temp", " 21.5\n");
        assert_eq!(b.records[0].device, "root.plant.line_1");
        assert_eq!(b.records[0].time, 77);
        assert_eq!(b.records[0].fields[0].measurement, "temp");
        assert_eq!(b.records[0].fields[0].value, FieldValue::Float(21.5));
        assert_eq!(
            parse("plant/d/x/m", "42").records[0].fields[0].value,
            FieldValue::Int(42)
        );
        assert_eq!(
            parse("plant/d/x/m", "TRUE").records[0].fields[0].value,
            FieldValue::Bool(true)
        );
        assert_eq!(
            parse("plant/d/x/m", "\"a b\"").records[0].fields[0].value,
            FieldValue::Text("a b".into())
        );
        assert_eq!(
            parse("plant/d/x/m", "on").records[0].fields[0].value,
            FieldValue::Text("on".into())
        );
        let b = parse("plant/d/x/m", "   ");
        assert!(b.records.is_empty());
        assert_eq!(b.rejections[0].reason, RejectReason::Parse);
        let b = p
            .route("plant/d/x/m")
            .unwrap()
            .parse("plant/d/x/m", &[0xff], 0);
        assert_eq!(b.rejections[0].reason, RejectReason::Parse);
    }

    #[test]
    fn template_errors() {
        assert!(parse_template("a/{device}").is_err());
        assert!(parse_template("a/{x}/{measurement}").is_err());
        assert!(parse_template("{measurement}/{measurement}").is_err());
        assert!(check_topic_value("{device}/{measurement}", "plant").is_err());
        check_topic_value("{device}/{measurement}", "root.plant").unwrap();
        assert!(check_device_template("cpu.{measurement}").is_err());
    }
}
