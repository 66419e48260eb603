//! The tsfiled daemon: durable intake, rolling TsFile writer, HTTP push, metrics.
//!
//! Data flow: a source ([`http`], later MQTT and CSV) parses a payload ([`parse`]) and
//! submits it to a [`pipeline::Pipeline`], which validates and types the points, makes
//! them durable in the write-ahead log ([`wal`]) and only then acknowledges; the
//! engine ([`engine`]) keeps them in memtables, flushes them into TsFiles and seals
//! the files atomically into IoTDB's data-directory layout.
//!
//! Every fallible operation of the crate reports an [`Error`]; a submission refused for
//! now (full, shutting down) is an [`Error::Refused`] carrying a [`Refusal`].

#![warn(missing_docs)]

pub mod app;
pub mod cli;
pub mod config_file;
pub mod engine;
pub mod error;
mod hasher;
pub mod health;
pub mod hooks;
pub mod http;
pub mod import;
pub mod metrics;
pub mod notify;
pub mod parse;
pub mod pipeline;
pub mod settings;
pub mod sources;
pub mod wal;

pub use error::{Error, Refusal, Result};
