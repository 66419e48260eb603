//! Loading a configuration file (or the embedded default) into runtime
//! [`Settings`](crate::settings::Settings), with the command-line overrides.
//!
//! The TOML schema and its validation live in the `tsfiled-config` crate.

use std::path::Path;

use tsfiled_config::{Config, Secrets};

use crate::settings::Settings;

/// Why a configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file is unreadable or invalid (the message names file, line and key).
    #[error("{0}")]
    Invalid(String),
}

/// Loads `path` (or the embedded default) and applies `--data-dir` / `--http-listen`.
pub fn load_config(
    path: Option<&Path>,
    data_dir: Option<&Path>,
    http_listen: Option<&str>,
) -> Result<Config, ConfigError> {
    let inv = |e: tsfiled_config::ConfigError| ConfigError::Invalid(e.to_string());
    let mut c = match path {
        Some(p) => Config::load(p).map_err(inv)?,
        None => Config::embedded_default().map_err(inv)?,
    };
    if let Some(d) = data_dir {
        c = c.with_data_dir(d).map_err(inv)?;
    }
    if let Some(l) = http_listen {
        let addr = l.parse().map_err(|e| {
            ConfigError::Invalid(format!("--http-listen {l:?}: not a socket address ({e})"))
        })?;
        c = c.with_http_listen(addr).map_err(inv)?;
    }
    Ok(c)
}

/// [`load_config`] mapped onto runtime settings.
pub fn load(
    path: Option<&Path>,
    data_dir: Option<&Path>,
    http_listen: Option<&str>,
) -> Result<Settings, ConfigError> {
    let c = load_config(path, data_dir, http_listen)?;
    Settings::from_config(&c).map_err(ConfigError::Invalid)
}

/// `tsfiled check-config`: validates `path` (syntax, keys, values, directories writable,
/// ports free) and renders the effective configuration. Errors list every failed check.
pub fn check(path: &Path) -> Result<String, ConfigError> {
    let c = load_config(Some(path), None, None)?;
    Settings::from_config(&c).map_err(ConfigError::Invalid)?;
    let report = tsfiled_config::check(&c);
    let mut out = String::new();
    for item in &report.items {
        out.push_str(&format!(
            "# {:?}: {}: {}\n",
            item.level, item.subject, item.message
        ));
    }
    if !report.is_ok() {
        return Err(ConfigError::Invalid(out));
    }
    let effective = c
        .to_toml(Secrets::Redact)
        .map_err(|e| ConfigError::Invalid(e.to_string()))?;
    out.push_str(&effective);
    Ok(out)
}
