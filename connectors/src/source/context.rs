//! What a running source is given: [`SourceContext`].

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use tokio_util::sync::CancellationToken;

use crate::model::TimeUnit;
use crate::sink::BatchSink;

/// A counter series of one source (pipeline and source labels already bound).
pub type Counter = Arc<dyn Fn(u64) + Send + Sync>;
/// A gauge series of one source (pipeline and source labels already bound).
pub type Gauge = Arc<dyn Fn(i64) + Send + Sync>;

/// Metrics of one source, labelled with its pipeline and source name by the daemon.
///
/// Names are whole Prometheus names starting with `tsfiled_` (written out in the source, so
/// the ops kit's checks find them); counters end in `_total`, gauges do not. Resolve series
/// once at start (they are exported at 0 from then on), and update them once per batch, not
/// per point.
pub trait SourceMetrics: Send + Sync {
    /// The counter `name{pipeline, source[, extra]}`.
    fn counter(&self, name: &str, help: &str, extra: Option<(&str, &str)>) -> Counter;
    /// The gauge `name{pipeline, source}`; removed when the source is removed.
    fn gauge(&self, name: &str, help: &str) -> Gauge;
    /// Liveness for the watchdog: the source made progress (points durable, a file done).
    fn progress(&self);
    /// Liveness for the watchdog: work waiting (a source with pending work and no progress
    /// for long is judged stuck).
    fn pending(&self, items: u64);
}

/// [`SourceMetrics`] that record nothing (tests, tools).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSourceMetrics;

impl SourceMetrics for NoSourceMetrics {
    fn counter(&self, _: &str, _: &str, _: Option<(&str, &str)>) -> Counter {
        Arc::new(|_| {})
    }
    fn gauge(&self, _: &str, _: &str) -> Gauge {
        Arc::new(|_| {})
    }
    fn progress(&self) {}
    fn pending(&self, _: u64) {}
}

/// The state a source shows on the status page and `/api/status` (`"connected"`,
/// `"watching"`, `"running"`, …). Cheap to clone; every clone shares the state.
#[derive(Debug, Clone)]
pub struct StatusReporter(Arc<RwLock<&'static str>>);

impl StatusReporter {
    /// A reporter showing `initial`.
    pub fn new(initial: &'static str) -> StatusReporter {
        StatusReporter(Arc::new(RwLock::new(initial)))
    }

    /// Sets the shown state.
    pub fn set(&self, state: &'static str) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = state;
    }

    /// The shown state.
    pub fn get(&self) -> &'static str {
        *self.0.read().unwrap_or_else(|e| e.into_inner())
    }
}

/// Everything a running source gets from the daemon.
#[derive(Clone)]
pub struct SourceContext {
    /// The pipeline's name.
    pub pipeline: String,
    /// The source's name (unique in the pipeline).
    pub name: String,
    /// Where batches go; resolves once their points are durable.
    pub sink: Arc<dyn BatchSink>,
    /// Cancelled on shutdown, and on a reload that changes or removes this source.
    pub shutdown: CancellationToken,
    /// Metrics pre-labelled with pipeline and source.
    pub metrics: Arc<dyn SourceMetrics>,
    /// The pipeline's state directory (`<storage.data_dir>/state`), for checkpoints; a source
    /// keeps its files under `<state_dir>/<type>/<name>…`.
    pub state_dir: PathBuf,
    /// The state shown on the status page.
    pub status: StatusReporter,
    /// The pipeline's stored timestamp unit.
    pub stored_unit: TimeUnit,
}

impl std::fmt::Debug for SourceContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceContext")
            .field("pipeline", &self.pipeline)
            .field("name", &self.name)
            .field("state_dir", &self.state_dir)
            .field("status", &self.status.get())
            .field("stored_unit", &self.stored_unit)
            .finish_non_exhaustive()
    }
}
