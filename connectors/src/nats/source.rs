//! The run loop: bind the durable consumer, pull batches, submit each to the sink on its own
//! task, acknowledge its messages once durable.
//!
//! Invariants:
//! - A message is acknowledged only after the sink returned `Ok` for the batch that carried
//!   it, or terminated when nothing in it is usable. Anything else stays unacknowledged and
//!   the server delivers it again after the ack wait.
//! - At most `max_concurrent_submits` batches of at most `batch` messages are between arrival
//!   and durability; no pull is read while that window is full.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_nats::jetstream::consumer::pull::{self, MessagesErrorKind};
use async_nats::jetstream::consumer::{AckPolicy, DeliverPolicy, PullConsumer};
use async_nats::jetstream::{self, AckKind, Message};
use async_nats::ConnectOptions;
use futures_util::{FutureExt, StreamExt};
use tokio::task::JoinSet;
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;

use crate::model::{Batch, TimeUnit};
use crate::sink::{BatchSink, SinkError};
use crate::source::{Counter, SourceContext, SourceMetrics, StatusReporter};
use crate::Error;

use super::config::{NatsAuth, NatsSourceConfig};
use super::parse::Parser;

/// Lifetime of one pull request.
const PULL_EXPIRES: Duration = Duration::from_secs(10);
/// Idle heartbeat the server sends on a pending pull request; two missed ones mean the pull
/// is lost (e.g. its server died) and it is made again.
const PULL_HEARTBEAT: Duration = Duration::from_secs(2);
/// Pull errors in a row after which the consumer is bound again.
const MAX_PULL_ERRORS: u32 = 5;

/// What a batch's task ended with.
enum UnitEnd {
    Durable,
    Closed,
    Cancelled,
}

/// The source's counters (pre-labelled with pipeline and source).
struct Telemetry {
    messages: Counter,
    acked: Counter,
    terminated: Counter,
    rejected_points: Counter,
    pull_errors: Counter,
    bind_errors: Counter,
    handle: Arc<dyn SourceMetrics>,
}

impl Telemetry {
    fn new(m: &Arc<dyn SourceMetrics>) -> Telemetry {
        Telemetry {
            messages: m.counter(
                "tsfiled_nats_messages_total",
                "NATS messages received (redeliveries included).",
                None,
            ),
            acked: m.counter(
                "tsfiled_nats_acked_total",
                "NATS messages acknowledged after their points were durable.",
                None,
            ),
            terminated: m.counter(
                "tsfiled_nats_terminated_total",
                "NATS messages terminated (never redelivered): nothing usable in them.",
                None,
            ),
            rejected_points: m.counter(
                "tsfiled_nats_rejected_points_total",
                "Points of NATS messages rejected by the parser or the pipeline.",
                None,
            ),
            pull_errors: m.counter(
                "tsfiled_nats_pull_errors_total",
                "NATS pull errors (missed heartbeats, failed pull requests).",
                None,
            ),
            bind_errors: m.counter(
                "tsfiled_nats_bind_errors_total",
                "Failed attempts to bind the NATS stream's durable consumer.",
                None,
            ),
            handle: m.clone(),
        }
    }
}

/// What a batch's task needs.
struct Ctx {
    name: String,
    parser: Parser,
    sink: Arc<dyn BatchSink>,
    t: Telemetry,
    /// Messages terminated so far (the first few are logged at warn).
    terminated: AtomicU64,
    stop: CancellationToken,
    stored_unit: TimeUnit,
    max_payload: usize,
    ack_wait: Duration,
}

fn delay(attempt: usize, initial: Duration, max: Duration) -> Duration {
    let shift = attempt.saturating_sub(1).min(20) as u32;
    initial.saturating_mul(1 << shift).min(max)
}

