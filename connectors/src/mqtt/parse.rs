//! Payload parsing per topic filter: each filter's [`MqttPayload`] becomes a
//! [`PayloadParser`] over the crate's parsers, and an incoming topic is routed to the first
//! filter it matches.

use std::sync::Mutex;

use crate::iotdb_json::{parse_iotdb_json_into, JsonOptions};
use crate::line_protocol::{parse_line_protocol, LineProtocolOptions};
use crate::model::{Batch, Record, Rejection, TimeUnit};
use crate::names::Names;
use crate::path::DeviceTemplate;
use crate::topic_value::{parse_topic_value, TopicTemplate, TopicValueOptions};

use super::config::{MqttPayload, MqttSourceConfig};
use super::invalid;
use crate::Error;

/// Turns one message into records. `now` is the arrival time in the stored unit (for
/// payloads without timestamps).
pub(crate) trait PayloadParser: Send + Sync {
    /// Appends the message's records to `records` (the batch of a unit of messages); returns
    /// the message's rejections.
    fn parse_into(
        &self,
        topic: &str,
        payload: &[u8],
        now: i64,
        records: &mut Vec<Record>,
    ) -> Vec<Rejection>;

    /// The message's records and rejections as a batch of their own.
    #[cfg(test)]
    fn parse(&self, topic: &str, payload: &[u8], now: i64) -> Batch {
        let mut batch = Batch::default();
        batch.rejections = self.parse_into(topic, payload, now, &mut batch.records);
        batch
    }
}

/// Appends the records of `batch` to `records`; its rejections.
fn append(mut batch: Batch, records: &mut Vec<Record>) -> Vec<Rejection> {
    if records.is_empty() {
        std::mem::swap(records, &mut batch.records);
    } else {
        records.append(&mut batch.records);
    }
    batch.rejections
}

/// IoTDB JSON, with the names of the source's messages interned across messages.
struct IotdbJson {
    opts: JsonOptions,
    names: Mutex<Names>,
}

impl PayloadParser for IotdbJson {
    fn parse_into(
        &self,
        _topic: &str,
        payload: &[u8],
        _now: i64,
        records: &mut Vec<Record>,
    ) -> Vec<Rejection> {
        let mut names = self.names.lock().unwrap_or_else(|e| e.into_inner());
        parse_iotdb_json_into(payload, &self.opts, &mut names, records)
    }
}

struct LineProtocol {
    template: DeviceTemplate,
    precision: TimeUnit,
    stored: TimeUnit,
}

impl PayloadParser for LineProtocol {
    fn parse_into(
        &self,
        _topic: &str,
        payload: &[u8],
        now: i64,
        records: &mut Vec<Record>,
    ) -> Vec<Rejection> {
        let batch = parse_line_protocol(
            payload,
            &LineProtocolOptions {
                device_template: &self.template,
                precision: self.precision,
                stored_unit: self.stored,
                now,
            },
        );
        append(batch, records)
    }
}

struct TopicValue {
    template: TopicTemplate,
    input_unit: TimeUnit,
    stored: TimeUnit,
}

impl PayloadParser for TopicValue {
    fn parse_into(
        &self,
        topic: &str,
        payload: &[u8],
        now: i64,
        records: &mut Vec<Record>,
    ) -> Vec<Rejection> {
        let batch = parse_topic_value(
            &self.template,
            topic,
            payload,
            &TopicValueOptions {
                input_unit: self.input_unit,
                stored_unit: self.stored,
                now,
            },
        );
        append(batch, records)
    }
}

