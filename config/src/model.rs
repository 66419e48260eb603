//! Stage two: the validated runtime configuration, with defaults applied and typed values.
//!
//! Build one with [`Config::from_toml_str`], [`Config::load`] or [`Config::embedded_default`].

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::patterns::{Glob, Template, TopicTemplate};
use crate::raw::RawConfig;
use crate::schema::{Compression, DataType, Encoding, PathPattern};
use crate::units::ByteSize;

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
    pub(crate) spans: Arc<crate::locate::SpanIndex>,
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

/// Unit of timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimePrecision {
    /// Seconds.
    S,
    /// Milliseconds.
    Ms,
    /// Microseconds.
    Us,
    /// Nanoseconds.
    Ns,
}

impl TimePrecision {
    /// The configuration name: `"s"`, `"ms"`, `"us"`, `"ns"`.
    pub fn as_str(self) -> &'static str {
        match self {
            TimePrecision::S => "s",
            TimePrecision::Ms => "ms",
            TimePrecision::Us => "us",
            TimePrecision::Ns => "ns",
        }
    }

    /// Nanoseconds in one unit.
    pub fn nanos_per_unit(self) -> u64 {
        match self {
            TimePrecision::S => 1_000_000_000,
            TimePrecision::Ms => 1_000_000,
            TimePrecision::Us => 1_000,
            TimePrecision::Ns => 1,
        }
    }

    /// Parses `"s"`, `"ms"`, `"us"`, `"ns"`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "s" => Some(TimePrecision::S),
            "ms" => Some(TimePrecision::Ms),
            "us" => Some(TimePrecision::Us),
            "ns" => Some(TimePrecision::Ns),
            _ => None,
        }
    }

    /// A duration in this unit, if it is a whole number of units.
    pub fn units_of(self, d: Duration) -> Option<i64> {
        let n = d.as_nanos();
        let u = u128::from(self.nanos_per_unit());
        if n.is_multiple_of(u) {
            i64::try_from(n / u).ok()
        } else {
            None
        }
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
    pub time_precision: TimePrecision,
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
    /// Type for untyped integers.
    pub integer_type: DataType,
    /// Type for untyped decimals.
    pub float_type: DataType,
}

impl SchemaDefaults {
    /// The default encoding of a type.
    pub fn encoding_for(&self, t: DataType) -> Encoding {
        match t {
            DataType::Boolean => self.boolean,
            DataType::Int32 => self.int32,
            DataType::Int64 => self.int64,
            DataType::Float => self.float,
            DataType::Double => self.double,
            DataType::Text => self.text,
        }
    }
}

/// `[[pipeline.source]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceConfig {
    /// Unique name within the pipeline.
    pub name: String,
    /// Type-specific settings.
    pub kind: SourceKind,
}

/// A source by type.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceKind {
    /// `type = "http"`.
    Http(HttpSourceConfig),
    /// `type = "mqtt"`.
    Mqtt(MqttSourceConfig),
    /// `type = "csv"`.
    Csv(CsvSourceConfig),
}

impl SourceKind {
    /// `"http"`, `"mqtt"` or `"csv"`.
    pub fn type_name(&self) -> &'static str {
        match self {
            SourceKind::Http(_) => "http",
            SourceKind::Mqtt(_) => "mqtt",
            SourceKind::Csv(_) => "csv",
        }
    }
}

/// An HTTP push endpoint kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HttpEndpoint {
    /// `POST {base}/ingest/iotdb-json`.
    IotdbJson,
    /// `POST {base}/write` and `POST {base}/api/v2/write`.
    LineProtocol,
    /// IoTDB's REST write API: `POST {base}/rest/v2/insertTablet`,
    /// `POST {base}/rest/v2/insertRecords` and `POST {base}/rest/v1/insertTablet`.
    IotdbRest,
}

impl HttpEndpoint {
    /// The configuration name.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpEndpoint::IotdbJson => "iotdb-json",
            HttpEndpoint::LineProtocol => "line-protocol",
            HttpEndpoint::IotdbRest => "iotdb-rest",
        }
    }

    /// URL paths served for this endpoint below `base_path`.
    pub fn routes(self, base_path: &str) -> Vec<String> {
        match self {
            HttpEndpoint::IotdbJson => vec![format!("{base_path}/ingest/iotdb-json")],
            HttpEndpoint::LineProtocol => {
                vec![
                    format!("{base_path}/write"),
                    format!("{base_path}/api/v2/write"),
                ]
            }
            HttpEndpoint::IotdbRest => vec![
                format!("{base_path}/rest/v2/insertTablet"),
                format!("{base_path}/rest/v2/insertRecords"),
                format!("{base_path}/rest/v1/insertTablet"),
            ],
        }
    }
}

