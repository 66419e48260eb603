//! Stage two: the validated runtime configuration, with defaults applied and typed values.
//!
//! Build one with [`Config::from_toml_str`], [`Config::load`] or [`Config::embedded_default`].

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tsfiled_connectors::source::{DynSettings, SourceSettings};
pub use tsfiled_core::LineProtocolModel;
use tsfiled_core::{ByteSize, Compression, DataType, Encoding, PathPattern, TimeUnit};

use crate::raw::RawConfig;

/// The validated configuration of the daemon.
#[derive(Debug, Clone)]
pub struct Config {
    /// Top-level data directory (the default of each pipeline's `storage.data_dir`).
    pub data_dir: PathBuf,
    /// Deadline for a graceful stop.
    pub shutdown_timeout: Duration,
    /// The HTTP listener.
    pub http: HttpConfig,
    /// Prometheus metrics.
    pub metrics: MetricsConfig,
    /// Logging.
    pub log: LogConfig,
    /// The pipelines (at least one, unique names).
    pub pipelines: Vec<PipelineConfig>,
    pub(crate) provenance: Provenance,
}

/// What a [`Config`] was built from, so that overrides can be re-validated against the same
/// document and positions. Ignored by equality; `Debug` shows only the origin (the raw
/// document holds secrets such as an inline MQTT password).
#[derive(Clone)]
pub(crate) struct Provenance {
    pub(crate) origin: String,
    pub(crate) raw: RawConfig,
    pub(crate) spans: Arc<tsfiled_core::SpanIndex>,
}

impl std::fmt::Debug for Provenance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provenance")
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Config {
    fn eq(&self, other: &Self) -> bool {
        self.data_dir == other.data_dir
            && self.shutdown_timeout == other.shutdown_timeout
            && self.http == other.http
            && self.metrics == other.metrics
            && self.log == other.log
            && self.pipelines == other.pipelines
    }
}

/// `[http]`: the HTTP listener. Its `Debug` shows how many tokens there are, never them.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpConfig {
    /// Address to bind (port 0: any free port).
    pub listen: SocketAddr,
    /// Bearer tokens written in the configuration.
    pub tokens: Vec<String>,
    /// File with more tokens, one per line (read by the daemon at start and on reload).
    pub token_file: Option<PathBuf>,
    /// Users for HTTP Basic authentication written in the configuration.
    pub users: Vec<HttpUser>,
    /// File with more users, `name:password` per line ([`parse_user_file`]; read by the
    /// daemon at start and on reload).
    pub user_file: Option<PathBuf>,
    /// Largest raw request body (413 beyond).
    pub max_body_size: ByteSize,
    /// Largest decompressed request body (413 beyond).
    pub max_decompressed_size: ByteSize,
    /// Time limit of one request.
    pub request_timeout: Duration,
}

impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpConfig")
            .field("listen", &self.listen)
            .field("tokens", &format_args!("[{} redacted]", self.tokens.len()))
            .field("token_file", &self.token_file)
            .field("users", &self.users)
            .field("user_file", &self.user_file)
            .field("max_body_size", &self.max_body_size)
            .field("max_decompressed_size", &self.max_decompressed_size)
            .field("request_timeout", &self.request_timeout)
            .finish()
    }
}

impl HttpConfig {
    /// Whether push endpoints require authentication (a bearer token or a user).
    pub fn auth_required(&self) -> bool {
        !self.tokens.is_empty()
            || self.token_file.is_some()
            || !self.users.is_empty()
            || self.user_file.is_some()
    }
}

/// A user for HTTP Basic authentication. Its `Debug` never shows the password.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpUser {
    /// User name (no `:`, whitespace or control characters).
    pub name: String,
    /// Password (not empty, no control characters).
    pub password: String,
}

impl fmt::Debug for HttpUser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpUser")
            .field("name", &self.name)
            .field("password", &format_args!("<redacted>"))
            .finish()
    }
}

impl HttpUser {
    /// Checks a user name: not empty, no `:` (Basic credentials and the user file split at the
    /// first `:`), no whitespace or control characters.
    pub fn check_name(name: &str) -> Result<(), String> {
        if name.is_empty() {
            return Err("a user name must not be empty".into());
        }
        if let Some(c) = name
            .chars()
            .find(|&c| c == ':' || c.is_whitespace() || c.is_control())
        {
            return Err(format!("a user name must not contain {c:?}"));
        }
        Ok(())
    }