/// Runs one NATS JetStream source until `cx.shutdown` is cancelled (or the sink closes).
///
/// Connects (in the background: a server outage is not an error) and consumes the stream
/// through the durable consumer. Each message is acknowledged once the sink made its points
/// durable. On shutdown it stops pulling, lets submissions in progress finish and acknowledges
/// them (up to `drain_timeout`). Returns [`Error::SinkClosed`] if the sink closed first, or a
/// setup error. The status is `connecting`, `connected` (to a server), `consuming` (the
/// consumer bound, messages arriving) or `disconnected`.
pub(super) async fn run(config: NatsSourceConfig, cx: SourceContext) -> Result<(), Error> {
    let parser = Parser::build(&config, cx.stored_unit)?;
    let (initial, max) = (
        config.reconnect_initial_backoff,
        config.reconnect_max_backoff,
    );
    let label = format!("{}/{}", cx.pipeline, cx.name);
    let source = label.clone();
    let status: StatusReporter = cx.status.clone();
    let events_status = status.clone();
    let mut opts = ConnectOptions::new()
        .name(format!("tsfiled {label}"))
        .connection_timeout(config.connect_timeout)
        .retry_on_initial_connect()
        .max_reconnects(None)
        .reconnect_delay_callback(move |attempts| delay(attempts, initial, max))
        .event_callback(move |event| {
            let source = source.clone();
            let status = events_status.clone();
            async move {
                match event {
                    async_nats::Event::Connected => {
                        // Messages may already flow again (the event comes late).
                        if status.get() != "consuming" {
                            status.set("connected");
                        }
                        tracing::info!(%source, "nats: connected")
                    }
                    async_nats::Event::Disconnected => {
                        status.set("disconnected");
                        tracing::warn!(%source, "nats: disconnected")
                    }
                    e => tracing::warn!(%source, "nats: {e}"),
                }
            }
        });
    match &config.auth {
        NatsAuth::UserPassword(user, password) => {
            let password = match password {
                Some(p) => p.resolve()?,
                None => String::new(),
            };
            opts = opts.user_and_password(user.clone(), password)
        }
        NatsAuth::Token(token) => opts = opts.token(token.resolve()?),
        NatsAuth::None => {}
    }
    let client = opts
        .connect(config.servers.clone())
        .await
        .map_err(|e| Error::Client {
            client: "nats client",
            message: e.to_string(),
        })?;
    let js = jetstream::new(client.clone());

    let stop = cx.shutdown.child_token();
    let ctx = Arc::new(Ctx {
        name: label.clone(),
        parser,
        sink: cx.sink.clone(),
        t: Telemetry::new(&cx.metrics),
        terminated: AtomicU64::new(0),
        stop: stop.clone(),
        stored_unit: cx.stored_unit,
        max_payload: config.max_payload_size.as_usize(),
        ack_wait: config.ack_wait,
    });
    let mut tasks: JoinSet<UnitEnd> = JoinSet::new();
    let mut sink_closed = false;
    let mut failures = 0usize;
    let mut logged = false;
    'bind: while !stop.is_cancelled() {
        if failures > 0 {
            let wait = delay(failures, initial, max);
            tokio::select! {
                _ = stop.cancelled() => break 'bind,
                _ = tokio::time::sleep(wait) => {}
            }
        }
        let bound = tokio::select! {
            _ = stop.cancelled() => break 'bind,
            b = bind(&js, &config) => b,
        };
        let mut messages = match bound {
            Ok(m) => m,
            Err(e) => {
                failures += 1;
                (ctx.t.bind_errors)(1);
                if !logged {
                    tracing::warn!(source = %label, stream = %config.stream, consumer = %config.consumer,
                        "cannot bind the consumer: {e}; retrying with backoff");
                    logged = true;
                } else {
                    tracing::debug!(source = %label, "cannot bind the consumer: {e}");
                }
                continue;
            }
        };
        tracing::info!(source = %label, stream = %config.stream, consumer = %config.consumer, "consuming");
        status.set("consuming");
        let mut errors_in_row = 0u32;
        loop {
            tokio::select! {
                biased;
                _ = stop.cancelled() => break 'bind,
                Some(done) = tasks.join_next(), if !tasks.is_empty() => {
                    if let Ok(UnitEnd::Closed) = done {
                        sink_closed = true;
                        stop.cancel();
                        break 'bind;
                    }
                }
                next = messages.next(), if tasks.len() < config.max_concurrent_submits => match next {
                    Some(Ok(first)) => {
                        if status.get() != "consuming" {
                            status.set("consuming");
                        }
                        errors_in_row = 0;
                        failures = 0;
                        logged = false;
                        let mut msgs = vec![first];
                        while msgs.len() < config.batch {
                            match messages.next().now_or_never() {
                                Some(Some(Ok(m))) => msgs.push(m),
                                _ => break,
                            }
                        }
                        tasks.spawn(process(ctx.clone(), msgs));
                    }
                    Some(Err(e)) => {
                        (ctx.t.pull_errors)(1);
                        errors_in_row += 1;
                        let fatal = matches!(
                            e.kind(),
                            MessagesErrorKind::ConsumerDeleted | MessagesErrorKind::PushBasedConsumer
                        );
                        tracing::warn!(source = %label, "pull: {e}");
                        if fatal || errors_in_row >= MAX_PULL_ERRORS {
                            failures += 1;
                            continue 'bind;
                        }
                    }
                    None => {
                        failures += 1;
                        continue 'bind;
                    }
                },
            }
        }
    }
    // Submissions in progress may still become durable: acknowledge what does.
    let drain = async { while tasks.join_next().await.is_some() {} };
    if timeout(config.drain_timeout, drain).await.is_err() {
        tracing::warn!(source = %label, "submissions still in progress after drain_timeout: left unacknowledged (delivered again later)");
    }
    tasks.abort_all();
    let _ = timeout(Duration::from_secs(2), client.flush()).await;
    if sink_closed {
        Err(Error::SinkClosed)
    } else {
        Ok(())
    }
}