/// How line-protocol points map onto IoTDB paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineProtocolMapping {
    /// Device path prefix, e.g. `root.lp`.
    pub path_prefix: String,
    /// Device path below the prefix; placeholders `{measurement}`, `{tags}`, `{<tag key>}`.
    pub device_template: Template,
    /// Timestamp unit when the request or source gives none.
    pub precision: TimePrecision,
}

/// `type = "http"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpSourceConfig {
    /// URL prefix ("" or `/x`).
    pub base_path: String,
    /// Endpoints served.
    pub endpoints: Vec<HttpEndpoint>,
    /// Line-protocol mapping.
    pub line_protocol: LineProtocolMapping,
}

impl HttpSourceConfig {
    /// Every URL path this source serves.
    pub fn routes(&self) -> Vec<String> {
        self.endpoints
            .iter()
            .flat_map(|e| e.routes(&self.base_path))
            .collect()
    }
}

/// MQTT protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MqttProtocol {
    /// MQTT 3.1.1 (`protocol = "v3"`).
    #[default]
    V311,
    /// MQTT 5 (`protocol = "v5"`).
    V5,
}

/// A broker address from `mqtt://` or `mqtts://`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerAddress {
    /// `mqtts://`.
    pub tls: bool,
    /// Host name or IP (without brackets).
    pub host: String,
    /// Port (1883 / 8883 when not given).
    pub port: u16,
}

impl BrokerAddress {
    /// Parses `mqtt://host[:port]` or `mqtts://host[:port]` (TLS); an IPv6 host is written in
    /// brackets, one trailing `/` is allowed. The error names the URL and what is wrong.
    pub fn parse(url: &str) -> Result<BrokerAddress, String> {
        let (tls, rest) = if let Some(r) = url.strip_prefix("mqtt://") {
            (false, r)
        } else if let Some(r) = url.strip_prefix("mqtts://") {
            (true, r)
        } else {
            return Err(format!(
                "broker URL \"{url}\" must start with mqtt:// or mqtts:// (TLS)"
            ));
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#', '@']) {
            return Err(format!(
                "broker URL \"{url}\": expected only host and port (credentials go in username/password)"
            ));
        }
        let default_port = if tls { 8883 } else { 1883 };
        let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
            let Some((h, after)) = v6.split_once(']') else {
                return Err(format!("broker URL \"{url}\": unclosed '['"));
            };
            let port = match after.strip_prefix(':') {
                Some(p) => Some(p),
                None if after.is_empty() => None,
                None => return Err(format!("broker URL \"{url}\": unexpected text after ']'")),
            };
            (h, port)
        } else {
            match rest.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (rest, None),
            }
        };
        if host.is_empty() {
            return Err(format!("broker URL \"{url}\" has no host"));
        }
        if host.contains(|c: char| c.is_whitespace()) {
            return Err(format!("broker URL \"{url}\": host contains whitespace"));
        }
        let port = match port {
            None => default_port,
            Some(p) => match p.parse::<u16>() {
                Ok(0) | Err(_) => {
                    return Err(format!(
                        "broker URL \"{url}\": port \"{p}\" is not a number from 1 to 65535"
                    ))
                }
                Ok(n) => n,
            },
        };
        Ok(BrokerAddress {
            tls,
            host: host.to_string(),
            port,
        })
    }
}

/// Where the MQTT password comes from. `Debug` never shows an inline password.
#[derive(Clone, PartialEq, Eq)]
pub enum Password {
    /// Written in the configuration.
    Inline(String),
    /// Read from this file (trailing newline removed) when connecting.
    File(PathBuf),
}

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Password::Inline(_) => f.write_str("Inline(***)"),
            Password::File(p) => f.debug_tuple("File").field(p).finish(),
        }
    }
}

/// TLS settings of an `mqtts://` source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MqttTls {
    /// PEM file of the CA certificates to trust; `None` = the system roots.
    pub ca_file: Option<PathBuf>,
    /// PEM client certificate chain and its private key (PKCS#8, PKCS#1 or SEC1), for
    /// mutual TLS.
    pub client_auth: Option<(PathBuf, PathBuf)>,
}

