//! Payload parsing per topic filter: each filter's [`PayloadFormat`] becomes a
//! [`PayloadParser`] over the crate's parsers, and an incoming topic is routed to the first
//! filter it matches.

use crate::iotdb_json::{parse_iotdb_json, JsonOptions};
use crate::line_protocol::{parse_line_protocol, LineProtocolOptions};
use crate::model::{Batch, TimeUnit};
use crate::path::DeviceTemplate;
use crate::topic_value::{parse_topic_value, TopicTemplate, TopicValueOptions};

use super::invalid;
use super::options::{split_shared, topic_matches, MqttSourceOptions, PayloadFormat};
use crate::Error;

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

struct TopicValue {
    template: TopicTemplate,
    input_unit: TimeUnit,
    stored: TimeUnit,
}

impl PayloadParser for TopicValue {
    fn parse(&self, topic: &str, payload: &[u8], now: i64) -> Batch {
        parse_topic_value(
            &self.template,
            topic,
            payload,
            &TopicValueOptions {
                input_unit: self.input_unit,
                stored_unit: self.stored,
                now,
            },
        )
    }
}

/// Builds the parser of one format (also the validation of its settings).
pub(crate) fn build_parser(
    format: &PayloadFormat,
    stored: TimeUnit,
) -> Result<Box<dyn PayloadParser>, String> {
    Ok(match format {
        PayloadFormat::IotdbJson { time_unit } => Box::new(IotdbJson(JsonOptions {
            input_unit: *time_unit,
            stored_unit: stored,
        })),
        PayloadFormat::LineProtocol {
            precision,
            path_prefix,
            device_template,
            table_database,
        } => Box::new(LineProtocol {
            template: match table_database {
                Some(db) => DeviceTemplate::table(path_prefix, db),
                None => DeviceTemplate::with_prefix(path_prefix, device_template)
                    .map_err(|e| e.to_string())?,
            },
            precision: *precision,
            stored,
        }),
        PayloadFormat::TopicValue {
            template,
            path_prefix,
            time_unit,
        } => Box::new(TopicValue {
            template: TopicTemplate::parse(template, path_prefix).map_err(|e| e.to_string())?,
            input_unit: *time_unit,
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
    pub fn build(opts: &MqttSourceOptions) -> Result<Parsers, Error> {
        let mut routes = Vec::with_capacity(opts.filters.len());
        for (i, f) in opts.filters.iter().enumerate() {
            let plain = split_shared(&f.filter)
                .map(|(_, p)| p)
                .unwrap_or(&f.filter)
                .to_string();
            let parser = build_parser(&f.format, opts.stored_unit)
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{FieldValue, RejectReason};
    use crate::mqtt::Qos;

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
                PayloadFormat::line_protocol(TimeUnit::Nanos),
            )
            .filter(
                "plant/+/+/+",
                Qos::AtMostOnce,
                PayloadFormat::topic_value("plant/{device}/+/{measurement}", "root.plant"),
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
            PayloadFormat::topic_value("a/{device}", "root.a"),
            PayloadFormat::topic_value("{device}/{measurement}", "plant"),
            PayloadFormat::LineProtocol {
                precision: TimeUnit::Nanos,
                path_prefix: "root.lp".into(),
                device_template: "{measurement}.{tags".into(),
                table_database: None,
            },
        ];
        for f in bad {
            assert!(build_parser(&f, TimeUnit::Millis).is_err(), "{f:?}");
        }
    }
}