/// Gets the stream and its durable consumer (creating the consumer when missing), and starts
/// pulling.
async fn bind(js: &jetstream::Context, c: &NatsSourceConfig) -> Result<pull::Stream, String> {
    let stream = js.get_stream(&c.stream).await.map_err(|e| e.to_string())?;
    let want = pull::Config {
        durable_name: Some(c.consumer.clone()),
        ack_policy: AckPolicy::Explicit,
        ack_wait: c.ack_wait,
        max_ack_pending: c.max_ack_pending,
        deliver_policy: DeliverPolicy::All,
        filter_subject: c.filter_subject.clone().unwrap_or_default(),
        ..Default::default()
    };
    let consumer: PullConsumer = stream
        .get_or_create_consumer(&c.consumer, want)
        .await
        .map_err(|e| e.to_string())?;
    consumer
        .stream()
        .max_messages_per_batch(c.batch)
        .expires(PULL_EXPIRES)
        .heartbeat(PULL_HEARTBEAT)
        .messages()
        .await
        .map_err(|e| e.to_string())
}

impl Ctx {
    /// The time of payloads without one: when the stream stored the message.
    fn now(&self, m: &Message) -> i64 {
        let nanos = match m.info() {
            Ok(info) => i64::try_from(info.published.unix_timestamp_nanos()).unwrap_or(0),
            Err(_) => SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
                .unwrap_or(0),
        };
        TimeUnit::Nanos
            .convert(nanos, self.stored_unit)
            .unwrap_or(0)
    }

    async fn terminate(&self, m: &Message, why: &str) {
        (self.t.terminated)(1);
        if self.terminated.fetch_add(1, Ordering::Relaxed) < 10 {
            tracing::warn!(source = %self.name, subject = %m.subject, "message dropped: {why}");
        } else {
            tracing::debug!(source = %self.name, subject = %m.subject, "message dropped: {why}");
        }
        if let Err(e) = m.ack_with(AckKind::Term).await {
            tracing::debug!(source = %self.name, "cannot terminate a message: {e}");
        }
    }

