//! Storage health of a pipeline: which storage operations are failing now and why.
//!
//! The write-ahead log and the engine report each failed operation ([`StorageHealth::failed`],
//! counted in `tsfiled_storage_errors_total{op,kind}`) and its recovery
//! ([`StorageHealth::recovered`]). While any operation is failing the pipeline is *degraded*
//! (`tsfiled_storage_degraded` 1, the status page and systemd's status say why); while a
//! flush, seal or rebuild is failing it also refuses new points (503 with `Retry-After`,
//! MQTT backpressure) until the engine's retries succeed.

use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex};

use crate::metrics::Metrics;

/// What kind of storage failure (metric label `kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// The device is full (`ENOSPC`, `EDQUOT`).
    NoSpace,
    /// The file system is read-only (`EROFS`).
    ReadOnly,
    /// Any other I/O error.
    Io,
}

impl FaultKind {
    /// Classifies an I/O error.
    pub fn of(e: &io::Error) -> FaultKind {
        match e.raw_os_error() {
            Some(libc::ENOSPC) | Some(libc::EDQUOT) => FaultKind::NoSpace,
            Some(libc::EROFS) => FaultKind::ReadOnly,
            _ => FaultKind::Io,
        }
    }

    /// Metric label.
    pub fn label(self) -> &'static str {
        match self {
            FaultKind::NoSpace => "no_space",
            FaultKind::ReadOnly => "read_only",
            FaultKind::Io => "io",
        }
    }

    /// Why intake is refused, as a client reads it.
    pub fn refusal(self) -> &'static str {
        match self {
            FaultKind::NoSpace => "storage degraded: no space left on the data device",
            FaultKind::ReadOnly => "storage degraded: the data directory is read-only",
            FaultKind::Io => "storage degraded: I/O error on the data device",
        }
    }
}

/// A storage operation (metric label `op`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StorageOp {
    /// Writing or syncing the write-ahead log, or opening a segment.
    Wal,
    /// Flushing a memtable into its open TsFile.
    Flush,
    /// Sealing files (close, fsync, `.resource`, journal, renames).
    Seal,
    /// Reading back a failed partition's points from the write-ahead log.
    Rebuild,
    /// The seal journal's compaction at start-up.
    Journal,
}

impl StorageOp {
    /// Metric label.
    pub fn label(self) -> &'static str {
        match self {
            StorageOp::Wal => "wal",
            StorageOp::Flush => "flush",
            StorageOp::Seal => "seal",
            StorageOp::Rebuild => "rebuild",
            StorageOp::Journal => "journal",
        }
    }

    /// Whether intake is refused while this operation fails: the engine cannot move points
    /// out of the write-ahead log. (A failing WAL refuses appends by itself.)
    fn refuses_intake(self) -> bool {
        matches!(
            self,
            StorageOp::Flush | StorageOp::Seal | StorageOp::Rebuild
        )
    }
}

/// One failing operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// The operation.
    pub op: StorageOp,
    /// What kind of failure.
    pub kind: FaultKind,
    /// The last error message (names the file).
    pub message: String,
    /// Unix ms of its first failure since it last worked.
    pub since_ms: i64,
}

/// The storage health of one pipeline (shared by its WAL, engine and intake).
pub struct StorageHealth {
    pipeline: String,
    metrics: Arc<Metrics>,
    faults: Mutex<BTreeMap<StorageOp, Fault>>,
}

impl StorageHealth {
    /// A healthy pipeline's state; exports its gauge (0) and error counters.
    pub fn new(pipeline: &str, metrics: Arc<Metrics>) -> Arc<StorageHealth> {
        metrics
            .storage_degraded
            .with_label_values(&[pipeline])
            .set(0);
        Arc::new(StorageHealth {
            pipeline: pipeline.to_string(),
            metrics,
            faults: Mutex::new(BTreeMap::new()),
        })
    }

