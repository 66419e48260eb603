//! The `nats` source's `[[pipeline.source]]` table, its validation and its settings.

use std::time::Duration;

use tsfiled_core::path::check_prefix;
use tsfiled_core::{ByteSize, Human, KeyPath, Validator};

use super::parse::subject_as_topic;
use crate::source::{
    line_mapping, login_table, LineProtocolMapping, Login, Secret, SourceEnv, SourceTable,
};
use crate::topic_value::TopicTemplate;

login_table! {
    /// `type = "nats"`: a NATS JetStream durable pull consumer.
    pub struct NatsTable {
        /// Name of the source, unique in its pipeline (also the NATS connection name).
        #[key("name", "string", "the source type (\"nats\")")]
        name: Option<String>,
        /// Server URLs, e.g. `["nats://10.0.0.1:4222", "nats://10.0.0.2:4222"]` (at least one;
        /// the client also learns the other members of a cluster from the server).
        #[key("servers", "array of strings", "required")]
        servers: Option<Vec<String>>,
        /// The JetStream stream to read (it must exist).
        #[key("stream", "string", "required")]
        stream: Option<String>,
        /// Name of the durable pull consumer. Created (with `filter_subject`, `ack_wait`,
        /// `max_ack_pending`, delivering the whole stream, explicit acknowledgements) when
        /// missing; an existing consumer is used as it is. Several daemons with the same
        /// consumer split the stream.
        #[key("consumer", "string", "required")]
        consumer: Option<String>,
        /// Subject filter of a consumer created by the source (default: the whole stream).
        #[key("filter_subject", "subject", "none")]
        filter_subject: Option<String>,
        /// Payload format: IoTDB JSON, InfluxDB line protocol, or one plain value whose device
        /// and measurement come from the subject (`subject_template`).
        #[key("payload", "\"iotdb-json\" | \"line\" | \"value\"", "\"iotdb-json\"")]
        payload: Option<String>,
        /// For `payload = "value"` (required there): how the subject names the series, e.g.
        /// `plant.{device}.{measurement}`: `{device}` tokens form the device path below
        /// `path_prefix`, `{measurement}` (once) is the measurement, `*` skips a token, a final
        /// `>` skips the rest.
        #[key("subject_template", "template", "none")]
        subject_template: Option<String>,
        /// For `payload = "value"` and `"line"`: path prefix of the device paths.
        #[key("path_prefix", "IoTDB path", "\"root.nats\" (payloads \"value\" and \"line\")")]
        path_prefix: Option<String>,
        /// For `payload = "line"`: device path below `path_prefix`, as in the http source.
        #[key("device_template", "template", "\"{measurement}.{tags}\" (payload \"line\")")]
        device_template: Option<String>,
        /// For `payload = "line"`: unit of line-protocol timestamps.
        #[key("precision", "\"ns\" | \"us\" | \"ms\" | \"s\"", "\"ns\" (payload \"line\")")]
        precision: Option<String>,
        // Then the login keys `username`, `password` and `password_file` (`login_table!`).
    }
    {
        /// Authentication token (instead of `username` and password).
        #[key("token", "string", "none")]
        token: Option<String>,
        /// File holding the token (trailing newline ignored).
        #[key("token_file", "path", "none")]
        token_file: Option<String>,
        /// Timeout of one connection attempt.
        #[key("connect_timeout", "duration", "\"10s\"")]
        connect_timeout: Option<Human>,
        /// Messages of one pull request, and of one submission to the pipeline, at most
        /// (1 to 100000).
        #[key("batch", "integer", "500")]
        batch: Option<i64>,
        /// Submissions to the pipeline in progress at once (1 to 64).
        #[key("max_concurrent_submits", "integer", "4")]
        max_concurrent_submits: Option<i64>,
        /// Ack wait of a consumer created by the source (at least 1s): a message not
        /// acknowledged by then is delivered again. While the pipeline is full the source asks
        /// for more time ("in progress") for the messages it holds.
        #[key("ack_wait", "duration", "\"30s\"")]
        ack_wait: Option<Human>,
        /// Unacknowledged messages at most, for a consumer created by the source, over all the
        /// sources sharing it.
        #[key("max_ack_pending", "integer", "10000")]
        max_ack_pending: Option<i64>,
        /// Largest payload accepted; larger messages are terminated (never delivered again)
        /// and counted.
        #[key("max_payload_size", "size", "\"1MiB\"")]
        max_payload_size: Option<Human>,
        /// First delay before binding the consumer again after a failure, doubled per failure.
        #[key("reconnect_initial_backoff", "duration", "\"500ms\"")]
        reconnect_initial_backoff: Option<Human>,
        /// Cap of that delay, and of the client's reconnect delay.
        #[key("reconnect_max_backoff", "duration", "\"30s\"")]
        reconnect_max_backoff: Option<Human>,
        /// On stop (shutdown, reload), how long submissions in progress may take to become
        /// durable and be acknowledged; what is not acknowledged by then is delivered again
        /// later.
        #[key("drain_timeout", "duration", "\"5s\"")]
        drain_timeout: Option<Human>,
    }
}

