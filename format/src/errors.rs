//! The crate's single error type.

use std::fmt;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every failure the TsFile library can report.
///
/// Malformed input always yields [`Error::Format`] (absolute file offsets) or
/// [`Error::Decode`] (offsets relative to an encoded stream, wrapped by the reader
/// into a `Format` error naming the page).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An underlying I/O operation failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// The file is malformed at an absolute byte offset.
    #[error("malformed TsFile at byte {offset}: expected {expected}")]
    Format {
        /// Absolute byte offset in the file (or buffer) where the problem was found.
        offset: u64,
        /// What was expected there.
        expected: String,
    },
    /// An encoded stream (a page's time or value column) is malformed.
    #[error("malformed {stream} at byte {at} of the stream: {msg}")]
    Decode {
        /// Which stream, e.g. `"TS_2DIFF INT64 column"`.
        stream: &'static str,
        /// Offset relative to the start of the stream.
        at: usize,
        /// What went wrong.
        msg: String,
    },
    /// A data type / encoding / compression combination the 0.10 writer refuses.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A value or argument the caller passed is not acceptable.
    #[error("invalid input: {0}")]
    InvalidInput(String),
}

impl Error {
    /// Builds a [`Error::Format`] error.
    pub fn format(offset: u64, expected: impl fmt::Display) -> Self {
        Error::Format {
            offset,
            expected: expected.to_string(),
        }
    }

    /// Builds a [`Error::Decode`] error.
    pub fn decode(stream: &'static str, at: usize, msg: impl fmt::Display) -> Self {
        Error::Decode {
            stream,
            at,
            msg: msg.to_string(),
        }
    }

    /// Builds a [`Error::InvalidInput`] error.
    pub fn invalid(msg: impl fmt::Display) -> Self {
        Error::InvalidInput(msg.to_string())
    }

    /// Builds a [`Error::Unsupported`] error.
    pub fn unsupported(msg: impl fmt::Display) -> Self {
        Error::Unsupported(msg.to_string())
    }
}
