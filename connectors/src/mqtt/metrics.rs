//! Telemetry hooks of the MQTT source.
//!
//! The daemon implements [`MqttMetrics`] on its Prometheus registry, labelling by source name
//! and, for errors, by the bounded reason label (see [`MessageError::label`]); no topic or
//! device ever becomes a label.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use crate::model::RejectReason;

/// Why a message (or part of it) was not ingested. Bounded: used as a metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageError {
    /// A parser rejection (whole message or part of it), by reason.
    Rejected(RejectReason),
    /// The payload exceeded `max_payload_bytes`.
    TooLarge,
    /// The topic is not valid UTF-8 or matches no configured filter.
    Topic,
    /// The broker refused a subscription.
    SubscribeFailed,
    /// The sink rejected points (schema, paths, times), by reason.
    SinkRejected(RejectReason),
}

impl MessageError {
    /// The metric label value.
    pub fn label(self) -> &'static str {
        match self {
            MessageError::Rejected(r) => r.label(),
            MessageError::TooLarge => "too_large",
            MessageError::Topic => "topic",
            MessageError::SubscribeFailed => "subscribe_failed",
            MessageError::SinkRejected(r) => match r {
                RejectReason::Parse => "sink_parse",
                RejectReason::InvalidPath => "sink_invalid_path",
                RejectReason::TypeMismatch => "sink_type_mismatch",
                RejectReason::InvalidTime => "sink_invalid_time",
                RejectReason::TooLarge => "sink_too_large",
                RejectReason::DeclaredTypeConflict => "sink_declared_type_conflict",
            },
        }
    }
}

/// Callbacks the source calls; every method has a no-op default.
pub trait MqttMetrics: Send + Sync + 'static {
    /// Connection state changed (the `connected` gauge: 1 or 0).
    fn connected(&self, _up: bool) {}
    /// A connection was established again after the first one (`reconnects_total`).
    fn reconnect(&self) {}
    /// The broker confirmed the subscriptions (SUBACK without refusals).
    fn subscribed(&self) {}
    /// A connection attempt or an established connection failed.
    fn connection_error(&self) {}
    /// A PUBLISH arrived with `bytes` of payload.
    fn received(&self, _bytes: u64) {}
    /// Messages (or points of them, `count`) not ingested, by reason.
    fn message_error(&self, _reason: MessageError, _count: u64) {}
    /// Messages received and not yet durable (the in-flight gauge).
    fn in_flight(&self, _messages: u64) {}
    /// Points the sink made durable.
    fn points_durable(&self, _points: u64) {}
    /// Messages written to the dead-letter file.
    fn dead_lettered(&self) {}
    /// The sink answered "full": reading pauses (`backpressure_total`).
    fn backpressure(&self) {}
}

/// Metrics that go nowhere.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoMetrics;

impl MqttMetrics for NoMetrics {}

/// Atomic counters, for tests, tools and benchmarks.
#[derive(Debug, Default)]
pub struct CountingMetrics {
    /// 1 while connected.
    pub connected: AtomicI64,
    /// Connections after the first.
    pub reconnects: AtomicU64,
    /// Failed connections.
    pub connection_errors: AtomicU64,
    /// Confirmed subscriptions (one per SUBACK).
    pub subscribed: AtomicU64,
    /// Messages received.
    pub messages: AtomicU64,
    /// Payload bytes received.
    pub bytes: AtomicU64,
    /// Message errors (any reason).
    pub errors: AtomicU64,
    /// Too-large messages.
    pub too_large: AtomicU64,
    /// Messages whose payload was rejected as a whole or in part by the parser.
    pub rejected: AtomicU64,
    /// Current in-flight messages.
    pub in_flight: AtomicU64,
    /// Highest in-flight value seen.
    pub in_flight_max: AtomicU64,
    /// Durable points.
    pub points: AtomicU64,
    /// Dead-lettered messages.
    pub dead_lettered: AtomicU64,
    /// Backpressure events.
    pub backpressure: AtomicU64,
}

impl CountingMetrics {
    /// Reads a counter.
    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }
}

impl MqttMetrics for CountingMetrics {
    fn connected(&self, up: bool) {
        self.connected.store(i64::from(up), Ordering::Relaxed);
    }
    fn reconnect(&self) {
        self.reconnects.fetch_add(1, Ordering::Relaxed);
    }
    fn subscribed(&self) {
        self.subscribed.fetch_add(1, Ordering::Relaxed);
    }
    fn connection_error(&self) {
        self.connection_errors.fetch_add(1, Ordering::Relaxed);
    }
    fn received(&self, bytes: u64) {
        self.messages.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }
    fn message_error(&self, reason: MessageError, _count: u64) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        match reason {
            MessageError::TooLarge => {
                self.too_large.fetch_add(1, Ordering::Relaxed);
            }
            MessageError::Rejected(_) => {
                self.rejected.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
    }
    fn in_flight(&self, messages: u64) {
        self.in_flight.store(messages, Ordering::Relaxed);
        self.in_flight_max.fetch_max(messages, Ordering::Relaxed);
    }
    fn points_durable(&self, points: u64) {
        self.points.fetch_add(points, Ordering::Relaxed);
    }
    fn dead_lettered(&self) {
        self.dead_lettered.fetch_add(1, Ordering::Relaxed);
    }
    fn backpressure(&self) {
        self.backpressure.fetch_add(1, Ordering::Relaxed);
    }
}
