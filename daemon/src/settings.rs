//! The daemon's runtime settings: what the TOML configuration maps onto, plus the
//! embedded default (HTTP push and metrics on 127.0.0.1, data under `./data`).

use std::path::PathBuf;
use std::time::Duration;

use tsfiled_connectors::TimeUnit;

use crate::parse::LineMapping;
use crate::pipeline::PipelineOptions;

/// Everything `tsfiled run` needs.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The pipelines (at least one).
    pub pipelines: Vec<PipelineSettings>,
    /// The HTTP listener (push endpoints, health, metrics).
    pub http: HttpSettings,
    /// Logging.
    pub log: LogSettings,
    /// Shutdown deadline: stop intake, make durable, seal, exit.
    pub shutdown_timeout: Duration,
}

/// One pipeline.
#[derive(Debug, Clone)]
pub struct PipelineSettings {
    /// Storage, WAL and schema settings.
    pub options: PipelineOptions,
    /// Stored time precision (default ms, as IoTDB).
    pub time_precision: TimeUnit,
    /// Whether the HTTP push endpoints feed this pipeline.
    pub http: bool,
}

/// The HTTP listener and push source.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// Listen address (`127.0.0.1:0` picks a free port).
    pub listen: String,
    /// Accepted bearer tokens (empty: no authentication).
    pub tokens: Vec<String>,
    /// Largest request body as sent (413 above).
    pub max_body_bytes: usize,
    /// Largest body after gzip decompression (413 above).
    pub max_decompressed_bytes: usize,
    /// Line-protocol measurement/tags → device mapping.
    pub line: LineMapping,
    /// Time unit of IoTDB JSON timestamps unless `?precision=` says otherwise.
    pub json_time_unit: TimeUnit,
    /// How long shutdown waits for open HTTP connections.
    pub shutdown_grace: Duration,
}

/// Logging settings.
#[derive(Debug, Clone)]
pub struct LogSettings {
    /// `tracing` filter, e.g. `info` or `tsfiled=debug`.
    pub level: String,
    /// JSON lines instead of text.
    pub json: bool,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            listen: "127.0.0.1:8086".into(),
            tokens: Vec::new(),
            max_body_bytes: 16 * 1024 * 1024,
            max_decompressed_bytes: 64 * 1024 * 1024,
            line: LineMapping::default(),
            json_time_unit: TimeUnit::Millis,
            shutdown_grace: Duration::from_secs(5),
        }
    }
}

impl Settings {
    /// The embedded default: one pipeline `default` under `./data`, HTTP push and
    /// metrics on `127.0.0.1:8086`.
    pub fn embedded_default() -> Settings {
        Settings {
            pipelines: vec![PipelineSettings {
                options: PipelineOptions::new("default", PathBuf::from("data")),
                time_precision: TimeUnit::Millis,
                http: true,
            }],
            http: HttpSettings::default(),
            log: LogSettings {
                level: "info".into(),
                json: false,
            },
            shutdown_timeout: Duration::from_secs(30),
        }
    }

    /// Applies `--data-dir` (to the first pipeline; others keep theirs) and `--http-listen`.
    pub fn with_overrides(
        mut self,
        data_dir: Option<PathBuf>,
        http_listen: Option<String>,
    ) -> Self {
        if let Some(d) = data_dir {
            if let Some(p) = self.pipelines.first_mut() {
                let name = p.options.engine.pipeline.clone();
                let rules = std::mem::take(&mut p.options.rules);
                let engine = p.options.engine.clone();
                let wal = p.options.wal.clone();
                p.options = PipelineOptions::new(&name, d);
                p.options.rules = rules;
                p.options.engine = crate::engine::EngineOptions {
                    data_dir: p.options.engine.data_dir.clone(),
                    ..engine
                };
                p.options.wal = crate::wal::WalOptions {
                    dir: p.options.wal.dir.clone(),
                    ..wal
                };
            }
        }
        if let Some(l) = http_listen {
            self.http.listen = l;
        }
        self
    }
}
