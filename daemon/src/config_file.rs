//! Loading a configuration file (or the embedded default) into runtime
//! [`Settings`], with the command-line overrides.
//!
//! The TOML schema and its validation live in the `tsfiled-config` crate.

use std::path::Path;

use tsfiled_config::{Config, Secrets};

use crate::settings::Settings;
use crate::{Error, Result};

/// Loads `path` (or the embedded default) and applies `--data-dir` / `--http-listen`.
pub fn load_config(
    path: Option<&Path>,
    data_dir: Option<&Path>,
    http_listen: Option<&str>,
) -> Result<Config> {
    let mut c = match path {
        Some(p) => Config::load(p)?,
        None => Config::embedded_default()?,
    };
    if let Some(d) = data_dir {
        c = c.with_data_dir(d)?;
    }
    if let Some(l) = http_listen {
        let addr = l.parse().map_err(|e| {
            Error::Config(format!("--http-listen {l:?}: not a socket address ({e})"))
        })?;
        c = c.with_http_listen(addr)?;
    }
    Ok(c)
}

/// [`load_config`] mapped onto runtime settings.
pub fn load(
    path: Option<&Path>,
    data_dir: Option<&Path>,
    http_listen: Option<&str>,
) -> Result<Settings> {
    let c = load_config(path, data_dir, http_listen)?;
    Settings::from_config(&c)
}

/// `tsfiled check-config`: validates `path` (syntax, keys, values, directories writable,
/// ports free) and renders the effective configuration. Errors list every failed check.
pub fn check(path: &Path) -> Result<String> {
    let c = load_config(Some(path), None, None)?;
    Settings::from_config(&c)?;
    let report = tsfiled_config::check(&c);
    let mut out = String::new();
    for item in &report.items {
        out.push_str(&format!(
            "# {:?}: {}: {}\n",
            item.level, item.subject, item.message
        ));
    }
    if !report.is_ok() {
        return Err(Error::Config(out));
    }
    let effective = c.to_toml(Secrets::Redact)?;
    out.push_str(&effective);
    Ok(out)
}
