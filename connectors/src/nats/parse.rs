//! Payload parsing with the crate's parsers (as the MQTT source does): IoTDB JSON, line
//! protocol, or a plain value named by the subject.

use crate::iotdb_json::{parse_iotdb_json, JsonOptions};
use crate::line_protocol::{parse_line_protocol, LineProtocolOptions};
use crate::model::{Batch, TimeUnit};
use crate::path::DeviceTemplate;
use crate::topic_value::{parse_topic_value, TopicTemplate, TopicValueOptions};

use super::config::{NatsPayload, NatsSourceConfig};
use crate::Error;

/// The parser of a source.
pub(crate) enum Parser {
    Json(JsonOptions),
    Line {
        template: DeviceTemplate,
        precision: TimeUnit,
        stored: TimeUnit,
    },
    Value {
        template: TopicTemplate,
        stored: TimeUnit,
    },
}

/// A subject (or subject template) as an MQTT-style topic: tokens become levels, `*` → `+`,
/// `>` → `#`.
pub(crate) fn subject_as_topic(subject: &str) -> String {
    subject
        .split('.')
        .map(|t| match t {
            "*" => "+",
            ">" => "#",
            t => t,
        })
        .collect::<Vec<_>>()
        .join("/")
}

impl Parser {
    /// Builds the parser of `config` (validation checked its templates).
    pub fn build(config: &NatsSourceConfig, stored: TimeUnit) -> Result<Parser, Error> {
        Ok(match &config.payload {
            NatsPayload::IotdbJson => Parser::Json(JsonOptions {
                input_unit: TimeUnit::Millis,
                stored_unit: stored,
            }),
            NatsPayload::Line(m) => Parser::Line {
                template: DeviceTemplate::with_prefix(&m.path_prefix, m.device_template.as_str())?,
                precision: m.precision,
                stored,
            },
            NatsPayload::Value {
                subject_template,
                path_prefix,
            } => Parser::Value {
                template: TopicTemplate::parse(&subject_as_topic(subject_template), path_prefix)?,
                stored,
            },
        })
    }

    /// Parses one message; `now` (stored unit) is the time of payloads without one.
    pub fn parse(&self, subject: &str, payload: &[u8], now: i64) -> Batch {
        match self {
            Parser::Json(o) => parse_iotdb_json(payload, o),
            Parser::Line {
                template,
                precision,
                stored,
            } => parse_line_protocol(
                payload,
                &LineProtocolOptions {
                    device_template: template,
                    precision: *precision,
                    stored_unit: *stored,
                    now,
                },
            ),
            Parser::Value { template, stored } => parse_topic_value(
                template,
                &subject_as_topic(subject),
                payload,
                &TopicValueOptions {
                    input_unit: TimeUnit::Millis,
                    stored_unit: *stored,
                    now,
                },
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FieldValue;
    use crate::nats::NatsTable;
    use crate::source::validate_table;

    fn config(extra: &str) -> NatsSourceConfig {
        validate_table::<NatsTable>(&format!(
            "servers = [\"h\"]\nstream = \"S\"\nconsumer = \"c\"\n{extra}"
        ))
        .unwrap()
    }

    #[test]
    fn values_named_by_the_subject() {
        let c = config(
            "payload = \"value\"\nsubject_template = \"plant.{device}.*.{measurement}\"\npath_prefix = \"root.p\"",
        );
        let p = Parser::build(&c, TimeUnit::Millis).unwrap();
        let b = p.parse("plant.press-7.x.temp", b"21.5", 99);
        assert_eq!(b.records.len(), 1);
        assert_eq!(&*b.records[0].device, "root.p.press_7");
        assert_eq!(b.records[0].time, 99);
        assert_eq!(&*b.records[0].fields[0].measurement, "temp");
        assert_eq!(b.records[0].fields[0].value, FieldValue::Float(21.5));
        assert!(p.parse("other.a.b.c", b"1", 0).records.is_empty());
    }

    #[test]
    fn json_and_line() {
        let p = Parser::build(&config(""), TimeUnit::Millis).unwrap();
        let b = p.parse(
            "s",
            br#"{"device":"root.sg.d1","timestamp":5,"measurements":["s"],"values":[1]}"#,
            0,
        );
        assert_eq!(
            (&*b.records[0].device, b.records[0].time),
            ("root.sg.d1", 5)
        );
        let p = Parser::build(
            &config("payload = \"line\"\nprecision = \"s\""),
            TimeUnit::Millis,
        )
        .unwrap();
        let b = p.parse("s", b"cpu,host=a v=1i 2", 0);
        assert_eq!(&*b.records[0].device, "root.nats.cpu.a");
        assert_eq!(b.records[0].time, 2000);
    }
}
