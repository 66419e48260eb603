//! Runtime options of the CSV parser and the CSV watch-directory source.
//!
//! The source's settings are its configuration ([`CsvSourceConfig`]); [`CsvRun`] is the
//! context of a run (state directory, stored unit, limits, test injections), and
//! [`CsvParseOptions`] what the row parser takes (also for offline imports): the settings'
//! [`CsvRows`] with the stored unit and limits ([`CsvSourceConfig::parse_options`]).

use std::path::PathBuf;

pub use super::config::{
    AmbiguousTime, ColumnRef, CsvDevice, CsvFormat, CsvRows, CsvSourceConfig, GenericCsv,
    OnSuccess, TimeFormat,
};
pub use tsfiled_core::{Glob, Template};

use crate::model::TimeUnit;

/// How rows are parsed (shared by the watch-directory source and offline imports).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvParseOptions {
    /// How rows are read: the source's keys.
    pub rows: CsvRows,
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
            rows: CsvRows::default(),
            precision: TimeUnit::Millis,
            max_batch_points: 50_000,
            max_record_bytes: 1 << 20,
        }
    }
}

/// What a CSV watch-directory source's run gets besides its settings ([`CsvSourceConfig`],
/// the one definition of its configuration keys): the context the daemon (or a test) gives
/// it. None of these is a configuration key.
#[derive(Debug, Clone)]
pub struct CsvRun {
    /// Directory for per-file checkpoints (created if missing), e.g. `<state>/csv/<source>`.
    pub state_dir: PathBuf,
    /// The pipeline's stored time unit: every timestamp is converted to it.
    pub stored_unit: TimeUnit,
    /// Largest batch handed on: a batch closes at this many points or this many rows.
    pub max_batch_points: usize,
    /// Longest record (bytes); a longer one is rejected (`too_large`) without buffering it.
    pub max_record_bytes: usize,
    /// Whether an inotify close-after-write marks a file complete at once (when its last byte is
    /// a newline; otherwise the settle time still applies). Writers that close and reopen a file
    /// between pieces should write elsewhere and rename instead, or this should be `false`.
    pub close_write_completes: bool,
    /// The file system of checkpoints and pending reports (tests inject a simulated one).
    pub fs: tsfiled_fsio::FsRef,
}

impl CsvRun {
    /// Checkpoints under `state_dir`, milliseconds stored, the parser's default limits.
    pub fn new(state_dir: PathBuf) -> CsvRun {
        let parse = CsvParseOptions::default();
        CsvRun {
            state_dir,
            stored_unit: TimeUnit::Millis,
            max_batch_points: parse.max_batch_points,
            max_record_bytes: parse.max_record_bytes,
            close_write_completes: true,
            fs: tsfiled_fsio::std_fs(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The configuration's default globs, compiled.
    fn globs(texts: &[&str]) -> Vec<Glob> {
        texts.iter().filter_map(|t| Glob::parse(t).ok()).collect()
    }

    #[test]
    fn default_globs_compile() {
        let texts = |g: &[Glob]| g.iter().map(|g| g.as_str().to_owned()).collect::<Vec<_>>();
        assert_eq!(
            texts(&globs(CsvSourceConfig::DEFAULT_PATTERNS)),
            ["*.csv", "*.csv.gz"]
        );
        assert_eq!(
            texts(&globs(CsvSourceConfig::DEFAULT_IGNORE)),
            ["*.tmp", "*.part", ".*"]
        );
    }
}
