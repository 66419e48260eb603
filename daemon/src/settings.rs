//! The daemon's runtime settings, mapped from the validated configuration
//! (`tsfiled-config`), plus command-line overrides.

use std::path::PathBuf;
use std::time::Duration;

use tsfiled_config as cfg;
use tsfiled_connectors::{DeviceTemplate, TimeUnit};

use crate::engine::schema::{SchemaRule, TypeDefaults};
use crate::pipeline::PipelineOptions;

/// Everything `tsfiled run` needs.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The pipelines (at least one).
    pub pipelines: Vec<PipelineSettings>,
    /// The HTTP listener (push endpoints, health, metrics).
    pub http: HttpSettings,
    /// Metrics endpoint.
    pub metrics: MetricsSettings,
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
    /// HTTP push sources feeding this pipeline.
    pub http_sources: Vec<HttpSourceSettings>,
    /// MQTT sources feeding this pipeline.
    pub mqtt_sources: Vec<tsfiled_connectors::mqtt::MqttSourceOptions>,
    /// CSV directory sources feeding this pipeline.
    pub csv_sources: Vec<CsvSourceSettings>,
}

/// One CSV directory source.
#[derive(Debug, Clone)]
pub struct CsvSourceSettings {
    /// Source name (metric label).
    pub name: String,
    /// The connector's options.
    pub options: tsfiled_connectors::csv::CsvSourceOptions,
}

/// One HTTP push source: its routes below `base_path`.
#[derive(Debug, Clone)]
pub struct HttpSourceSettings {
    /// Source name (metric label).
    pub name: String,
    /// Path prefix of its routes (`""` for the standard paths).
    pub base_path: String,
    /// Serve `POST <base>/ingest/iotdb-json`.
    pub iotdb_json: bool,
    /// Serve `POST <base>/write` and `<base>/api/v2/write`.
    pub line_protocol: bool,
    /// Serve IoTDB's REST write API below `<base>/rest/`.
    pub iotdb_rest: bool,
    /// Line-protocol device naming.
    pub device_template: DeviceTemplate,
    /// Line-protocol timestamp unit when a request gives no `precision`.
    pub line_precision: TimeUnit,
}

/// The HTTP listener. Its `Debug` shows how many tokens there are, never them, and never a
/// password.
#[derive(Clone)]
pub struct HttpSettings {
    /// Listen address (`127.0.0.1:0` picks a free port).
    pub listen: String,
    /// Accepted bearer tokens (empty and no file: no authentication).
    pub tokens: Vec<String>,
    /// File with more tokens, re-read on reload.
    pub token_file: Option<PathBuf>,
    /// Users for HTTP Basic authentication (with the tokens: empty and no files means no
    /// authentication).
    pub users: Vec<cfg::HttpUser>,
    /// File with more users, re-read on reload.
    pub user_file: Option<PathBuf>,
    /// Largest request body as sent (413 above).
    pub max_body_bytes: usize,
    /// Largest body after gzip decompression (413 above).
    pub max_decompressed_bytes: usize,
    /// Time unit of IoTDB JSON timestamps unless `?precision=` says otherwise.
    pub json_time_unit: TimeUnit,
    /// Limit for one request including the wait for durability (503 after it).
    pub request_timeout: Duration,
    /// How long shutdown waits for open HTTP connections.
    pub shutdown_grace: Duration,
}

impl std::fmt::Debug for HttpSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSettings")
            .field("listen", &self.listen)
            .field("tokens", &format_args!("[{} redacted]", self.tokens.len()))
            .field("token_file", &self.token_file)
            .field("users", &self.users)
            .field("user_file", &self.user_file)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_decompressed_bytes", &self.max_decompressed_bytes)
            .field("json_time_unit", &self.json_time_unit)
            .field("request_timeout", &self.request_timeout)
            .field("shutdown_grace", &self.shutdown_grace)
            .finish()
    }
}

