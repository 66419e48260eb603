//! CSV files: a streaming parser for IoTDB exports and generic CSV, and a watch-directory
//! source that ingests complete files exactly once.
//!
//! - [`parser`]: the synchronous streaming parser ([`parse_reader`], [`parse_path`],
//!   [`CsvParser`]), usable offline.
//! - [`records`]: record splitting with exact byte offsets and line numbers.
//! - [`time`], [`value`]: timestamp and value cells.

pub mod options;
pub mod parser;
pub mod records;
pub mod time;
pub mod value;

pub use options::{
    AmbiguousTime, ColumnRef, CsvDevice, CsvFormat, CsvParseOptions, CsvSourceOptions, GenericCsv,
    OnSuccess, TimeFormat,
};
pub use parser::{
    is_gzip, parse_path, parse_reader, Chunk, CsvParser, FileContext, ParseSummary, ResumePoint,
    RowError,
};
pub use records::{Input, Sequential};
