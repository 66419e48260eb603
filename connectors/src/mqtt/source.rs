//! The run loop: one poller (owns the rumqttc event loop) and one worker (parses, submits to
//! the sink, acknowledges in arrival order).
//!
//! Invariants:
//! - A QoS 1/2 message is acknowledged only after the sink returned `Ok` for the batch that
//!   carried it (or after it was dead-lettered), and acknowledgements leave in arrival order:
//!   units of messages complete in order (a FIFO of submissions), and every ack goes through
//!   one ordered backlog.
//! - The poller never awaits the request channel: acks are queued with `try_ack` from a
//!   backlog that both tasks flush, so neither can deadlock on a full channel.
//! - At most `in_flight` messages are between arrival and durability: the poller takes a
//!   window permit before each poll and stops polling (so stops reading the socket) while the
//!   window is full, e.g. while the sink answers "full".
//! - Every connection has an epoch. When it drops, pending acks of the old epoch are
//!   discarded (the broker redelivers those messages; duplicates, never loss), and rumqttc's
//!   request channel is purged of PUBACKs under the same lock.
//! - `EventLoop::poll` is never cancelled mid-flight except when the source finally exits: it
//!   runs as an owned future that survives the other `select!` branches.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::model::{Batch, TimeUnit};
use crate::sink::{BatchSink, SinkError, SinkOutcome};

use super::backoff::{seed, Backoff};
use super::client::{self, Client, Conn, Event, Incoming};
use super::config::MqttSourceConfig;
use super::dead_letter::{DeadLetters, Letter};
use super::invalid;
use super::metrics::{MessageError, MqttMetrics};
use super::parse::Parsers;
use super::session::SubscriptionRecord;
use super::tls;
use crate::Error;

/// A connection that lasted this long resets the reconnect backoff.
const STABLE_CONNECTION: Duration = Duration::from_secs(10);

/// Acks waiting to be queued into rumqttc's request channel, for the current connection.
struct Gate {
    epoch: u64,
    backlog: VecDeque<(u8, u16)>,
    /// Acks queued into the channel in this epoch.
    queued: u64,
}

type SharedGate = Arc<Mutex<Gate>>;

fn lock(g: &SharedGate) -> MutexGuard<'_, Gate> {
    g.lock().unwrap_or_else(|e| e.into_inner())
}

/// Moves backlog acks into the request channel until it is full.
fn flush_backlog(gate: &mut Gate, client: &Client) {
    while let Some(&(qos, pkid)) = gate.backlog.front() {
        if !client.try_ack(qos, pkid) {
            break;
        }
        gate.backlog.pop_front();
        gate.queued += 1;
    }
}

/// A received message on its way to the worker.
struct Msg {
    incoming: Incoming,
    epoch: u64,
    received: Instant,
    now: i64,
}

/// What a submission task returns.
enum UnitEnd {
    Durable(SinkOutcome),
    Closed,
    Cancelled,
}

/// A unit of consecutive messages submitted as one batch.
struct Unit {
    task: JoinHandle<UnitEnd>,
    /// (epoch, qos, pkid) of every message of the unit, in arrival order.
    acks: Vec<(u64, u8, u16)>,
    messages: u64,
}

fn unix_now(unit: TimeUnit) -> i64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0);
    TimeUnit::Nanos.convert(nanos, unit).unwrap_or(0)
}

