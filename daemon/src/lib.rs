//! The tsfiled daemon: durable intake, rolling TsFile writer, HTTP push, metrics.

pub mod engine;
pub mod metrics;
pub mod parse;
pub mod pipeline;
pub mod wal;
