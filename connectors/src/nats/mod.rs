//! The NATS JetStream source: a durable pull consumer feeding a
//! [`BatchSink`](crate::sink::BatchSink) with at-least-once delivery.
//!
//! - Reads an existing stream through the durable pull consumer `consumer` (created with
//!   explicit acknowledgements when missing). Each message is acknowledged only after the sink
//!   made its points durable; a message whose points are not durable within the consumer's
//!   ack wait is delivered again (duplicates, never loss). While the sink is full the source
//!   tells the server the messages it holds are in progress.
//! - Scale-out: several sources (daemons) with the same `stream` and `consumer` pull from one
//!   durable consumer, and the server splits the messages between them.
//! - Payloads as for MQTT: IoTDB JSON, InfluxDB line protocol, or a plain value whose device
//!   and measurement come from the subject (`subject_template`). Payloads without a time take
//!   the time the stream stored the message, so a redelivered message gives the same points.
//!   Messages with nothing usable (unparseable, too large) are terminated (never delivered
//!   again), logged and counted; the usable part of a partly bad message is kept.
//! - The client reconnects on its own (to any known member of a cluster) with a capped
//!   backoff; when the consumer cannot be bound or its pulls keep failing, the source binds it
//!   again with backoff. An outage is not an error.

mod config;
mod parse;
mod source;

use std::sync::atomic::{AtomicU64, Ordering};

pub use config::{NatsConfig, PayloadKind, Secret};
pub use source::run;

/// Errors of the NATS source.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NatsError {
    /// A setting is invalid.
    #[error("nats setting `{key}`: {message}")]
    Invalid {
        /// The key, e.g. `subject_template`.
        key: String,
        /// What is wrong / what was expected.
        message: String,
    },
    /// The client could not be set up.
    #[error("nats client: {0}")]
    Client(String),
    /// The sink closed (the pipeline is shutting down).
    #[error("the sink closed")]
    SinkClosed,
}

impl NatsError {
    pub(crate) fn invalid(key: impl Into<String>, message: impl Into<String>) -> NatsError {
        NatsError::Invalid {
            key: key.into(),
            message: message.into(),
        }
    }
}

/// Counters of a NATS source (for the daemon's metrics and the tests).
#[derive(Debug, Default)]
pub struct NatsStats {
    received: AtomicU64,
    points: AtomicU64,
    acked: AtomicU64,
    terminated: AtomicU64,
    rejected_points: AtomicU64,
    pull_errors: AtomicU64,
    bind_errors: AtomicU64,
}

macro_rules! counters {
    ($($name:ident, $inc:ident: $doc:literal;)*) => {
        impl NatsStats {
            $(
                #[doc = $doc]
                pub fn $name(&self) -> u64 {
                    self.$name.load(Ordering::Relaxed)
                }
                pub(crate) fn $inc(&self, n: u64) {
                    self.$name.fetch_add(n, Ordering::Relaxed);
                }
            )*
        }
    };
}

counters! {
    received, add_received: "Messages received (redeliveries included).";
    points, add_points: "Points made durable by the sink.";
    acked, add_acked: "Messages acknowledged after their points were durable.";
    terminated, add_terminated: "Messages terminated: nothing usable in them (never redelivered).";
    rejected_points, add_rejected_points: "Points rejected by the parser or the sink.";
    pull_errors, add_pull_errors: "Pull errors (missed heartbeats, failed pull requests).";
    bind_errors, add_bind_errors: "Failed attempts to bind the stream's consumer.";
}
