//! The run loop: one poller (owns the rumqttc event loop) and one worker (parses, admits to
//! the sink, acknowledges in arrival order).
//!
//! The worker takes what the poller queued as one unit (up to `max_batch_messages`), parses
//! it into one batch and admits that to the sink ([`BatchSink::admit`]) without waiting for
//! its durability, then goes on with the next unit: the daemon's write-ahead log makes the
//! units admitted meanwhile durable with one fsync, so the rate is not one unit per fsync.
//! No task is spawned per unit or message.
//!
//! Invariants:
//! - A QoS 1/2 message is acknowledged only after the sink's durability future resolved `Ok`
//!   for the batch that carried it (or after it was dead-lettered), and acknowledgements
//!   leave in arrival order: units complete in order (a FIFO; only the front one is awaited),
//!   and every ack goes through one ordered backlog. A unit refused or failed is admitted
//!   again (re-parsed from its payloads) when it reaches the front; no new unit is taken
//!   while one waits for that.
//! - The poller never awaits the request channel: acks are queued with `try_ack` from a
//!   backlog that both tasks flush, so neither can deadlock on a full channel. On MQTT 3.1.1
//!   the poller writes the backlog into the connection itself between polls (one write for
//!   many acks); the channel then only carries the first ack of a backlog, to end a poll
//!   that waits on the socket, and nothing is written directly while an ack is in it.
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
use tokio::sync::{mpsc, Semaphore, TryAcquireError};
use tokio_util::sync::CancellationToken;

use crate::model::{Batch, TimeUnit};
use crate::sink::{BatchSink, Durable, SinkError, SinkOutcome};

use super::backoff::{seed, Backoff};
use super::client::{self, Client, Conn, Event, Incoming};
use super::config::MqttSourceConfig;
use super::dead_letter::{DeadLetters, Letter};
use super::invalid;
use super::metrics::{MessageError, MqttMetrics};
use super::parse::{LastRoute, Parsers};
use super::session::SubscriptionRecord;
use super::tls;
use crate::Error;

/// First wait before admitting a batch again after a sink I/O error (doubled per failure of
/// the same batch, up to 30 s).
const IO_RETRY: Duration = Duration::from_millis(100);

/// A connection that lasted this long resets the reconnect backoff.
const STABLE_CONNECTION: Duration = Duration::from_secs(10);

/// Acks of the current connection not yet on their way to the broker.
///
/// MQTT 5 (`direct` false): acks go into rumqttc's request channel, which sends one per
/// poll. MQTT 3.1.1 (`direct`): the poller writes the backlog into the connection itself
/// between polls, all at once ([`Conn::write_acks`]); to wake a poller that waits on the
/// socket, the first ack of a backlog goes through the channel, and nothing is written
/// directly while an ack is in the channel (acks leave in arrival order).
struct Gate {
    epoch: u64,
    backlog: VecDeque<(u8, u16)>,
    /// Acks queued into the channel in this epoch.
    queued: u64,
    /// Acks of the channel rumqttc reported sent in this epoch.
    sent: u64,
    direct: bool,
}

type SharedGate = Arc<Mutex<Gate>>;

fn lock(g: &SharedGate) -> MutexGuard<'_, Gate> {
    g.lock().unwrap_or_else(|e| e.into_inner())
}

