//! tsfiled's sources: payload parsers (IoTDB JSON, InfluxDB line protocol) and the
//! connectors that turn their input into normalized device/measurement batches.
//! Nothing here knows TsFile bytes.

pub mod model;

pub use model::{Batch, Field, FieldValue, Record, RejectReason, Rejection, TimeUnit};
