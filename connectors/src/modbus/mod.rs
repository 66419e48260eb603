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
//!   Every failure is logged on change and counted ([`ModbusStats`]).
//! - Delivery: at most once. Polled values have no upstream acknowledgement; a poll's record
//!   is handed to the sink and the next poll of the device waits until it is durable (or
//!   until the source stops).

mod config;
mod decode;
mod plan;
mod source;

use std::sync::atomic::{AtomicU64, Ordering};

pub use config::{
    DeviceConfig, ModbusConfig, Order, RegisterConfig, RegisterKind, ValueType, MAX_BITS_PER_READ,
    MAX_REGISTERS_PER_READ,
};
pub use source::run;

/// Errors of the Modbus source.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModbusError {
    /// A setting is invalid.
    #[error("modbus setting `{key}`: {message}")]
    Invalid {
        /// The key, e.g. `device[0].register[2].type`.
        key: String,
        /// What is wrong / what was expected.
        message: String,
    },
    /// The sink closed (the pipeline is shutting down).
    #[error("the sink closed")]
    SinkClosed,
}

impl ModbusError {
    pub(crate) fn invalid(key: impl Into<String>, message: impl Into<String>) -> ModbusError {
        ModbusError::Invalid {
            key: key.into(),
            message: message.into(),
        }
    }
}

/// Counters of a Modbus source (for the daemon's metrics and the tests).
#[derive(Debug, Default)]
pub struct ModbusStats {
    polls: AtomicU64,
    skipped_polls: AtomicU64,
    points: AtomicU64,
    connects: AtomicU64,
    connect_errors: AtomicU64,
    read_errors: AtomicU64,
    exceptions: AtomicU64,
}

macro_rules! counters {
    ($($name:ident, $inc:ident: $doc:literal;)*) => {
        impl ModbusStats {
            $(
                #[doc = $doc]
                pub fn $name(&self) -> u64 {
                    self.$name.load(Ordering::Relaxed)
                }
                pub(crate) fn $inc(&self, n: u64) {
                    self.$name.fetch_add(n, Ordering::Relaxed);
                }
            )*
        }
    };
}

counters! {
    polls, add_polls: "Polls done (at least one request answered).";
    skipped_polls, add_skipped_polls: "Polls skipped because the device could not be reached.";
    points, add_points: "Points made durable by the sink.";
    connects, add_connects: "Connections established.";
    connect_errors, add_connect_errors: "Connection attempts that failed or timed out.";
    read_errors, add_read_errors: "Read requests that timed out or lost the connection.";
    exceptions, add_exceptions: "Read requests answered with a Modbus exception.";
}
