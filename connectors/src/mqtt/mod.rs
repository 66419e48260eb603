//! The MQTT source: subscribes to a broker (MQTT 3.1.1 or 5, rumqttc) and feeds a
//! [`BatchSink`](crate::sink::BatchSink) with at-least-once delivery.
//!
//! - QoS 1/2 messages are acknowledged (manual acks) only after the sink made their points
//!   durable, in arrival order; validation requires a persistent session and a stable client
//!   id whenever a filter has QoS > 0, so the broker redelivers what was not acknowledged.
//! - Reconnects with exponential backoff and jitter (capped, default 30 s) and resubscribes
//!   whenever the broker has no session; the source keeps running while the broker is down.
//! - Payload formats per topic filter: IoTDB JSON, InfluxDB line protocol, or a plain value
//!   whose device and measurement come from the topic. Messages that cannot be parsed or are
//!   too large are counted, dead-lettered (JSON lines) and acknowledged.
//! - Backpressure: at most `in_flight` messages are between arrival and durability; while
//!   the window is full (for example while the sink answers "full") the socket is not read.
//! - Scale-out: `shared_group` subscribes every filter as `$share/<group>/<filter>`: run N
//!   daemons with the same group, each with its own client id, and the broker splits the
//!   stream between them.
//!
//! Broker settings that matter (Mosquitto): `max_inflight_messages` (default 20) bounds the
//! unacknowledged messages the broker sends to one MQTT 3.1.1 client (MQTT 5 clients announce
//! `in_flight` as their receive maximum), and `max_queued_messages` (default 1000) bounds what
//! it queues for a persistent session while the daemon is away or slow: beyond it Mosquitto
//! drops messages. Raise both for high-rate sources. A pause of reading longer than 1.5 times
//! the keep-alive (a sink full for that long) makes the broker close the connection; the
//! source reconnects and the broker redelivers what was not acknowledged (duplicates, no loss).

mod backoff;
mod client;
pub mod config;
mod dead_letter;
mod metrics;
mod parse;
mod plugin;
mod session;
mod source;
mod tls;

pub use config::{
    BrokerAddress, MqttPayload, MqttProtocol, MqttRuntime, MqttSourceConfig, MqttTable, MqttTls,
    Qos, TopicConfig, TopicTable, MQTT_MAX_PACKET,
};
pub use metrics::{CountingMetrics, MessageError, MqttMetrics, NoMetrics};
pub use parse::{split_shared, topic_matches};
pub use source::run;
pub use tls::SYSTEM_CA_BUNDLE;

/// An invalid MQTT setting, found when the source starts.
pub(crate) fn invalid(key: &'static str, message: impl Into<String>) -> crate::Error {
    crate::Error::Invalid {
        source_type: "mqtt",
        key,
        message: message.into(),
    }
}
