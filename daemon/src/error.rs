//! The crate's single error type, [`Error`], and [`Refusal`], the flow-control verdict
//! a refused submission carries.
//!
//! # Refusals are carried inside `Error`
//!
//! A submission ([`Pipeline::submit`](crate::pipeline::Pipeline::submit)) that is refused
//! as a whole — a buffer is full, or the pipeline is shutting down — is not a failure: the
//! same batch succeeds later. But it has what an error has: nothing of it was accepted and
//! the source must not acknowledge upstream, so it travels on the `Err` path, as
//! [`Error::Refused`]. The small [`Refusal`] enum inside is what callers match on to pick
//! their reaction without parsing messages: HTTP answers 429 (`Full` of the queue) or 503
//! (`Full` of the disk budget, `Closed`) with `Retry-After`; the connectors' sources get
//! `SinkError::Full` / `SinkError::Closed` and retry; `tsfiled import` sleeps and resubmits.
//! Every other error of a submission (the log cannot write) is a real failure (HTTP 500).
//!
//! The write-ahead log ([`wal`](crate::wal)) reports its own limits as [`Error::WalFull`]
//! and [`Error::WalClosed`]: it knows no retry hint. The pipeline turns them into
//! [`Error::Refused`] with its configured `Retry-After` and counts the backpressure.
//!
//! # What is not here
//!
//! - Helpers that only do I/O on one file or socket (`engine::files`, `notify`,
//!   `wal::replay`, the schema registry) return [`std::io::Error`], as the `tsfile` crate's
//!   own file helpers do; the operations composed of them wrap it with where it happened
//!   ([`Error::Pipeline`], [`Error::Listen`], [`Error::TokenFile`], ...).
//! - Per-point problems are [`Rejection`](tsfiled_connectors::Rejection)s with a reason,
//!   not errors: they never fail their batch.
//! - The HTTP module's private `BodyError` (body too large → 413, else 400) never leaves
//!   its request handler, so it stays there.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// Every failure the daemon crate reports.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration is unusable (the message names the file, line and key, or the
    /// command-line option, and what was expected).
    #[error("{0}")]
    Config(String),
    /// The configuration file cannot be read or is invalid (from `tsfiled-config`).
    #[error(transparent)]
    ConfigFile(#[from] tsfiled_config::ConfigError),
    /// The HTTP token file (`http.token_file`) cannot be read.
    #[error("cannot read http.token_file {}: {source}", path.display())]
    TokenFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The HTTP user file (`http.user_file`) cannot be read or has a bad line.
    #[error("cannot use http.user_file {}: {message}", path.display())]
    UserFile {
        /// The file.
        path: PathBuf,
        /// Why (an I/O error, or `line N: …` without the password).
        message: String,
    },
    /// Opening or recovering a pipeline (data directory, schema, write-ahead log) failed.
    #[error("pipeline {pipeline}: {source}")]
    Pipeline {
        /// The pipeline's name.
        pipeline: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Binding a listener (HTTP or metrics) failed.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address as configured.
        addr: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Shutdown did not finish within the deadline.
    #[error("shutdown did not finish within {0:?}; unsealed points stay in the write-ahead log")]
    ShutdownDeadline(Duration),
    /// `tsfiled import`: opening the pipeline in the target directory failed.
    #[error("opening the pipeline in {}: {source}", dir.display())]
    ImportOpen {
        /// The data directory (`--to`).
        dir: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// `tsfiled import`: a file could not be parsed or its points not be made durable.
    #[error("{}: {message}", file.display())]
    ImportFile {
        /// The CSV file.
        file: PathBuf,
        /// What went wrong (the parser's message names the line).
        message: String,
    },
    /// The write-ahead log or its queue is at its size limit, or its device cannot be
    /// written for now (which: `queue`, `disk budget`, the device being full or read-only);
    /// retrying later can succeed.
    #[error("write-ahead log is full ({0})")]
    WalFull(&'static str),
    /// The write-ahead log is shut down.
    #[error("write-ahead log is closed")]
    WalClosed,
    /// Writing or syncing the write-ahead log failed (the message names the segment).
    #[error("write-ahead log I/O error: {0}")]
    WalIo(String),
    /// A record is larger than the write-ahead log accepts.
    #[error("record of {bytes} bytes exceeds the write-ahead log's record limit of {limit} bytes")]
    WalRecordTooLarge {
        /// The record's size.
        bytes: usize,
        /// The limit ([`wal::MAX_RECORD`](crate::wal::MAX_RECORD)).
        limit: usize,
    },
    /// A submission was refused as a whole, for now (flow control, see [`Refusal`]):
    /// nothing of it was accepted.
    #[error("{0}")]
    Refused(Refusal),
}

/// Why a pipeline refused a whole submission for now (not a failure: the same batch can
/// be submitted again; see the [module documentation](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// A buffer is full: retry after `retry_after`.
    Full {
        /// What is full (a bounded label: `queue`, `disk budget`, ...).
        reason: &'static str,
        /// Suggested wait before retrying.
        retry_after: Duration,
    },
    /// The pipeline is shutting down.
    Closed,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Full {
                reason,
                retry_after,
            } => write!(f, "buffer full ({reason}); retry after {retry_after:?}"),
            Refusal::Closed => f.write_str("the pipeline is shutting down"),
        }
    }
}

