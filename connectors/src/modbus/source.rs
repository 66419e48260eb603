//! The poll loop: one task per device, each with its own connection.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::net::TcpStream;
use tokio::task::JoinSet;
use tokio::time::{timeout, MissedTickBehavior};
use tokio_modbus::client::{tcp, Context, Reader};
use tokio_modbus::Slave;
use tokio_util::sync::CancellationToken;

use crate::model::{Batch, Record, TimeUnit};
use crate::sink::{BatchSink, SinkError};
use crate::source::{Counter, SourceContext, SourceMetrics, StatusReporter};
use crate::Error;

use super::config::{DeviceConfig, ModbusSourceConfig, RegisterKind};
use super::decode::{decode_bit, decode_words};
use super::plan::{plan, Read};

/// The source's counters (pre-labelled with pipeline and source).
struct Telemetry {
    polls: Counter,
    skipped_polls: Counter,
    connects: Counter,
    connect_errors: Counter,
    read_errors: Counter,
    exceptions: Counter,
    handle: Arc<dyn SourceMetrics>,
    status: StatusReporter,
    /// Devices whose last poll failed, and devices whose last poll was answered: the status
    /// is `degraded` while any fails, else `polling` once one answered (else `connecting`).
    failing: AtomicUsize,
    answering: AtomicUsize,
}

impl Telemetry {
    fn new(cx: &SourceContext) -> Telemetry {
        let m = cx.metrics.as_ref();
        Telemetry {
            polls: m.counter(
                "tsfiled_modbus_polls_total",
                "Modbus polls done (at least one request answered).",
                None,
            ),
            skipped_polls: m.counter(
                "tsfiled_modbus_skipped_polls_total",
                "Modbus polls skipped or unanswered because the device could not be reached.",
                None,
            ),
            connects: m.counter(
                "tsfiled_modbus_connects_total",
                "Modbus TCP connections established.",
                None,
            ),
            connect_errors: m.counter(
                "tsfiled_modbus_connect_errors_total",
                "Modbus TCP connection attempts that failed or timed out.",
                None,
            ),
            read_errors: m.counter(
                "tsfiled_modbus_read_errors_total",
                "Modbus read requests that timed out or lost the connection.",
                None,
            ),
            exceptions: m.counter(
                "tsfiled_modbus_exceptions_total",
                "Modbus read requests answered with an exception (e.g. an illegal address).",
                None,
            ),
            handle: cx.metrics.clone(),
            status: cx.status.clone(),
            failing: AtomicUsize::new(0),
            answering: AtomicUsize::new(0),
        }
    }

    /// A device's state changed from `before` (`None`: not known yet) to answering
    /// (`true`) or failing.
    fn device_state(&self, before: Option<bool>, now: bool) {
        let counter = |answering: bool| {
            if answering {
                &self.answering
            } else {
                &self.failing
            }
        };
        if let Some(b) = before {
            counter(b).fetch_sub(1, Ordering::Relaxed);
        }
        counter(now).fetch_add(1, Ordering::Relaxed);
        let state = if self.failing.load(Ordering::Relaxed) > 0 {
            "degraded"
        } else if self.answering.load(Ordering::Relaxed) > 0 {
            "polling"
        } else {
            "connecting"
        };
        self.status.set(state);
    }
}

/// Runs one Modbus source until `cx.shutdown` is cancelled (or the sink closes): polls every
/// device on its own task; an unreachable device is not an error (it is reconnected with
/// backoff). Returns [`Error::SinkClosed`] if the sink closed first.
pub(super) async fn run(config: ModbusSourceConfig, cx: SourceContext) -> Result<(), Error> {
    let stop = cx.shutdown.child_token();
    let name: Arc<str> = format!("{}/{}", cx.pipeline, cx.name).into();
    let telemetry = Arc::new(Telemetry::new(&cx));
    let mut tasks = JoinSet::new();
    for dev in config.devices {
        let poller = Poller {
            name: name.clone(),
            reads: plan(&dev),
            target: format!("{}:{}", dev.host, dev.port),
            backoff: dev.reconnect_initial_backoff,
            dev,
            stored_unit: cx.stored_unit,
            sink: cx.sink.clone(),
            stop: stop.clone(),
            t: telemetry.clone(),
            conn: None,
            next_connect: None,
            healthy: true,
            state: None,
            exception_logged: Vec::new(),
        };
        tasks.spawn(poller.run());
    }
    let mut result = Ok(());
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                stop.cancel();
                result = Err(e);
            }
            Err(e) => {
                stop.cancel();
                if e.is_panic() {
                    std::panic::resume_unwind(e.into_panic());
                }
            }
        }
    }
    result
}