/// The metrics endpoint.
#[derive(Debug, Clone)]
pub struct MetricsSettings {
    /// Whether metrics are served.
    pub enabled: bool,
    /// URL path.
    pub path: String,
    /// A separate listener (else the HTTP listener).
    pub listen: Option<String>,
}

/// Logging settings.
#[derive(Debug, Clone)]
pub struct LogSettings {
    /// `tracing` filter, e.g. `info` or `tsfiled=debug`.
    pub level: String,
    /// JSON lines instead of text.
    pub json: bool,
    /// Colours: `None` = only on a terminal.
    pub color: Option<bool>,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            listen: "127.0.0.1:8080".into(),
            tokens: Vec::new(),
            token_file: None,
            users: Vec::new(),
            user_file: None,
            max_body_bytes: 16 * 1024 * 1024,
            max_decompressed_bytes: 64 * 1024 * 1024,
            json_time_unit: TimeUnit::Millis,
            request_timeout: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(5),
        }
    }
}

fn data_type(t: cfg::DataType) -> Result<tsfile::DataType, String> {
    t.as_str().parse().map_err(|e| format!("{e}"))
}

fn encoding(e: cfg::Encoding) -> Result<tsfile::Encoding, String> {
    e.as_str().parse().map_err(|e| format!("{e}"))
}

fn compression(c: cfg::Compression) -> Result<tsfile::Compression, String> {
    c.as_str().parse().map_err(|e| format!("{e}"))
}

fn size(b: cfg::ByteSize) -> u64 {
    b.0
}

impl Settings {
    /// Maps a validated configuration onto runtime settings; fails with
    /// [`Error::Config`](crate::Error::Config).
    pub fn from_config(c: &cfg::Config) -> crate::Result<Settings> {
        Settings::map(c).map_err(crate::Error::Config)
    }

