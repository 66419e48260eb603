//! Settings of one NATS JetStream source ([`NatsConfig`]): serde form of its
//! `[[pipeline.source]]` table, defaults and validation.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use crate::model::TimeUnit;

use super::NatsError;

/// A NATS JetStream source: a durable pull consumer on an existing stream.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NatsConfig {
    /// Source name (logs; the NATS connection name).
    #[serde(default = "default_name")]
    pub name: String,
    /// Server URLs, e.g. `["nats://10.0.0.1:4222", "nats://10.0.0.2:4222"]` (at least one;
    /// the client also learns the other members of a cluster from the server).
    pub servers: Vec<String>,
    /// The JetStream stream to read (it must exist).
    pub stream: String,
    /// Name of the durable pull consumer. Created (with `filter_subject`, `ack_wait`,
    /// `max_ack_pending`, delivering the whole stream) when missing; an existing consumer is
    /// used as it is. Several sources (daemons) with the same consumer split the stream.
    pub consumer: String,
    /// Subject filter of a consumer created by the source (default: the whole stream).
    #[serde(default)]
    pub filter_subject: Option<String>,
    /// Payload format: `iotdb-json` (default), `line` (InfluxDB line protocol) or `value` (one
    /// plain value; device and measurement come from the subject through `subject_template`).
    #[serde(default)]
    pub payload: PayloadKind,
    /// For `payload = "value"` (required there): how the subject names the series, e.g.
    /// `plant.{device}.{measurement}`: `{device}` tokens form the device path below
    /// `path_prefix`, `{measurement}` (once) is the measurement, `*` skips a token, a final
    /// `>` skips the rest.
    #[serde(default)]
    pub subject_template: Option<String>,
    /// For `value` and `line`: path prefix of the device paths (default `root.nats`).
    #[serde(default = "default_prefix")]
    pub path_prefix: String,
    /// For `line`: device path below `path_prefix` (default `{measurement}.{tags}`).
    #[serde(default = "default_device_template")]
    pub device_template: String,
    /// For `line`: unit of line-protocol timestamps (default `ns`).
    #[serde(default = "default_precision", deserialize_with = "time_unit")]
    pub precision: TimeUnit,
    /// User name (with `password` or `password_file`).
    #[serde(default)]
    pub username: Option<String>,
    /// Password (needs `username`).
    #[serde(default)]
    pub password: Option<Secret>,
    /// File holding the password (trailing newline removed), instead of `password`.
    #[serde(default)]
    pub password_file: Option<PathBuf>,
    /// Authentication token (instead of `username`/`password`).
    #[serde(default)]
    pub token: Option<Secret>,
    /// File holding the token (trailing newline removed), instead of `token`.
    #[serde(default)]
    pub token_file: Option<PathBuf>,
    /// Timeout of one connection attempt (default 10 s).
    #[serde(
        default = "default_connect_timeout",
        deserialize_with = "tsfiled_core::deserialize_duration"
    )]
    pub connect_timeout: Duration,
    /// Messages of one pull request, and of one sink submission, at most (default 500).
    #[serde(default = "default_batch")]
    pub batch: usize,
    /// Sink submissions in progress at once (default 4).
    #[serde(default = "default_concurrent")]
    pub max_concurrent_submits: usize,
    /// Ack wait of a consumer created by the source (default 30 s): a message not
    /// acknowledged by then is delivered again. While the sink is full the source asks for
    /// more time ("in progress") for the messages it holds.
    #[serde(
        default = "default_ack_wait",
        deserialize_with = "tsfiled_core::deserialize_duration"
    )]
    pub ack_wait: Duration,
    /// Unacknowledged messages at most, for a consumer created by the source (default
    /// 10000), over all the sources sharing it.
    #[serde(default = "default_max_ack_pending")]
    pub max_ack_pending: i64,
    /// Largest payload accepted (default 1 MiB); larger messages are terminated (never
    /// delivered again) and counted.
    #[serde(default = "default_max_payload")]
    pub max_payload_bytes: usize,
    /// First delay before binding the consumer again after a failure, doubled per failure
    /// (default 500 ms).
    #[serde(
        default = "default_backoff",
        deserialize_with = "tsfiled_core::deserialize_duration"
    )]
    pub reconnect_initial_backoff: Duration,
    /// Cap of that delay, and of the client's reconnect delay (default 30 s).
    #[serde(
        default = "default_max_backoff",
        deserialize_with = "tsfiled_core::deserialize_duration"
    )]
    pub reconnect_max_backoff: Duration,
    /// On shutdown, how long submissions in progress may take to become durable and be
    /// acknowledged (default 5 s); what is not acknowledged by then is delivered again later.
    #[serde(
        default = "default_drain",
        deserialize_with = "tsfiled_core::deserialize_duration"
    )]
    pub drain_timeout: Duration,
}