/// What one read request gave.
enum Outcome {
    Words(Vec<u16>),
    Bits(Vec<bool>),
    /// The device answered with an exception.
    Exception,
    /// No answer (after the retries).
    Failed,
}

/// Polls one device.
struct Poller {
    name: Arc<str>,
    dev: DeviceConfig,
    reads: Vec<Read>,
    /// `host:port`.
    target: String,
    stored_unit: TimeUnit,
    sink: Arc<dyn BatchSink>,
    stop: CancellationToken,
    t: Arc<Telemetry>,
    conn: Option<Context>,
    /// No connection attempt before this instant (reconnect backoff).
    next_connect: Option<Instant>,
    /// The next reconnect delay.
    backoff: Duration,
    /// False once a failure was logged, until a poll answers every request.
    healthy: bool,
    /// What the status counts this device as: answering, failing, or not known yet.
    state: Option<bool>,
    /// Read indexes whose exception was logged.
    exception_logged: Vec<usize>,
}

fn unix_now(unit: TimeUnit) -> i64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0);
    TimeUnit::Nanos.convert(nanos, unit).unwrap_or(0)
}

impl Poller {
    async fn run(mut self) -> Result<(), Error> {
        let mut tick = tokio::time::interval(self.dev.poll_interval);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let stop = self.stop.clone();
        let result = loop {
            tokio::select! {
                _ = stop.cancelled() => break Ok(()),
                _ = tick.tick() => {}
            }
            let received = Instant::now();
            let record = tokio::select! {
                _ = stop.cancelled() => break Ok(()),
                r = self.poll() => r,
            };
            let Some(record) = record else { continue };
            let r = tokio::select! {
                _ = stop.cancelled() => break Ok(()),
                r = self.submit(record, received) => r,
            };
            if let Err(e) = r {
                break Err(e);
            }
        };
        if let Some(mut c) = self.conn.take() {
            use tokio_modbus::client::Client;
            let _ = timeout(Duration::from_millis(200), c.disconnect()).await;
        }
        result
    }

    /// Counts this device as answering or failing on the status.
    fn set_state(&mut self, answering: bool) {
        if self.state != Some(answering) {
            self.t.device_state(self.state, answering);
            self.state = Some(answering);
        }
    }

    /// Warns once per failure episode.
    fn failure(&mut self, what: String) {
        self.set_state(false);
        if self.healthy {
            tracing::warn!(source = %self.name, device = %self.dev.path, address = %self.target, "{what}");
            self.healthy = false;
        } else {
            tracing::debug!(source = %self.name, device = %self.dev.path, address = %self.target, "{what}");
        }
    }

