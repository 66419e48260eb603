//! CSV files: a streaming parser for IoTDB exports and generic CSV, and a watch-directory
//! source that ingests complete files exactly once.
//!
//! - [`parser`]: the synchronous streaming parser ([`parse_reader`], [`parse_path`],
//!   [`CsvParser`]), usable offline.
//! - [`records`]: record splitting with exact byte offsets and line numbers.
//! - [`time`], [`value`]: timestamp and value cells.
//! - [`source`]: the watch-directory source ([`run`]) with [`checkpoint`]s, [`files`] moves and
//!   [`metrics`] hooks.

pub mod checkpoint;
pub mod config;
pub mod files;
pub mod metrics;
pub mod options;
pub mod parser;
mod plugin;
pub mod records;
#[cfg(test)]
mod records_tests;
pub mod source;
pub mod time;
pub mod value;

pub use config::{CsvTable, RawColumn};
pub use metrics::{CountingMetrics, CsvMetrics, FileResult, NoMetrics};
pub use options::{
    AmbiguousTime, ColumnRef, CsvDevice, CsvFormat, CsvParseOptions, CsvRows, CsvRun,
    CsvSourceConfig, GenericCsv, Glob, OnSuccess, Template, TimeFormat,
};
pub use parser::{
    is_gzip, parse_path, parse_reader, Chunk, CsvParser, FileContext, ParseSummary, ResumePoint,
    RowError,
};
pub use records::{Input, Sequential};
pub use source::run;