/// A password or token; `Debug` never shows it.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

/// Reads a secret file without its trailing newline; the error names `key`.
fn read_secret(key: &str, path: &Path) -> Result<String, NatsError> {
    let mut s = std::fs::read_to_string(path)
        .map_err(|e| NatsError::invalid(key, format!("cannot read {}: {e}", path.display())))?;
    while s.ends_with('\n') || s.ends_with('\r') {
        s.pop();
    }
    Ok(s)
}

/// How payloads are parsed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub enum PayloadKind {
    /// IoTDB's JSON records (times in milliseconds).
    #[default]
    #[serde(rename = "iotdb-json")]
    IotdbJson,
    /// InfluxDB line protocol.
    #[serde(rename = "line")]
    Line,
    /// One plain value per message, named by the subject.
    #[serde(rename = "value")]
    Value,
}

fn default_name() -> String {
    "nats".into()
}
fn default_prefix() -> String {
    "root.nats".into()
}
fn default_device_template() -> String {
    "{measurement}.{tags}".into()
}
fn default_precision() -> TimeUnit {
    TimeUnit::Nanos
}
fn default_connect_timeout() -> Duration {
    Duration::from_secs(10)
}
fn default_batch() -> usize {
    500
}
fn default_concurrent() -> usize {
    4
}
fn default_ack_wait() -> Duration {
    Duration::from_secs(30)
}
fn default_max_ack_pending() -> i64 {
    10_000
}
fn default_max_payload() -> usize {
    1 << 20
}
fn default_backoff() -> Duration {
    Duration::from_millis(500)
}
fn default_max_backoff() -> Duration {
    Duration::from_secs(30)
}
fn default_drain() -> Duration {
    Duration::from_secs(5)
}

fn time_unit<'de, D: Deserializer<'de>>(d: D) -> Result<TimeUnit, D::Error> {
    let s = String::deserialize(d)?;
    match s.as_str() {
        "s" | "ms" | "us" | "ns" => TimeUnit::parse(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown unit {s:?}"))),
        _ => Err(serde::de::Error::custom(format!(
            "unknown unit {s:?}; expected \"ns\", \"us\", \"ms\" or \"s\""
        ))),
    }
}

/// A NATS name (stream, consumer): no whitespace, `.`, `*`, `>`, path separators.
fn check_name(key: &str, v: &str) -> Result<(), NatsError> {
    if v.is_empty() {
        return Err(NatsError::invalid(key, "must not be empty"));
    }
    if let Some(c) = v
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || matches!(c, '.' | '*' | '>' | '/' | '\\'))
    {
        return Err(NatsError::invalid(
            key,
            format!("{v:?} contains {c:?} (not allowed in a NATS name)"),
        ));
    }
    Ok(())
}

/// A subject or subject filter: non-empty `.`-separated tokens, `*` whole tokens, `>` last.
fn check_subject(key: &str, v: &str) -> Result<(), NatsError> {
    let tokens: Vec<&str> = v.split('.').collect();
    for (i, t) in tokens.iter().enumerate() {
        let bad = if t.is_empty() {
            Some("an empty token")
        } else if t.chars().any(|c| c.is_whitespace() || c.is_control()) {
            Some("whitespace")
        } else if t.contains('>') && (*t != ">" || i + 1 != tokens.len()) {
            Some("`>` other than as the whole last token")
        } else if t.contains('*') && *t != "*" {
            Some("`*` inside a token")
        } else {
            None
        };
        if let Some(bad) = bad {
            return Err(NatsError::invalid(key, format!("{v:?} has {bad}")));
        }
    }
    Ok(())
}

