//! The `mqtt` source on the plugin API: effective configuration, machine checks, and the run
//! (settings → [`MqttSourceOptions`], telemetry → the source's metrics handle and status).

use std::path::Path;
use std::sync::Arc;

use tsfiled_core::probe::{dir_writable, file_readable, CheckItem};
use tsfiled_core::{format_duration, Human};

use super::config::{MqttPayload, MqttProtocol, MqttSourceConfig, MqttTable, TopicTable};
use super::metrics::{MessageError, MqttMetrics};
use super::options::{MqttSourceOptions, PayloadFormat, TopicFilter};
use crate::model::TimeUnit;
use crate::source::{
    Counter, Gauge, Secret, SourceContext, SourceFuture, SourceMetrics, SourceSettings,
    StatusReporter,
};

fn p(path: &Path) -> Option<String> {
    Some(path.to_string_lossy().into_owned())
}

fn d(v: std::time::Duration) -> Option<Human> {
    Some(Human::Text(format_duration(v)))
}

fn t(v: &str) -> Option<String> {
    Some(v.to_string())
}

impl SourceSettings for MqttSourceConfig {
    type Table = MqttTable;

    fn to_table(&self, name: &str, secret: &dyn Fn(&str) -> String) -> MqttTable {
        let m = self;
        let (password, password_file) = Secret::to_keys(m.password.as_ref(), secret);
        let tls = m.tls.as_ref();
        MqttTable {
            name: t(name),
            url: t(&m.url),
            protocol: t(match m.protocol {
                MqttProtocol::V311 => "v3",
                MqttProtocol::V5 => "v5",
            }),
            client_id: m.client_id.clone(),
            username: m.username.clone(),
            password,
            password_file,
            ca_file: tls.and_then(|t| t.ca_file.as_deref()).and_then(p),
            client_cert_file: tls
                .and_then(|t| t.client_auth.as_ref())
                .and_then(|(c, _)| p(c)),
            client_key_file: tls
                .and_then(|t| t.client_auth.as_ref())
                .and_then(|(_, k)| p(k)),
            keep_alive: d(m.keep_alive),
            clean_session: Some(m.clean_session),
            session_expiry: match m.protocol {
                MqttProtocol::V5 => d(m.session_expiry),
                MqttProtocol::V311 => None,
            },
            shared_group: m.shared_group.clone(),
            max_payload_size: Some(Human::Text(m.max_payload_size.to_string())),
            max_inflight: Some(i64::from(m.max_inflight)),
            reconnect_max_backoff: d(m.reconnect_max_backoff),
            dead_letter_file: p(&m.dead_letter_file),
            topic: Some(
                m.topics
                    .iter()
                    .map(|tc| {
                        let mut r = TopicTable {
                            filter: t(&tc.filter),
                            qos: Some(tc.qos as i64),
                            payload: t(tc.payload.as_str()),
                            ..Default::default()
                        };
                        match &tc.payload {
                            MqttPayload::IotdbJson => {}
                            MqttPayload::Line(lm) => {
                                (r.path_prefix, r.device_template, r.precision) = lm.keys();
                            }
                            MqttPayload::Value {
                                topic_template,
                                path_prefix,
                            } => {
                                r.topic_template = t(topic_template.as_str());
                                r.path_prefix = t(path_prefix);
                            }
                        }
                        r
                    })
                    .collect(),
            ),
        }
    }

    fn check(&self, at: &str, out: &mut Vec<CheckItem>) {
        Secret::check(self.password.as_ref(), at, "password", out);
        let mut result = |key: &str, r: Result<String, String>| {
            out.push(CheckItem::from_result(format!("{at}.{key}"), r));
        };
        if let Some(tls) = &self.tls {
            if let Some(ca) = &tls.ca_file {
                result("ca_file", file_readable(ca));
            }
            if let Some((c, k)) = &tls.client_auth {
                result("client_cert_file", file_readable(c));
                result("client_key_file", file_readable(k));
            }
        }
        let dl = &self.dead_letter_file;
        let parent = dl
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let res = if dl.is_dir() {
            Err(format!("{} is a directory", dl.display()))
        } else {
            dir_writable(parent).map(|_| format!("{} can be written", dl.display()))
        };
        result("dead_letter_file", res);
    }

    fn initial_state(&self) -> &'static str {
        "disconnected"
    }

    fn start(&self, cx: SourceContext) -> SourceFuture {
        let options = self.options(&cx.name, cx.stored_unit, &cx.state_dir);
        let metrics: Arc<dyn MqttMetrics> = Arc::new(HandleMetrics::new(
            cx.metrics.as_ref(),
            cx.metrics.clone(),
            cx.status,
        ));
        tracing::info!(source = %format!("{}/{}", cx.pipeline, cx.name), url = %options.url, "MQTT source starting");
        let run = super::run(options, cx.sink, cx.shutdown, metrics);
        Box::pin(async move { run.await.map_err(|e| e.to_string()) })
    }
}

