//! tsfiled's sources: payload parsers (IoTDB JSON, IoTDB's REST write bodies, InfluxDB line
//! protocol, plain MQTT values)
//! and the connectors that turn their input into normalized device/measurement batches.
//! Nothing here knows TsFile bytes.
//!
//! The parsers are pure and synchronous: bytes in, a [`Batch`] of records and rejections out.
//! They never panic on any input.
//!
//! Option types that the configuration also has (CSV formats and columns, time formats,
//! file-name globs, the CSV device template, MQTT topic-filter syntax, broker address,
//! protocol, QoS, password and TLS settings) are those of `tsfiled-config`, used directly
//! rather than mirrored.

#![warn(missing_docs)]

pub mod csv;
pub mod error;
pub mod iotdb_json;
pub mod iotdb_rest;
pub mod line_protocol;
pub mod modbus;
pub mod model;
pub mod mqtt;
pub mod nats;
pub mod path;
pub mod reject;
pub mod sink;
pub mod topic_value;

pub use error::Error;
pub use iotdb_json::{parse_iotdb_json, JsonOptions};
pub use iotdb_rest::{parse_rest_request, RestOptions, RestRequest, TabletNames};
pub use line_protocol::{parse_line_protocol, LineProtocolOptions};
pub use model::{Batch, Field, FieldValue, Record, RejectReason, Rejection, TimeUnit, TypeHint};
pub use path::{DeviceTemplate, PathError};
pub use topic_value::{parse_topic_value, TopicTemplate, TopicValueOptions};
