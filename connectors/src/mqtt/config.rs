//! The configuration of an `mqtt` source: its `[[pipeline.source]]` table with
//! `[[pipeline.source.topic]]` sub-tables, validation, and the validated settings.

use std::path::PathBuf;
use std::time::Duration;

use tsfiled_core::path::check_prefix;
use tsfiled_core::{
    check_topic_filter, config_table, ByteSize, FieldDoc, Human, KeyPath, TopicLevel,
    TopicTemplate, Validator,
};

use crate::model::TimeUnit;
use crate::path::DeviceTemplate;
use crate::source::{
    line_mapping, login_table, LineProtocolMapping, Login, SourceEnv, SourceTable,
};

/// Largest packet MQTT can carry (its remaining-length limit), hence the largest payload.
pub const MQTT_MAX_PACKET: usize = 268_435_455;
const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(60);
const DEFAULT_SESSION_EXPIRY: Duration = Duration::from_secs(86400);
const DEFAULT_MAX_PAYLOAD: ByteSize = ByteSize::mib(1);
const DEFAULT_MAX_INFLIGHT: i64 = 1000;
const DEFAULT_RECONNECT_MAX_BACKOFF: Duration = Duration::from_secs(30);

login_table! {
    /// `type = "mqtt"`: subscription to an MQTT broker.
    pub struct MqttTable {
        /// Name of the source, unique in its pipeline.
        #[key("name", "string", "the source type (\"mqtt\")")]
        name: Option<String>,
        /// Broker URL: `mqtt://host[:port]` (default port 1883) or `mqtts://host[:port]` (TLS,
        /// default port 8883).
        #[key("url", "URL", "required")]
        url: Option<String>,
        /// MQTT protocol version: `"v3"` (3.1.1) or `"v5"`.
        #[key("protocol", "\"v3\" | \"v5\"", "\"v3\"")]
        protocol: Option<String>,
        /// Client identifier. Required with a persistent session (`clean_session = false`,
        /// needed for QoS 1 and 2): it must be stable across restarts and unique per daemon, or
        /// the broker cannot redeliver what was not acknowledged.
        #[key("client_id", "string", "none")]
        client_id: Option<String>,
        // Then the login keys `username`, `password` and `password_file` (`login_table!`).
    }
    {
        /// PEM file of CA certificates to trust for `mqtts://` (default: the system's roots).
        #[key("ca_file", "path", "none")]
        ca_file: Option<String>,
        /// PEM client certificate for TLS client authentication; needs `client_key_file`.
        #[key("client_cert_file", "path", "none")]
        client_cert_file: Option<String>,
        /// PEM private key of `client_cert_file`.
        #[key("client_key_file", "path", "none")]
        client_key_file: Option<String>,
        /// MQTT keep-alive interval, whole seconds from 1s to 65535s.
        #[key("keep_alive", "duration", "\"60s\"")]
        keep_alive: Option<Human>,
        /// `false` keeps a persistent session at the broker (MQTT 5: clean start off), so
        /// messages published while the daemon is away are kept for it. Must be `false` when a
        /// topic has QoS 1 or 2.
        #[key("clean_session", "boolean", "false")]
        clean_session: Option<bool>,
        /// MQTT 5 only: how long the broker keeps the session after a disconnect; must be more
        /// than 0 for QoS 1 and 2. Whole seconds.
        #[key("session_expiry", "duration", "\"1d\"")]
        session_expiry: Option<Human>,
        /// Shared-subscription group: subscribe as `$share/<group>/<filter>` so several daemons
        /// with the same group split one stream (each with its own `client_id`). An MQTT 5
        /// feature; Mosquitto and EMQX also accept it from 3.1.1 clients.
        #[key("shared_group", "string", "none")]
        shared_group: Option<String>,
        /// Largest message payload accepted; a larger one is dead-lettered and acknowledged.
        #[key("max_payload_size", "size", "\"1MiB\"")]
        max_payload_size: Option<Human>,
        /// Most messages received but not yet durable and acknowledged; beyond it the source
        /// stops reading from the socket (backpressure).
        #[key("max_inflight", "integer", "1000")]
        max_inflight: Option<i64>,
        /// Reconnect backoff: doubles from 1s with jitter, capped at this.
        #[key("reconnect_max_backoff", "duration", "\"30s\"")]
        reconnect_max_backoff: Option<Human>,
        /// File receiving messages that cannot be parsed (one JSON line each: time, topic,
        /// reason, payload), which are then acknowledged so they never stall the stream.
        #[key("dead_letter_file", "path", "<storage data_dir>/dead-letter/<source name>.jsonl")]
        dead_letter_file: Option<String>,
        /// The subscriptions; at least one.
        #[key("topic", "array of tables", "required (at least one)")]
        topic: Option<Vec<TopicTable>>,
    }
}

