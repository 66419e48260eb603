//! Runtime options of the CSV parser and the CSV watch-directory source.
//!
//! They mirror the daemon configuration's `[[pipeline.source]] type = "csv"` table one to one
//! (the daemon maps one onto the other); only [`CsvSourceOptions::state_dir`],
//! [`CsvParseOptions::precision`], [`CsvParseOptions::max_batch_points`] and
//! [`CsvSourceOptions::close_write_completes`] have no configuration key of their own.

use std::path::PathBuf;
use std::time::Duration;

use crate::model::TimeUnit;

/// A CSV column reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnRef {
    /// By header name (exact match after trimming ASCII whitespace).
    Name(String),
    /// By 0-based position.
    Index(usize),
}

/// Where the device of a generic CSV row comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CsvDevice {
    /// From a column, optionally below a prefix (`prefix.cell`).
    Column {
        /// The column.
        column: ColumnRef,
        /// Prefix prepended with a `.`, e.g. `root.plant`.
        path_prefix: Option<String>,
    },
    /// A template such as `root.plc.{file_stem}`: `{file_stem}` is the file name without its
    /// extensions (`line-3.csv.gz` → `line_3`), `{dir}` the name of the file's directory; both
    /// are sanitized into path nodes.
    Template(String),
}

/// Options of the generic CSV format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenericCsv {
    /// Header rows after the skipped rows; the first names the columns, others are ignored.
    /// With 0, value columns are named `col1`, `col2`, … (1-based position).
    pub header_rows: u32,
    /// Time column.
    pub time_column: ColumnRef,
    /// Device.
    pub device: CsvDevice,
    /// Value columns; empty = every column but the time and device columns.
    pub value_columns: Vec<ColumnRef>,
}

/// CSV file format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CsvFormat {
    /// IoTDB export, aligned by time: `Time,root.sg.d1.s1,root.sg.d1.s2(INT32),...`.
    IotdbWide,
    /// IoTDB export, aligned by device: `Time,Device,s1,s2(DOUBLE),...`.
    IotdbDevice,
    /// As configured.
    Generic(GenericCsv),
}

/// Timestamp format of CSV rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimeFormat {
    /// An integer is epoch milliseconds; anything else is RFC 3339, or an ISO 8601 date-time
    /// without offset (`2024-03-01 12:00:00[.fff]`, `T` or space) read in the time zone.
    Auto,
    /// Epoch seconds (an optional decimal fraction is kept exactly, down to the precision).
    EpochS,
    /// Epoch milliseconds (optional decimal fraction).
    EpochMs,
    /// Epoch microseconds (optional decimal fraction).
    EpochUs,
    /// Epoch nanoseconds.
    EpochNs,
    /// RFC 3339 (`2024-03-01T12:00:00.5+01:00`, `Z`, `T` or space).
    Rfc3339,
    /// A strftime pattern (chrono syntax). Without `%z`/`%:z`/`%s` in the pattern the time is
    /// local to the time zone; a pattern without a time of day means midnight.
    Strftime(String),
}

/// Resolution of local times that occur twice (the hour repeated when DST ends).
/// Local times that do not exist (skipped when DST starts) are always rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AmbiguousTime {
    /// The first occurrence (the earlier instant, still in DST).
    Earliest,
    /// The second occurrence (the later instant).
    Latest,
    /// Reject the row.
    Reject,
}

/// What happens to a file whose rows were all ingested without error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnSuccess {
    /// Move it into the done directory.
    Move,
    /// Delete it.
    Delete,
}

/// How rows are parsed (shared by the watch-directory source and offline imports).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvParseOptions {
    /// File format.
    pub format: CsvFormat,
    /// Timestamp format.
    pub time_format: TimeFormat,
    /// IANA time zone for times without an offset (`UTC`, `Europe/Berlin`).
    pub timezone: String,
    /// DST ambiguity rule.
    pub ambiguous_time: AmbiguousTime,
    /// Field delimiter (one ASCII byte, not `"`, CR or LF).
    pub delimiter: u8,
    /// Lines skipped before the header (physical lines; quotes are not interpreted).
    pub skip_rows: u32,
    /// The pipeline's stored time precision: every timestamp is converted to it (a time that
    /// overflows i64 in this unit is rejected).
    pub precision: TimeUnit,
    /// Largest batch handed on: a batch closes at this many points or this many rows.
    pub max_batch_points: usize,
    /// Longest record (bytes); a longer one is rejected (`too_large`) without buffering it.
    pub max_record_bytes: usize,
}

impl Default for CsvParseOptions {
    fn default() -> Self {
        CsvParseOptions {
            format: CsvFormat::IotdbWide,
            time_format: TimeFormat::Auto,
            timezone: "UTC".to_owned(),
            ambiguous_time: AmbiguousTime::Earliest,
            delimiter: b',',
            skip_rows: 0,
            precision: TimeUnit::Millis,
            max_batch_points: 50_000,
            max_record_bytes: 1 << 20,
        }
    }
}

/// Options of a CSV watch-directory source.
#[derive(Debug, Clone, PartialEq)]
pub struct CsvSourceOptions {
    /// Watched directories.
    pub directories: Vec<PathBuf>,
    /// File-name globs taken (`*`, `?`, `[a-z]`, `[!x]`), e.g. `*.csv`, `*.csv.gz`.
    pub patterns: Vec<String>,
    /// File-name globs ignored (default `*.tmp`, `*.part`, `.*`).
    pub ignore: Vec<String>,
    /// Watch subdirectories too (the done and error directories are never scanned).
    pub recursive: bool,
    /// A file is complete once its size and mtime have not changed for this long.
    pub settle: Duration,
    /// Row parsing.
    pub parse: CsvParseOptions,
    /// Done directory; relative paths are per watched directory.
    pub done_dir: PathBuf,
    /// Error directory; relative paths are per watched directory.
    pub error_dir: PathBuf,
    /// Move or delete files that were ingested without error.
    pub on_success: OnSuccess,
    /// Files processed at once.
    pub max_concurrent_files: usize,
    /// Full rescan period (inotify can drop events; NFS has none).
    pub rescan_interval: Duration,
    /// Directory for per-file checkpoints (created if missing), e.g. `<data_dir>/csv/<source>`.
    pub state_dir: PathBuf,
    /// Whether an inotify close-after-write marks a file complete at once (when its last byte is
    /// a newline; otherwise the settle time still applies). Writers that close and reopen a file
    /// between pieces should write elsewhere and rename instead, or this should be `false`.
    pub close_write_completes: bool,
}

impl CsvSourceOptions {
    /// Options with the configuration's defaults for everything but the directories and the
    /// state directory.
    pub fn new(directories: Vec<PathBuf>, state_dir: PathBuf) -> Self {
        CsvSourceOptions {
            directories,
            patterns: vec!["*.csv".into(), "*.csv.gz".into()],
            ignore: vec!["*.tmp".into(), "*.part".into(), ".*".into()],
            recursive: false,
            settle: Duration::from_secs(2),
            parse: CsvParseOptions::default(),
            done_dir: PathBuf::from("done"),
            error_dir: PathBuf::from("error"),
            on_success: OnSuccess::Move,
            max_concurrent_files: 2,
            rescan_interval: Duration::from_secs(30),
            state_dir,
            close_write_completes: true,
        }
    }
}