impl NatsConfig {
    /// Checks every setting; the error names the key.
    pub fn validate(&self) -> Result<(), NatsError> {
        if self.servers.is_empty() {
            return Err(NatsError::invalid(
                "servers",
                "at least one server is needed",
            ));
        }
        for (i, s) in self.servers.iter().enumerate() {
            s.parse::<async_nats::ServerAddr>()
                .map_err(|e| NatsError::invalid(format!("servers[{i}]"), format!("{s:?}: {e}")))?;
        }
        check_name("stream", &self.stream)?;
        check_name("consumer", &self.consumer)?;
        if let Some(f) = &self.filter_subject {
            check_subject("filter_subject", f)?;
        }
        match (self.payload, &self.subject_template) {
            (PayloadKind::Value, None) => {
                return Err(NatsError::invalid(
                    "subject_template",
                    "required with payload = \"value\"",
                ))
            }
            (PayloadKind::Value, Some(t)) => check_subject("subject_template", t)?,
            (_, Some(_)) => {
                return Err(NatsError::invalid(
                    "subject_template",
                    "only used with payload = \"value\"",
                ))
            }
            _ => {}
        }
        let has_password = self.password.is_some() || self.password_file.is_some();
        if self.password.is_some() && self.password_file.is_some() {
            return Err(NatsError::invalid(
                "password_file",
                "give either `password` or `password_file`",
            ));
        }
        if has_password && self.username.is_none() {
            let key = if self.password.is_some() {
                "password"
            } else {
                "password_file"
            };
            return Err(NatsError::invalid(key, "needs `username`"));
        }
        let has_token = self.token.is_some() || self.token_file.is_some();
        if self.token.is_some() && self.token_file.is_some() {
            return Err(NatsError::invalid(
                "token_file",
                "give either `token` or `token_file`",
            ));
        }
        if has_token && self.username.is_some() {
            return Err(NatsError::invalid(
                "token",
                "give either a token or `username`/`password`",
            ));
        }
        for (key, d) in [
            ("connect_timeout", self.connect_timeout),
            ("ack_wait", self.ack_wait),
            ("reconnect_initial_backoff", self.reconnect_initial_backoff),
        ] {
            if d.is_zero() {
                return Err(NatsError::invalid(key, "must be > 0"));
            }
        }
        if self.ack_wait < Duration::from_secs(1) {
            return Err(NatsError::invalid("ack_wait", "must be at least 1s"));
        }
        if self.reconnect_max_backoff < self.reconnect_initial_backoff {
            return Err(NatsError::invalid(
                "reconnect_max_backoff",
                "must be at least reconnect_initial_backoff",
            ));
        }
        if !(1..=100_000).contains(&self.batch) {
            return Err(NatsError::invalid(
                "batch",
                format!("{} is not 1-100000", self.batch),
            ));
        }
        if !(1..=64).contains(&self.max_concurrent_submits) {
            return Err(NatsError::invalid(
                "max_concurrent_submits",
                format!("{} is not 1-64", self.max_concurrent_submits),
            ));
        }
        if self.max_ack_pending < 1 {
            return Err(NatsError::invalid("max_ack_pending", "must be at least 1"));
        }
        if self.max_payload_bytes == 0 {
            return Err(NatsError::invalid("max_payload_bytes", "must be > 0"));
        }
        Ok(())
    }
}

/// The credentials to connect with, files read.
pub(crate) enum Credentials {
    None,
    UserPassword(String, String),
    Token(String),
}