config_table! {
    /// `[[pipeline.source.topic]]`: one topic filter of an MQTT source.
    pub struct TopicTable {
        /// MQTT topic filter, e.g. `"plant/#"` or `"sensors/+/data"`.
        #[key("filter", "string", "required")]
        filter: Option<String>,
        /// Subscription QoS: 0, 1 or 2. QoS 1 and 2 are acknowledged to the broker only once
        /// the points are durable, and need a persistent session.
        #[key("qos", "integer", "1")]
        qos: Option<i64>,
        /// Payload format: `"iotdb-json"` (IoTDB's JSON records), `"line"` (InfluxDB line
        /// protocol) or `"value"` (one plain value; device and measurement come from the topic
        /// through `topic_template`, the time is the arrival time).
        #[key("payload", "\"iotdb-json\" | \"line\" | \"value\"", "\"iotdb-json\"")]
        payload: Option<String>,
        /// For `payload = "value"` (required there): how the topic names the series, e.g.
        /// `"plant/{device}/{measurement}"`: `{device}` levels (one or more) form the device
        /// path below `path_prefix`, `{measurement}` (once) is the measurement, `+` skips a
        /// level, a final `#` skips the rest.
        #[key("topic_template", "string", "none")]
        topic_template: Option<String>,
        /// For `payload = "value"` and `"line"`: path prefix of the device paths. It may be
        /// `"root"` itself for `"line"`, and for `"value"` when the topic template has
        /// `{device}` levels.
        #[key("path_prefix", "IoTDB path", "\"root.mqtt\"")]
        path_prefix: Option<String>,
        /// For `payload = "line"`: device path below `path_prefix`, as in the http source.
        #[key("device_template", "template", "\"{measurement}.{tags}\"")]
        device_template: Option<String>,
        /// For `payload = "line"`: unit of line-protocol timestamps.
        #[key("precision", "\"ns\" | \"us\" | \"ms\" | \"s\"", "\"ns\"")]
        precision: Option<String>,
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
    /// Line protocol below `path_prefix` with the default device template
    /// (`{measurement}.{tags}`), timestamps in `precision`.
    pub fn line(path_prefix: &str, precision: TimeUnit) -> Result<MqttPayload, String> {
        let device_template = DeviceTemplate::with_prefix(path_prefix, "{measurement}.{tags}")
            .map_err(|e| e.to_string())?;
        Ok(MqttPayload::Line(LineProtocolMapping {
            path_prefix: path_prefix.to_string(),
            device_template,
            precision,
        }))
    }

    /// Plain values named by `topic_template` below `path_prefix`.
    pub fn value(topic_template: &str, path_prefix: &str) -> Result<MqttPayload, String> {
        Ok(MqttPayload::Value {
            topic_template: TopicTemplate::parse(topic_template)?,
            path_prefix: path_prefix.to_string(),
        })
    }

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

/// `type = "mqtt"`: the validated settings the source runs with.
#[derive(Debug, Clone, PartialEq)]
pub struct MqttSourceConfig {
    /// The `url` as written.
    pub url: String,
    /// Parsed broker address.
    pub broker: BrokerAddress,
    /// Protocol version.
    pub protocol: MqttProtocol,
    /// Client id (`None` only with a clean session).
    pub client_id: Option<String>,
    /// User name and password.
    pub login: Login,
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
    /// Dead-letter file (always set by validation; `None`: unparseable messages are only
    /// logged and counted).
    pub dead_letter_file: Option<PathBuf>,
    /// Subscriptions.
    pub topics: Vec<TopicConfig>,
    /// What the source runs with besides its settings (not configuration keys).
    pub runtime: MqttRuntime,
}

/// What an MQTT source runs with besides its settings: where it runs (filled in from the
/// source's context when it starts) and fixed tuning that tests and benchmarks change.
#[derive(Debug, Clone, PartialEq)]
pub struct MqttRuntime {
    /// Source name (logs).
    pub name: String,
    /// The pipeline's stored timestamp precision.
    pub stored_unit: TimeUnit,
    /// File recording the filters this client's persistent session is subscribed to; on a
    /// connection with a session present, recorded filters that are no longer configured are
    /// unsubscribed (`None`: a dropped filter stays subscribed until the session expires).
    pub subscription_record: Option<PathBuf>,
    /// The file system of the subscription record (tests inject a simulated one).
    pub fs: tsfiled_fsio::FsRef,
    /// TCP/TLS/CONNACK timeout of one connection attempt (whole seconds, at least 1).
    pub connect_timeout: Duration,
    /// First reconnect delay (doubled per failure, with jitter, up to
    /// `reconnect_max_backoff`).
    pub reconnect_initial_backoff: Duration,
    /// Messages gathered into one sink submission at most (what arrived while the previous
    /// submissions were in progress), and at most a quarter of `max_inflight`, so that
    /// several batches share the window (one is admitted while others wait for durability).
    pub max_batch_messages: usize,
    /// Batches admitted to the sink and not yet durable, at most (acks still go out in
    /// arrival order; the messages in them are bounded by `max_inflight` anyway).
    pub max_concurrent_submits: usize,
    /// On shutdown, how long to wait for durable messages' acknowledgements to go out.
    pub drain_timeout: Duration,
}

impl Default for MqttRuntime {
    fn default() -> Self {
        MqttRuntime {
            name: "mqtt".into(),
            stored_unit: TimeUnit::Millis,
            subscription_record: None,
            fs: tsfiled_fsio::std_fs(),
            connect_timeout: Duration::from_secs(10),
            reconnect_initial_backoff: Duration::from_millis(500),
            max_batch_messages: 1024,
            max_concurrent_submits: 64,
            drain_timeout: Duration::from_secs(5),
        }
    }
}

impl MqttSourceConfig {
    /// The defaults of every key, on the broker at `url` with client id `client_id` (none when
    /// empty), without topics yet: for tests and tools that build settings without a
    /// configuration file (the configuration validates its table instead).
    pub fn new(url: &str, client_id: &str) -> Result<MqttSourceConfig, String> {
        Ok(MqttSourceConfig {
            url: url.to_string(),
            broker: BrokerAddress::parse(url)?,
            protocol: MqttProtocol::V311,
            client_id: (!client_id.is_empty()).then(|| client_id.to_string()),
            login: Login::default(),
            tls: None,
            keep_alive: DEFAULT_KEEP_ALIVE,
            clean_session: false,
            session_expiry: DEFAULT_SESSION_EXPIRY,
            shared_group: None,
            max_payload_size: DEFAULT_MAX_PAYLOAD,
            max_inflight: DEFAULT_MAX_INFLIGHT as u16,
            reconnect_max_backoff: DEFAULT_RECONNECT_MAX_BACKOFF,
            dead_letter_file: None,
            topics: Vec::new(),
            runtime: MqttRuntime::default(),
        })
    }

    /// Adds a subscription (builder style).
    pub fn filter(mut self, filter: &str, qos: Qos, payload: MqttPayload) -> Self {
        self.topics.push(TopicConfig {
            filter: filter.to_string(),
            qos,
            payload,
        });
        self
    }

    /// The largest payload accepted, in bytes.
    pub fn max_payload_bytes(&self) -> usize {
        usize::try_from(self.max_payload_size.0).unwrap_or(usize::MAX)
    }

    /// The packet-size limit given to rumqttc: room for the largest accepted payload plus its
    /// topic and headers, and more, so that a payload somewhat above the limit still arrives
    /// and is dead-lettered instead of breaking the connection.
    pub fn packet_limit(&self) -> usize {
        let max = self.max_payload_bytes();
        max.saturating_mul(2)
            .max(max.saturating_add(64 * 1024))
            .min(MQTT_MAX_PACKET)
    }

    /// The filters as subscribed (with the shared-subscription prefix).
    pub fn subscriptions(&self) -> Vec<(String, Qos)> {
        self.topics
            .iter()
            .map(|t| (self.subscription_filter(t), t.qos))
            .collect()
    }

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

impl SourceTable for MqttTable {
    const TYPE: &'static str = "mqtt";
    const SUMMARY: &'static str = "subscription to an MQTT broker";
    const EXAMPLE: &'static str = "url = \"mqtt://broker.local\"\nclient_id = \"gw1\"\n[[pipeline.source.topic]]\nfilter = \"plant/#\"\n";
    type Settings = MqttSourceConfig;

    fn tables() -> Vec<(&'static str, &'static [FieldDoc])> {
        vec![("", Self::KEYS), ("topic[].", TopicTable::KEYS)]
    }

    fn validate(
        &self,
        v: &mut Validator<'_>,
        at: &KeyPath,
        env: &SourceEnv<'_>,
    ) -> Option<MqttSourceConfig> {
        validate_mqtt(v, self, at, env)
    }
}

fn validate_mqtt(
    v: &mut Validator<'_>,
    m: &MqttTable,
    sp: &KeyPath,
    env: &SourceEnv<'_>,
) -> Option<MqttSourceConfig> {
    let (name, data_dir) = (env.name, env.data_dir);
    let before = v.diags.len();
    let url = v.required(&m.url, sp, "url").map(str::to_string);
    let broker = url.as_deref().and_then(|u| {
        BrokerAddress::parse(u)
            .map_err(|e| v.err(&sp.key("url"), e))
            .ok()
    });
    let protocol = v.choice(
        &m.protocol,
        &sp.key("protocol"),
        MqttProtocol::V311,
        &[("v3", MqttProtocol::V311), ("v5", MqttProtocol::V5)],
    );
    let client_id = match &m.client_id {
        Some(id) if id.is_empty() => {
            v.err(&sp.key("client_id"), "must not be empty");
            None
        }
        Some(id) if id.len() > 65535 || id.chars().any(|c| c.is_control()) => {
            v.err(
                &sp.key("client_id"),
                "a client id is at most 65535 bytes without control characters",
            );
            None
        }
        other => other.clone(),
    };
    let login = m.login(v, sp);
    if protocol == MqttProtocol::V311 {
        login.needs_username(
            v,
            sp,
            "MQTT 3.1.1 sends a password only with a username; set `username` (or use protocol = \"v5\")",
        );
    }
    let tls_on = broker.as_ref().is_some_and(|b| b.tls);
    for key in ["ca_file", "client_cert_file", "client_key_file"] {
        let set = match key {
            "ca_file" => m.ca_file.is_some(),
            "client_cert_file" => m.client_cert_file.is_some(),
            _ => m.client_key_file.is_some(),
        };
        if set && broker.is_some() && !tls_on {
            v.err_key(
                &sp.key(key),
                "TLS settings need an mqtts:// url (this one is mqtt://)",
            );
        }
    }
    let ca_file = v
        .nonempty(&m.ca_file, &sp.key("ca_file"))
        .map(PathBuf::from);
    let cert = v
        .nonempty(&m.client_cert_file, &sp.key("client_cert_file"))
        .map(PathBuf::from);
    let key = v
        .nonempty(&m.client_key_file, &sp.key("client_key_file"))
        .map(PathBuf::from);
    let client_auth = match (cert, key) {
        (Some(c), Some(k)) => Some((c, k)),
        (Some(_), None) => {
            v.err_key(&sp.key("client_cert_file"), "needs client_key_file too");
            None
        }
        (None, Some(_)) => {
            v.err_key(&sp.key("client_key_file"), "needs client_cert_file too");
            None
        }
        (None, None) => None,
    };
    let tls = tls_on.then_some(MqttTls {
        ca_file,
        client_auth,
    });
    let keep_alive = v.whole_seconds(
        &m.keep_alive,
        &sp.key("keep_alive"),
        DEFAULT_KEEP_ALIVE,
        1,
        65535,
    );
    let clean_session = m.clean_session.unwrap_or(false);
    if m.session_expiry.is_some() && protocol == MqttProtocol::V311 {
        v.err_key(
            &sp.key("session_expiry"),
            "session_expiry is an MQTT 5 setting; set protocol = \"v5\" or remove it (MQTT 3.1.1 sessions last until the broker expires them)",
        );
    }
    let session_expiry = v.whole_seconds(
        &m.session_expiry,
        &sp.key("session_expiry"),
        DEFAULT_SESSION_EXPIRY,
        0,
        u64::from(u32::MAX),
    );
    if !clean_session && client_id.is_none() && m.client_id.is_none() {
        v.err(
            &sp.key("client_id"),
            "a persistent session (clean_session = false, the default) needs a stable, non-empty client_id, unique per daemon; set client_id, or set clean_session = true and use only QoS 0",
        );
    }
    let shared_group = match &m.shared_group {
        Some(g) if g.is_empty() || g.contains(['/', '+', '#', '\0']) => {
            v.err(
                &sp.key("shared_group"),
                format!("\"{g}\" is not a shared-subscription group; it must be non-empty without '/', '+' or '#'"),
            );
            None
        }
        other => other.clone(),
    };
    let max_payload_size = v.size_min(
        &m.max_payload_size,
        &sp.key("max_payload_size"),
        DEFAULT_MAX_PAYLOAD,
        ByteSize(1),
    );
    if max_payload_size.0 > MQTT_MAX_PACKET as u64 {
        v.err(
            &sp.key("max_payload_size"),
            format!("{max_payload_size} is more than MQTT allows ({MQTT_MAX_PACKET} bytes)"),
        );
    }
    let max_inflight = v.int(
        &m.max_inflight,
        &sp.key("max_inflight"),
        DEFAULT_MAX_INFLIGHT,
        1,
        65535,
    ) as u16;
    let reconnect_max_backoff = v.positive_duration(
        &m.reconnect_max_backoff,
        &sp.key("reconnect_max_backoff"),
        DEFAULT_RECONNECT_MAX_BACKOFF,
    );
    let dead_letter_file = Some(v.path_or(
        &m.dead_letter_file,
        &sp.key("dead_letter_file"),
        data_dir.join("dead-letter").join(format!("{name}.jsonl")),
    ));
    let mut topics: Vec<TopicConfig> = Vec::new();
    let need = "add at least one [[pipeline.source.topic]] with a filter";
    match v.nonempty_list(&m.topic, sp, "topic", need) {
        None => {}
        Some(list) => {
            for (k, t) in list.iter().enumerate() {
                let tp = sp.key("topic").index(k);
                if let Some(topic) = validate_topic(v, t, &tp, env.line_protocol_model) {
                    if topic.qos > Qos::AtMostOnce {
                        let q = topic.qos.level();
                        if clean_session {
                            v.err(
                                &tp.key("qos"),
                                format!("QoS {q} needs a persistent session so the broker redelivers unacknowledged messages after a restart: set clean_session = false and a stable client_id"),
                            );
                        } else if protocol == MqttProtocol::V5 && session_expiry.is_zero() {
                            v.err(
                                &tp.key("qos"),
                                format!("QoS {q} needs a persistent session: with MQTT 5 set session_expiry above 0s"),
                            );
                        }
                    }
                    if topics.iter().any(|x| x.filter == topic.filter) {
                        v.err(
                            &tp.key("filter"),
                            format!(
                                "filter \"{}\" is subscribed twice in this source",
                                topic.filter
                            ),
                        );
                    }
                    topics.push(topic);
                }
            }
        }
    }
    if v.diags.len() != before {
        return None;
    }
    Some(MqttSourceConfig {
        url: url?,
        broker: broker?,
        protocol,
        client_id,
        login,
        tls,
        keep_alive,
        clean_session,
        session_expiry,
        shared_group,
        max_payload_size,
        max_inflight,
        reconnect_max_backoff,
        dead_letter_file,
        topics,
        runtime: MqttRuntime {
            name: name.to_string(),
            ..MqttRuntime::default()
        },
    })
}

fn validate_topic(
    v: &mut Validator<'_>,
    t: &TopicTable,
    tp: &KeyPath,
    model: tsfiled_core::LineProtocolModel,
) -> Option<TopicConfig> {
    let before = v.diags.len();
    let filter = v.required(&t.filter, tp, "filter").map(str::to_string);
    if let Some(f) = &filter {
        if let Err(e) = check_topic_filter(f) {
            v.err(&tp.key("filter"), e);
        }
    }
    let qos = u8::try_from(v.int(&t.qos, &tp.key("qos"), 1, 0, 2))
        .ok()
        .and_then(Qos::from_level)
        .unwrap_or_default();
    #[derive(Clone, Copy, PartialEq)]
    enum P {
        Json,
        Line,
        Value,
    }
    let p = v.choice(
        &t.payload,
        &tp.key("payload"),
        P::Json,
        &[
            ("iotdb-json", P::Json),
            ("line", P::Line),
            ("value", P::Value),
        ],
    );
    let why = match p {
        P::Json => "with payload = \"iotdb-json\"",
        P::Line => "with payload = \"line\"",
        P::Value => "with payload = \"value\"",
    };
    v.not_with(
        p != P::Value && t.topic_template.is_some(),
        &tp.key("topic_template"),
        why,
    );
    v.not_with(
        p == P::Json && t.path_prefix.is_some(),
        &tp.key("path_prefix"),
        why,
    );
    v.not_with(
        p != P::Line && t.device_template.is_some(),
        &tp.key("device_template"),
        why,
    );
    v.not_with(
        p != P::Line && t.precision.is_some(),
        &tp.key("precision"),
        why,
    );
    let payload = match p {
        P::Json => MqttPayload::IotdbJson,
        P::Line => MqttPayload::Line(line_mapping(
            v,
            &t.path_prefix,
            &t.device_template,
            &t.precision,
            tp,
            "root.mqtt",
            model,
        )),
        P::Value => {
            let path_prefix = t.path_prefix.clone().unwrap_or_else(|| "root.mqtt".into());
            let tpl = match &t.topic_template {
                None => {
                    v.err(
                        &tp.key("topic_template"),
                        "payload = \"value\" needs a topic_template such as \"plant/{device}/{measurement}\"",
                    );
                    None
                }
                Some(s) => TopicTemplate::parse(s)
                    .map_err(|e| v.err(&tp.key("topic_template"), e))
                    .ok(),
            };
            // `root` alone is a prefix only when the topic adds device levels below it.
            let root_allowed = tpl.as_ref().is_none_or(|t| t.has_device());
            if let Err(e) = check_prefix(&path_prefix, root_allowed) {
                v.err(&tp.key("path_prefix"), e);
            }
            if let (Some(tpl), Some(f)) = (&tpl, &filter) {
                if !f.contains('#')
                    && f.split('/').count() != tpl.levels().len()
                    && !tpl.as_str().ends_with('#')
                    && !tpl.levels().contains(&TopicLevel::DeviceMulti)
                {
                    v.err(
                        &tp.key("topic_template"),
                        format!(
                            "has {} levels but the filter \"{f}\" matches topics of {} levels",
                            tpl.levels().len(),
                            f.split('/').count()
                        ),
                    );
                }
            }
            match tpl {
                Some(topic_template) => MqttPayload::Value {
                    topic_template,
                    path_prefix,
                },
                None => MqttPayload::IotdbJson,
            }
        }
    };
    if v.diags.len() != before {
        return None;
    }
    Some(TopicConfig {
        filter: filter?,
        qos,
        payload,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{validate_table, Secret};

    #[test]
    fn packet_limit_has_room() {
        let mut o = MqttSourceConfig::new("mqtt://127.0.0.1:1883", "gw1").unwrap();
        assert_eq!(o.packet_limit(), 2 << 20);
        o.max_payload_size = ByteSize(1000);
        assert_eq!(o.packet_limit(), 1000 + 65536);
        o.max_payload_size = ByteSize(MQTT_MAX_PACKET as u64);
        assert_eq!(o.packet_limit(), MQTT_MAX_PACKET);
    }

    #[test]
    fn subscriptions_carry_the_shared_group() {
        let mut o = MqttSourceConfig::new("mqtt://h", "gw1").unwrap().filter(
            "plant/#",
            Qos::AtLeastOnce,
            MqttPayload::IotdbJson,
        );
        assert_eq!(
            o.subscriptions(),
            vec![("plant/#".to_string(), Qos::AtLeastOnce)]
        );
        o.shared_group = Some("tsfiled".into());
        assert_eq!(
            o.subscriptions(),
            vec![("$share/tsfiled/plant/#".to_string(), Qos::AtLeastOnce)]
        );
    }

    /// A table with the login keys on lines 3 and 4.
    const LOGIN: &str = "url = \"mqtt://broker.local\"\nclient_id = \"gw1\"\nusername = \"gw\"\npassword_file = \"/run/pw\"\n[[topic]]\nfilter = \"plant/#\"\n";

    #[test]
    fn misspelled_login_keys_are_refused_where_written() {
        let c = validate_table::<MqttTable>(LOGIN).unwrap();
        let login = Login {
            username: Some("gw".into()),
            password: Some(Secret::File("/run/pw".into())),
        };
        assert_eq!(c.login, login);
        for (key, typo, at) in [
            ("username", "user_name", "3:1"),
            ("password_file", "pasword_file", "4:1"),
        ] {
            let errs = validate_table::<MqttTable>(&LOGIN.replacen(key, typo, 1)).unwrap_err();
            assert_eq!(errs.len(), 1, "{errs:?}");
            let head = format!("{at}: {typo}: unknown field `{typo}`, expected one of ");
            assert!(errs[0].starts_with(&head), "{errs:?}");
            assert!(errs[0].contains(&format!("`{key}`")), "{errs:?}");
        }
    }

    #[test]
    fn a_password_file_without_username_is_refused_over_mqtt_3_only() {
        let text = LOGIN.replacen("username = \"gw\"\n", "", 1);
        let errs = validate_table::<MqttTable>(&text).unwrap_err();
        assert_eq!(
            errs,
            ["3:1: password_file: MQTT 3.1.1 sends a password only with a username; set `username` (or use protocol = \"v5\")"]
        );
        let v5 = validate_table::<MqttTable>(&format!("protocol = \"v5\"\n{text}")).unwrap();
        assert_eq!(v5.login.username, None);
        assert_eq!(v5.login.password, Some(Secret::File("/run/pw".into())));
    }

    #[test]
    fn broker_urls() {
        let b = BrokerAddress::parse("mqtt://broker.local").unwrap();
        assert_eq!(
            (b.tls, b.host.as_str(), b.port),
            (false, "broker.local", 1883)
        );
        let b = BrokerAddress::parse("mqtts://10.0.0.1:9000/").unwrap();
        assert_eq!((b.tls, b.host.as_str(), b.port), (true, "10.0.0.1", 9000));
        let b = BrokerAddress::parse("mqtts://[::1]").unwrap();
        assert_eq!((b.host.as_str(), b.port), ("::1", 8883));
        let b = BrokerAddress::parse("mqtt://[fe80::1]:1884").unwrap();
        assert_eq!((b.host.as_str(), b.port), ("fe80::1", 1884));
        assert!(BrokerAddress::parse("tcp://x")
            .unwrap_err()
            .contains("mqtt://"));
        assert!(BrokerAddress::parse("mqtt://")
            .unwrap_err()
            .contains("no host"));
        assert!(BrokerAddress::parse("mqtt://x:0").is_err());
        assert!(BrokerAddress::parse("mqtt://x:70000").is_err());
        assert!(BrokerAddress::parse("mqtt://u:p@x").is_err());
        assert!(BrokerAddress::parse("mqtt://x/topic").is_err());
        assert!(BrokerAddress::parse("mqtt://[::1").is_err());
        // What the MQTT connector used to take on its own, and more, is refused.
        for bad in [
            "ssl://x",
            "MQTT://x",
            "mqtt://x#y",
            "mqtt://[::1]x",
            "mqtt://a b",
        ] {
            assert!(
                BrokerAddress::parse(bad).unwrap_err().contains(bad),
                "{bad}"
            );
        }
    }
}
