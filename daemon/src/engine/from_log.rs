//! Records the write-ahead log kept instead of handing them over (past the backlog's memory
//! limit, see [`Backlog`](crate::pipeline::Backlog)): the engine reads them back from the log,
//! in order, after the ones it was handed before them, until it has caught up and records
//! are handed over again.

use std::time::{Duration, Instant};

use super::retry::{RETRY_FIRST, RETRY_MAX};
use super::Engine;
use crate::health::{FaultKind, StorageOp};
use crate::wal::{LogReader, Lsn};

/// Reading the log back: where, and when a failed read is tried again.
pub(super) struct FromLog {
    reader: LogReader,
    /// When the first of the records was received (the records read back count from it).
    received: Instant,
    /// After a failed read: when to try again, and the wait after the next failure.
    retry: Option<(Instant, Duration)>,
}

impl Engine {
    /// The log keeps the records from `from` on ([`EngineMsg::FromLog`]): reads them back.
    ///
    /// [`EngineMsg::FromLog`]: super::EngineMsg::FromLog
    pub(super) fn read_log_from(&mut self, from: Lsn, received: Instant) {
        let Some(reader) = self.log_reader(from) else {
            return;
        };
        self.from_log = Some(FromLog {
            reader,
            received,
            retry: None,
        });
        self.catch_up(true);
    }

    /// Applies the records left in the log, up to the last one the log left, until it left
    /// none after the last applied. A failed read is logged and tried again on a later tick
    /// (from the same record) with backoff; `now` tries at once.
    pub(super) fn catch_up(&mut self, now: bool) {
        let Some(backlog) = self.backlog.clone() else {
            return;
        };
        let Some(mut from) = self.from_log.take() else {
            return;
        };
        if !now && from.retry.is_some_and(|(at, _)| at > Instant::now()) {
            self.from_log = Some(from);
            return;
        }
        let read_back = self
            .metrics
            .wal_records_read_back
            .with_label_values(&[&self.opts.pipeline]);
        while let Some(upto) = backlog.left_upto() {
            match from.reader.next(upto) {
                Ok(Some((lsn, payload))) => {
                    if let Some(gate) = &self.opts.hooks.engine_gate {
                        gate.wait();
                    }
                    self.pace();
                    let n = payload.len();
                    self.write(lsn, payload, from.received);
                    backlog.done_from_log(n);
                    read_back.inc();
                    if let Some(p) = &self.progress {
                        p.complete(1);
                    }
                    self.poll_sealer();
                }
                Ok(None) => {
                    if backlog.caught_up(self.last_lsn.unwrap_or(0)) {
                        break;
                    }
                }
                Err(e) => {
                    let wait = from
                        .retry
                        .map_or(RETRY_FIRST, |(_, w)| (w * 2).min(RETRY_MAX));
                    tracing::error!(
                        at = from.reader.position(),
                        error = %e,
                        retry_in_ms = wait.as_millis() as u64,
                        "reading acknowledged records back from the write-ahead log failed; they stay there"
                    );
                    self.health
                        .failed(StorageOp::Rebuild, FaultKind::of(&e), e.to_string());
                    from.retry = Some((Instant::now() + wait, wait));
                    self.from_log = Some(from);
                    return;
                }
            }
        }
        if from.retry.is_some() {
            self.health.recovered(StorageOp::Rebuild);
        }
        self.publish_watermark();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::super::{Engine, EngineOptions, WalControl};
    use super::*;
    use crate::engine::schema::Registry;
    use crate::metrics::Metrics;
    use crate::pipeline::{Backlog, Handoff};

    /// Failures to read back counted so far (`tsfiled_storage_errors_total`, op `rebuild`).
    fn read_failures(metrics: &Metrics) -> u64 {
        metrics
            .render()
            .lines()
            .filter(|l| {
                l.starts_with("tsfiled_storage_errors_total") && l.contains(r#"op="rebuild""#)
            })
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum()
    }

    /// A record left in a segment that is not there: the read fails, and a tick retries it
    /// only once its backoff (the first, 0.5 s) has passed; `now` retries at once.
    #[test]
    fn a_failed_read_back_is_retried_after_its_backoff() {
        let tmp = tempfile::tempdir().unwrap();
        let metrics = Metrics::new();
        let opts = EngineOptions::new("t", tmp.path());
        let registry = Arc::new(Mutex::new(Registry::in_memory(vec![])));
        let mut e = Engine::open(opts, registry, metrics.clone()).unwrap();
        e.attach_wal(WalControl {
            watermark: Default::default(),
            stats: Default::default(),
            max_bytes: 1 << 20,
            dir: tmp.path().join("wal"),
            skipped: Arc::from([]),
            open_segments: Default::default(),
        });
        // A memory limit of 10 bytes: the first record of 20 stays in the log.
        let backlog = Backlog::with_lag(10, 1000);
        let at = (1 << 40) + 8;
        assert!(matches!(backlog.hand_over(at, 20, 20), Handoff::FirstInLog));
        e.set_backlog(backlog.clone());
        e.read_log_from(at, Instant::now());
        assert_eq!(read_failures(&metrics), 1);
        e.catch_up(false);
        assert_eq!(read_failures(&metrics), 1, "retried before its backoff");
        std::thread::sleep(RETRY_FIRST + Duration::from_millis(100));
        e.catch_up(false);
        assert_eq!(read_failures(&metrics), 2, "not retried after its backoff");
        e.catch_up(true);
        assert_eq!(read_failures(&metrics), 3);
        assert_eq!(backlog.left_upto(), Some(at));
    }
}