impl Error {
    /// The refusal, if this is one (a caller may retry the same submission later).
    pub fn refusal(&self) -> Option<Refusal> {
        match self {
            Error::Refused(r) => Some(*r),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_what_and_where() {
        let cases: Vec<(Error, &str)> = vec![
            (
                Error::Refused(Refusal::Full {
                    reason: "queue",
                    retry_after: Duration::from_secs(1),
                }),
                "buffer full (queue); retry after 1s",
            ),
            (
                Error::Refused(Refusal::Closed),
                "the pipeline is shutting down",
            ),
            (
                Error::WalFull("disk budget"),
                "write-ahead log is full (disk budget)",
            ),
            (Error::WalClosed, "write-ahead log is closed"),
            (
                Error::WalRecordTooLarge {
                    bytes: 300,
                    limit: 256,
                },
                "record of 300 bytes exceeds the write-ahead log's record limit of 256 bytes",
            ),
            (
                Error::TokenFile {
                    path: "/etc/tsfiled/tokens".into(),
                    source: io::Error::from(io::ErrorKind::NotFound),
                },
                "cannot read http.token_file /etc/tsfiled/tokens: entity not found",
            ),
            (
                Error::ImportFile {
                    file: "/srv/a.csv".into(),
                    message: "line 3: bad time".into(),
                },
                "/srv/a.csv: line 3: bad time",
            ),
            (
                Error::ImportOpen {
                    dir: "/srv/out".into(),
                    source: io::Error::other("locked"),
                },
                "opening the pipeline in /srv/out: locked",
            ),
            (
                Error::Pipeline {
                    pipeline: "plant".into(),
                    source: io::Error::other("locked"),
                },
                "pipeline plant: locked",
            ),
            (
                Error::Listen {
                    addr: "127.0.0.1:80".into(),
                    source: io::Error::other("in use"),
                },
                "cannot listen on 127.0.0.1:80: in use",
            ),
            (
                Error::ShutdownDeadline(Duration::from_secs(30)),
                "shutdown did not finish within 30s; unsealed points stay in the write-ahead log",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(e.to_string(), want);
        }
    }

    #[test]
    fn only_refusals_are_refusals() {
        let full = Refusal::Full {
            reason: "queue",
            retry_after: Duration::from_millis(5),
        };
        assert_eq!(Error::Refused(full).refusal(), Some(full));
        assert_eq!(
            Error::Refused(Refusal::Closed).refusal(),
            Some(Refusal::Closed)
        );
        assert_eq!(Error::WalFull("queue").refusal(), None);
        assert_eq!(Error::WalIo("x".into()).refusal(), None);
    }

    #[test]
    fn sources_are_chained() {
        use std::error::Error as _;
        let e = Error::Pipeline {
            pipeline: "p".into(),
            source: io::Error::other("inner"),
        };
        assert_eq!(e.source().map(|s| s.to_string()), Some("inner".into()));
    }
}
