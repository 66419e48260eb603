//! Parsing (stage one: TOML → [`RawConfig`], [`parse`]) and validation (stage two:
//! [`RawConfig`] → [`Config`]), both reporting every problem they find with its key path, line
//! and column. One module per section; each source table is validated by its source type.

mod http;
mod parse;
mod pipeline;
mod schema;
mod storage;
mod telemetry;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tsfiled_core::{same_path, SpanIndex, Validator as V};

use crate::error::{ConfigError, Diagnostics, KeyPath};
use crate::model::*;
use crate::raw::*;
use parse::{parse_raw, sort_diags};
use pipeline::validate_pipeline;

/// Validated pipeline with where its paths came from, for the cross-pipeline checks.
struct Built {
    pipeline: PipelineConfig,
    path: KeyPath,
}

/// Stage two: validates raw structures into a [`Config`].
pub(crate) fn validate(
    raw: &RawConfig,
    spans: &Arc<SpanIndex>,
    origin: &str,
) -> Result<Config, Diagnostics> {
    let mut v = V {
        spans,
        diags: Vec::new(),
    };
    let root = KeyPath::root();
    let data_dir = v.path_or(
        &raw.data_dir,
        &root.key("data_dir"),
        PathBuf::from("./data"),
    );
    let shutdown_timeout = v.positive_duration(
        &raw.shutdown_timeout,
        &root.key("shutdown_timeout"),
        Duration::from_secs(30),
    );

    let http = http::validate_http(
        &mut v,
        &raw.http.clone().unwrap_or_default(),
        &root.key("http"),
    );
    let mp = root.key("metrics");
    let metrics = telemetry::validate_metrics(
        &mut v,
        &raw.metrics.clone().unwrap_or_default(),
        &mp,
        http.listen,
    );
    let log = telemetry::validate_log(
        &mut v,
        &raw.log.clone().unwrap_or_default(),
        &root.key("log"),
    );

    // [[pipeline]]
    if raw.pipeline.is_empty() {
        v.err(
            &root,
            "no [[pipeline]]: at least one pipeline with a source is required",
        );
    }
    let mut names: HashMap<&str, KeyPath> = HashMap::new();
    for (i, rp) in raw.pipeline.iter().enumerate() {
        let pp = root.key("pipeline").index(i);
        if let Some(n) = rp.name.as_deref() {
            if let Some(first) = names.get(n) {
                v.err(
                    &pp.key("name"),
                    format!("pipeline name \"{n}\" is already used by {first}"),
                );
            } else {
                names.insert(n, pp);
            }
        }
    }
    let mut built: Vec<Built> = Vec::new();
    for (i, rp) in raw.pipeline.iter().enumerate() {
        let pp = root.key("pipeline").index(i);
        if let Some(p) = validate_pipeline(&mut v, rp, &pp, &data_dir, &http) {
            built.push(Built {
                pipeline: p,
                path: pp,
            });
        }
    }

    // Cross-pipeline checks.
    let mut dirs: Vec<(PathBuf, KeyPath, &'static str)> = Vec::new();
    let mut routes: HashMap<String, KeyPath> = HashMap::new();
    for b in &built {
        let p = &b.pipeline;
        let sp = b.path.key("storage");
        for (dir, key, what) in [
            (&p.storage.data_dir, "data_dir", "data directory"),
            (&p.storage.wal_dir, "wal_dir", "WAL directory"),
        ] {
            if let Some((_, other, other_what)) = dirs.iter().find(|(d, _, _)| same_path(d, dir)) {
                let shown = if v.written(&sp.key(key)) {
                    sp.key(key)
                } else {
                    b.path.clone()
                };
                v.err(
                    &shown,
                    format!(
                        "{what} {} is also the {other_what} of {other}; give each pipeline its own storage.data_dir",
                        dir.display()
                    ),
                );
            } else {
                dirs.push((dir.clone(), sp.key(key), what));
            }
        }
        for (j, s) in p.sources.iter().enumerate() {
            if let Some(h) = s.settings.http_push() {
                let srcp = b.path.key("source").index(j);
                for r in h.routes() {
                    if let Some(other) = routes.get(&r) {
                        let at = if v.written(&srcp.key("base_path")) {
                            srcp.key("base_path")
                        } else {
                            srcp.clone()
                        };
                        v.err(
                            &at,
                            format!("{r} is already served by {other}; set a different base_path"),
                        );
                    } else {
                        routes.insert(r, srcp.clone());
                    }
                }
            }
        }
    }
    if metrics.enabled && metrics.listen.is_none() {
        let mut reserved: Vec<String> = ["/", "/health", "/ready"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        reserved.extend(routes.keys().cloned());
        if reserved.contains(&metrics.path) {
            v.err(
                &mp.key("path"),
                format!("{} is already a route of the HTTP listener", metrics.path),
            );
        }
    }

    if !v.diags.is_empty() {
        let mut items = v.diags;
        sort_diags(&mut items);
        items.dedup();
        return Err(Diagnostics {
            origin: origin.to_string(),
            items,
        });
    }
    Ok(Config {
        data_dir,
        shutdown_timeout,
        http,
        metrics,
        log,
        pipelines: built.into_iter().map(|b| b.pipeline).collect(),
        provenance: Provenance {
            origin: origin.to_string(),
            raw: raw.clone(),
            spans: Arc::clone(spans),
        },
    })
}

// ---------------------------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------------------------

impl Config {
    /// Parses and validates TOML text. `origin` names it in diagnostics (a file path, or
    /// `<embedded default>`).
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Config, ConfigError> {
        let (raw, spans) = parse_raw(text).map_err(|items| {
            ConfigError::Invalid(Diagnostics {
                origin: origin.to_string(),
                items,
            })
        })?;
        validate(&raw, &Arc::new(spans), origin).map_err(ConfigError::Invalid)
    }

    /// Reads, parses and validates a configuration file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Config::from_toml_str(&text, &path.display().to_string())
    }

    /// The embedded default configuration ([`crate::DEFAULT_CONFIG`]).
    pub fn embedded_default() -> Result<Config, ConfigError> {
        Config::from_toml_str(crate::DEFAULT_CONFIG, "<embedded default>")
    }

    /// Where this configuration came from (as given to [`Config::from_toml_str`]).
    pub fn origin(&self) -> &str {
        &self.provenance.origin
    }

    /// This configuration with the top-level `data_dir` replaced (the `--data-dir` flag).
    /// Pipelines that do not set `storage.data_dir` follow it, and so do their defaulted WAL
    /// and dead-letter paths. Fails if two pipelines would then share a directory.
    pub fn with_data_dir(&self, dir: &Path) -> Result<Config, ConfigError> {
        let mut raw = self.provenance.raw.clone();
        raw.data_dir = Some(dir.to_string_lossy().into_owned());
        self.revalidate(raw, "--data-dir")
    }

    /// This configuration with `http.listen` replaced (the `--http-listen` flag; port 0 picks a
    /// free port).
    pub fn with_http_listen(&self, addr: SocketAddr) -> Result<Config, ConfigError> {
        let mut raw = self.provenance.raw.clone();
        raw.http.get_or_insert_with(Default::default).listen = Some(addr.to_string());
        self.revalidate(raw, "--http-listen")
    }

    fn revalidate(&self, raw: RawConfig, flag: &str) -> Result<Config, ConfigError> {
        let origin = format!("{} (with {flag})", self.provenance.origin);
        let mut c =
            validate(&raw, &self.provenance.spans, &origin).map_err(ConfigError::Invalid)?;
        c.provenance.origin = self.provenance.origin.clone();
        Ok(c)
    }
}
