//! Settings of one MQTT source ([`MqttSourceOptions`]) and their validation.
//!
//! The TOML side lives in the config crate; this is the plain, typed runtime form.

use std::path::PathBuf;
use std::time::Duration;

use super::config::{BrokerAddress, MqttProtocol, MqttTls, Qos};
use crate::source::Secret;

use crate::model::TimeUnit;

use super::invalid;
use crate::Error;

/// How the payloads of a topic filter are parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadFormat {
    /// IoTDB's MQTT JSON (single record, batch form, or an array of them).
    IotdbJson {
        /// Unit of the payload's timestamps (IoTDB: milliseconds).
        time_unit: TimeUnit,
    },
    /// InfluxDB line protocol.
    LineProtocol {
        /// Unit of the lines' timestamps (InfluxDB's default: nanoseconds).
        precision: TimeUnit,
        /// Device path prefix (default `root.lp`).
        path_prefix: String,
        /// Device template below the prefix (default `{measurement}.{tags}`; see
        /// [`DeviceTemplate`](crate::path::DeviceTemplate)).
        device_template: String,
        /// The database of a pipeline storing line protocol in the table model
        /// (`storage.line_protocol_model = "table"`); `None` in the tree model.
        table_database: Option<String>,
    },
    /// A plain value (number, boolean, text, or `{"ts":..,"value":..}`); device and
    /// measurement come from the topic (see [`crate::topic_value`]).
    TopicValue {
        /// Topic template, e.g. `plant/{device}/{measurement}`.
        template: String,
        /// Path prefix of the device, e.g. `root.plant`.
        path_prefix: String,
        /// Unit of `ts` in `{"ts":..,"value":..}` payloads (default ms).
        time_unit: TimeUnit,
    },
}

impl PayloadFormat {
    /// Line protocol with the default device mapping (`root.lp.{measurement}.{tags}`).
    pub fn line_protocol(precision: TimeUnit) -> PayloadFormat {
        PayloadFormat::LineProtocol {
            precision,
            path_prefix: "root.lp".into(),
            device_template: "{measurement}.{tags}".into(),
            table_database: None,
        }
    }

    /// Plain values with `template` below `path_prefix` (`ts` in milliseconds).
    pub fn topic_value(template: &str, path_prefix: &str) -> PayloadFormat {
        PayloadFormat::TopicValue {
            template: template.into(),
            path_prefix: path_prefix.into(),
            time_unit: TimeUnit::Millis,
        }
    }
}

impl Default for PayloadFormat {
    fn default() -> Self {
        PayloadFormat::IotdbJson {
            time_unit: TimeUnit::Millis,
        }
    }
}

/// One subscription of a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicFilter {
    /// MQTT topic filter (`+`, `#` allowed); may itself start with `$share/<group>/`.
    pub filter: String,
    /// Requested QoS.
    pub qos: Qos,
    /// Payload format of the matching messages.
    pub format: PayloadFormat,
}

impl TopicFilter {
    /// A filter with the given QoS and format.
    pub fn new(filter: impl Into<String>, qos: Qos, format: PayloadFormat) -> TopicFilter {
        TopicFilter {
            filter: filter.into(),
            qos,
            format,
        }
    }
}

