//! The crate's error type (configuration-time errors; payload problems are
//! [`Rejection`](crate::Rejection)s, not errors).

use crate::path::{PathError, TemplateError};

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
        reason: PathError,
    },
    /// A device template does not parse.
    #[error(transparent)]
    DeviceTemplate(#[from] TemplateError),
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