/// Runs one MQTT source until `shutdown` is cancelled (or the sink closes).
///
/// Reads the password and TLS files, opens the dead-letter file, then
/// connects and keeps reconnecting (exponential backoff with jitter, capped at
/// `reconnect_max_backoff`) for as long as it runs; a broker outage is not an error. Each
/// QoS 1/2 message is acknowledged only after the sink made its points durable, in arrival
/// order; messages that cannot be parsed are dead-lettered and acknowledged.
///
/// On shutdown it stops reading, lets submissions in progress finish and sends their
/// acknowledgements (up to `drain_timeout`), then disconnects. Returns
/// [`Error::SinkClosed`] if the sink closed first, or a setup error.
pub async fn run(
    opts: MqttSourceConfig,
    sink: Arc<dyn BatchSink>,
    shutdown: CancellationToken,
    metrics: Arc<dyn MqttMetrics>,
) -> Result<(), Error> {
    let ep = opts.broker.clone();
    let password = opts
        .login
        .password
        .as_ref()
        .map(|p| p.resolve())
        .transpose()
        .map_err(|e| invalid("password_file", e.to_string()))?;
    let tls = if ep.tls {
        Some(tls::client_config(opts.tls.as_ref())?)
    } else {
        None
    };
    let parsers = Arc::new(Parsers::build(&opts)?);
    let dead = DeadLetters::open(
        &opts.runtime.name,
        opts.dead_letter_file.as_deref(),
        opts.max_payload_bytes(),
    )?;
    let client_id = match &opts.client_id {
        Some(id) => id.clone(),
        // Only reachable with QoS 0 and a clean session (validated).
        None => format!("tsfiled-{}-{:08x}", std::process::id(), seed() as u32),
    };
    let window = usize::from(opts.max_inflight.max(1));
    let cap = window + opts.topics.len() + 16;
    let (client, conn) = client::build(&opts, &ep, &client_id, password, tls, cap);
    let opts = Arc::new(opts);

    let stop = shutdown.child_token();
    let worker_done = CancellationToken::new();
    let gate: SharedGate = Arc::new(Mutex::new(Gate {
        epoch: 0,
        backlog: VecDeque::new(),
        queued: 0,
    }));
    let sem = Arc::new(Semaphore::new(window));
    let in_flight = Arc::new(AtomicU64::new(0));
    let (tx, rx) = mpsc::unbounded_channel::<Msg>();

    let ctx = Arc::new(UnitCtx {
        opts: opts.clone(),
        sink,
        parsers,
        dead: Mutex::new(dead),
        metrics: metrics.clone(),
        stop: stop.clone(),
    });
    let worker = Worker {
        opts: opts.clone(),
        ctx,
        client: client.clone(),
        gate: gate.clone(),
        sem: sem.clone(),
        in_flight: in_flight.clone(),
        metrics: metrics.clone(),
        stop: stop.clone(),
    };
    let worker_task = tokio::spawn({
        let done = worker_done.clone();
        async move {
            let r = worker.run(rx).await;
            done.cancel();
            r
        }
    });

    let poller = Poller {
        opts,
        client,
        gate,
        sem,
        in_flight,
        metrics,
        stop: stop.clone(),
        worker_done,
    };
    poller.run(conn, tx).await;
    stop.cancel();
    let mut worker_task = worker_task;
    let sink_closed = match tokio::time::timeout(Duration::from_millis(200), &mut worker_task).await
    {
        Ok(r) => r.unwrap_or(false),
        Err(_) => {
            // Still waiting on the sink after the drain deadline: nothing more will be
            // acknowledged; the broker redelivers.
            worker_task.abort();
            false
        }
    };
    if sink_closed {
        Err(Error::SinkClosed)
    } else {
        Ok(())
    }
}

type PollFuture = Pin<Box<dyn Future<Output = (Conn, Result<Event, String>)> + Send>>;

fn start_poll(mut conn: Conn) -> PollFuture {
    Box::pin(async move {
        let r = conn.poll().await;
        (conn, r)
    })
}

struct Poller {
    opts: Arc<MqttSourceConfig>,
    client: Client,
    gate: SharedGate,
    sem: Arc<Semaphore>,
    in_flight: Arc<AtomicU64>,
    metrics: Arc<dyn MqttMetrics>,
    stop: CancellationToken,
    worker_done: CancellationToken,
}

