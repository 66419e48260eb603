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