    /// Records a failure of `op` (counted; the pipeline is degraded until
    /// [`StorageHealth::recovered`]).
    pub fn failed(&self, op: StorageOp, kind: FaultKind, message: String) {
        self.metrics
            .storage_errors
            .with_label_values(&[self.pipeline.as_str(), op.label(), kind.label()])
            .inc();
        let mut f = self.faults.lock().unwrap_or_else(|e| e.into_inner());
        let since_ms = f.get(&op).map_or_else(now_millis, |old| old.since_ms);
        f.insert(
            op,
            Fault {
                op,
                kind,
                message,
                since_ms,
            },
        );
        self.publish(&f);
    }

    /// Counts a failure of `op` that needs no recovery (it was worked around).
    pub fn count(&self, op: StorageOp, kind: FaultKind) {
        self.metrics
            .storage_errors
            .with_label_values(&[self.pipeline.as_str(), op.label(), kind.label()])
            .inc();
    }

    /// `op` works again.
    pub fn recovered(&self, op: StorageOp) {
        let mut f = self.faults.lock().unwrap_or_else(|e| e.into_inner());
        if f.remove(&op).is_some() {
            tracing::info!(pipeline = %self.pipeline, op = op.label(), "storage works again");
            self.publish(&f);
        }
    }

    fn publish(&self, f: &BTreeMap<StorageOp, Fault>) {
        self.metrics
            .storage_degraded
            .with_label_values(&[self.pipeline.as_str()])
            .set(i64::from(!f.is_empty()));
    }

    /// The failing operations, in a fixed order.
    pub fn faults(&self) -> Vec<Fault> {
        let f = self.faults.lock().unwrap_or_else(|e| e.into_inner());
        f.values().cloned().collect()
    }

    /// Whether any storage operation is failing.
    pub fn is_degraded(&self) -> bool {
        !self
            .faults
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }

    /// Why intake is refused now, if it is.
    pub fn refusal(&self) -> Option<&'static str> {
        let f = self.faults.lock().unwrap_or_else(|e| e.into_inner());
        f.values()
            .find(|x| x.op.refuses_intake())
            .map(|x| x.kind.refusal())
    }

    /// One line for logs and systemd's status, e.g. `seal: no space left on device (...)`;
    /// `None` when healthy.
    pub fn summary(&self) -> Option<String> {
        let f = self.faults.lock().unwrap_or_else(|e| e.into_inner());
        if f.is_empty() {
            return None;
        }
        let parts: Vec<String> = f
            .values()
            .map(|x| format!("{} failing ({})", x.op.label(), x.message))
            .collect();
        Some(parts.join("; "))
    }
}

fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_counted_and_degraded_follows_the_failing_operations() {
        let m = Metrics::new();
        let h = StorageHealth::new("p", m.clone());
        assert!(m
            .render()
            .contains("tsfiled_storage_degraded{pipeline=\"p\"} 0"));
        let enospc = io::Error::from_raw_os_error(libc::ENOSPC);
        assert_eq!(FaultKind::of(&enospc), FaultKind::NoSpace);
        assert_eq!(
            FaultKind::of(&io::Error::from_raw_os_error(libc::EROFS)),
            FaultKind::ReadOnly
        );
        assert_eq!(
            FaultKind::of(&io::Error::from_raw_os_error(libc::EIO)),
            FaultKind::Io
        );
        // A failing WAL degrades but does not refuse by health (the WAL refuses itself).
        h.failed(StorageOp::Wal, FaultKind::NoSpace, enospc.to_string());
        assert!(h.is_degraded());
        assert_eq!(h.refusal(), None);
        h.failed(StorageOp::Seal, FaultKind::NoSpace, "x".into());
        h.failed(StorageOp::Seal, FaultKind::NoSpace, "y".into());
        assert_eq!(
            h.refusal(),
            Some("storage degraded: no space left on the data device")
        );
        let text = m.render();
        assert!(
            text.contains("tsfiled_storage_degraded{pipeline=\"p\"} 1"),
            "{text}"
        );
        assert!(
            text.contains(
                "tsfiled_storage_errors_total{kind=\"no_space\",op=\"seal\",pipeline=\"p\"} 2"
            ),
            "{text}"
        );
        h.recovered(StorageOp::Seal);
        assert_eq!(h.refusal(), None);
        h.recovered(StorageOp::Wal);
        assert!(!h.is_degraded());
        assert!(m
            .render()
            .contains("tsfiled_storage_degraded{pipeline=\"p\"} 0"));
    }
}
