//! Telemetry hooks of the CSV source. The daemon maps them onto Prometheus:
//! `tsfiled_csv_files_total{result}`, `tsfiled_csv_rows_total{result}`,
//! `tsfiled_csv_points_total{result}`, `tsfiled_csv_bytes_read_total`,
//! `tsfiled_csv_queue_length` and `tsfiled_csv_rescans_total{reason}`.
//! Labels are bounded: no file or device names.

use std::sync::atomic::{AtomicU64, Ordering};

/// How a file ended. Bounded: used as a metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileResult {
    /// All rows ingested; moved to the done directory.
    Done,
    /// All rows ingested; deleted.
    Deleted,
    /// Moved to the error directory with a report (bad rows, whose good rows were ingested,
    /// or a file that could not be read as a whole).
    Error,
    /// A move or delete failed: the file stays where it is (its rows are durable and will not
    /// be read again) and the move is retried at the next rescan.
    Stuck,
}

impl FileResult {
    /// The metric label value.
    pub fn label(self) -> &'static str {
        match self {
            FileResult::Done => "done",
            FileResult::Deleted => "deleted",
            FileResult::Error => "error",
            FileResult::Stuck => "stuck",
        }
    }
}

/// Callbacks the source calls (once per file or per durable batch, never per row); every
/// method has a no-op default.
pub trait CsvMetrics: Send + Sync + 'static {
    /// A file ended.
    fn file_finished(&self, _result: FileResult) {}
    /// Rows made durable (`accepted`) or rejected by the parser (`rejected`).
    fn rows(&self, _accepted: u64, _rejected: u64) {}
    /// Points made durable (`accepted`) or rejected by the parser or the sink (`rejected`).
    fn points(&self, _accepted: u64, _rejected: u64) {}
    /// Bytes read from files (compressed bytes for gzip files).
    fn bytes_read(&self, _bytes: u64) {}
    /// Files complete and waiting for a processing slot.
    fn queue_length(&self, _files: usize) {}
    /// Files being processed.
    fn in_progress(&self, _files: usize) {}
    /// The sink answered "full" (the file pauses and resumes from its last durable batch).
    fn backpressure(&self) {}
    /// A full directory rescan ran (`event_loss` is true when notify reported lost events).
    fn rescan(&self, _event_loss: bool) {}
}

/// Metrics that go nowhere.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoMetrics;

impl CsvMetrics for NoMetrics {}

/// Atomic counters, for tests, tools and benchmarks.
#[derive(Debug, Default)]
pub struct CountingMetrics {
    /// Files moved to done.
    pub files_done: AtomicU64,
    /// Files deleted after success.
    pub files_deleted: AtomicU64,
    /// Files moved to error.
    pub files_error: AtomicU64,
    /// Files whose move failed.
    pub files_stuck: AtomicU64,
    /// Durable rows.
    pub rows: AtomicU64,
    /// Rejected rows.
    pub rows_rejected: AtomicU64,
    /// Durable points.
    pub points: AtomicU64,
    /// Rejected points.
    pub points_rejected: AtomicU64,
    /// Bytes read.
    pub bytes: AtomicU64,
    /// Last queue length.
    pub queue: AtomicU64,
    /// Highest number of files in progress seen.
    pub in_progress_max: AtomicU64,
    /// Backpressure events.
    pub backpressure: AtomicU64,
    /// Rescans.
    pub rescans: AtomicU64,
}

impl CountingMetrics {
    /// Reads a counter.
    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }
}

impl CsvMetrics for CountingMetrics {
    fn file_finished(&self, result: FileResult) {
        let c = match result {
            FileResult::Done => &self.files_done,
            FileResult::Deleted => &self.files_deleted,
            FileResult::Error => &self.files_error,
            FileResult::Stuck => &self.files_stuck,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }
    fn rows(&self, accepted: u64, rejected: u64) {
        self.rows.fetch_add(accepted, Ordering::Relaxed);
        self.rows_rejected.fetch_add(rejected, Ordering::Relaxed);
    }
    fn points(&self, accepted: u64, rejected: u64) {
        self.points.fetch_add(accepted, Ordering::Relaxed);
        self.points_rejected.fetch_add(rejected, Ordering::Relaxed);
    }
    fn bytes_read(&self, bytes: u64) {
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }
    fn queue_length(&self, files: usize) {
        self.queue.store(files as u64, Ordering::Relaxed);
    }
    fn in_progress(&self, files: usize) {
        self.in_progress_max
            .fetch_max(files as u64, Ordering::Relaxed);
    }
    fn backpressure(&self) {
        self.backpressure.fetch_add(1, Ordering::Relaxed);
    }
    fn rescan(&self, _event_loss: bool) {
        self.rescans.fetch_add(1, Ordering::Relaxed);
    }
}
