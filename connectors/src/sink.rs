//! The interface between sources and the daemon: a [`BatchSink`] takes parsed batches and
//! resolves once their accepted points are durable.
//!
//! Sources acknowledge upstream (MQTT PUBACK, HTTP 204, CSV `done/`) only after
//! [`BatchSink::submit`] returned `Ok`. The daemon implements the trait on its pipelines;
//! [`MemorySink`] is an in-memory double for tests and benchmarks that can simulate a full
//! buffer, slow durability and a closed pipeline.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::model::{Batch, Record, Rejection};

/// Result of a successful submission: the accepted points are durable.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SinkOutcome {
    /// Points now durable.
    pub accepted: u64,
    /// Points the sink rejected (invalid paths, type mismatches, bad times).
    pub rejected: u64,
    /// The sink's rejections, in batch order.
    pub rejections: Vec<Rejection>,
}

/// Why a submission failed as a whole (nothing of it is known to be durable).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SinkError {
    /// The buffer is full: retry the same batch after `retry_after`.
    #[error("buffer full ({reason}); retry after {retry_after:?}")]
    Full {
        /// What is full (a bounded label).
        reason: &'static str,
        /// Suggested wait before retrying.
        retry_after: Duration,
    },
    /// The sink is shutting down and accepts nothing more.
    #[error("the sink is shutting down")]
    Closed,
    /// The sink could not make the batch durable (retryable).
    #[error("sink I/O error: {0}")]
    Io(String),
}

/// The future [`BatchSink::submit`] returns.
pub type SinkFuture<'a> = Pin<Box<dyn Future<Output = Result<SinkOutcome, SinkError>> + Send + 'a>>;

/// What [`BatchSink::admit`] returns: resolves once the admitted batch's accepted points are
/// durable.
pub type Durable = Pin<Box<dyn Future<Output = Result<SinkOutcome, SinkError>> + Send + 'static>>;

/// Where sources hand their batches; implemented by the daemon's pipelines.
pub trait BatchSink: Send + Sync + 'static {
    /// Submits `batch` (whose first payload arrived at `received`); resolves once the accepted
    /// points are durable. A source acknowledges upstream only after `Ok`.
    fn submit(&self, batch: Batch, received: Instant) -> SinkFuture<'_>;

    /// Admits `batch` without waiting for its durability, so that a source can admit the next
    /// batches meanwhile (one fsync then covers many): `Err` refuses it as a whole, as
    /// [`submit`](BatchSink::submit) would; `Ok` is a future that resolves as `submit` does, once
    /// the accepted points are durable (or with the error that kept them from it). A source
    /// acknowledges upstream only after that future's `Ok`.
    ///
    /// The daemon's pipelines admit in call order, within this call. This default admits when
    /// the returned future is first polled.
    fn admit(self: Arc<Self>, batch: Batch, received: Instant) -> Result<Durable, SinkError> {
        Ok(Box::pin(async move { self.submit(batch, received).await }))
    }
}

/// How [`MemorySink`] answers the next submissions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryMode {
    /// Accept (after the configured durability delay).
    Accept,
    /// Answer [`SinkError::Full`] with this `retry_after`.
    Full(Duration),
    /// Answer [`SinkError::Closed`].
    Closed,
}

/// In-memory [`BatchSink`] for tests and benchmarks.
///
/// Keeps every accepted record (unless created with [`MemorySink::counting`]), and can
/// simulate a full buffer for the next N submissions, a permanently full or closed sink, and
/// slow durability (a delay before each `Ok`).
#[derive(Debug)]
pub struct MemorySink {
    keep: bool,
    state: Mutex<MemoryState>,
    points: AtomicU64,
    submits: AtomicU64,
    fulls: AtomicU64,
    largest: AtomicU64,
}

#[derive(Debug)]
struct MemoryState {
    records: Vec<Record>,
    mode: MemoryMode,
    /// One-shot answers consumed before `mode` applies.
    script: VecDeque<MemoryMode>,
    delay: Duration,
}