/// How payloads are parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NatsPayload {
    /// IoTDB's JSON records (times in milliseconds).
    IotdbJson,
    /// InfluxDB line protocol.
    Line(LineProtocolMapping),
    /// One plain value per message, named by the subject.
    Value {
        /// The subject template as written.
        subject_template: String,
        /// Device path prefix.
        path_prefix: String,
    },
}

/// The credentials to connect with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NatsAuth {
    /// None.
    None,
    /// User name and password (inline or from a file).
    UserPassword(String, Option<Secret>),
    /// A token (inline or from a file).
    Token(Secret),
}

/// The validated settings of a `nats` source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NatsSourceConfig {
    /// Server URLs.
    pub servers: Vec<String>,
    /// The stream.
    pub stream: String,
    /// The durable consumer.
    pub consumer: String,
    /// Subject filter of a created consumer.
    pub filter_subject: Option<String>,
    /// Payload format.
    pub payload: NatsPayload,
    /// Credentials.
    pub auth: NatsAuth,
    /// Connection attempt timeout.
    pub connect_timeout: Duration,
    /// Messages per pull and per submission.
    pub batch: usize,
    /// Submissions in progress at once.
    pub max_concurrent_submits: usize,
    /// Ack wait of a created consumer.
    pub ack_wait: Duration,
    /// Max unacknowledged messages of a created consumer.
    pub max_ack_pending: i64,
    /// Largest payload.
    pub max_payload_size: ByteSize,
    /// First rebind delay.
    pub reconnect_initial_backoff: Duration,
    /// Rebind and reconnect delay cap.
    pub reconnect_max_backoff: Duration,
    /// Drain time on stop.
    pub drain_timeout: Duration,
}

/// A NATS name (stream, consumer): no whitespace, `.`, `*`, `>`, path separators.
fn check_name(v: &str) -> Result<(), String> {
    if v.is_empty() {
        return Err("must not be empty".into());
    }
    if let Some(c) = v
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || matches!(c, '.' | '*' | '>' | '/' | '\\'))
    {
        return Err(format!("{v:?} contains {c:?} (not allowed in a NATS name)"));
    }
    Ok(())
}

/// A subject or subject filter: non-empty `.`-separated tokens, `*` whole tokens, `>` last.
fn check_subject(v: &str) -> Result<(), String> {
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
            return Err(format!("{v:?} has {bad}"));
        }
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Json,
    Line,
    Value,
}

impl SourceTable for NatsTable {
    const TYPE: &'static str = "nats";
    const SUMMARY: &'static str =
        "a NATS JetStream durable pull consumer (acknowledged once the points are durable)";
    const EXAMPLE: &'static str =
        "servers = [\"nats://127.0.0.1:4222\"]\nstream = \"SENSORS\"\nconsumer = \"tsfiled\"\n";
    type Settings = NatsSourceConfig;