/// Builds the parser of one format. IoTDB JSON times and the `ts` of plain values are in
/// milliseconds (IoTDB's unit).
pub(crate) fn build_parser(
    format: &MqttPayload,
    stored: TimeUnit,
) -> Result<Box<dyn PayloadParser>, String> {
    Ok(match format {
        MqttPayload::IotdbJson => Box::new(IotdbJson {
            opts: JsonOptions {
                input_unit: TimeUnit::Millis,
                stored_unit: stored,
            },
            names: Mutex::new(Names::default()),
        }),
        MqttPayload::Line(lm) => Box::new(LineProtocol {
            template: lm.device_template.clone(),
            precision: lm.precision,
            stored,
        }),
        MqttPayload::Value {
            topic_template,
            path_prefix,
        } => Box::new(TopicValue {
            template: TopicTemplate::parse(topic_template.as_str(), path_prefix)
                .map_err(|e| e.to_string())?,
            input_unit: TimeUnit::Millis,
            stored,
        }),
    })
}

/// The parsers of a source, in filter order.
pub(crate) struct Parsers {
    routes: Vec<(String, Box<dyn PayloadParser>)>,
}

impl Parsers {
    /// Builds one parser per filter.
    pub fn build(config: &MqttSourceConfig) -> Result<Parsers, Error> {
        let mut routes = Vec::with_capacity(config.topics.len());
        for (i, f) in config.topics.iter().enumerate() {
            let plain = split_shared(&f.filter)
                .map(|(_, p)| p)
                .unwrap_or(&f.filter)
                .to_string();
            let parser = build_parser(&f.payload, config.runtime.stored_unit)
                .map_err(|m| invalid("topics", format!("topic {i} ({:?}): {m}", f.filter)))?;
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

    /// [`Parsers::route`], remembering the last topic's route in `last`: a stream that
    /// repeats its topic is routed with one string comparison instead of matching the filters.
    pub fn route_again(&self, topic: &str, last: &mut LastRoute) -> Option<&dyn PayloadParser> {
        let index = match &mut last.0 {
            Some((t, i)) if t == topic => *i,
            slot => {
                let i = self
                    .routes
                    .iter()
                    .position(|(f, _)| topic_matches(f, topic));
                match slot {
                    Some((t, old)) => {
                        t.clear();
                        t.push_str(topic);
                        *old = i;
                    }
                    None => *slot = Some((topic.to_string(), i)),
                }
                i
            }
        };
        index.map(|i| self.routes[i].1.as_ref())
    }
}

/// The last topic [`Parsers::route_again`] routed, and the index of its filter (`None`: no
/// filter matched).
#[derive(Default)]
pub(crate) struct LastRoute(Option<(String, Option<usize>)>);

/// Splits `$share/<group>/<filter>` into group and filter.
pub fn split_shared(filter: &str) -> Option<(&str, &str)> {
    let rest = filter.strip_prefix("$share/")?;
    let (group, f) = rest.split_once('/')?;
    if group.is_empty() || group.contains(['+', '#']) || f.is_empty() {
        return None;
    }
    Some((group, f))
}

/// Whether `topic` matches the (non-shared) `filter`, with MQTT's rules: `+` is one level,
/// `#` any number of trailing levels (including none), and wildcards at the first level do not
/// match topics starting with `$`.
pub fn topic_matches(filter: &str, topic: &str) -> bool {
    if topic.starts_with('$') && (filter.starts_with('+') || filter.starts_with('#')) {
        return false;
    }
    let mut f = filter.split('/');
    let mut t = topic.split('/');
    loop {
        match (f.next(), t.next()) {
            (Some("#"), _) => return true,
            (Some("+"), Some(_)) => {}
            (Some(a), Some(b)) if a == b => {}
            (None, None) => return true,
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{FieldValue, RejectReason};
    use crate::mqtt::Qos;

    fn parsers() -> Parsers {
        let o = MqttSourceConfig::new("mqtt://h", "c")
            .unwrap()
            .filter("json/#", Qos::AtLeastOnce, MqttPayload::IotdbJson)
            .filter(
                "$share/g/lp/+",
                Qos::AtLeastOnce,
                MqttPayload::line("root.lp", TimeUnit::Nanos).unwrap(),
            )
            .filter(
                "plant/+/+/+",
                Qos::AtMostOnce,
                MqttPayload::value("plant/{device}/+/{measurement}", "root.plant").unwrap(),
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
        assert_eq!(&*b.records[0].device, "root.lp.cpu.a");
        assert_eq!(b.records[0].time, 2);
        assert!(p.route("other").is_none());
    }

    #[test]
    fn remembered_routes_are_the_routes() {
        let p = parsers();
        let mut last = LastRoute::default();
        // The payload each filter's parser reads, and what each gives for it (the filters of
        // `parsers()`: IoTDB JSON, line protocol below root.lp, a value below root.plant).
        let json = br#"{"device":"root.sg.d1","timestamp":5,"measurements":["s"],"values":[1]}"#;
        let devices = |t: &str, last: &mut LastRoute| {
            p.route_again(t, last).map(|r| {
                let payload: &[u8] = match t.split('/').next() {
                    Some("json") => json,
                    Some("lp") => b"cpu v=1 1",
                    _ => b"7",
                };
                r.parse(t, payload, 0).records[0].device.to_string()
            })
        };
        for (topic, device) in [
            ("json/a", Some("root.sg.d1")),
            ("json/a", Some("root.sg.d1")),
            ("lp/x", Some("root.lp.cpu")),
            ("lp/x", Some("root.lp.cpu")),
            ("other", None),
            ("other", None),
            ("plant/d/x/m", Some("root.plant.d")),
            ("json/a", Some("root.sg.d1")),
            ("", None),
        ] {
            assert_eq!(devices(topic, &mut last).as_deref(), device, "{topic}");
        }
    }

    #[test]
    fn topic_values() {
        let p = parsers();
        let parse = |t: &str, v: &str| p.route(t).unwrap().parse(t, v.as_bytes(), 77);
        let b = parse("plant/line-1/x/temp", " 21.5\n");
        assert_eq!(&*b.records[0].device, "root.plant.line_1");
        assert_eq!(b.records[0].time, 77);
        assert_eq!(&*b.records[0].fields[0].measurement, "temp");
        assert_eq!(b.records[0].fields[0].value, FieldValue::Float(21.5));
        assert_eq!(
            parse("plant/d/x/m", "42").records[0].fields[0].value,
            FieldValue::Int(42)
        );
        let b = parse("plant/d/x/m", "   ");
        assert!(b.records.is_empty());
        assert_eq!(b.rejections[0].reason, RejectReason::Parse);
    }

    #[test]
    fn bad_settings_are_reported() {
        let bad = [
            MqttPayload::value("a/{device}", "root.a"),
            MqttPayload::value("{device}/{measurement}", "plant"),
            // A line-protocol device template is compiled when the payload is built.
            DeviceTemplate::with_prefix("root.lp", "{measurement}.{tags")
                .map_err(|e| e.to_string())
                .map(|_| MqttPayload::IotdbJson),
        ];
        for f in bad {
            let built = f.and_then(|f| build_parser(&f, TimeUnit::Millis).map(|_| ()));
            assert!(built.is_err(), "{built:?}");
        }
    }

    #[test]
    fn matching() {
        assert!(topic_matches("a/b", "a/b"));
        assert!(!topic_matches("a/b", "a/b/c"));
        assert!(topic_matches("a/+/c", "a/x/c"));
        assert!(!topic_matches("a/+/c", "a/x/y/c"));
        assert!(topic_matches("a/#", "a"));
        assert!(topic_matches("a/#", "a/b/c"));
        assert!(topic_matches("#", "a/b"));
        assert!(!topic_matches("#", "$SYS/x"));
        assert!(!topic_matches("+/x", "$SYS/x"));
        assert!(topic_matches("$SYS/#", "$SYS/x"));
        assert!(topic_matches("+", ""));
        assert!(!topic_matches("a/b", "a"));
    }
}