impl Poller {
    async fn run(self, conn: Conn, tx: mpsc::UnboundedSender<Msg>) {
        let opts = &self.opts;
        let subs = opts.subscriptions();
        let record = opts.runtime.subscription_record.as_deref().map(|p| {
            SubscriptionRecord::new(
                opts.runtime.fs.clone(),
                p,
                &opts.url,
                opts.client_id.as_deref().unwrap_or_default(),
            )
        });
        let current: Vec<String> = subs.iter().map(|(f, _)| f.clone()).collect();
        // Filters an earlier configuration left subscribed in the session.
        let mut stale = record
            .as_ref()
            .map(|r| r.stale(&current))
            .unwrap_or_default();
        let mut unsubacks_due = 0usize;
        let mut recorded = false;
        let save_record = |recorded: &mut bool| {
            if let Some(r) = &record {
                match r.save(&current) {
                    Ok(()) => *recorded = true,
                    Err(e) => {
                        tracing::warn!(source = %opts.runtime.name, error = %e, "cannot record the subscriptions")
                    }
                }
            }
        };
        let mut tx = Some(tx);
        let mut conn = Some(conn);
        let mut pending: Option<PollFuture> = None;
        let mut permit = false;
        let mut subscribed_once = false;
        let mut ever_connected = false;
        let mut connected_at: Option<Instant> = None;
        let mut backoff = Backoff::new(
            opts.runtime.reconnect_initial_backoff,
            opts.reconnect_max_backoff,
            seed(),
        );
        let mut epoch = 0u64;
        let mut acks_sent = 0u64;
        let mut drain_deadline: Option<tokio::time::Instant> = None;
        let mut disconnecting = false;
        let mut worker_seen_done = false;

        loop {
            if drain_deadline.is_none() && self.stop.is_cancelled() {
                // Stop forwarding; the worker finishes what it has and ends.
                tx = None;
                drain_deadline = Some(tokio::time::Instant::now() + opts.runtime.drain_timeout);
            }
            if let Some(deadline) = drain_deadline {
                if connected_at.is_none() || tokio::time::Instant::now() >= deadline {
                    break;
                }
                if self.worker_done.is_cancelled() && !disconnecting {
                    let g = lock(&self.gate);
                    if g.backlog.is_empty() && acks_sent >= g.queued {
                        drop(g);
                        disconnecting = self.client.try_disconnect();
                        if !disconnecting {
                            break;
                        }
                    }
                }
            } else if pending.is_none() && !permit {
                // The window: no new read from the socket until a slot is free.
                tokio::select! {
                    biased;
                    _ = self.stop.cancelled() => continue,
                    p = self.sem.acquire() => match p {
                        Ok(p) => { p.forget(); permit = true; }
                        Err(_) => break,
                    },
                }
            }

            if pending.is_none() {
                let Some(c) = conn.take() else { break };
                pending = Some(start_poll(c));
            }
            let Some(fut) = pending.as_mut() else { break };
            let (c, result) = tokio::select! {
                biased;
                out = fut => out,
                _ = self.stop.cancelled(), if drain_deadline.is_none() => continue,
                _ = self.worker_done.cancelled(), if drain_deadline.is_some() && !worker_seen_done => {
                    // Re-check the drain condition once; then only events wake us.
                    worker_seen_done = true;
                    continue;
                }
                _ = tokio::time::sleep_until(drain_deadline.unwrap_or_else(tokio::time::Instant::now)),
                    if drain_deadline.is_some() => break,
            };
            pending = None;
            conn = Some(c);
            {
                let mut g = lock(&self.gate);
                flush_backlog(&mut g, &self.client);
            }
            match result {
                Ok(Event::ConnAck { session_present }) => {
                    tracing::info!(
                        source = %opts.runtime.name,
                        session_present,
                        "connected to {}", opts.url
                    );
                    if ever_connected {
                        self.metrics.reconnect();
                    }
                    ever_connected = true;
                    connected_at = Some(Instant::now());
                    self.metrics.connected(true);
                    if !session_present || !subscribed_once {
                        if let Err(e) = self.client.try_subscribe(&subs) {
                            tracing::error!(source = %opts.runtime.name, "cannot queue SUBSCRIBE: {e}");
                        }
                        subscribed_once = true;
                    }
                    if !session_present {
                        // A fresh session holds no earlier subscription.
                        stale.clear();
                    } else if !stale.is_empty() {
                        tracing::info!(source = %opts.runtime.name, filters = ?stale, "unsubscribing filters no longer configured");
                        match self.client.try_unsubscribe(&stale) {
                            Ok(()) => unsubacks_due = stale.len(),
                            Err(e) => {
                                tracing::error!(source = %opts.runtime.name, "cannot queue UNSUBSCRIBE: {e}")
                            }
                        }
                    }
                }
                Ok(Event::Publish(incoming)) => {
                    self.metrics.received(incoming.payload.len() as u64);
                    match &tx {
                        Some(tx) if permit => {
                            permit = false;
                            let n = self.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
                            self.metrics.in_flight(n);
                            let msg = Msg {
                                incoming,
                                epoch,
                                received: Instant::now(),
                                now: unix_now(opts.runtime.stored_unit),
                            };
                            if tx.send(msg).is_err() {
                                // The worker is gone (sink closed): stop.
                                self.stop.cancel();
                            }
                        }
                        // Draining: not forwarded, not acknowledged; the broker keeps it.
                        _ => {}
                    }
                }
                Ok(Event::SubAck { refused }) => {
                    if refused > 0 {
                        tracing::error!(
                            source = %opts.runtime.name,
                            "the broker refused {refused} of {} subscriptions",
                            subs.len()
                        );
                        self.metrics
                            .message_error(MessageError::SubscribeFailed, refused as u64);
                    } else {
                        tracing::debug!(source = %opts.runtime.name, "subscribed");
                        self.metrics.subscribed();
                        if stale.is_empty() && !recorded {
                            save_record(&mut recorded);
                        }
                    }
                }
                Ok(Event::UnsubAck) => {
                    unsubacks_due = unsubacks_due.saturating_sub(1);
                    if unsubacks_due == 0 && !stale.is_empty() {
                        tracing::info!(source = %opts.runtime.name, filters = ?stale, "unsubscribed");
                        stale.clear();
                        save_record(&mut recorded);
                    }
                }
                Ok(Event::AckSent) => acks_sent += 1,
                Ok(Event::DisconnectSent) => break,
                Ok(Event::Other) => {}
                Err(e) => {
                    let was_up = connected_at.take();
                    {
                        // Acks of the gone connection must never reach the next one.
                        let mut g = lock(&self.gate);
                        epoch += 1;
                        g.epoch = epoch;
                        g.backlog.clear();
                        g.queued = 0;
                        if let Some(c) = conn.as_mut() {
                            c.clean();
                        }
                    }
                    acks_sent = 0;
                    self.metrics.connection_error();
                    if let Some(t) = was_up {
                        self.metrics.connected(false);
                        if t.elapsed() >= STABLE_CONNECTION {
                            backoff.reset();
                        }
                        tracing::warn!(source = %opts.runtime.name, "connection lost: {e}");
                    } else {
                        tracing::warn!(source = %opts.runtime.name, "cannot connect to {}: {e}", opts.url);
                    }
                    if drain_deadline.is_some() || disconnecting {
                        break;
                    }
                    let delay = backoff.next_delay();
                    tokio::select! {
                        _ = self.stop.cancelled() => {}
                        _ = tokio::time::sleep(delay) => {}
                    }
                }
            }
        }
        if connected_at.is_some() {
            self.metrics.connected(false);
        }
        // Wake a worker stuck on nothing; release the window for good.
        self.sem.close();
    }
}

