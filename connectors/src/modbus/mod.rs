//! The Modbus TCP source: polls devices (holding and input registers, coils, discrete inputs)
//! and feeds a [`BatchSink`](crate::sink::BatchSink).
//!
//! - Each `[[device]]` is polled every `poll_interval` on its own connection (unit id
//!   `unit_id`); each poll becomes one record of the device's `path` at the poll's start time,
//!   with one field per `[[device.register]]` entry that could be read.
//! - Entries of one table are read together over contiguous ranges (up to 125 registers or
//!   2000 bits per request, optionally across `max_gap` unconfigured addresses).
//! - Values: `int16`, `uint16`, `int32`, `uint32`, `int64`, `float32`, `float64` with byte
//!   and word order, then `value * scale + offset`; coils and discrete inputs are booleans.
//!   Each field declares its type (INT32, INT64, FLOAT, DOUBLE, BOOLEAN; DOUBLE when scaled).
//! - A read that times out or loses the connection is retried (`retries`) on a new
//!   connection; an exception response (e.g. an illegal address) drops that request's fields
//!   from the poll. A device that cannot be reached is reconnected with exponential backoff
//!   (`reconnect_initial_backoff` to `reconnect_max_backoff`); polls due meanwhile are skipped.
//!   Every failure is logged on change and counted (`tsfiled_modbus_*` metrics); the status
//!   page shows `polling` while every device answers, `degraded` while some do not.
//! - Delivery: at most once. Polled values have no upstream acknowledgement; a poll's record
//!   is handed to the sink and the next poll of the device waits until it is durable (or
//!   until the source stops).

mod config;
mod decode;
mod plan;
mod source;

pub use config::{
    DeviceConfig, DeviceTable, ModbusSourceConfig, ModbusTable, Order, RegisterConfig,
    RegisterKind, RegisterTable, ValueType, MAX_BITS_PER_READ, MAX_REGISTERS_PER_READ,
};

use crate::source::{SourceContext, SourceFuture, SourceSettings};

impl SourceSettings for ModbusSourceConfig {
    type Table = ModbusTable;

    fn to_table(&self, name: &str, _secret: &dyn Fn(&str) -> String) -> ModbusTable {
        self.table(name)
    }

    fn initial_state(&self) -> &'static str {
        "connecting"
    }

    fn start(&self, cx: SourceContext) -> SourceFuture {
        let run = source::run(self.clone(), cx);
        Box::pin(async move { run.await.map_err(|e| e.to_string()) })
    }
}