    fn validate(
        &self,
        v: &mut Validator<'_>,
        at: &KeyPath,
        env: &SourceEnv<'_>,
    ) -> Option<NatsSourceConfig> {
        let before = v.diags.len();
        let need = "at least one server is needed";
        let servers = v
            .nonempty_list(&self.servers, at, "servers", need)
            .unwrap_or_default()
            .to_vec();
        for (i, s) in servers.iter().enumerate() {
            if let Err(e) = s.parse::<async_nats::ServerAddr>() {
                v.err(&at.key("servers").index(i), format!("{s:?}: {e}"));
            }
        }
        let mut name = |value: &Option<String>, key: &str| -> String {
            let s = v.required(value, at, key).map(str::to_string);
            if let Some(Err(e)) = s.as_deref().map(check_name) {
                v.err(&at.key(key), e);
            }
            s.unwrap_or_default()
        };
        let stream = name(&self.stream, "stream");
        let consumer = name(&self.consumer, "consumer");
        let filter_subject = self.filter_subject.clone();
        if let Some(Err(e)) = filter_subject.as_deref().map(check_subject) {
            v.err(&at.key("filter_subject"), e);
        }
        let kind = v.choice(
            &self.payload,
            &at.key("payload"),
            Kind::Json,
            &[
                ("iotdb-json", Kind::Json),
                ("line", Kind::Line),
                ("value", Kind::Value),
            ],
        );
        if kind != Kind::Value {
            v.not_with(
                self.subject_template.is_some(),
                &at.key("subject_template"),
                "unless payload = \"value\"",
            );
        }
        if kind != Kind::Line {
            let why = "unless payload = \"line\"";
            v.not_with(
                self.device_template.is_some(),
                &at.key("device_template"),
                why,
            );
            v.not_with(self.precision.is_some(), &at.key("precision"), why);
        }
        let payload = match kind {
            Kind::Json => {
                v.not_with(
                    self.path_prefix.is_some(),
                    &at.key("path_prefix"),
                    "with payload = \"iotdb-json\"",
                );
                NatsPayload::IotdbJson
            }
            Kind::Line => NatsPayload::Line(line_mapping(
                v,
                &self.path_prefix,
                &self.device_template,
                &self.precision,
                at,
                "root.nats",
                env.line_protocol_model,
            )),
            Kind::Value => {
                let path_prefix = self
                    .path_prefix
                    .clone()
                    .unwrap_or_else(|| "root.nats".into());
                let prefix_ok = match check_prefix(&path_prefix, true) {
                    Ok(()) => true,
                    Err(e) => {
                        v.err(&at.key("path_prefix"), e);
                        false
                    }
                };
                let subject_template = match &self.subject_template {
                    None => {
                        v.err(
                            &at.key("subject_template"),
                            "payload = \"value\" needs a subject_template such as \"plant.{device}.{measurement}\"",
                        );
                        String::new()
                    }
                    Some(t) => {
                        if let Err(e) = check_subject(t) {
                            v.err(&at.key("subject_template"), e);
                        } else if prefix_ok {
                            if let Err(e) = TopicTemplate::parse(&subject_as_topic(t), &path_prefix)
                            {
                                v.err(&at.key("subject_template"), e.to_string());
                            }
                        }
                        t.clone()
                    }
                };
                NatsPayload::Value {
                    subject_template,
                    path_prefix,
                }
            }
        };
        let login = self.login(v, at);
        let token = Secret::from_keys(v, &self.token, &self.token_file, at, "token");
        login.needs_username(v, at, "needs `username`");
        let auth = match (login.username, login.password, token) {
            (Some(u), p, None) => NatsAuth::UserPassword(u, p),
            (None, None, Some(t)) => NatsAuth::Token(t),
            // A password without a user name, refused above.
            (None, None, None) | (None, Some(_), _) => NatsAuth::None,
            (Some(_), _, Some(_)) => {
                let key = if self.token.is_some() {
                    "token"
                } else {
                    "token_file"
                };
                v.err_key(
                    &at.key(key),
                    "give either a token or `username` and a password",
                );
                NatsAuth::None
            }
        };
        let connect_timeout = v.positive_duration(
            &self.connect_timeout,
            &at.key("connect_timeout"),
            Duration::from_secs(10),
        );
        let batch = v.int(&self.batch, &at.key("batch"), 500, 1, 100_000) as usize;
        let max_concurrent_submits = v.int(
            &self.max_concurrent_submits,
            &at.key("max_concurrent_submits"),
            4,
            1,
            64,
        ) as usize;
        let ack_wait = v.duration(&self.ack_wait, &at.key("ack_wait"), Duration::from_secs(30));
        let ack_wait = if ack_wait < Duration::from_secs(1) {
            v.err(&at.key("ack_wait"), "must be at least 1s");
            Duration::from_secs(30)
        } else {
            ack_wait
        };
        let max_ack_pending = v.int(
            &self.max_ack_pending,
            &at.key("max_ack_pending"),
            10_000,
            1,
            i64::MAX,
        );
        let max_payload_size = v.size_min(
            &self.max_payload_size,
            &at.key("max_payload_size"),
            ByteSize::mib(1),
            ByteSize(1),
        );
        let (reconnect_initial_backoff, reconnect_max_backoff) = v.backoff(
            (&self.reconnect_initial_backoff, &self.reconnect_max_backoff),
            at,
            ["reconnect_initial_backoff", "reconnect_max_backoff"],
            [Duration::from_millis(500), Duration::from_secs(30)],
        );
        let drain_timeout = v.duration(
            &self.drain_timeout,
            &at.key("drain_timeout"),
            Duration::from_secs(5),
        );
        (v.diags.len() == before).then_some(NatsSourceConfig {
            servers,
            stream,
            consumer,
            filter_subject,
            payload,
            auth,
            connect_timeout,
            batch,
            max_concurrent_submits,
            ack_wait,
            max_ack_pending,
            max_payload_size,
            reconnect_initial_backoff,
            reconnect_max_backoff,
            drain_timeout,
        })
    }
}