/// MQTT QoS of a subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Qos {
    /// QoS 0: at most once (no acknowledgement, lost on any failure).
    AtMostOnce = 0,
    /// QoS 1: at least once (the configuration's default).
    #[default]
    AtLeastOnce = 1,
    /// QoS 2: exactly once between broker and daemon (at least once into files).
    ExactlyOnce = 2,
}

impl Qos {
    /// The numeric level (0, 1, 2).
    pub fn level(self) -> u8 {
        self as u8
    }

    /// From a numeric level; `None` above 2.
    pub fn from_level(level: u8) -> Option<Qos> {
        Some(match level {
            0 => Qos::AtMostOnce,
            1 => Qos::AtLeastOnce,
            2 => Qos::ExactlyOnce,
            _ => return None,
        })
    }
}

/// Payload format of a topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MqttPayload {
    /// IoTDB JSON records.
    IotdbJson,
    /// InfluxDB line protocol.
    Line(LineProtocolMapping),
    /// A plain value; series from the topic.
    Value {
        /// How the topic names device and measurement.
        topic_template: TopicTemplate,
        /// Device path prefix.
        path_prefix: String,
    },
}

impl MqttPayload {
    /// The configuration name.
    pub fn as_str(&self) -> &'static str {
        match self {
            MqttPayload::IotdbJson => "iotdb-json",
            MqttPayload::Line(_) => "line",
            MqttPayload::Value { .. } => "value",
        }
    }
}

/// `[[pipeline.source.topic]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicConfig {
    /// The filter as written (without `$share/`).
    pub filter: String,
    /// Subscription QoS.
    pub qos: Qos,
    /// Payload format.
    pub payload: MqttPayload,
}

/// `type = "mqtt"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MqttSourceConfig {
    /// The `url` as written.
    pub url: String,
    /// Parsed broker address.
    pub broker: BrokerAddress,
    /// Protocol version.
    pub protocol: MqttProtocol,
    /// Client id (`None` only with a clean session).
    pub client_id: Option<String>,
    /// User name.
    pub username: Option<String>,
    /// Password.
    pub password: Option<Password>,
    /// TLS, present iff the URL is `mqtts://`.
    pub tls: Option<MqttTls>,
    /// Keep-alive (whole seconds).
    pub keep_alive: Duration,
    /// Clean session / clean start.
    pub clean_session: bool,
    /// MQTT 5 session expiry (whole seconds).
    pub session_expiry: Duration,
    /// Shared-subscription group.
    pub shared_group: Option<String>,
    /// Largest payload.
    pub max_payload_size: ByteSize,
    /// Most unacknowledged messages held.
    pub max_inflight: u16,
    /// Cap of the reconnect backoff.
    pub reconnect_max_backoff: Duration,
    /// Dead-letter file.
    pub dead_letter_file: PathBuf,
    /// Subscriptions.
    pub topics: Vec<TopicConfig>,
}

impl MqttSourceConfig {
    /// The filter to subscribe with: `$share/<group>/<filter>` with a shared group.
    pub fn subscription_filter(&self, topic: &TopicConfig) -> String {
        match &self.shared_group {
            Some(g) => format!("$share/{g}/{}", topic.filter),
            None => topic.filter.clone(),
        }
    }

    /// Whether the broker keeps a session across disconnects.
    pub fn persistent_session(&self) -> bool {
        !self.clean_session
            && (self.protocol == MqttProtocol::V311 || !self.session_expiry.is_zero())
    }
}

/// A CSV column reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnRef {
    /// By header name (exact match with the header cell after trimming ASCII whitespace).
    Name(String),
    /// By 0-based position (written 1-based in the configuration).
    Index(usize),
}

/// Where the device of a generic CSV row comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CsvDevice {
    /// From a column, optionally below a prefix (`prefix.cell`).
    Column {
        /// The column.
        column: ColumnRef,
        /// Prefix prepended with a `.`, e.g. `root.plant`.
        path_prefix: Option<String>,
    },
    /// A template such as `root.plc.{file_stem}` ([`Template::parse_csv_device`]):
    /// `{file_stem}` is the file name without `.gz` and its last extension, `{dir}` the name
    /// of the file's directory; both are sanitized into path nodes (`line-3.csv.gz` →
    /// `line_3`).
    Template(Template),
}

/// Options of the generic CSV format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenericCsv {
    /// Header rows after the skipped rows; the first names the columns, others are ignored.
    /// With 0, value columns are named `col1`, `col2`, … (1-based position).
    pub header_rows: u32,
    /// Time column.
    pub time_column: ColumnRef,
    /// Device.
    pub device: CsvDevice,
    /// Value columns; empty = every column but the time and device columns.
    pub value_columns: Vec<ColumnRef>,
}