    /// Parses the held messages again (for a retry; parsing is pure).
    fn reparse(&self, held: &[Message]) -> Batch {
        let mut batch = Batch::default();
        for m in held {
            let mut b = self
                .parser
                .parse(m.subject.as_str(), &m.payload, self.now(m));
            batch.records.append(&mut b.records);
        }
        batch
    }
}

/// A batch's task: parse, terminate what is unusable, submit, acknowledge once durable.
async fn process(ctx: Arc<Ctx>, msgs: Vec<Message>) -> UnitEnd {
    let received = Instant::now();
    (ctx.t.messages)(msgs.len() as u64);
    let mut batch = Batch::default();
    let mut held = Vec::with_capacity(msgs.len());
    for m in msgs {
        if m.payload.len() > ctx.max_payload {
            let why = format!(
                "payload of {} bytes exceeds max_payload_size = {}",
                m.payload.len(),
                ctx.max_payload
            );
            ctx.terminate(&m, &why).await;
            continue;
        }
        let mut parsed = ctx
            .parser
            .parse(m.subject.as_str(), &m.payload, ctx.now(&m));
        if let Some(first) = parsed.rejections.first() {
            (ctx.t.rejected_points)(parsed.rejected_points().max(1));
            if parsed.records.is_empty() {
                ctx.terminate(&m, &first.to_string()).await;
                continue;
            }
            tracing::debug!(source = %ctx.name, subject = %m.subject, "partly rejected: {first}");
        }
        if parsed.records.is_empty() {
            // Nothing in it (e.g. a `null` value): done with it.
            ctx.terminate(&m, "no points").await;
            continue;
        }
        batch.records.append(&mut parsed.records);
        held.push(m);
    }
    if held.is_empty() {
        return UnitEnd::Durable;
    }
    let mut batch = Some(batch);
    let mut io_delay = Duration::from_millis(100);
    let mut progress_at = Instant::now();
    loop {
        let b = batch.take().unwrap_or_else(|| ctx.reparse(&held));
        let wait = match ctx.sink.submit(b, received).await {
            Ok(outcome) => {
                ctx.t.handle.progress();
                (ctx.t.rejected_points)(outcome.rejected);
                for m in &held {
                    match m.ack().await {
                        Ok(()) => (ctx.t.acked)(1),
                        // Delivered again after the ack wait: a duplicate, not a loss.
                        Err(e) => tracing::debug!(source = %ctx.name, "cannot acknowledge: {e}"),
                    }
                }
                return UnitEnd::Durable;
            }
            Err(SinkError::Closed) => return UnitEnd::Closed,
            Err(SinkError::Full { retry_after, .. }) => {
                retry_after.clamp(Duration::from_millis(1), Duration::from_secs(30))
            }
            Err(SinkError::Io(e)) => {
                tracing::error!(source = %ctx.name, "sink error: {e}; retrying in {io_delay:?}");
                let d = io_delay;
                io_delay = (io_delay * 2).min(Duration::from_secs(30));
                d
            }
        };
        if progress_at.elapsed() >= ctx.ack_wait / 3 {
            // Keep the server from delivering them to someone else meanwhile.
            for m in &held {
                let _ = m.ack_with(AckKind::Progress).await;
            }
            progress_at = Instant::now();
        }
        tokio::select! {
            _ = ctx.stop.cancelled() => return UnitEnd::Cancelled,
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let (i, m) = (Duration::from_millis(500), Duration::from_secs(30));
        assert_eq!(delay(0, i, m), i);
        assert_eq!(delay(1, i, m), i);
        assert_eq!(delay(2, i, m), Duration::from_secs(1));
        assert_eq!(delay(7, i, m), Duration::from_secs(30));
        assert_eq!(delay(usize::MAX, i, m), Duration::from_secs(30));
    }
}
