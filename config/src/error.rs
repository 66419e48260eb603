//! The crate's error type and compiler-style diagnostics.

use std::path::PathBuf;

pub use tsfiled_core::{Diagnostic, Diagnostics, KeyPath, Segment};

/// The error type of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The configuration file could not be read.
    #[error("cannot read configuration file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The configuration is not valid; every problem found is listed.
    #[error("{0}")]
    Invalid(Diagnostics),
    /// The effective configuration could not be serialized (a bug in this crate).
    #[error("cannot serialize the effective configuration: {0}")]
    Serialize(#[from] toml::ser::Error),
}

impl ConfigError {
    /// The diagnostics, if this is a validation error.
    pub fn diagnostics(&self) -> Option<&Diagnostics> {
        match self {
            ConfigError::Invalid(d) => Some(d),
            _ => None,
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = ConfigError> = std::result::Result<T, E>;