struct Worker {
    opts: Arc<MqttSourceConfig>,
    ctx: Arc<UnitCtx>,
    client: Client,
    gate: SharedGate,
    sem: Arc<Semaphore>,
    in_flight: Arc<AtomicU64>,
    metrics: Arc<dyn MqttMetrics>,
    stop: CancellationToken,
}

/// What a unit's task needs: parsing, dead-lettering and the sink.
struct UnitCtx {
    opts: Arc<MqttSourceConfig>,
    sink: Arc<dyn BatchSink>,
    parsers: Arc<Parsers>,
    dead: Mutex<DeadLetters>,
    metrics: Arc<dyn MqttMetrics>,
    stop: CancellationToken,
}

/// Awaits the first unit's task (cancel-safe: `&mut JoinHandle`).
async fn front(units: &mut VecDeque<Unit>) -> Option<UnitEnd> {
    let u = units.front_mut()?;
    Some((&mut u.task).await.unwrap_or(UnitEnd::Cancelled))
}

impl Worker {
    /// Returns whether the sink closed.
    async fn run(self, mut rx: mpsc::UnboundedReceiver<Msg>) -> bool {
        let mut units: VecDeque<Unit> = VecDeque::new();
        let mut open = true;
        let mut sink_closed = false;
        loop {
            if !open && units.is_empty() {
                break;
            }
            tokio::select! {
                biased;
                end = front(&mut units), if !units.is_empty() => {
                    let Some(unit) = units.pop_front() else { continue };
                    match end {
                        Some(UnitEnd::Durable(outcome)) => self.complete(unit, outcome),
                        Some(UnitEnd::Closed) => {
                            sink_closed = true;
                            self.stop.cancel();
                            break;
                        }
                        // Shutdown while retrying: not durable, not acknowledged.
                        Some(UnitEnd::Cancelled) | None => self.release(unit.messages),
                    }
                }
                m = rx.recv(), if open && units.len() < self.opts.runtime.max_concurrent_submits => {
                    match m {
                        Some(first) => units.push_back(self.gather(first, &mut rx)),
                        None => open = false,
                    }
                }
            }
        }
        for u in units {
            u.task.abort();
        }
        sink_closed
    }