impl MqttSourceConfig {
    /// The connector's options for source `name`; `stored` is the pipeline's stored time unit;
    /// the session's subscriptions are recorded in `state_dir/mqtt/<name>.subscriptions.json`.
    pub fn options(&self, name: &str, stored: TimeUnit, state_dir: &Path) -> MqttSourceOptions {
        let m = self;
        let mut o = MqttSourceOptions::new(m.url.clone(), m.client_id.clone().unwrap_or_default());
        o.name = name.to_string();
        o.protocol = m.protocol;
        o.username = m.username.clone();
        o.password = m.password.clone();
        o.tls = m.tls.clone();
        o.keep_alive = m.keep_alive;
        o.clean_session = m.clean_session;
        o.session_expiry = m.session_expiry;
        o.shared_group = m.shared_group.clone();
        o.max_payload_bytes = usize::try_from(m.max_payload_size.0).unwrap_or(usize::MAX);
        o.in_flight = usize::from(m.max_inflight.max(1));
        o.reconnect_max_backoff = m.reconnect_max_backoff;
        o.dead_letter = Some(m.dead_letter_file.clone());
        o.subscription_record = Some(
            state_dir
                .join("mqtt")
                .join(format!("{name}.subscriptions.json")),
        );
        o.stored_unit = stored;
        o.filters = m
            .topics
            .iter()
            .map(|t| TopicFilter {
                filter: t.filter.clone(),
                qos: t.qos,
                format: match &t.payload {
                    MqttPayload::IotdbJson => PayloadFormat::IotdbJson {
                        time_unit: TimeUnit::Millis,
                    },
                    MqttPayload::Line(lp) => PayloadFormat::LineProtocol {
                        precision: lp.precision,
                        path_prefix: lp.path_prefix.clone(),
                        device_template: lp.device_template.as_str().to_string(),
                        table_database: lp.device_template.table_database().map(str::to_string),
                    },
                    MqttPayload::Value {
                        topic_template,
                        path_prefix,
                    } => PayloadFormat::TopicValue {
                        template: topic_template.as_str().to_string(),
                        path_prefix: path_prefix.clone(),
                        time_unit: TimeUnit::Millis,
                    },
                },
            })
            .collect();
        o
    }
}

/// The MQTT telemetry on the source's metrics handle (`tsfiled_mqtt_*`) and status.
struct HandleMetrics {
    handle: Arc<dyn SourceMetrics>,
    status: StatusReporter,
    connected: Gauge,
    reconnects: Counter,
    messages: Counter,
    bytes: Counter,
    inflight: Gauge,
}

impl HandleMetrics {
    fn new(
        m: &dyn SourceMetrics,
        handle: Arc<dyn SourceMetrics>,
        status: StatusReporter,
    ) -> HandleMetrics {
        HandleMetrics {
            connected: m.gauge(
                "tsfiled_mqtt_connected",
                "1 while the MQTT source is connected to its broker.",
            ),
            reconnects: m.counter(
                "tsfiled_mqtt_reconnects_total",
                "MQTT connections established after the first one.",
                None,
            ),
            messages: m.counter(
                "tsfiled_mqtt_messages_total",
                "MQTT messages received.",
                None,
            ),
            bytes: m.counter(
                "tsfiled_mqtt_bytes_total",
                "MQTT payload bytes received.",
                None,
            ),
            inflight: m.gauge(
                "tsfiled_mqtt_inflight_messages",
                "MQTT messages received and not yet durable.",
            ),
            handle,
            status,
        }
    }
}

impl MqttMetrics for HandleMetrics {
    fn points_durable(&self, _points: u64) {
        self.handle.progress();
    }
    fn connected(&self, up: bool) {
        (self.connected)(i64::from(up));
        self.status
            .set(if up { "connected" } else { "disconnected" });
    }
    fn reconnect(&self) {
        (self.reconnects)(1);
    }
    fn received(&self, bytes: u64) {
        (self.messages)(1);
        (self.bytes)(bytes);
    }
    fn message_error(&self, reason: MessageError, count: u64) {
        // Rare (per bad message): the series is resolved when first needed.
        let c = self.handle.counter(
            "tsfiled_mqtt_message_errors_total",
            "MQTT messages (or points of them) not ingested, by reason.",
            Some(("reason", reason.label())),
        );
        c(count);
    }
    fn in_flight(&self, messages: u64) {
        (self.inflight)(i64::try_from(messages).unwrap_or(i64::MAX));
        self.handle.pending(messages);
    }
}
