//! Failed partitions: a flush or seal that failed drops the partition's unsealed points from
//! memory and open files, and they are read back from the write-ahead log with backoff.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::batch::WriteBatch;
use super::files::Space;
use super::memtable::g_proc;
use super::{Engine, SealReason};
use crate::health::{FaultKind, StorageOp};
use crate::wal::Lsn;

impl Engine {
    /// A flush or seal of a partition failed: drops what the partition holds in memory and
    /// open files (its points stay in the WAL from `first_lsn`, or the failed seal's `pin`),
    /// takes it out of intake and sealing, and schedules reading its points back from the
    /// WAL with backoff ([`Engine::retry_failed`]). No later seal of the partition can be
    /// committed before that, so the seal journal's `covered` never passes points that are
    /// in no sealed file.
    pub(super) fn fail_group(
        &mut self,
        key: &(Arc<str>, i64),
        op: StorageOp,
        kind: FaultKind,
        error: String,
        pin: Option<Lsn>,
        reseal: Option<SealReason>,
    ) {
        let Some(g) = self.groups.get_mut(key) else {
            return;
        };
        let mut freed = 0;
        let mut dropped = Vec::new();
        for space in [Space::Sequence, Space::Unsequence] {
            let p = g_proc(g, space);
            p.mem.clear();
            freed += std::mem::take(&mut p.mem_bytes);
            dropped.extend(p.file.take());
        }
        g.first_lsn = match (g.first_lsn, pin) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        g.first_at = None;
        g.oldest_receive = None;
        g.backoff = if g.backoff.is_zero() {
            RETRY_FIRST
        } else {
            (g.backoff * 2).min(RETRY_MAX)
        };
        g.failed = Some(Instant::now() + g.backoff);
        if reseal.is_some() {
            g.reseal = reseal;
        }
        let backoff = g.backoff;
        self.mem_total = self.mem_total.saturating_sub(freed);
        for f in dropped {
            let _ = self.opts.fs.remove_file(&f.tmp_path);
            let rel = self.rel(&f.final_path);
            if let Ok(mut st) = self.status.lock() {
                st.open.remove(&rel);
            }
        }
        tracing::error!(
            storage_group = %key.0,
            partition = key.1,
            op = op.label(),
            error = %error,
            retry_in_ms = backoff.as_millis() as u64,
            "storage failed: the partition's points stay in the write-ahead log; intake is refused until a retry succeeds"
        );
        self.health.failed(op, kind, error);
        self.memtable_gauge.set(self.mem_total as i64);
        self.update_open_files();
    }

    /// Reads back every failed partition whose retry is due (`force`: every failed one).
    pub fn retry_failed(&mut self, force: bool) {
        if self.wal.is_none() {
            return;
        }
        let now = Instant::now();
        let due: Vec<(Arc<str>, i64)> = self
            .groups
            .iter()
            .filter(|(_, g)| g.failed.is_some_and(|at| force || at <= now))
            .map(|(k, _)| k.clone())
            .collect();
        for key in due {
            self.rebuild(&key);
        }
        if self.groups.values().all(|g| g.failed.is_none()) {
            for op in [StorageOp::Flush, StorageOp::Seal, StorageOp::Rebuild] {
                self.health.recovered(op);
            }
        }
        self.publish_watermark();
    }

    /// Reads a failed partition's points back from the WAL into its memtables (flushing as
    /// the budget requires), a chunk of the log at a time and passing over the stretches
    /// replay skipped, then seals it again if a seal had failed.
    pub(super) fn rebuild(&mut self, key: &(Arc<str>, i64)) {
        let Some(g) = self.groups.get_mut(key) else {
            return;
        };
        g.failed = None;
        let Some(from) = g.first_lsn else {
            return;
        };
        let Some(mut reader) = self.log_reader(from) else {
            return;
        };
        if let Some(g) = self.groups.get_mut(key) {
            g.first_lsn = None;
        }
        let upto = self.last_lsn.unwrap_or(from);
        tracing::info!(storage_group = %key.0, partition = key.1, "retrying: reading the partition's points back from the write-ahead log");
        self.rebuilding = Some((key.clone(), from));
        let registry = self.registry.clone();
        let result = loop {
            let (lsn, payload) = match reader.next(upto) {
                Ok(Some(record)) => record,
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            };
            let decoded = {
                let mut reg = registry.lock().unwrap_or_else(|e| e.into_inner());
                WriteBatch::decode(payload, |d, m, ty| {
                    let s = reg.define(d, m, ty);
                    (s.device, s.measurement)
                })
            };
            match decoded {
                Ok(b) => self.apply_rebuilt(key, lsn, b),
                Err(e) => {
                    tracing::error!(lsn, error = %e, "write-ahead log: undecodable record skipped")
                }
            }
            if self.is_failed(&key.0, key.1) {
                break Ok(());
            }
        };
        self.rebuilding = None;
        match result {
            Err(e) => {
                let msg = format!("reading back the write-ahead log: {e}");
                self.fail_group(
                    key,
                    StorageOp::Rebuild,
                    FaultKind::of(&e),
                    msg,
                    Some(from),
                    None,
                );
            }
            Ok(()) if self.is_failed(&key.0, key.1) => {}
            Ok(()) => {
                let reseal = self.groups.get_mut(key).and_then(|g| g.reseal.take());
                if let Some(r) = reseal {
                    self.seal_group(key, r);
                }
            }
        }
    }

    /// One record read back for partition `key` (others' points are skipped: they are in
    /// their own memtables or sealed).
    pub(super) fn apply_rebuilt(&mut self, key: &(Arc<str>, i64), lsn: Lsn, batch: WriteBatch) {
        self.rebuilding = Some((key.clone(), lsn));
        let received = Instant::now();
        for s in batch.series {
            if s.is_empty() {
                continue;
            }
            let sg = self.sg_for(&s.device);
            if sg != key.0 {
                continue;
            }
            match self.single_partition(&s) {
                Some(p) if p == key.1 => {
                    self.insert_series(&sg, p, lsn, (received, received), &s);
                }
                Some(_) => {}
                None => {
                    for (p, part) in self.split_partitions(&s) {
                        if p == key.1 {
                            self.insert_series(&sg, p, lsn, (received, received), &part);
                        }
                    }
                }
            }
        }
        self.enforce_budget();
    }

    /// The `covered` LSN of a seal of `key` now: every point of the partition before it is
    /// in its files (while the partition is read back, only up to the record reached).
    pub(super) fn covered_for(&self, key: &(Arc<str>, i64)) -> Lsn {
        match &self.rebuilding {
            Some((k, lsn)) if k == key => lsn + 1,
            _ => self.last_lsn.map_or(0, |l| l + 1),
        }
    }
}

/// First wait before a failed partition is retried, and the longest.
pub(super) const RETRY_FIRST: Duration = Duration::from_millis(500);
pub(super) const RETRY_MAX: Duration = Duration::from_secs(10);