impl NatsSourceConfig {
    /// The table with every default written out; `redact` hides inline secrets.
    pub(super) fn table(&self, name: &str, redact: &dyn Fn(&str) -> String) -> NatsTable {
        let dur = crate::source::written::duration;
        let mut t = NatsTable {
            name: Some(name.to_string()),
            servers: Some(self.servers.clone()),
            stream: Some(self.stream.clone()),
            consumer: Some(self.consumer.clone()),
            filter_subject: self.filter_subject.clone(),
            connect_timeout: dur(self.connect_timeout),
            batch: Some(self.batch as i64),
            max_concurrent_submits: Some(self.max_concurrent_submits as i64),
            ack_wait: dur(self.ack_wait),
            max_ack_pending: Some(self.max_ack_pending),
            max_payload_size: Some(Human::Text(self.max_payload_size.to_string())),
            reconnect_initial_backoff: dur(self.reconnect_initial_backoff),
            reconnect_max_backoff: dur(self.reconnect_max_backoff),
            drain_timeout: dur(self.drain_timeout),
            ..NatsTable::default()
        };
        match &self.payload {
            NatsPayload::IotdbJson => t.payload = Some("iotdb-json".into()),
            NatsPayload::Line(m) => {
                t.payload = Some("line".into());
                (t.path_prefix, t.device_template, t.precision) = m.keys();
            }
            NatsPayload::Value {
                subject_template,
                path_prefix,
            } => {
                t.payload = Some("value".into());
                t.subject_template = Some(subject_template.clone());
                t.path_prefix = Some(path_prefix.clone());
            }
        }
        match &self.auth {
            NatsAuth::None => {}
            NatsAuth::UserPassword(u, p) => {
                let login = Login {
                    username: Some(u.clone()),
                    password: p.clone(),
                };
                t.set_login(&login, redact);
            }
            NatsAuth::Token(s) => (t.token, t.token_file) = Secret::to_keys(Some(s), redact),
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TimeUnit;
    use crate::source::validate_table;

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

    fn parse(text: &str) -> NatsSourceConfig {
        validate_table::<NatsTable>(text).unwrap()
    }

    #[test]
    fn parses_with_defaults() {
        let c = parse(GOOD);
        assert_eq!(
            c.payload,
            NatsPayload::Value {
                subject_template: "sensors.{device}.{measurement}".into(),
                path_prefix: "root.s".into()
            }
        );
        assert_eq!(c.ack_wait, Duration::from_secs(10));
        assert_eq!(c.batch, 500);
        assert_eq!(c.max_concurrent_submits, 4);
        assert_eq!(c.max_ack_pending, 10_000);
        assert_eq!(c.max_payload_size, ByteSize::mib(1));
        assert_eq!(c.connect_timeout, Duration::from_secs(10));
        assert_eq!(c.drain_timeout, Duration::from_secs(5));
        assert_eq!(c.auth, NatsAuth::None);
        let c = parse("servers = [\"h\"]\nstream = \"S\"\nconsumer = \"c\"");
        assert_eq!(c.payload, NatsPayload::IotdbJson);
        let c = parse(
            "servers = [\"h\"]\nstream = \"S\"\nconsumer = \"c\"\npayload = \"line\"\nprecision = \"ms\"",
        );
        let NatsPayload::Line(m) = &c.payload else {
            panic!("{c:?}")
        };
        assert_eq!(m.precision, TimeUnit::Millis);
        assert_eq!(m.path_prefix, "root.nats");
        assert_eq!(m.device_template.as_str(), "{measurement}.{tags}");
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
                "subject_template = \"sensors.{device}.{measurement}\"",
                "subject_template = \"sensors.{device}\"",
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
                "ack_wait = \"10s\"",
                "username = \"u\"\ntoken = \"t\"",
                "token",
            ),
            (
                "ack_wait = \"10s\"",
                "token = \"t\"\ntoken_file = \"/t\"",
                "token_file",
            ),
            (
                "\"127.0.0.1:4223\"",
                "\"nats://127.0.0.1:99999\"",
                "servers[1]",
            ),
            ("payload = \"value\"", "payload = \"csv\"", "payload"),
            ("ack_wait = \"10s\"", "ack_wait = 10", "ack_wait"),
            ("ack_wait = \"10s\"", "precision = \"ms\"", "precision"),
        ];
        for (from, to, key) in cases {
            let text = GOOD.replacen(from, to, 1);
            assert_ne!(text, GOOD, "{from}");
            let errs = validate_table::<NatsTable>(&text).expect_err(key);
            // `line:column: key: message`
            assert_eq!(errs[0].split(": ").nth(1), Some(key), "{errs:?}");
        }
        let errs = validate_table::<NatsTable>(
            "servers = [\"h\"]\nstream = \"S\"\nconsumer = \"c\"\npayload = \"line\"\ndevice_template = \"{tags\"",
        )
        .unwrap_err();
        assert_eq!(
            errs[0].split(": ").nth(1),
            Some("device_template"),
            "{errs:?}"
        );
        let errs =
            validate_table::<NatsTable>(&GOOD.replacen("stream = ", "streams = ", 1)).unwrap_err();
        assert!(errs[0].contains("`streams`"), "{errs:?}");
    }

