//! Loading a configuration file into [`Settings`](crate::settings::Settings).
//!
//! The TOML schema and its validation live in the `tsfiled-config` crate; this module
//! maps its validated configuration onto the daemon's runtime settings.

use std::path::Path;

use crate::settings::Settings;

/// Why a configuration file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Reading the file failed.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a valid configuration.
    #[error("{0}")]
    Invalid(String),
}

/// Loads and validates `path`.
pub fn load(path: &Path) -> Result<Settings, ConfigError> {
    let _text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
        path: path.display().to_string(),
        source: e,
    })?;
    Err(ConfigError::Invalid(format!(
        "{}: configuration files are not supported by this build yet (run without --config for the embedded default)",
        path.display()
    )))
}

/// Validates `path` and renders the effective configuration.
pub fn check(path: &Path) -> Result<String, ConfigError> {
    load(path).map(|s| format!("{s:#?}\n"))
}