/// Settings of one MQTT source.
#[derive(Debug, Clone, PartialEq)]
pub struct MqttSourceOptions {
    /// Source name (logs; the daemon's metric label).
    pub name: String,
    /// Broker URL: `mqtt://host[:1883]` or `mqtts://host[:8883]` ([`BrokerAddress::parse`]).
    pub url: String,
    /// Protocol version.
    pub protocol: MqttProtocol,
    /// Client identifier; must be stable and non-empty whenever a filter has QoS > 0.
    pub client_id: String,
    /// User name.
    pub username: Option<String>,
    /// Password (needs `username`).
    pub password: Option<Secret>,
    /// TLS settings for `mqtts://`; `None`: the system roots
    /// ([`SYSTEM_CA_BUNDLE`](super::SYSTEM_CA_BUNDLE)) and no client certificate.
    pub tls: Option<MqttTls>,
    /// Keep-alive interval: zero (off) or 5 s to 65535 s, whole seconds.
    pub keep_alive: Duration,
    /// MQTT 3.1.1 clean session / MQTT 5 clean start. Must be off when a filter has QoS > 0.
    pub clean_session: bool,
    /// MQTT 5 session expiry (must be > 0 when a filter has QoS > 0); `u32::MAX` seconds or
    /// more means "never".
    pub session_expiry: Duration,
    /// Subscriptions (at least one).
    pub filters: Vec<TopicFilter>,
    /// Shared-subscription group: every filter is subscribed as `$share/<group>/<filter>`, so
    /// several daemons with the same group split one stream.
    pub shared_group: Option<String>,
    /// Largest payload accepted; larger ones are dead-lettered (default 1 MiB).
    pub max_payload_bytes: usize,
    /// Messages received but not yet durable at most (the in-flight window, default 1000).
    /// Reading from the socket stops while it is full.
    pub in_flight: usize,
    /// First reconnect delay (doubled per failure, with jitter).
    pub reconnect_initial_backoff: Duration,
    /// Reconnect delay cap (default 30 s).
    pub reconnect_max_backoff: Duration,
    /// TCP/TLS/CONNACK timeout of one connection attempt (whole seconds, at least 1).
    pub connect_timeout: Duration,
    /// JSON-lines file receiving messages that cannot be parsed (`None`: log and count only).
    pub dead_letter: Option<PathBuf>,
    /// File recording the filters this client's persistent session is subscribed to; on a
    /// connection with a session present, recorded filters that are no longer configured are
    /// unsubscribed (`None`: a dropped filter stays subscribed until the session expires).
    pub subscription_record: Option<PathBuf>,
    /// The file system of the subscription record (tests inject a simulated one).
    pub fs: tsfiled_fsio::FsRef,
    /// The pipeline's stored timestamp precision.
    pub stored_unit: TimeUnit,
    /// Messages gathered into one sink submission at most (what arrived while the previous
    /// submissions were in progress).
    pub max_batch_messages: usize,
    /// Sink submissions in progress at once (acks still go out in arrival order).
    pub max_concurrent_submits: usize,
    /// On shutdown, how long to wait for durable messages' acknowledgements to go out.
    pub drain_timeout: Duration,
}

/// Default largest payload: 1 MiB.
pub const DEFAULT_MAX_PAYLOAD: usize = 1 << 20;
/// Largest packet MQTT can carry (remaining length limit).
pub const MQTT_MAX_PACKET: usize = 268_435_455;

impl MqttSourceOptions {
    /// Defaults for a source on `url` with `client_id` and no filters yet.
    pub fn new(url: impl Into<String>, client_id: impl Into<String>) -> MqttSourceOptions {
        MqttSourceOptions {
            name: "mqtt".into(),
            url: url.into(),
            protocol: MqttProtocol::V311,
            client_id: client_id.into(),
            username: None,
            password: None,
            tls: None,
            keep_alive: Duration::from_secs(60),
            clean_session: false,
            session_expiry: Duration::from_secs(7 * 24 * 3600),
            filters: Vec::new(),
            shared_group: None,
            max_payload_bytes: DEFAULT_MAX_PAYLOAD,
            in_flight: 1000,
            reconnect_initial_backoff: Duration::from_millis(500),
            reconnect_max_backoff: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            dead_letter: None,
            subscription_record: None,
            fs: tsfiled_fsio::std_fs(),
            stored_unit: TimeUnit::Millis,
            max_batch_messages: 256,
            max_concurrent_submits: 2,
            drain_timeout: Duration::from_secs(5),
        }
    }

    /// Adds a subscription (builder style).
    pub fn filter(mut self, filter: impl Into<String>, qos: Qos, format: PayloadFormat) -> Self {
        self.filters.push(TopicFilter::new(filter, qos, format));
        self
    }

