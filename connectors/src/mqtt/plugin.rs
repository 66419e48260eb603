//! The `mqtt` source on the plugin API: effective configuration, machine checks, and the run
//! (the settings with the context's name, stored unit and state file; telemetry → the
//! source's metrics handle and status).

use std::path::Path;
use std::sync::Arc;

use tsfiled_core::probe::{dir_writable, file_readable, CheckItem};
use tsfiled_core::Human;

use super::config::{MqttPayload, MqttProtocol, MqttSourceConfig, MqttTable, TopicTable};
use super::metrics::{MessageError, MqttMetrics};
use crate::source::written::{duration as d, path as p, text as t};
use crate::source::{
    Counter, Gauge, Secret, SourceContext, SourceFuture, SourceMetrics, SourceSettings,
    StatusReporter,
};

impl SourceSettings for MqttSourceConfig {
    type Table = MqttTable;

    fn to_table(&self, name: &str, secret: &dyn Fn(&str) -> String) -> MqttTable {
        let m = self;
        let tls = m.tls.as_ref();
        let mut table = MqttTable {
            name: t(name),
            url: t(&m.url),
            protocol: t(match m.protocol {
                MqttProtocol::V311 => "v3",
                MqttProtocol::V5 => "v5",
            }),
            client_id: m.client_id.clone(),
            // Written by `set_login` below.
            username: None,
            password: None,
            password_file: None,
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
            dead_letter_file: m.dead_letter_file.as_deref().and_then(p),
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
        };
        table.set_login(&m.login, secret);
        table
    }

    fn check(&self, at: &str, out: &mut Vec<CheckItem>) {
        Secret::check(self.login.password.as_ref(), at, "password", out);
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
        let Some(dl) = &self.dead_letter_file else {
            return;
        };
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
        let mut config = self.clone();
        config.runtime.name = cx.name.clone();
        config.runtime.stored_unit = cx.stored_unit;
        config.runtime.subscription_record = Some(
            cx.state_dir
                .join("mqtt")
                .join(format!("{}.subscriptions.json", cx.name)),
        );
        let metrics: Arc<dyn MqttMetrics> = Arc::new(HandleMetrics::new(
            cx.metrics.as_ref(),
            cx.metrics.clone(),
            cx.status,
        ));
        tracing::info!(source = %format!("{}/{}", cx.pipeline, cx.name), url = %config.url, "MQTT source starting");
        let run = super::run(config, cx.sink, cx.shutdown, metrics);
        Box::pin(async move { run.await.map_err(|e| e.to_string()) })
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
