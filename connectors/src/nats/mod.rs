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
//! - Counted in `tsfiled_nats_*` metrics; the status page shows `connecting`, `connected`,
//!   `consuming` or `disconnected`.

mod config;
mod parse;
mod source;

pub use config::{NatsAuth, NatsPayload, NatsSourceConfig, NatsTable};

use crate::source::{Secret, SourceContext, SourceFuture, SourceSettings};
use tsfiled_core::probe::CheckItem;

impl SourceSettings for NatsSourceConfig {
    type Table = NatsTable;

    fn to_table(&self, name: &str, secret: &dyn Fn(&str) -> String) -> NatsTable {
        self.table(name, secret)
    }

    fn check(&self, at: &str, out: &mut Vec<CheckItem>) {
        match &self.auth {
            NatsAuth::UserPassword(_, p) => Secret::check(p.as_ref(), at, "password", out),
            NatsAuth::Token(t) => Secret::check(Some(t), at, "token", out),
            NatsAuth::None => {}
        }
    }

    fn initial_state(&self) -> &'static str {
        "connecting"
    }

    fn start(&self, cx: SourceContext) -> SourceFuture {
        let run = source::run(self.clone(), cx);
        Box::pin(async move { run.await.map_err(|e| e.to_string()) })
    }
}