    /// The packet-size limit given to rumqttc: room for the largest accepted payload plus its
    /// topic and headers, and more, so that a payload somewhat above the limit still arrives
    /// and is dead-lettered instead of breaking the connection.
    pub fn packet_limit(&self) -> usize {
        self.max_payload_bytes
            .saturating_mul(2)
            .max(self.max_payload_bytes.saturating_add(64 * 1024))
            .min(MQTT_MAX_PACKET)
    }

    /// The broker address parsed from [`url`](Self::url).
    pub fn endpoint(&self) -> Result<BrokerAddress, Error> {
        BrokerAddress::parse(&self.url).map_err(|m| invalid("url", m))
    }

    /// The filters as subscribed (with the shared-subscription prefix).
    pub fn subscriptions(&self) -> Vec<(String, Qos)> {
        self.filters
            .iter()
            .map(|f| match &self.shared_group {
                Some(g) => (format!("$share/{g}/{}", f.filter), f.qos),
                None => (f.filter.clone(), f.qos),
            })
            .collect()
    }

    /// Checks every rule; errors name the field and what was expected.
    pub fn validate(&self) -> Result<(), Error> {
        let ep = self.endpoint()?;
        if self.filters.is_empty() {
            return Err(invalid("topics", "at least one topic filter is required"));
        }
        if let Some(g) = &self.shared_group {
            if g.is_empty() || g.contains(['/', '+', '#']) {
                return Err(invalid(
                    "shared_group",
                    format!("{g:?}: a group name is non-empty and has no '/', '+' or '#'"),
                ));
            }
        }
        for (i, f) in self.filters.iter().enumerate() {
            let shared = f.filter.starts_with("$share/");
            if shared && self.shared_group.is_some() {
                return Err(invalid(
                    "topics",
                    format!(
                        "topic {i} ({:?}) is already a shared subscription and shared_group is set",
                        f.filter
                    ),
                ));
            }
            let plain = if shared {
                split_shared(&f.filter).map(|(_, p)| p).ok_or_else(|| {
                    invalid(
                        "topics",
                        format!(
                            "topic {i} ({:?}): expected $share/<group>/<filter>",
                            f.filter
                        ),
                    )
                })?
            } else {
                f.filter.as_str()
            };
            tsfiled_core::check_topic_filter(plain)
                .map_err(|m| invalid("topics", format!("topic {i} ({:?}): {m}", f.filter)))?;
            super::parse::build_parser(&f.format, self.stored_unit)
                .map_err(|m| invalid("topics", format!("topic {i} ({:?}): {m}", f.filter)))?;
        }
        let persistent_needed = self.filters.iter().any(|f| f.qos > Qos::AtMostOnce);
        if persistent_needed {
            if self.client_id.trim().is_empty() {
                return Err(invalid(
                    "client_id",
                    "QoS 1/2 needs a stable, non-empty client id (the broker keeps \
                     unacknowledged messages for it)",
                ));
            }
            if self.clean_session {
                return Err(invalid(
                    "clean_session",
                    "QoS 1/2 needs a persistent session: set clean_session = false",
                ));
            }
            if self.protocol == MqttProtocol::V5 && self.session_expiry.is_zero() {
                return Err(invalid(
                    "session_expiry",
                    "QoS 1/2 over MQTT 5 needs a session expiry > 0",
                ));
            }
        }
        if !self.clean_session && self.client_id.is_empty() {
            return Err(invalid(
                "client_id",
                "a persistent session needs a non-empty client id",
            ));
        }
        if self.client_id.starts_with(' ') {
            return Err(invalid("client_id", "must not start with a space"));
        }
        let ka = self.keep_alive;
        if ka.subsec_nanos() != 0
            || (!ka.is_zero() && ka < Duration::from_secs(5))
            || ka > Duration::from_secs(65535)
        {
            return Err(invalid(
                "keep_alive",
                format!("{ka:?}: expected 0 (off) or 5 s to 65535 s in whole seconds"),
            ));
        }
        if self.connect_timeout.as_secs() == 0 || self.connect_timeout.subsec_nanos() != 0 {
            return Err(invalid(
                "connect_timeout",
                format!(
                    "{:?}: expected whole seconds, at least 1",
                    self.connect_timeout
                ),
            ));
        }
        if self.max_payload_bytes == 0 || self.max_payload_bytes > MQTT_MAX_PACKET {
            return Err(invalid(
                "max_payload_bytes",
                format!(
                    "{}: expected 1 to {MQTT_MAX_PACKET}",
                    self.max_payload_bytes
                ),
            ));
        }
        if self.in_flight == 0 || self.in_flight > 65535 {
            return Err(invalid(
                "max_inflight",
                format!("{}: expected 1 to 65535", self.in_flight),
            ));
        }
        if self.reconnect_initial_backoff.is_zero()
            || self.reconnect_max_backoff < self.reconnect_initial_backoff
        {
            return Err(invalid(
                "reconnect_max_backoff",
                format!(
                    "{:?}: expected at least the initial backoff {:?} (> 0)",
                    self.reconnect_max_backoff, self.reconnect_initial_backoff
                ),
            ));
        }
        if self.max_batch_messages == 0 || self.max_concurrent_submits == 0 {
            return Err(invalid(
                "max_batch_messages",
                "max_batch_messages and max_concurrent_submits must be at least 1",
            ));
        }
        if self.password.is_some() && self.username.is_none() {
            return Err(invalid("password", "a password needs a username"));
        }
        let tls_files = self
            .tls
            .as_ref()
            .is_some_and(|t| t.ca_file.is_some() || t.client_auth.is_some());
        if !ep.tls && tls_files {
            return Err(invalid(
                "tls",
                "TLS files are set but the URL is not mqtts://",
            ));
        }
        Ok(())
    }
}

