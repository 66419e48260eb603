//! Runtime options of the CSV parser and the CSV watch-directory source.
//!
//! The option types (formats, columns, time formats) are those of the source's configuration
//! ([`super::config`]); globs and device templates are `tsfiled-core`'s. The structs carry the values of the
//! `[[pipeline.source]] type = "csv"` table field by field. Only
//! [`CsvSourceOptions::state_dir`], [`CsvParseOptions::precision`],
//! [`CsvParseOptions::max_batch_points`], [`CsvParseOptions::max_record_bytes`] and
//! [`CsvSourceOptions::close_write_completes`] have no configuration key of their own.

use std::path::PathBuf;
use std::time::Duration;

pub use super::config::{
    AmbiguousTime, ColumnRef, CsvDevice, CsvFormat, CsvSourceConfig, GenericCsv, OnSuccess,
    TimeFormat,
};
pub use tsfiled_core::{Glob, Template};

use crate::model::TimeUnit;

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
    /// File-name globs taken (at least one), e.g. `*.csv`, `*.csv.gz`.
    pub patterns: Vec<Glob>,
    /// File-name globs ignored (default `*.tmp`, `*.part`, `.*`).
    pub ignore: Vec<Glob>,
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
    /// The file system of checkpoints and pending reports (tests inject a simulated one).
    pub fs: tsfiled_fsio::FsRef,
}

impl CsvSourceOptions {
    /// Options with the configuration's defaults for everything but the directories and the
    /// state directory.
    pub fn new(directories: Vec<PathBuf>, state_dir: PathBuf) -> Self {
        CsvSourceOptions {
            directories,
            patterns: globs(CsvSourceConfig::DEFAULT_PATTERNS),
            ignore: globs(CsvSourceConfig::DEFAULT_IGNORE),
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
            fs: tsfiled_fsio::std_fs(),
        }
    }
}

/// The configuration's default globs, compiled (they are valid; see the test below).
fn globs(texts: &[&str]) -> Vec<Glob> {
    texts.iter().filter_map(|t| Glob::parse(t).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_globs_compile() {
        let o = CsvSourceOptions::new(vec![], PathBuf::new());
        let texts = |g: &[Glob]| g.iter().map(|g| g.as_str().to_owned()).collect::<Vec<_>>();
        assert_eq!(texts(&o.patterns), ["*.csv", "*.csv.gz"]);
        assert_eq!(texts(&o.ignore), ["*.tmp", "*.part", ".*"]);
    }
}