impl Default for MemorySink {
    fn default() -> Self {
        MemorySink::new()
    }
}

impl MemorySink {
    /// A sink that keeps every accepted record.
    pub fn new() -> MemorySink {
        MemorySink::with_keep(true)
    }

    /// A sink that only counts points (for throughput measurements).
    pub fn counting() -> MemorySink {
        MemorySink::with_keep(false)
    }

    fn with_keep(keep: bool) -> MemorySink {
        MemorySink {
            keep,
            state: Mutex::new(MemoryState {
                records: Vec::new(),
                mode: MemoryMode::Accept,
                script: VecDeque::new(),
                delay: Duration::ZERO,
            }),
            points: AtomicU64::new(0),
            submits: AtomicU64::new(0),
            fulls: AtomicU64::new(0),
            largest: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemoryState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets the answer for every submission from now on.
    pub fn set_mode(&self, mode: MemoryMode) {
        self.lock().mode = mode;
    }

    /// Queues one-shot answers used (in order) before the standing mode.
    pub fn script(&self, answers: impl IntoIterator<Item = MemoryMode>) {
        self.lock().script.extend(answers);
    }

    /// Sets the simulated durability delay before each `Ok`.
    pub fn set_delay(&self, delay: Duration) {
        self.lock().delay = delay;
    }

    /// A copy of the accepted records, in acceptance order.
    pub fn records(&self) -> Vec<Record> {
        self.lock().records.clone()
    }

    /// Takes the accepted records out of the sink.
    pub fn take_records(&self) -> Vec<Record> {
        std::mem::take(&mut self.lock().records)
    }

    /// Accepted points so far.
    pub fn points(&self) -> u64 {
        self.points.load(Ordering::Relaxed)
    }

    /// Submissions so far (accepted or not).
    pub fn submits(&self) -> u64 {
        self.submits.load(Ordering::Relaxed)
    }

    /// Submissions answered with [`SinkError::Full`].
    pub fn fulls(&self) -> u64 {
        self.fulls.load(Ordering::Relaxed)
    }

    /// Records in the largest batch submitted so far (accepted or not).
    pub fn largest_batch(&self) -> u64 {
        self.largest.load(Ordering::Relaxed)
    }
}

impl MemorySink {
    /// Counts a submission and decides its answer: `Ok(delay)` to accept after `delay`.
    fn answer(&self, batch: &Batch) -> Result<Duration, SinkError> {
        self.submits.fetch_add(1, Ordering::Relaxed);
        self.largest
            .fetch_max(batch.records.len() as u64, Ordering::Relaxed);
        let (mode, delay) = {
            let mut st = self.lock();
            let mode = st.script.pop_front().unwrap_or(st.mode);
            (mode, st.delay)
        };
        match mode {
            MemoryMode::Full(retry_after) => {
                self.fulls.fetch_add(1, Ordering::Relaxed);
                Err(SinkError::Full {
                    reason: "memory",
                    retry_after,
                })
            }
            MemoryMode::Closed => Err(SinkError::Closed),
            MemoryMode::Accept => Ok(delay),
        }
    }

    /// Accepts `batch` after `delay`.
    async fn accept(&self, batch: Batch, delay: Duration) -> Result<SinkOutcome, SinkError> {
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let accepted = batch.point_count();
        if self.keep {
            self.lock().records.extend(batch.records);
        }
        self.points.fetch_add(accepted, Ordering::Relaxed);
        Ok(SinkOutcome {
            accepted,
            rejected: 0,
            rejections: Vec::new(),
        })
    }
}

impl BatchSink for MemorySink {
    fn submit(&self, batch: Batch, _received: Instant) -> SinkFuture<'_> {
        Box::pin(async move {
            let delay = self.answer(&batch)?;
            self.accept(batch, delay).await
        })
    }

    /// Answers at once (full, closed, or admitted); an admitted batch is accepted after the
    /// durability delay.
    fn admit(self: Arc<Self>, batch: Batch, _received: Instant) -> Result<Durable, SinkError> {
        let delay = self.answer(&batch)?;
        Ok(Box::pin(async move { self.accept(batch, delay).await }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Field, FieldValue};

    fn batch(n: usize) -> Batch {
        Batch {
            records: (0..n)
                .map(|i| Record {
                    device: "root.sg.d".into(),
                    time: i as i64,
                    fields: vec![Field::new("s", FieldValue::Int(i as i64))],
                })
                .collect(),
            rejections: Vec::new(),
        }
    }

    #[tokio::test]
    async fn memory_sink_scripts_answers() {
        let sink = MemorySink::new();
        sink.script([
            MemoryMode::Full(Duration::from_millis(5)),
            MemoryMode::Closed,
        ]);
        let now = Instant::now();
        assert_eq!(
            sink.submit(batch(2), now).await,
            Err(SinkError::Full {
                reason: "memory",
                retry_after: Duration::from_millis(5)
            })
        );
        assert_eq!(sink.submit(batch(2), now).await, Err(SinkError::Closed));
        let ok = sink.submit(batch(3), now).await.map(|o| o.accepted);
        assert_eq!(ok, Ok(3));
        assert_eq!(sink.points(), 3);
        assert_eq!(sink.submits(), 3);
        assert_eq!(sink.fulls(), 1);
        assert_eq!(sink.records().len(), 3);
        assert_eq!(
            sink.largest_batch(),
            3,
            "refused batches of 2, the accepted one of 3"
        );
        sink.set_mode(MemoryMode::Closed);
        assert_eq!(sink.submit(batch(1), now).await, Err(SinkError::Closed));
    }

    /// `admit` answers refusals at the call and accepts when the future resolves; the default
    /// `admit` (a sink with only `submit`) admits when its future is first polled.
    #[tokio::test]
    async fn admit_answers_at_the_call() {
        let sink = Arc::new(MemorySink::new());
        sink.script([MemoryMode::Full(Duration::from_millis(5))]);
        let now = Instant::now();
        let refused = sink.clone().admit(batch(2), now).map(|_| ());
        assert_eq!(
            refused,
            Err(SinkError::Full {
                reason: "memory",
                retry_after: Duration::from_millis(5)
            })
        );
        let first = sink.clone().admit(batch(3), now).unwrap();
        let second = sink.clone().admit(batch(1), now).unwrap();
        assert_eq!(sink.submits(), 3);
        assert_eq!(sink.points(), 0, "nothing accepted before the futures run");
        assert_eq!(second.await.map(|o| o.accepted), Ok(1));
        assert_eq!(first.await.map(|o| o.accepted), Ok(3));
        assert_eq!(sink.points(), 4);
        sink.set_mode(MemoryMode::Closed);
        assert_eq!(
            sink.clone().admit(batch(1), now).map(|_| ()),
            Err(SinkError::Closed)
        );

        /// A sink with only `submit`.
        struct Plain(MemorySink);
        impl BatchSink for Plain {
            fn submit(&self, batch: Batch, received: Instant) -> SinkFuture<'_> {
                self.0.submit(batch, received)
            }
        }
        let plain = Arc::new(Plain(MemorySink::new()));
        let durable = plain.clone().admit(batch(2), now).unwrap();
        assert_eq!(plain.0.submits(), 0, "admitted on the first poll");
        assert_eq!(durable.await.map(|o| o.accepted), Ok(2));
        assert_eq!(plain.0.submits(), 1);
        assert_eq!(plain.0.points(), 2);
    }

    #[tokio::test]
    async fn counting_sink_keeps_no_records() {
        let sink = MemorySink::counting();
        let ok = sink
            .submit(batch(4), Instant::now())
            .await
            .map(|o| o.accepted);
        assert_eq!(ok, Ok(4));
        assert_eq!(sink.points(), 4);
        assert!(sink.records().is_empty());
    }
}