    /// Checks a password: not empty, no control characters.
    pub fn check_password(password: &str) -> Result<(), String> {
        if password.is_empty() {
            return Err("a password must not be empty".into());
        }
        if password.chars().any(char::is_control) {
            return Err("a password must not contain control characters".into());
        }
        Ok(())
    }
}

/// Parses the text of an `http.user_file`: one `name:password` per line (the password is
/// everything after the first `:`, kept as written but for a trailing `\r`), blank lines and
/// lines starting with `#` ignored. An error names the 1-based line, never the password.
pub fn parse_user_file(text: &str) -> Result<Vec<HttpUser>, (usize, String)> {
    let mut users: Vec<HttpUser> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let Some((name, password)) = line.split_once(':') else {
            return Err((i + 1, "expected `name:password`".into()));
        };
        let name = name.trim();
        HttpUser::check_name(name)
            .and_then(|()| HttpUser::check_password(password))
            .map_err(|e| (i + 1, e))?;
        if users.iter().any(|u| u.name == name) {
            return Err((i + 1, format!("user {name:?} is listed twice")));
        }
        users.push(HttpUser {
            name: name.to_owned(),
            password: password.to_owned(),
        });
    }
    Ok(users)
}

/// `[metrics]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsConfig {
    /// Whether metrics are served.
    pub enabled: bool,
    /// URL path, e.g. `/metrics`.
    pub path: String,
    /// Separate listener; `None` = served on the `[http]` listener.
    pub listen: Option<SocketAddr>,
}

/// `[log]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogConfig {
    /// A `tracing_subscriber::EnvFilter` directive string, checked for form.
    pub level: String,
    /// Line format.
    pub format: LogFormat,
    /// ANSI colours.
    pub color: ColorMode,
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable text.
    Text,
    /// One JSON object per line.
    Json,
}

/// When to use ANSI colours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorMode {
    /// Only when stderr is a terminal.
    Auto,
    /// Never.
    Never,
    /// Always.
    Always,
}

/// `[[pipeline]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineConfig {
    /// Unique name.
    pub name: String,
    /// Storage settings.
    pub storage: StorageConfig,
    /// Schema rules and defaults.
    pub schema: SchemaConfig,
    /// Sources (at least one, unique names within the pipeline).
    pub sources: Vec<SourceConfig>,
}

impl PipelineConfig {
    /// Directory for the pipeline's private state (e.g. CSV checkpoints):
    /// `<storage.data_dir>/state`.
    pub fn state_dir(&self) -> PathBuf {
        self.storage.data_dir.join("state")
    }

    /// The source with this name.
    pub fn source(&self, name: &str) -> Option<&SourceConfig> {
        self.sources.iter().find(|s| s.name == name)
    }
}

/// `[pipeline.storage]`.
#[derive(Debug, Clone, PartialEq)]
pub struct StorageConfig {
    /// IoTDB data directory of the pipeline.
    pub data_dir: PathBuf,
    /// Storage-group path level (1: `root.sg`).
    pub storage_group_level: u32,
    /// Unit of stored timestamps.
    pub time_precision: TimeUnit,
    /// Memory for all in-memory tables of the pipeline.
    pub memtable_budget: ByteSize,
    /// Flush threshold of one storage group's in-memory table.
    pub chunk_group_size: ByteSize,
    /// Seal a file at this size.
    pub seal_size: ByteSize,
    /// Seal a file at this age.
    pub seal_age: Duration,
    /// Seal a file idle for this long.
    pub seal_idle: Duration,
    /// Time partition length when partitioning is on; `None` = off (partition 0).
    pub time_partition: Option<Duration>,
    /// Time partition length as written (kept when partitioning is off, for the effective
    /// configuration).
    pub time_partition_interval: Duration,
    /// WAL directory.
    pub wal_dir: PathBuf,
    /// Group-commit interval.
    pub wal_commit_interval: Duration,
    /// Group-commit size.
    pub wal_commit_size: ByteSize,
    /// WAL size at which intake is refused.
    pub wal_max_size: ByteSize,
    /// TsFile page size.
    pub page_size: ByteSize,
    /// Most points per page.
    pub max_points_per_page: u32,
    /// Most children per metadata index node.
    pub max_index_degree: u32,
    /// Bloom filter false-positive rate (0.01 to 0.1).
    pub bloom_filter_error_rate: f64,
    /// TsFile format of sealed files.
    pub format_version: FormatVersion,
    /// How line protocol is stored (tree or table model).
    pub line_protocol_model: LineProtocolModel,
}

