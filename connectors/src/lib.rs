//! tsfiled's sources: payload parsers (IoTDB JSON, IoTDB's REST write bodies, InfluxDB line
//! protocol, plain MQTT values)
//! and the connectors that turn their input into normalized device/measurement batches.
//! Nothing here knows TsFile bytes.
//!
//! The parsers are pure and synchronous: bytes in, a [`Batch`] of records and rejections out.
//! They never panic on any input.
//!
//! Each source is a folder (`http/`, `mqtt/`, `csv/`, `exec/`, …) holding its configuration
//! table, its validation, its settings and its run, on the plugin API of [`source`]. This file
//! adds two lines per source: its `pub mod` item and its line in the `sources!` list at the
//! end; [`registry`] finds them by `type`. The configuration crate and the daemon know
//! sources only through it (see `docs/plugins.md`).

#![warn(missing_docs)]

#[macro_use]
pub mod registry;

mod decimal;
pub mod error;
pub mod iotdb_json;
pub mod iotdb_rest;
pub mod line_protocol;
pub mod model;
pub mod names;
pub mod path;
pub mod reject;
pub mod sink;
pub mod source;
pub mod topic_value;

pub use error::Error;
pub use iotdb_json::{parse_iotdb_json, JsonOptions};
pub use iotdb_rest::{parse_rest_request, RestOptions, RestRequest, TabletNames};
pub use line_protocol::{parse_line_protocol, LineProtocolOptions};
pub use model::{
    declared_type, Batch, DataType, Field, FieldValue, Location, PointAt, Record, RejectReason,
    Rejection, TimeUnit,
};
pub use path::DeviceTemplate;
pub use topic_value::{parse_topic_value, TopicTemplate, TopicValueOptions};
pub use tsfiled_core::{LineProtocolModel, TableLine};

// The source folders, one `pub mod` each.
pub mod csv;
pub mod exec;
pub mod http;
pub mod modbus;
pub mod mqtt;
pub mod nats;

// The source types: one line each, `<folder>::<its SourceTable>`, in reference order.
sources! {
    http::HttpTable,
    mqtt::MqttTable,
    csv::CsvTable,
    exec::ExecTable,
    modbus::ModbusTable,
    nats::NatsTable,
}