    #[test]
    fn misspelled_login_keys_are_refused_where_written() {
        let good = "servers = [\"h\"]\nstream = \"S\"\nconsumer = \"c\"\nusername = \"u\"\npassword = \"pw\"\n";
        let c = parse(good);
        let password = Some(Secret::Inline("pw".into()));
        assert_eq!(c.auth, NatsAuth::UserPassword("u".into(), password));
        for (key, typo, at) in [
            ("username", "usernme", "4:1"),
            ("password", "passwd", "5:1"),
        ] {
            let text = good.replacen(&format!("{key} ="), &format!("{typo} ="), 1);
            let errs = validate_table::<NatsTable>(&text).unwrap_err();
            assert_eq!(errs.len(), 1, "{errs:?}");
            let head = format!("{at}: {typo}: unknown field `{typo}`, expected one of ");
            assert!(errs[0].starts_with(&head), "{errs:?}");
            assert!(errs[0].contains(&format!("`{key}`")), "{errs:?}");
        }
        // Without a user name, the password key written is the one named.
        let text = good.replacen(
            "username = \"u\"\npassword = \"pw\"",
            "password_file = \"/p\"",
            1,
        );
        let errs = validate_table::<NatsTable>(&text).unwrap_err();
        assert_eq!(errs, ["4:1: password_file: needs `username`"]);
    }

    #[test]
    fn secrets_are_hidden_and_the_effective_table_validates_the_same() {
        let c = parse(&format!(
            "{GOOD}\nusername = \"u\"\npassword_file = \"/run/credentials/nats\""
        ));
        assert_eq!(
            c.auth,
            NatsAuth::UserPassword(
                "u".into(),
                Some(Secret::File("/run/credentials/nats".into()))
            )
        );
        let text = toml::to_string(&c.table("n", &|s| s.to_string())).unwrap();
        assert_eq!(parse(&text), c, "{text}");
        let c = parse(&format!("{GOOD}\ntoken = \"tok-123\""));
        assert!(!format!("{c:?}").contains("tok-123"));
        assert_eq!(c.auth, NatsAuth::Token(Secret::Inline("tok-123".into())));
        let shown = toml::to_string(&c.table("n", &|_| "***".into())).unwrap();
        assert!(
            !shown.contains("tok-123") && shown.contains("token = \"***\""),
            "{shown}"
        );
        let text = toml::to_string(&c.table("n", &|s| s.to_string())).unwrap();
        assert_eq!(parse(&text), c, "{text}");
    }
}