/// Splits `$share/<group>/<filter>` into group and filter.
pub fn split_shared(filter: &str) -> Option<(&str, &str)> {
    let rest = filter.strip_prefix("$share/")?;
    let (group, f) = rest.split_once('/')?;
    if group.is_empty() || group.contains(['+', '#']) || f.is_empty() {
        return None;
    }
    Some((group, f))
}

/// Whether `topic` matches the (non-shared) `filter`, with MQTT's rules: `+` is one level,
/// `#` any number of trailing levels (including none), and wildcards at the first level do not
/// match topics starting with `$`.
pub fn topic_matches(filter: &str, topic: &str) -> bool {
    if topic.starts_with('$') && (filter.starts_with('+') || filter.starts_with('#')) {
        return false;
    }
    let mut f = filter.split('/');
    let mut t = topic.split('/');
    loop {
        match (f.next(), t.next()) {
            (Some("#"), _) => return true,
            (Some("+"), Some(_)) => {}
            (Some(a), Some(b)) if a == b => {}
            (None, None) => return true,
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> MqttSourceOptions {
        MqttSourceOptions::new("mqtt://127.0.0.1:1883", "gw1").filter(
            "plant/#",
            Qos::AtLeastOnce,
            PayloadFormat::default(),
        )
    }

    fn invalid_field(o: &MqttSourceOptions) -> &'static str {
        match o.validate() {
            Err(Error::Invalid { key, .. }) => key,
            other => panic!("expected an invalid field, got {other:?}"),
        }
    }

    #[test]
    fn endpoint_is_the_configuration_s_broker_address() {
        let o = opts();
        assert_eq!(
            o.endpoint().unwrap(),
            BrokerAddress::parse("mqtt://127.0.0.1:1883").unwrap()
        );
        let mut o = opts();
        o.url = "tcp://127.0.0.1".into();
        assert_eq!(invalid_field(&o), "url");
    }

    #[test]
    fn valid_defaults() {
        opts().validate().unwrap();
        let mut o = opts();
        o.protocol = MqttProtocol::V5;
        o.shared_group = Some("tsfiled".into());
        o.validate().unwrap();
        assert_eq!(
            o.subscriptions(),
            vec![("$share/tsfiled/plant/#".to_string(), Qos::AtLeastOnce)]
        );
    }

    #[test]
    fn qos_needs_persistent_session_and_client_id() {
        let mut o = opts();
        o.client_id = String::new();
        assert_eq!(invalid_field(&o), "client_id");
        let mut o = opts();
        o.client_id = "  ".into();
        assert_eq!(invalid_field(&o), "client_id");
        let mut o = opts();
        o.clean_session = true;
        assert_eq!(invalid_field(&o), "clean_session");
        let mut o = opts();
        o.protocol = MqttProtocol::V5;
        o.session_expiry = Duration::ZERO;
        assert_eq!(invalid_field(&o), "session_expiry");
        // QoS 0 with a clean session and no id is fine.
        let mut o = MqttSourceOptions::new("mqtt://h", "").filter(
            "a",
            Qos::AtMostOnce,
            PayloadFormat::default(),
        );
        o.clean_session = true;
        o.validate().unwrap();
        o.clean_session = false;
        assert_eq!(invalid_field(&o), "client_id");
    }

    #[test]
    fn other_rules() {
        let mut o = opts();
        o.filters.clear();
        assert_eq!(invalid_field(&o), "topics");
        for bad in ["", "a/#/b", "a#", "a/b+", "$share/g", "$share//x"] {
            let mut o = opts();
            o.filters[0].filter = bad.into();
            assert_eq!(invalid_field(&o), "topics", "{bad}");
        }
        let mut o = opts();
        o.filters[0].filter = "$share/g/a/+".into();
        o.validate().unwrap();
        o.shared_group = Some("h".into());
        assert_eq!(invalid_field(&o), "topics");
        let mut o = opts();
        o.shared_group = Some("a/b".into());
        assert_eq!(invalid_field(&o), "shared_group");
        for ka in [Duration::from_secs(3), Duration::from_millis(5500)] {
            let mut o = opts();
            o.keep_alive = ka;
            assert_eq!(invalid_field(&o), "keep_alive");
        }
        let mut o = opts();
        o.keep_alive = Duration::ZERO;
        o.validate().unwrap();
        let mut o = opts();
        o.in_flight = 0;
        assert_eq!(invalid_field(&o), "max_inflight");
        let mut o = opts();
        o.max_payload_bytes = 0;
        assert_eq!(invalid_field(&o), "max_payload_bytes");
        let mut o = opts();
        o.reconnect_max_backoff = Duration::from_millis(1);
        assert_eq!(invalid_field(&o), "reconnect_max_backoff");
        let mut o = opts();
        o.password = Some(Secret::Inline("x".into()));
        assert_eq!(invalid_field(&o), "password");
        let mut o = opts();
        o.tls = Some(MqttTls {
            ca_file: Some("/ca.pem".into()),
            client_auth: None,
        });
        assert_eq!(invalid_field(&o), "tls");
        o.url = "mqtts://h".into();
        o.validate().unwrap();
        // Settings without files are the defaults, fine on mqtt:// too.
        o.url = "mqtt://h".into();
        o.tls = Some(MqttTls::default());
        o.validate().unwrap();
    }

    #[test]
    fn packet_limit_has_room() {
        let o = opts();
        assert_eq!(o.packet_limit(), 2 << 20);
        let mut o = opts();
        o.max_payload_bytes = 1000;
        assert_eq!(o.packet_limit(), 1000 + 65536);
        o.max_payload_bytes = MQTT_MAX_PACKET;
        assert_eq!(o.packet_limit(), MQTT_MAX_PACKET);
    }

    #[test]
    fn matching() {
        assert!(topic_matches("a/b", "a/b"));
        assert!(!topic_matches("a/b", "a/b/c"));
        assert!(topic_matches("a/+/c", "a/x/c"));
        assert!(!topic_matches("a/+/c", "a/x/y/c"));
        assert!(topic_matches("a/#", "a"));
        assert!(topic_matches("a/#", "a/b/c"));
        assert!(topic_matches("#", "a/b"));
        assert!(!topic_matches("#", "$SYS/x"));
        assert!(!topic_matches("+/x", "$SYS/x"));
        assert!(topic_matches("$SYS/#", "$SYS/x"));
        assert!(topic_matches("+", ""));
        assert!(!topic_matches("a/b", "a"));
    }
}
