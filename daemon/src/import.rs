//! `tsfiled import FILE... --to DIR`: parses CSV files offline (no HTTP, no watching) into
//! a pipeline whose data directory is `DIR`, and seals every file before returning.
//!
//! The parsing settings are those of the first CSV source of the first pipeline of the
//! configuration (or the defaults: IoTDB's wide CSV). A progress line is drawn on stderr when
//! it is a terminal.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tsfiled_connectors::csv::{self, Chunk, CsvParseOptions};

use crate::metrics::Metrics;
use crate::pipeline::Pipeline;
use crate::{Error, Refusal};

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportSummary {
    /// Files imported.
    pub files: u64,
    /// Rows accepted.
    pub rows: u64,
    /// Rows rejected by the parser.
    pub rejected_rows: u64,
    /// Points durable.
    pub points: u64,
    /// Points rejected (parser and pipeline).
    pub rejected_points: u64,
}

struct Progress {
    on: bool,
    last: Instant,
    started: Instant,
}

impl Progress {
    fn draw(&mut self, file: &Path, idx: usize, total: usize, s: &ImportSummary, force: bool) {
        if !self.on || (!force && self.last.elapsed() < Duration::from_millis(200)) {
            return;
        }
        self.last = Instant::now();
        let secs = self.started.elapsed().as_secs_f64().max(1e-3);
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[2K[{}/{}] {name}: {} rows, {} points ({:.0} points/s)",
            idx + 1,
            total,
            s.rows,
            s.points,
            s.points as f64 / secs
        );
        let _ = err.flush();
    }

    fn finish(&self) {
        if self.on {
            eprintln!();
        }
    }
}

/// Imports `files` into a pipeline writing under `to`; `config` supplies the pipeline and
/// parsing settings (else the embedded default). Fails with a configuration error,
/// [`Error::ImportOpen`] or [`Error::ImportFile`].
pub fn import(files: &[PathBuf], to: &Path, config: Option<&Path>) -> crate::Result<ImportSummary> {
    let settings = crate::config_file::load(config, Some(to), None)?;
    let ps = settings
        .pipelines
        .into_iter()
        .next()
        .ok_or_else(|| Error::Config("the configuration has no pipeline".into()))?;
    let csv = ps
        .sources
        .iter()
        .find_map(|s| s.settings::<tsfiled_connectors::csv::CsvSourceConfig>());
    let parse: CsvParseOptions = match csv {
        Some(c) => c.parse_options(ps.time_precision),
        None => CsvParseOptions {
            precision: ps.time_precision,
            ..CsvParseOptions::default()
        },
    };
    let pipeline = Pipeline::open(ps.options.clone(), Metrics::new()).map_err(|e| match e {
        Error::Pipeline { source, .. } => Error::ImportOpen {
            dir: to.to_path_buf(),
            source,
        },
        e => e,
    })?;
    let result = import_into(&pipeline, files, &parse);
    pipeline.shutdown_blocking();
    result
}

fn import_into(
    pipeline: &Pipeline,
    files: &[PathBuf],
    parse: &CsvParseOptions,
) -> crate::Result<ImportSummary> {
    let mut sum = ImportSummary::default();
    let mut progress = Progress {
        on: std::io::stderr().is_terminal(),
        last: Instant::now(),
        started: Instant::now(),
    };
    for (idx, file) in files.iter().enumerate() {
        let r = csv::parse_path(file, parse, |chunk: Chunk| -> Result<(), FileFailure> {
            let accepted = submit(pipeline, chunk).map_err(|e| FileFailure(e.to_string()))?;
            sum.points += accepted.0;
            sum.rejected_points += accepted.1;
            progress.draw(file, idx, files.len(), &sum, false);
            Ok(())
        });
        let summary = match r {
            Ok(s) => s,
            Err(FileFailure(message)) => {
                progress.finish();
                return Err(Error::ImportFile {
                    file: file.clone(),
                    message,
                });
            }
        };
        sum.files += 1;
        sum.rows += summary.rows;
        sum.rejected_rows += summary.rejected_rows;
        progress.draw(file, idx, files.len(), &sum, true);
    }
    progress.finish();
    Ok(sum)
}

/// Why one file's import stopped (a parser or submission error's message); the caller
/// turns it into an [`Error::ImportFile`] naming the file.
struct FileFailure(String);

impl From<tsfiled_connectors::Error> for FileFailure {
    fn from(e: tsfiled_connectors::Error) -> Self {
        FileFailure(e.to_string())
    }
}

/// Submits one chunk, waiting while the pipeline is full; returns (durable, rejected) points
/// (the rejected ones include the parser's).
fn submit(pipeline: &Pipeline, chunk: Chunk) -> crate::Result<(u64, u64)> {
    loop {
        let batch = chunk.batch.clone();
        match pipeline.submit_blocking("import", batch, Instant::now()) {
            Ok(o) => return Ok((o.accepted, o.rejected)),
            Err(Error::Refused(Refusal::Full { retry_after, .. })) => {
                std::thread::sleep(retry_after)
            }
            Err(e) => return Err(e),
        }
    }
}