impl NatsConfig {
    /// Reads the credentials (password and token files); the error names the key.
    pub(crate) fn credentials(&self) -> Result<Credentials, NatsError> {
        if let Some(user) = &self.username {
            let password = match (&self.password, &self.password_file) {
                (Some(p), _) => p.0.clone(),
                (None, Some(f)) => read_secret("password_file", f)?,
                (None, None) => String::new(),
            };
            return Ok(Credentials::UserPassword(user.clone(), password));
        }
        Ok(match (&self.token, &self.token_file) {
            (Some(t), _) => Credentials::Token(t.0.clone()),
            (None, Some(f)) => Credentials::Token(read_secret("token_file", f)?),
            (None, None) => Credentials::None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
        servers = ["nats://127.0.0.1:4222", "127.0.0.1:4223"]
        stream = "SENSORS"
        consumer = "tsfiled"
        filter_subject = "sensors.>"
        payload = "value"
        subject_template = "sensors.{device}.{measurement}"
        path_prefix = "root.s"
        ack_wait = "10s"
    "#;

    fn parse(text: &str) -> NatsConfig {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn parses_with_defaults() {
        let c = parse(GOOD);
        c.validate().unwrap();
        assert_eq!(c.name, "nats");
        assert_eq!(c.payload, PayloadKind::Value);
        assert_eq!(c.ack_wait, Duration::from_secs(10));
        assert_eq!(c.batch, 500);
        assert_eq!(c.max_ack_pending, 10_000);
        assert_eq!(c.precision, TimeUnit::Nanos);
        assert_eq!(c.device_template, "{measurement}.{tags}");
        let c = parse("servers = [\"h\"]\nstream = \"S\"\nconsumer = \"c\"\nprecision = \"ms\"");
        c.validate().unwrap();
        assert_eq!(c.payload, PayloadKind::IotdbJson);
        assert_eq!(c.precision, TimeUnit::Millis);
        assert_eq!(c.path_prefix, "root.nats");
    }

    #[test]
    fn errors_name_the_key() {
        let cases = [
            ("consumer = \"tsfiled\"", "consumer = \"a.b\"", "consumer"),
            ("stream = \"SENSORS\"", "stream = \"\"", "stream"),
            (
                "filter_subject = \"sensors.>\"",
                "filter_subject = \"sensors.>.x\"",
                "filter_subject",
            ),
            (
                "subject_template = \"sensors.{device}.{measurement}\"",
                "subject_template = \"sensors..{measurement}\"",
                "subject_template",
            ),
            (
                "payload = \"value\"",
                "payload = \"line\"",
                "subject_template",
            ),
            ("ack_wait = \"10s\"", "ack_wait = \"10ms\"", "ack_wait"),
            ("ack_wait = \"10s\"", "batch = 0", "batch"),
            ("ack_wait = \"10s\"", "password = \"x\"", "password"),
            (
                "\"127.0.0.1:4223\"",
                "\"nats://127.0.0.1:99999\"",
                "servers[1]",
            ),
        ];
        for (from, to, key) in cases {
            let text = GOOD.replacen(from, to, 1);
            assert_ne!(text, GOOD, "{from}");
            let err = parse(&text).validate().expect_err(key);
            match &err {
                NatsError::Invalid { key: k, .. } => assert_eq!(k, key, "{err}"),
                other => panic!("{other:?}"),
            }
            assert!(err.to_string().contains(key), "{err}");
        }
    }

    #[test]
    fn secrets_are_hidden_and_read_from_files() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("pw");
        std::fs::write(&f, "s3cret\n").unwrap();
        let c = parse(&format!(
            "{GOOD}\nusername = \"u\"\npassword_file = {:?}",
            f.display().to_string()
        ));
        c.validate().unwrap();
        assert!(matches!(
            c.credentials().unwrap(),
            Credentials::UserPassword(u, p) if u == "u" && p == "s3cret"
        ));
        let c = parse(&format!("{GOOD}\ntoken = \"tok-123\""));
        c.validate().unwrap();
        assert!(!format!("{c:?}").contains("tok-123"));
        assert!(matches!(c.credentials().unwrap(), Credentials::Token(t) if t == "tok-123"));
        let c = parse(&format!("{GOOD}\ntoken_file = \"/nonexistent/t\""));
        assert!(
            matches!(c.credentials(), Err(NatsError::Invalid { key, .. }) if key == "token_file")
        );
    }

    #[test]
    fn serde_refuses_unknown_keys_and_values() {
        for bad in [
            GOOD.replacen("payload = \"value\"", "payload = \"csv\"", 1),
            GOOD.replacen("stream = ", "streams = ", 1),
            GOOD.replacen("ack_wait = \"10s\"", "ack_wait = 10", 1),
            GOOD.replacen("ack_wait = \"10s\"", "precision = \"minutes\"", 1),
        ] {
            assert!(toml::from_str::<NatsConfig>(&bad).is_err(), "{bad}");
        }
    }
}