    fn map(c: &cfg::Config) -> Result<Settings, String> {
        let mut pipelines = Vec::new();
        for p in &c.pipelines {
            let st = &p.storage;
            let precision = TimeUnit::from(st.time_precision);
            let mut o = PipelineOptions::new(&p.name, st.data_dir.clone());
            o.engine.state_dir = p.state_dir();
            o.engine.sg_level = st.storage_group_level as usize;
            o.engine.partition_interval = match st.time_partition {
                Some(d) => Some(st.time_precision.units_of(d).filter(|&n| n > 0).ok_or(
                    "time_partition_interval is not a whole number of time_precision units",
                )?),
                None => None,
            };
            o.engine.memtable_bytes = size(st.memtable_budget) as usize;
            o.engine.chunk_group_bytes = size(st.chunk_group_size) as usize;
            o.engine.file_max_bytes = size(st.seal_size);
            o.engine.file_max_age = st.seal_age;
            o.engine.file_idle = st.seal_idle;
            o.engine.tick =
                Duration::from_millis(500).min(st.seal_idle.max(Duration::from_millis(10)));
            o.engine.writer.page_size_bytes = size(st.page_size) as usize;
            o.engine.writer.max_points_per_page = st.max_points_per_page as usize;
            o.engine.writer.max_degree = st.max_index_degree as usize;
            o.engine.writer.bloom_error_rate = st.bloom_filter_error_rate;
            o.engine.format = st.format_version;
            o.wal.dir = st.wal_dir.clone();
            o.wal.max_bytes = size(st.wal_max_size);
            o.wal.commit_bytes = size(st.wal_commit_size) as usize;
            let d = &p.schema.defaults;
            o.defaults = TypeDefaults {
                integer: data_type(d.integer_type)?,
                float: data_type(d.float_type)?,
                boolean_encoding: encoding(d.boolean)?,
                int32_encoding: encoding(d.int32)?,
                int64_encoding: encoding(d.int64)?,
                float_encoding: encoding(d.float)?,
                double_encoding: encoding(d.double)?,
                text_encoding: encoding(d.text)?,
                compression: compression(d.compression)?,
            };
            o.rules = p
                .schema
                .rules
                .iter()
                .map(|r| {
                    Ok(SchemaRule {
                        pattern: r.pattern.clone(),
                        data_type: Some(data_type(r.data_type)?),
                        encoding: Some(encoding(r.encoding)?),
                        compression: Some(compression(r.compression)?),
                    })
                })
                .collect::<Result<_, String>>()?;
            let mut http_sources = Vec::new();
            let mut mqtt_sources = Vec::new();
            let mut csv_sources = Vec::new();
            for s in &p.sources {
                if let cfg::SourceKind::Csv(c) = &s.kind {
                    csv_sources.push(CsvSourceSettings {
                        name: s.name.clone(),
                        options: crate::sources::csv_options(&s.name, c, precision, &p.state_dir()),
                    });
                }
                if let cfg::SourceKind::Mqtt(m) = &s.kind {
                    mqtt_sources.push(crate::sources::mqtt_options(
                        &s.name,
                        m,
                        precision,
                        &p.state_dir(),
                    ));
                }
                if let cfg::SourceKind::Http(h) = &s.kind {
                    let lp = &h.line_protocol;
                    let device_template =
                        DeviceTemplate::with_prefix(&lp.path_prefix, lp.device_template.as_str())
                            .map_err(|e| format!("source {}: {e}", s.name))?;
                    http_sources.push(HttpSourceSettings {
                        name: s.name.clone(),
                        base_path: h.base_path.trim_end_matches('/').to_string(),
                        iotdb_json: h.endpoints.contains(&cfg::HttpEndpoint::IotdbJson),
                        line_protocol: h.endpoints.contains(&cfg::HttpEndpoint::LineProtocol),
                        iotdb_rest: h.endpoints.contains(&cfg::HttpEndpoint::IotdbRest),
                        device_template,
                        line_precision: lp.precision.into(),
                    });
                }
            }
            pipelines.push(PipelineSettings {
                options: o,
                time_precision: precision,
                http_sources,
                mqtt_sources,
                csv_sources,
            });
        }
        Ok(Settings {
            pipelines,
            http: HttpSettings {
                listen: c.http.listen.to_string(),
                tokens: c.http.tokens.clone(),
                token_file: c.http.token_file.clone(),
                users: c.http.users.clone(),
                user_file: c.http.user_file.clone(),
                max_body_bytes: size(c.http.max_body_size) as usize,
                max_decompressed_bytes: size(c.http.max_decompressed_size) as usize,
                json_time_unit: TimeUnit::Millis,
                request_timeout: c.http.request_timeout,
                shutdown_grace: Duration::from_secs(5).min(c.shutdown_timeout / 3),
            },
            metrics: MetricsSettings {
                enabled: c.metrics.enabled,
                path: c.metrics.path.clone(),
                listen: c.metrics.listen.map(|a| a.to_string()),
            },
            log: LogSettings {
                level: c.log.level.clone(),
                json: c.log.format == cfg::LogFormat::Json,
                color: match c.log.color {
                    cfg::ColorMode::Auto => None,
                    cfg::ColorMode::Never => Some(false),
                    cfg::ColorMode::Always => Some(true),
                },
            },
            shutdown_timeout: c.shutdown_timeout,
        })
    }

    /// The embedded default configuration (HTTP push and metrics on 127.0.0.1, data
    /// under `./data`).
    pub fn embedded_default() -> Settings {
        let c =
            cfg::Config::embedded_default().expect("the embedded default configuration is valid");
        Settings::from_config(&c).expect("the embedded default configuration maps")
    }

    /// The embedded default with a data directory and listen address (tests, tools).
    pub fn embedded_with(data_dir: &std::path::Path, listen: &str) -> Settings {
        let mut c =
            cfg::Config::embedded_default().expect("the embedded default configuration is valid");
        c = c.with_data_dir(data_dir).expect("data dir override");
        if let Ok(a) = listen.parse() {
            c = c.with_http_listen(a).expect("listen override");
        }
        Settings::from_config(&c).expect("the embedded default configuration maps")
    }
}