    fn release(&self, messages: u64) {
        let n = self
            .in_flight
            .fetch_sub(messages, Ordering::Relaxed)
            .saturating_sub(messages);
        self.metrics.in_flight(n);
        self.sem.add_permits(messages as usize);
    }

    /// The unit is durable: free its window slots, then acknowledge in order.
    fn complete(&self, unit: Unit, outcome: SinkOutcome) {
        self.metrics.points_durable(outcome.accepted);
        for r in &outcome.rejections {
            self.metrics
                .message_error(MessageError::SinkRejected(r.reason), r.points);
        }
        self.release(unit.messages);
        let mut g = lock(&self.gate);
        let epoch = g.epoch;
        for &(e, qos, pkid) in &unit.acks {
            if e == epoch && qos > 0 {
                g.backlog.push_back((qos, pkid));
            }
        }
        flush_backlog(&mut g, &self.client);
    }

    /// Takes `first` and whatever else is queued (up to `max_batch_messages`) as one unit,
    /// and starts its task (parse, dead-letter, submit) so that units parse in parallel.
    fn gather(&self, first: Msg, rx: &mut mpsc::UnboundedReceiver<Msg>) -> Unit {
        let mut msgs = vec![first];
        while msgs.len() < self.opts.runtime.max_batch_messages {
            match rx.try_recv() {
                Ok(m) => msgs.push(m),
                Err(_) => break,
            }
        }
        let acks = msgs
            .iter()
            .map(|m| (m.epoch, m.incoming.qos, m.incoming.pkid))
            .collect();
        let messages = msgs.len() as u64;
        let task = tokio::spawn(process(self.ctx.clone(), msgs));
        Unit {
            task,
            acks,
            messages,
        }
    }
}

/// A unit's task: parse every message into one batch, dead-letter what cannot be used,
/// submit the rest.
async fn process(ctx: Arc<UnitCtx>, msgs: Vec<Msg>) -> UnitEnd {
    let mut batch = Batch::default();
    let mut good: Vec<(String, Bytes, i64)> = Vec::new();
    let received = msgs
        .first()
        .map(|m| m.received)
        .unwrap_or_else(Instant::now);
    for m in msgs {
        if let Some(g) = ctx.parse_one(m, &mut batch) {
            good.push(g);
        }
    }
    submit(&ctx, batch, received, good).await
}

