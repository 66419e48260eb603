//! Reader and writer for Apache IoTDB TsFile format version `000002` (IoTDB 0.10).
//!
//! The crate is laid out like arrow-rs `parquet`: a small typed core ([`basic`],
//! [`statistics`], [`errors`]), one module per encoding under [`encoding`], the
//! compression codecs in [`compression`], and the file structures, writer and reader
//! under [`file`]. IoTDB's `.resource` files live in [`resource`]; the command-line
//! tools' logic (dump, sketch, overview, convert) lives in [`tools`].
//!
//! Everything here is synchronous and knows nothing about the daemon.

pub mod basic;
pub mod compression;
pub mod encoding;
pub mod errors;
pub mod file;
pub mod resource;
pub mod statistics;
pub mod tools;
pub mod util;

pub use basic::{Compression, DataType, Encoding, Value};
pub use errors::{Error, Result};