/// Moves backlog acks into the request channel: until it is full, or (`direct`) only the
/// first one, and only when the channel holds no ack.
fn flush_backlog(gate: &mut Gate, client: &Client) {
    if gate.direct {
        if gate.queued == gate.sent {
            if let Some(&(qos, pkid)) = gate.backlog.front() {
                if client.try_ack(qos, pkid) {
                    gate.backlog.pop_front();
                    gate.queued += 1;
                }
            }
        }
        return;
    }
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
        sent: 0,
        direct: conn.direct_acks(),
    }));
    let sem = Arc::new(Semaphore::new(window));
    let in_flight = Arc::new(AtomicU64::new(0));
    // Bounded by the window: the poller sends a message only with a permit of `sem`.
    let (tx, rx) = mpsc::unbounded_channel::<Msg>();

    let ctx = UnitCtx {
        opts: opts.clone(),
        sink,
        parsers,
        dead: Mutex::new(dead),
        metrics: metrics.clone(),
        stop: stop.clone(),
    };
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
        // Where the poller writes acks itself: the backlog taken out, and the flush limit.
        let mut writing: VecDeque<(u8, u16)> = VecDeque::new();
        let flush_timeout = Duration::from_secs(opts.runtime.connect_timeout.as_secs().max(1));
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
                    if g.backlog.is_empty() && g.sent >= g.queued {
                        drop(g);
                        disconnecting = self.client.try_disconnect();
                        if !disconnecting {
                            break;
                        }
                    }
                }
            } else if pending.is_none() && !permit {
                // The window: no new read from the socket until a slot is free. A free slot
                // is taken without a wait (no waiter registered per message).
                match self.sem.try_acquire() {
                    Ok(p) => {
                        p.forget();
                        permit = true;
                    }
                    Err(TryAcquireError::Closed) => break,
                    Err(TryAcquireError::NoPermits) => tokio::select! {
                        biased;
                        _ = self.stop.cancelled() => continue,
                        p = self.sem.acquire() => match p {
                            Ok(p) => { p.forget(); permit = true; }
                            Err(_) => break,
                        },
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
            let direct = c.direct_acks();
            conn = Some(c);
            if !direct {
                let mut g = lock(&self.gate);
                flush_backlog(&mut g, &self.client);
            }
            let mut lost = None;
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
                Ok(Event::AckSent) => {
                    // Never above what was queued, so that a stray report cannot keep the
                    // two counts apart (and the acks waiting) for the rest of the connection.
                    let mut g = lock(&self.gate);
                    g.sent = (g.sent + 1).min(g.queued);
                }
                Ok(Event::DisconnectSent) => break,
                Ok(Event::Other) => {}
                Err(e) => lost = Some(e),
            }
            if lost.is_none() && direct {
                if let Some(c) = conn.as_mut().filter(|c| c.writes_acks()) {
                    {
                        let mut g = lock(&self.gate);
                        if g.queued == g.sent {
                            std::mem::swap(&mut g.backlog, &mut writing);
                        }
                    }
                    if !writing.is_empty() {
                        if let Err(e) = c.write_acks(writing.make_contiguous(), flush_timeout).await
                        {
                            lost = Some(e);
                        }
                        writing.clear();
                    }
                }
            }
            if let Some(e) = lost {
                let was_up = connected_at.take();
                {
                    // Acks of the gone connection must never reach the next one.
                    let mut g = lock(&self.gate);
                    epoch += 1;
                    g.epoch = epoch;
                    g.backlog.clear();
                    g.queued = 0;
                    g.sent = 0;
                    if let Some(c) = conn.as_mut() {
                        c.clean();
                    }
                }
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
        if connected_at.is_some() {
            self.metrics.connected(false);
        }
        // Wake a worker stuck on nothing; release the window for good.
        self.sem.close();
    }
}

struct Worker {
    opts: Arc<MqttSourceConfig>,
    ctx: UnitCtx,
    client: Client,
    gate: SharedGate,
    sem: Arc<Semaphore>,
    in_flight: Arc<AtomicU64>,
    metrics: Arc<dyn MqttMetrics>,
    stop: CancellationToken,
}

/// What the worker needs to parse, dead-letter and admit.
struct UnitCtx {
    opts: Arc<MqttSourceConfig>,
    sink: Arc<dyn BatchSink>,
    parsers: Arc<Parsers>,
    dead: Mutex<DeadLetters>,
    metrics: Arc<dyn MqttMetrics>,
    stop: CancellationToken,
}

/// What a re-admission needs of a message with records: its topic, payload and arrival time.
type Good = (String, Bytes, i64);

/// A unit of consecutive messages admitted to the sink as one batch.
struct Unit {
    /// (epoch, qos, pkid) of every message of the unit, in arrival order.
    acks: Vec<(u64, u8, u16)>,
    /// The messages that had records (for a re-admission).
    good: Vec<Good>,
    received: Instant,
    state: UnitState,
    /// The wait after the next I/O error.
    io_delay: Duration,
}

enum UnitState {
    /// Admitted: resolves once durable.
    Admitted(Durable),
    /// Refused, or failed before it was durable: admitted again (re-parsed) at this time.
    Retry(tokio::time::Instant),
    /// No records (every message dead-lettered or empty): nothing to wait for.
    Empty,
}

/// How the front unit ended.
enum UnitEnd {
    Durable(SinkOutcome),
    Closed,
    Cancelled,
}

impl Worker {
    /// Returns whether the sink closed.
    async fn run(self, mut rx: mpsc::UnboundedReceiver<Msg>) -> bool {
        let mut units: VecDeque<Unit> = VecDeque::new();
        let mut open = true;
        let mut sink_closed = false;
        let most = self.opts.runtime.max_concurrent_submits.max(1);
        let mut route = LastRoute::default();
        loop {
            if !open && units.is_empty() {
                break;
            }
            // No new batch while one waits to be admitted again (the sink is full or failing).
            let take = open
                && units.len() < most
                && !units.iter().any(|u| matches!(u.state, UnitState::Retry(_)));
            tokio::select! {
                biased;
                end = self.ctx.front(&mut units), if !units.is_empty() => {
                    let Some(unit) = units.pop_front() else { continue };
                    match end {
                        UnitEnd::Durable(outcome) => self.complete(unit, outcome),
                        UnitEnd::Closed => {
                            sink_closed = true;
                            self.stop.cancel();
                            break;
                        }
                        // Shutdown while retrying: not durable, not acknowledged.
                        UnitEnd::Cancelled => self.release(unit.acks.len() as u64),
                    }
                }
                m = rx.recv(), if take => {
                    match m {
                        Some(first) => match self.gather(first, &mut rx, &mut route) {
                            Some(unit) => units.push_back(unit),
                            None => {
                                sink_closed = true;
                                self.stop.cancel();
                                break;
                            }
                        },
                        None => open = false,
                    }
                }
            }
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
        self.release(unit.acks.len() as u64);
        let mut g = lock(&self.gate);
        let epoch = g.epoch;
        for &(e, qos, pkid) in &unit.acks {
            if e == epoch && qos > 0 {
                g.backlog.push_back((qos, pkid));
            }
        }
        flush_backlog(&mut g, &self.client);
    }

    /// Takes `first` and whatever else is queued (up to `max_batch_messages`, and a quarter of
    /// the window) as one unit,
    /// parses it into one batch (dead-lettering what cannot be used) and admits that to the
    /// sink without waiting for its durability. `None`: the sink is closed.
    fn gather(
        &self,
        first: Msg,
        rx: &mut mpsc::UnboundedReceiver<Msg>,
        route: &mut LastRoute,
    ) -> Option<Unit> {
        let received = first.received;
        let mut acks = Vec::new();
        let mut good = Vec::new();
        let mut batch = Batch::default();
        let most = self
            .opts
            .runtime
            .max_batch_messages
            .min(usize::from(self.opts.max_inflight) / 4)
            .max(1);
        // Room for a record per message queued (the usual message carries one): the unit's
        // batch does not grow record by record.
        batch.records.reserve(most.min(rx.len() + 1));
        let mut next = Some(first);
        while let Some(m) = next {
            acks.push((m.epoch, m.incoming.qos, m.incoming.pkid));
            if let Some(g) = self.ctx.parse_one(m, &mut batch, route) {
                good.push(g);
            }
            next = if acks.len() < most {
                rx.try_recv().ok()
            } else {
                None
            };
        }
        let mut unit = Unit {
            acks,
            good,
            received,
            state: UnitState::Empty,
            io_delay: IO_RETRY,
        };
        if !batch.records.is_empty() {
            unit.state = self.ctx.admit(batch, received, &mut unit.io_delay)?;
        }
        Some(unit)
    }
}

impl UnitCtx {
    /// Admits `batch`: the state of its unit, or `None` when the sink is closed.
    fn admit(&self, batch: Batch, received: Instant, io: &mut Duration) -> Option<UnitState> {
        let wait = match self.sink.clone().admit(batch, received) {
            Ok(durable) => return Some(UnitState::Admitted(durable)),
            Err(e) => self.retry_delay(e, io)?,
        };
        Some(UnitState::Retry(tokio::time::Instant::now() + wait))
    }

    /// How long to wait before admitting again after `e` (`None`: the sink is closed); `io` is
    /// the batch's I/O backoff.
    fn retry_delay(&self, e: SinkError, io: &mut Duration) -> Option<Duration> {
        match e {
            SinkError::Closed => None,
            SinkError::Full {
                reason,
                retry_after,
            } => {
                self.metrics.backpressure();
                tracing::debug!("sink full ({reason}); retrying in {retry_after:?}");
                Some(retry_after.clamp(Duration::from_millis(1), Duration::from_secs(30)))
            }
            SinkError::Io(e) => {
                let d = *io;
                *io = (d * 2).min(Duration::from_secs(30));
                tracing::error!("sink error: {e}; retrying in {d:?}");
                Some(d)
            }
        }
    }

    /// Waits until the first unit is durable, admitting it again (re-parsed) as often as it is
    /// refused or fails; cancel-safe (the state changes only between awaits).
    async fn front(&self, units: &mut VecDeque<Unit>) -> UnitEnd {
        let Some(u) = units.front_mut() else {
            return UnitEnd::Cancelled;
        };
        loop {
            match &mut u.state {
                UnitState::Empty => return UnitEnd::Durable(SinkOutcome::default()),
                UnitState::Admitted(durable) => {
                    let wait = match durable.await {
                        Ok(outcome) => return UnitEnd::Durable(outcome),
                        Err(e) => match self.retry_delay(e, &mut u.io_delay) {
                            Some(d) => d,
                            None => return UnitEnd::Closed,
                        },
                    };
                    u.state = UnitState::Retry(tokio::time::Instant::now() + wait);
                }
                UnitState::Retry(at) => {
                    let at = *at;
                    tokio::select! {
                        _ = self.stop.cancelled() => return UnitEnd::Cancelled,
                        _ = tokio::time::sleep_until(at) => {}
                    }
                    let batch = reparse(&u.good, &self.parsers);
                    if batch.records.is_empty() {
                        u.state = UnitState::Empty;
                        continue;
                    }
                    match self.admit(batch, u.received, &mut u.io_delay) {
                        Some(state) => u.state = state,
                        None => return UnitEnd::Closed,
                    }
                }
            }
        }
    }

    /// Parses one message into `batch`; returns what a re-parse needs when it had records.
    fn parse_one(&self, m: Msg, batch: &mut Batch, route: &mut LastRoute) -> Option<Good> {
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
        let Some(parser) = self.parsers.route_again(&topic, route) else {
            self.bad(
                &topic,
                qos,
                MessageError::Topic,
                "topic matches no configured filter",
                &payload,
            );
            return None;
        };
        // The message's records go straight into the unit's batch.
        let before = batch.records.len();
        let rejections = parser.parse_into(&topic, &payload, m.now, &mut batch.records);
        let has_records = batch.records.len() > before;
        if let Some(first) = rejections.first() {
            let reason = first.reason;
            let mut text = String::new();
            for (i, r) in rejections.iter().take(20).enumerate() {
                if i > 0 {
                    text.push_str("; ");
                }
                text.push_str(&r.to_string());
            }
            if rejections.len() > 20 {
                text.push_str(&format!("; … {} more", rejections.len() - 20));
            }
            let points: u64 = rejections.iter().map(|r| r.points).sum();
            self.metrics
                .message_error(MessageError::Rejected(reason), points.max(1));
            self.dead_letter(&topic, qos, reason.label(), &text, has_records, &payload);
        }
        has_records.then_some((topic, payload, m.now))
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

/// Rebuilds a batch from the raw payloads (parsing is pure; rejections were already
/// dead-lettered the first time).
fn reparse(good: &[Good], parsers: &Parsers) -> Batch {
    let mut batch = Batch::default();
    for (topic, payload, now) in good {
        if let Some(p) = parsers.route(topic) {
            p.parse_into(topic, payload, *now, &mut batch.records);
        }
    }
    batch
}
