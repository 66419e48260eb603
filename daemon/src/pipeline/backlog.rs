//! The engine's backlog: durable records the write-ahead log handed to the engine and the
//! engine has not applied yet. The log's thread hands records over without waiting (the
//! engine's channel is unbounded), so an engine busy with a flush or a seal never delays an
//! acknowledgement; intake is refused instead while the backlog is over its limit.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Bytes of record payloads (their allocations) handed to the engine and not applied yet (shared by the
/// log's thread, which adds, the engine's thread, which subtracts, and intake, which reads).
#[derive(Debug, Clone)]
pub struct Backlog {
    bytes: Arc<AtomicUsize>,
    limit: usize,
}

impl Backlog {
    /// The refusal reason intake reports while the backlog is over its limit.
    pub const REASON: &'static str = "engine backlog";

    /// An empty backlog refusing intake once it holds more than `limit` bytes.
    pub fn new(limit: usize) -> Backlog {
        Backlog {
            bytes: Arc::default(),
            limit,
        }
    }

    /// The limit for a memtable budget of `memtable_bytes`: a sixteenth of it, at least
    /// 1 MiB. The backlog grows while the engine flushes, when the memtables are at their
    /// fullest, so what it holds adds to the daemon's peak memory. 4 MiB at the default
    /// budget holds about 200,000 points of records with 10 numeric series of 100 points
    /// (records reserve 19 bytes a point and a few a series).
    pub fn limit_for(memtable_bytes: usize) -> usize {
        (memtable_bytes / 16).max(1 << 20)
    }

    /// A record of `n` bytes was handed to the engine.
    pub fn add(&self, n: usize) {
        self.bytes.fetch_add(n, Ordering::Relaxed);
    }

    /// The engine applied a record of `n` bytes.
    pub fn done(&self, n: usize) {
        self.bytes.fetch_sub(n, Ordering::Relaxed);
    }

    /// Bytes handed over and not applied yet.
    pub fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Whether intake is refused: the backlog holds more than its limit.
    pub fn over(&self) -> bool {
        self.bytes() > self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_only_past_its_limit_and_resumes_when_applied() {
        let b = Backlog::new(100);
        let other = b.clone();
        b.add(60);
        other.add(40);
        // 100 bytes: at the limit, not past it.
        assert_eq!(b.bytes(), 100);
        assert!(!b.over());
        b.add(1);
        assert!(other.over());
        other.done(60);
        assert_eq!(b.bytes(), 41);
        assert!(!b.over());
    }

    #[test]
    fn the_limit_is_a_sixteenth_of_the_budget_with_a_floor() {
        // The default budget, 64 MiB: 4 MiB.
        assert_eq!(Backlog::limit_for(64 << 20), 4 << 20);
        // 8 MiB would give 512 KiB: the floor, 1 MiB.
        assert_eq!(Backlog::limit_for(8 << 20), 1 << 20);
    }
}
