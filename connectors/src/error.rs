//! The crate's error type (configuration-time errors; payload problems are
//! [`Rejection`](crate::Rejection)s, not errors).

impl Error {
    /// An [`Error::Io`] from an I/O error and what was being done.
    pub fn io(context: impl Into<String>, e: &std::io::Error) -> Error {
        Error::Io {
            context: context.into(),
            kind: e.kind(),
            message: e.to_string(),
        }
    }
}

/// Errors of `tsfiled-connectors`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configured path (prefix, device) is invalid.
    #[error("invalid path {path:?}: {reason}")]
    Path {
        /// The path as given.
        path: String,
        /// Why.
        reason: tsfiled_core::Error,
    },
    /// A device template (or another of the shared grammars and units) does not parse.
    #[error(transparent)]
    Core(#[from] tsfiled_core::Error),
    /// An invalid CSV parser or source option.
    #[error("csv option `{key}`: {message}")]
    CsvOption {
        /// The option (the configuration key it comes from).
        key: &'static str,
        /// What is wrong / what was expected.
        message: String,
    },
    /// A CSV file cannot be used as a whole (missing or invalid header, unusable device).
    #[error("line {line}: {message}")]
    CsvFile {
        /// 1-based line of the problem (0 when the file is empty).
        line: u64,
        /// What is wrong / what was expected.
        message: String,
    },
    /// An I/O error, with what was being done.
    #[error("{context}: {message}")]
    Io {
        /// What was being done, e.g. `reading /srv/drop/a.csv at byte 1024`.
        context: String,
        /// The error kind.
        kind: std::io::ErrorKind,
        /// The error message.
        message: String,
    },
    /// A setting of a source is invalid (found when the source starts).
    #[error("{source_type} setting `{key}`: {message}")]
    Invalid {
        /// The source type, e.g. `mqtt`.
        source_type: &'static str,
        /// The setting (the configuration key it comes from).
        key: &'static str,
        /// What is wrong / what was expected.
        message: String,
    },
    /// A client library could not be set up (e.g. the NATS client, a TLS configuration).
    #[error("{client}: {message}")]
    Client {
        /// Which client, e.g. `nats client`.
        client: &'static str,
        /// What went wrong.
        message: String,
    },
    /// The sink closed (the pipeline is shutting down).
    #[error("the sink closed")]
    SinkClosed,
    /// The file watcher failed.
    #[error("file watcher: {0}")]
    Watch(String),
    /// A topic template does not parse.
    #[error("topic template {template:?}, level {level}: {message}")]
    TopicTemplate {
        /// The template as given.
        template: String,
        /// 0-based topic level of the problem.
        level: usize,
        /// What is wrong / what was expected.
        message: String,
    },
}
