//! Payload parsing with the crate's parsers (as the MQTT source does): IoTDB JSON, line
//! protocol, or a plain value named by the subject.

use crate::iotdb_json::{parse_iotdb_json, JsonOptions};
use crate::line_protocol::{parse_line_protocol, LineProtocolOptions};
use crate::model::{Batch, TimeUnit};
use crate::path::DeviceTemplate;
use crate::topic_value::{parse_topic_value, TopicTemplate, TopicValueOptions};

use super::config::{NatsConfig, PayloadKind};
use super::NatsError;

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
    /// Builds the parser of `config` (the templates are checked here).
    pub fn build(config: &NatsConfig, stored: TimeUnit) -> Result<Parser, NatsError> {
        Ok(match config.payload {
            PayloadKind::IotdbJson => Parser::Json(JsonOptions {
                input_unit: TimeUnit::Millis,
                stored_unit: stored,
            }),
            PayloadKind::Line => Parser::Line {
                template: DeviceTemplate::with_prefix(&config.path_prefix, &config.device_template)
                    .map_err(|e| NatsError::invalid("device_template", e.to_string()))?,
                precision: config.precision,
                stored,
            },
            PayloadKind::Value => {
                let t = config.subject_template.as_deref().unwrap_or_default();
                Parser::Value {
                    template: TopicTemplate::parse(&subject_as_topic(t), &config.path_prefix)
                        .map_err(|e| NatsError::invalid("subject_template", e.to_string()))?,
                    stored,
                }
            }
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

    fn config(extra: &str) -> NatsConfig {
        toml::from_str(&format!(
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
        let bad = config("payload = \"line\"\ndevice_template = \"{tags\"");
        assert!(matches!(
            Parser::build(&bad, TimeUnit::Millis),
            Err(NatsError::Invalid { key, .. }) if key == "device_template"
        ));
    }
}