impl UnitCtx {
    /// Parses one message into `batch`; returns what a re-parse needs when it had records.
    fn parse_one(&self, m: Msg, batch: &mut Batch) -> Option<(String, Bytes, i64)> {
        let qos = m.incoming.qos;
        let payload = m.incoming.payload;
        let topic = match m.incoming.topic {
            Ok(t) => t,
            Err(raw) => {
                let shown = String::from_utf8_lossy(&raw).into_owned();
                self.bad(
                    &shown,
                    qos,
                    MessageError::Topic,
                    "topic is not UTF-8",
                    &payload,
                );
                return None;
            }
        };
        if payload.len() > self.opts.max_payload_bytes() {
            let msg = format!(
                "payload of {} bytes exceeds max_payload_bytes = {}",
                payload.len(),
                self.opts.max_payload_bytes()
            );
            self.bad(&topic, qos, MessageError::TooLarge, &msg, &payload);
            return None;
        }
        let Some(parser) = self.parsers.route(&topic) else {
            self.bad(
                &topic,
                qos,
                MessageError::Topic,
                "topic matches no configured filter",
                &payload,
            );
            return None;
        };
        let mut parsed = parser.parse(&topic, &payload, m.now);
        let has_records = !parsed.records.is_empty();
        if let Some(first) = parsed.rejections.first() {
            let reason = first.reason;
            let mut text = String::new();
            for (i, r) in parsed.rejections.iter().take(20).enumerate() {
                if i > 0 {
                    text.push_str("; ");
                }
                text.push_str(&r.to_string());
            }
            if parsed.rejections.len() > 20 {
                text.push_str(&format!("; … {} more", parsed.rejections.len() - 20));
            }
            self.metrics.message_error(
                MessageError::Rejected(reason),
                parsed.rejected_points().max(1),
            );
            self.dead_letter(&topic, qos, reason.label(), &text, has_records, &payload);
        }
        if !has_records {
            return None;
        }
        if batch.records.is_empty() {
            batch.records = std::mem::take(&mut parsed.records);
        } else {
            batch.records.append(&mut parsed.records);
        }
        Some((topic, payload, m.now))
    }

    fn bad(&self, topic: &str, qos: u8, reason: MessageError, error: &str, payload: &[u8]) {
        self.metrics.message_error(reason, 1);
        self.dead_letter(topic, qos, reason.label(), error, false, payload);
    }

    fn dead_letter(
        &self,
        topic: &str,
        qos: u8,
        reason: &'static str,
        error: &str,
        partial: bool,
        payload: &[u8],
    ) {
        self.metrics.dead_lettered();
        self.dead
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .write(&Letter {
                topic,
                qos,
                reason,
                error,
                partial,
                payload,
            });
    }
}

/// Submits one batch, retrying on "full" and I/O errors until it is durable, the sink
/// closes, or the source stops.
async fn submit(
    ctx: &UnitCtx,
    batch: Batch,
    received: Instant,
    good: Vec<(String, Bytes, i64)>,
) -> UnitEnd {
    if batch.records.is_empty() {
        return UnitEnd::Durable(SinkOutcome::default());
    }
    let mut batch = Some(batch);
    let mut io_delay = Duration::from_millis(100);
    loop {
        let b = match batch.take() {
            Some(b) => b,
            None => reparse(&good, &ctx.parsers),
        };
        let wait = match ctx.sink.submit(b, received).await {
            Ok(outcome) => return UnitEnd::Durable(outcome),
            Err(SinkError::Closed) => return UnitEnd::Closed,
            Err(SinkError::Full {
                reason,
                retry_after,
            }) => {
                ctx.metrics.backpressure();
                tracing::debug!("sink full ({reason}); retrying in {retry_after:?}");
                retry_after.clamp(Duration::from_millis(1), Duration::from_secs(30))
            }
            Err(SinkError::Io(e)) => {
                tracing::error!("sink error: {e}; retrying in {io_delay:?}");
                let d = io_delay;
                io_delay = (io_delay * 2).min(Duration::from_secs(30));
                d
            }
        };
        tokio::select! {
            _ = ctx.stop.cancelled() => return UnitEnd::Cancelled,
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

/// Rebuilds a batch from the raw payloads (parsing is pure; rejections were already
/// dead-lettered the first time).
fn reparse(good: &[(String, Bytes, i64)], parsers: &Parsers) -> Batch {
    let mut batch = Batch::default();
    for (topic, payload, now) in good {
        if let Some(p) = parsers.route(topic) {
            let mut b = p.parse(topic, payload, *now);
            batch.records.append(&mut b.records);
        }
    }
    batch
}