/// CSV file format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CsvFormat {
    /// IoTDB export, aligned by time: `Time,root.sg.d1.s1,root.sg.d1.s2(INT32),...`.
    IotdbWide,
    /// IoTDB export, aligned by device: `Time,Device,s1,s2(DOUBLE),...`.
    IotdbDevice,
    /// As configured.
    Generic(GenericCsv),
}

/// Timestamp format of CSV rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimeFormat {
    /// An integer is epoch milliseconds; anything else is RFC 3339, or an ISO 8601 date-time
    /// without offset (`2024-03-01 12:00:00[.fff]`, `T` or space) read in the time zone.
    Auto,
    /// Epoch seconds (an optional decimal fraction is kept exactly, down to the precision).
    EpochS,
    /// Epoch milliseconds (optional decimal fraction).
    EpochMs,
    /// Epoch microseconds (optional decimal fraction).
    EpochUs,
    /// Epoch nanoseconds.
    EpochNs,
    /// RFC 3339 (`2024-03-01T12:00:00.5+01:00`, `Z`, `T` or space).
    Rfc3339,
    /// A strftime pattern (chrono syntax; the configuration checks it with
    /// [`check_strftime`](crate::check_strftime)). Without `%z`/`%:z`/`%s` in the pattern the
    /// time is local to the time zone; a pattern without a time of day means midnight.
    Strftime(String),
}

impl TimeFormat {
    /// The configuration name.
    pub fn as_str(&self) -> &'static str {
        match self {
            TimeFormat::Auto => "auto",
            TimeFormat::EpochS => "epoch_s",
            TimeFormat::EpochMs => "epoch_ms",
            TimeFormat::EpochUs => "epoch_us",
            TimeFormat::EpochNs => "epoch_ns",
            TimeFormat::Rfc3339 => "rfc3339",
            TimeFormat::Strftime(_) => "strftime",
        }
    }
}

/// Resolution of local times that occur twice (the hour repeated when DST ends).
/// Local times that do not exist (skipped when DST starts) are always rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AmbiguousTime {
    /// The first occurrence (the earlier instant, still in DST).
    Earliest,
    /// The second occurrence (the later instant).
    Latest,
    /// Reject the row.
    Reject,
}

/// What happens to a file whose rows were all ingested without error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnSuccess {
    /// Move it into the done directory.
    Move,
    /// Delete it.
    Delete,
}

/// `type = "csv"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvSourceConfig {
    /// Watched directories.
    pub directories: Vec<PathBuf>,
    /// Globs taken.
    pub patterns: Vec<Glob>,
    /// Globs ignored.
    pub ignore: Vec<Glob>,
    /// Watch subdirectories.
    pub recursive: bool,
    /// Stability time.
    pub settle: Duration,
    /// File format.
    pub format: CsvFormat,
    /// Timestamp format.
    pub time_format: TimeFormat,
    /// IANA zone for naive times (form checked; existence by `check`).
    pub timezone: String,
    /// DST ambiguity rule.
    pub ambiguous_time: AmbiguousTime,
    /// Field delimiter (ASCII).
    pub delimiter: u8,
    /// Lines skipped before the header.
    pub skip_rows: u32,
    /// Done directory (relative: per watched directory).
    pub done_dir: PathBuf,
    /// Error directory (relative: per watched directory).
    pub error_dir: PathBuf,
    /// Move or delete.
    pub on_success: OnSuccess,
    /// Concurrency limit.
    pub max_concurrent_files: u32,
    /// Periodic rescan.
    pub rescan_interval: Duration,
}

impl CsvSourceConfig {
    /// The default of `patterns`.
    pub const DEFAULT_PATTERNS: &'static [&'static str] = &["*.csv", "*.csv.gz"];
    /// The default of `ignore`.
    pub const DEFAULT_IGNORE: &'static [&'static str] = &["*.tmp", "*.part", ".*"];

    /// Whether a file name is taken: matches a pattern and no ignore glob.
    pub fn accepts(&self, file_name: &str) -> bool {
        self.patterns.iter().any(|g| g.matches(file_name))
            && !self.ignore.iter().any(|g| g.matches(file_name))
    }

    /// The done directory for a watched directory.
    pub fn done_dir_for(&self, watched: &std::path::Path) -> PathBuf {
        watched.join(&self.done_dir)
    }

    /// The error directory for a watched directory.
    pub fn error_dir_for(&self, watched: &std::path::Path) -> PathBuf {
        watched.join(&self.error_dir)
    }
}