    /// Connects unless the backoff forbids it yet; returns whether a connection is open.
    async fn connect(&mut self) -> bool {
        if self.conn.is_some() {
            return true;
        }
        if self.next_connect.is_some_and(|t| Instant::now() < t) {
            return false;
        }
        let attempt = timeout(self.dev.timeout, TcpStream::connect(self.target.as_str())).await;
        match attempt {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                self.conn = Some(tcp::attach_slave(stream, Slave(self.dev.unit_id)));
                self.next_connect = None;
                self.backoff = self.dev.reconnect_initial_backoff;
                (self.t.connects)(1);
                tracing::debug!(source = %self.name, address = %self.target, "connected");
                true
            }
            failed => {
                (self.t.connect_errors)(1);
                let why = match failed {
                    Ok(Err(e)) => e.to_string(),
                    _ => format!("no connection within {:?}", self.dev.timeout),
                };
                let delay = self.backoff;
                self.failure(format!(
                    "cannot connect: {why}; retrying in {delay:?} (then backing off up to {:?})",
                    self.dev.reconnect_max_backoff
                ));
                self.next_connect = Some(Instant::now() + delay);
                self.backoff = (delay * 2).min(self.dev.reconnect_max_backoff);
                false
            }
        }
    }

    /// One poll: every read request, then the record of what was read.
    async fn poll(&mut self) -> Option<Record> {
        if !self.connect().await {
            (self.t.skipped_polls)(1);
            return None;
        }
        let time = unix_now(self.stored_unit);
        let mut fields = Vec::with_capacity(self.dev.register.len());
        let mut answered = 0;
        let mut failed = false;
        for k in 0..self.reads.len() {
            let start = self.reads[k].start as usize;
            match self.read(k).await {
                Outcome::Words(words) => {
                    answered += 1;
                    for &i in &self.reads[k].entries {
                        let reg = &self.dev.register[i];
                        let from = reg.address as usize - start;
                        let to = from + reg.value_type.width() as usize;
                        fields.push(decode_words(&words[from..to], reg));
                    }
                }
                Outcome::Bits(bits) => {
                    answered += 1;
                    for &i in &self.reads[k].entries {
                        let reg = &self.dev.register[i];
                        fields.push(decode_bit(bits[reg.address as usize - start], reg));
                    }
                }
                Outcome::Exception => answered += 1,
                Outcome::Failed => {
                    failed = true;
                    if self.conn.is_none() && self.next_connect.is_some() {
                        // Unreachable: the other requests would fail alike.
                        break;
                    }
                }
            }
        }
        if answered > 0 {
            (self.t.polls)(1);
        } else {
            (self.t.skipped_polls)(1);
        }
        if !failed && !self.healthy {
            tracing::info!(source = %self.name, device = %self.dev.path, address = %self.target, "device answers again");
            self.healthy = true;
        }
        if !failed {
            self.set_state(true);
        }
        if fields.is_empty() {
            return None;
        }
        Some(Record {
            device: self.dev.path.as_str().into(),
            time,
            fields,
        })
    }

    /// Reads request `k`, retrying on a new connection after a timeout or a lost connection.
    async fn read(&mut self, k: usize) -> Outcome {
        let (kind, start, count) = {
            let r = &self.reads[k];
            (r.kind, r.start, r.count)
        };
        let what = format!(
            "{} {start}..{}",
            kind.name(),
            u32::from(start) + u32::from(count)
        );
        for _attempt in 0..=self.dev.retries {
            if !self.connect().await {
                return Outcome::Failed;
            }
            let Some(ctx) = self.conn.as_mut() else {
                return Outcome::Failed;
            };
            let answer = timeout(self.dev.timeout, async {
                match kind {
                    RegisterKind::Holding => ctx
                        .read_holding_registers(start, count)
                        .await
                        .map(|r| r.map(Outcome::Words)),
                    RegisterKind::Input => ctx
                        .read_input_registers(start, count)
                        .await
                        .map(|r| r.map(Outcome::Words)),
                    RegisterKind::Coil => ctx
                        .read_coils(start, count)
                        .await
                        .map(|r| r.map(Outcome::Bits)),
                    RegisterKind::DiscreteInput => ctx
                        .read_discrete_inputs(start, count)
                        .await
                        .map(|r| r.map(Outcome::Bits)),
                }
            })
            .await;
            let problem = match answer {
                Ok(Ok(Ok(outcome))) => {
                    let got = match &outcome {
                        Outcome::Words(w) => w.len(),
                        Outcome::Bits(b) => b.len(),
                        _ => 0,
                    };
                    if got >= count as usize {
                        self.exception_logged.retain(|&x| x != k);
                        return outcome;
                    }
                    format!("short answer to {what}: {got} values")
                }
                Ok(Ok(Err(code))) => {
                    (self.t.exceptions)(1);
                    if !self.exception_logged.contains(&k) {
                        self.exception_logged.push(k);
                        tracing::warn!(source = %self.name, device = %self.dev.path, address = %self.target,
                            "unit {} answers {what} with exception {code:?}; its entries are skipped",
                            self.dev.unit_id);
                    }
                    return Outcome::Exception;
                }
                Ok(Err(e)) => format!("reading {what}: {e}"),
                Err(_) => format!("reading {what}: no answer within {:?}", self.dev.timeout),
            };
            (self.t.read_errors)(1);
            self.failure(format!("{problem}; reconnecting"));
            // The stream's state is unknown (a late answer may still come): start afresh.
            self.conn = None;
        }
        Outcome::Failed
    }

    /// Hands the poll's record to the sink and waits until it is durable, retrying while the
    /// sink is full or failing.
    async fn submit(&mut self, record: Record, received: Instant) -> Result<(), Error> {
        let mut io_delay = Duration::from_millis(100);
        loop {
            let batch = Batch {
                records: vec![record.clone()],
                rejections: Vec::new(),
            };
            let wait = match self.sink.submit(batch, received).await {
                Ok(outcome) => {
                    self.t.handle.progress();
                    for r in outcome.rejections.iter().take(5) {
                        tracing::warn!(source = %self.name, device = %self.dev.path, "point rejected: {r}");
                    }
                    return Ok(());
                }
                Err(SinkError::Closed) => return Err(Error::SinkClosed),
                Err(SinkError::Full { retry_after, .. }) => {
                    retry_after.clamp(Duration::from_millis(1), Duration::from_secs(30))
                }
                Err(SinkError::Io(e)) => {
                    tracing::error!(source = %self.name, "sink error: {e}; retrying in {io_delay:?}");
                    let d = io_delay;
                    io_delay = (io_delay * 2).min(Duration::from_secs(30));
                    d
                }
            };
            tokio::time::sleep(wait).await;
        }
    }
}