/// `storage.format_version`: the TsFile format the daemon seals files in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FormatVersion {
    /// Format 000002 (TsFile 0.10, IoTDB 0.10).
    #[default]
    V2,
    /// TsFile v4 (Apache TsFile 2.x, IoTDB 2.x).
    V4,
}

impl FormatVersion {
    /// The number as written in the configuration: 2 or 4.
    pub fn number(self) -> i64 {
        match self {
            FormatVersion::V2 => 2,
            FormatVersion::V4 => 4,
        }
    }

    /// Parses the configuration number.
    pub fn from_number(n: i64) -> Option<Self> {
        match n {
            2 => Some(FormatVersion::V2),
            4 => Some(FormatVersion::V4),
            _ => None,
        }
    }
}

impl StorageConfig {
    /// Storage-group name of a device path (`root.sg.d1` → `root.sg` at level 1), or `None`
    /// if the path is not deeper than the level.
    pub fn storage_group_of<'a>(&self, device: &'a str) -> Option<&'a str> {
        let level = self.storage_group_level as usize;
        let mut end = 0;
        for (i, part) in device.split('.').enumerate() {
            end += part.len() + usize::from(i > 0);
            if i == level {
                return Some(&device[..end]);
            }
        }
        None
    }
}

/// Schema of one pipeline.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaConfig {
    /// Rules, first match wins.
    pub rules: Vec<SchemaRule>,
    /// For series no rule matches.
    pub defaults: SchemaDefaults,
}

impl SchemaConfig {
    /// The first rule matching a full series path.
    pub fn rule_for(&self, series: &str) -> Option<&SchemaRule> {
        self.rules.iter().find(|r| r.pattern.matches(series))
    }
}

/// `[[pipeline.schema]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaRule {
    /// Which series.
    pub pattern: PathPattern,
    /// Their type.
    pub data_type: DataType,
    /// Their encoding (accepted by TsFile 0.10 for the type).
    pub encoding: Encoding,
    /// Their compression.
    pub compression: Compression,
}

/// `[pipeline.schema_defaults]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaDefaults {
    /// BOOLEAN encoding.
    pub boolean: Encoding,
    /// INT32 encoding.
    pub int32: Encoding,
    /// INT64 encoding.
    pub int64: Encoding,
    /// FLOAT encoding.
    pub float: Encoding,
    /// DOUBLE encoding.
    pub double: Encoding,
    /// TEXT encoding.
    pub text: Encoding,
    /// Compression.
    pub compression: Compression,
    /// Choose each new series' encoding and compression at its first flush (format 2).
    pub choose_encoding: bool,
    /// Type for untyped integers.
    pub integer_type: DataType,
    /// Type for untyped decimals.
    pub float_type: DataType,
}

impl SchemaDefaults {
    /// The default encoding of a type (of its storage type for the v4-only types).
    pub fn encoding_for(&self, t: DataType) -> Encoding {
        match t.storage_type() {
            DataType::BOOLEAN => self.boolean,
            DataType::INT32 => self.int32,
            DataType::INT64 => self.int64,
            DataType::FLOAT => self.float,
            DataType::DOUBLE => self.double,
            _ => self.text,
        }
    }
}

/// `[[pipeline.source]]`: a source's name and its validated settings, of the type its `type`
/// key names (see [`tsfiled_connectors::registry`]).
#[derive(Debug, Clone)]
pub struct SourceConfig {
    /// Unique name within the pipeline.
    pub name: String,
    /// The type's validated settings.
    pub settings: Arc<dyn DynSettings>,
}

impl PartialEq for SourceConfig {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.settings.same(other.settings.as_ref())
    }
}

impl SourceConfig {
    /// The `type` value (`"http"`, `"mqtt"`, …).
    pub fn type_name(&self) -> &'static str {
        self.settings.type_name()
    }

    /// The settings if the source is of the type whose settings are `S`.
    pub fn settings<S: SourceSettings>(&self) -> Option<&S> {
        self.settings.downcast_ref::<S>()
    }
}
