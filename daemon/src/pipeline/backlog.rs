//! The engine's backlog: durable records the engine has not applied yet. The log's thread
//! hands records over without waiting (the engine's channel is unbounded), so an engine busy
//! with a flush or a seal never delays an acknowledgement. Past the backlog's memory limit
//! the log's thread hands nothing over and the records stay in the log only: the engine
//! reads them back from there ([`LogReader`](crate::wal::LogReader)) once it has applied the
//! ones in memory, until it has caught up. Intake waits, before a batch enters the log,
//! while the whole backlog (in memory and in the log) is over its lag limit, and is refused
//! only when it waited in vain for [`Backlog::MAX_WAIT`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::wal::Lsn;

/// Bytes of record payloads (their allocations) handed to the engine and not applied yet
/// (shared by the log's thread, which adds, the engine's thread, which subtracts, and intake,
/// which waits for room).
#[derive(Debug, Clone)]
pub struct Backlog(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    /// Bytes of the records handed over, in memory.
    bytes: AtomicUsize,
    /// Bytes of all unapplied records: handed over, or left in the log.
    lag: AtomicUsize,
    /// Past it, records are left in the log.
    limit: usize,
    /// Past it, intake waits.
    lag_limit: usize,
    /// Whether records are left in the log, and the position of the last one.
    left: Mutex<Option<Lsn>>,
    /// Tasks and threads waiting for room now.
    waiters: AtomicUsize,
    /// Woken when the backlog falls to its limit: tasks waiting for room.
    room: Notify,
    /// The same for threads ([`Backlog::wait_blocking`]).
    room_lock: Mutex<()>,
    room_cv: Condvar,
}

/// Where a durable record goes ([`Backlog::hand_over`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handoff {
    /// To the engine, in memory.
    Engine,
    /// It stays in the log, the first to: the engine is to read the log back from it.
    FirstInLog,
    /// It stays in the log, behind others.
    InLog,
}

impl Backlog {
    /// The refusal reason intake reports when the backlog stayed over its limit for
    /// [`Backlog::MAX_WAIT`] (an engine that stopped applying records).
    pub const REASON: &'static str = "engine backlog";

    /// How long intake waits for room before refusing. A flush of the largest memtable holds
    /// the engine for well under a second between the points where it takes in records, so
    /// only an engine that is stuck makes a batch wait this long.
    pub const MAX_WAIT: Duration = Duration::from_secs(10);

    /// An empty backlog that makes intake wait once it holds more than `limit` bytes, all in
    /// memory.
    pub fn new(limit: usize) -> Backlog {
        Backlog::with_lag(limit, limit)
    }

    /// An empty backlog that holds up to `limit` bytes in memory and leaves the records past
    /// it in the log, and makes intake wait once it holds more than `lag_limit` bytes in all.
    pub fn with_lag(limit: usize, lag_limit: usize) -> Backlog {
        Backlog(Arc::new(Inner {
            bytes: AtomicUsize::new(0),
            lag: AtomicUsize::new(0),
            limit,
            lag_limit: lag_limit.max(limit),
            left: Mutex::new(None),
            waiters: AtomicUsize::new(0),
            room: Notify::new(),
            room_lock: Mutex::new(()),
            room_cv: Condvar::new(),
        }))
    }

    /// The limit for a memtable budget of `memtable_bytes`: a quarter of it, at least
    /// 1 MiB. The backlog grows while the engine flushes, when the memtables are at their
    /// fullest, so what it holds adds to the daemon's peak memory. 16 MiB at the default
    /// budget holds about 800,000 points of records with 10 numeric series of 100 points
    /// (records reserve 19 bytes a point and a few a series). A sixteenth held fast sources
    /// (a CSV file, an MQTT backlog) at the engine's pace during every flush.
    pub fn limit_for(memtable_bytes: usize) -> usize {
        (memtable_bytes / 4).max(1 << 20)
    }

    /// The lag limit for a memtable budget of `memtable_bytes` and a log of at most
    /// `wal_max_bytes`: four budgets (256 MiB at the default budget, which holds a burst of
    /// 100,000 MQTT messages of 100 points, about 81 MB of log), at most a quarter of the
    /// log, and never below the memory limit.
    pub fn lag_limit_for(memtable_bytes: usize, wal_max_bytes: u64) -> usize {
        let quarter = usize::try_from(wal_max_bytes / 4).unwrap_or(usize::MAX);
        memtable_bytes
            .saturating_mul(4)
            .min(quarter)
            .max(Backlog::limit_for(memtable_bytes))
    }

    /// Where the durable record at `lsn` goes: to the engine, or, past the memory limit or
    /// behind records that stayed there, to the log only. `memory` is what it holds in
    /// memory (its allocation), `len` its length in the log: what the backlog counts in
    /// either case, as [`Backlog::done`] and [`Backlog::done_from_log`] count them off.
    pub fn hand_over(&self, lsn: Lsn, memory: usize, len: usize) -> Handoff {
        let mut left = self.0.left.lock().unwrap_or_else(|e| e.into_inner());
        let first = left.is_none();
        if first && (!self.leaves_in_log() || self.bytes() + memory <= self.0.limit) {
            self.add(memory);
            return Handoff::Engine;
        }
        self.0.lag.fetch_add(len, Ordering::SeqCst);
        *left = Some(lsn);
        if first {
            Handoff::FirstInLog
        } else {
            Handoff::InLog
        }
    }

    /// Whether records past the memory limit stay in the log (the lag limit is above it),
    /// rather than making intake wait.
    pub fn leaves_in_log(&self) -> bool {
        self.0.lag_limit > self.0.limit
    }

    /// The position of the last record left in the log (`None`: none is).
    pub fn left_upto(&self) -> Option<Lsn> {
        *self.0.left.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The engine has read back every record left in the log up to `applied`: if none was
    /// left after it, records are handed over again from the next one on (`true`).
    pub fn caught_up(&self, applied: Lsn) -> bool {
        let mut left = self.0.left.lock().unwrap_or_else(|e| e.into_inner());
        if left.is_some_and(|l| l <= applied) {
            *left = None;
        }
        left.is_none()
    }

    /// A record of `n` bytes was handed to the engine.
    pub fn add(&self, n: usize) {
        self.0.bytes.fetch_add(n, Ordering::SeqCst);
        self.0.lag.fetch_add(n, Ordering::SeqCst);
    }

    /// The engine applied a record of `n` bytes it was handed; wakes the waiting intake when
    /// that brings the backlog down to its lag limit.
    pub fn done(&self, n: usize) {
        self.0.bytes.fetch_sub(n, Ordering::SeqCst);
        self.done_from_log(n);
    }

    /// The engine applied a record of `n` bytes (its length) it read back from the log; wakes
    /// the waiting intake as [`Backlog::done`] does.
    pub fn done_from_log(&self, n: usize) {
        let before = self.0.lag.fetch_sub(n, Ordering::SeqCst);
        if before > self.0.lag_limit && before - n <= self.0.lag_limit {
            self.0.room.notify_waiters();
            // Taken so that a thread between its check and its wait is not missed.
            drop(self.0.room_lock.lock().unwrap_or_else(|e| e.into_inner()));
            self.0.room_cv.notify_all();
        }
    }

    /// Bytes handed over and not applied yet.
    pub fn bytes(&self) -> usize {
        self.0.bytes.load(Ordering::SeqCst)
    }

    /// Bytes not applied yet, handed over or left in the log.
    pub fn lag(&self) -> usize {
        self.0.lag.load(Ordering::SeqCst)
    }

    /// The lag past which intake waits.
    pub fn lag_limit(&self) -> usize {
        self.0.lag_limit
    }

    /// Whether intake waits: the backlog holds more than its lag limit.
    pub fn over(&self) -> bool {
        self.lag() > self.0.lag_limit
    }

    /// Tasks and threads waiting for room now.
    pub fn waiters(&self) -> usize {
        self.0.waiters.load(Ordering::SeqCst)
    }

    /// Counts a waiter until dropped.
    fn waiter(&self) -> impl Drop + '_ {
        struct Waiter<'a>(&'a AtomicUsize);
        impl Drop for Waiter<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        self.0.waiters.fetch_add(1, Ordering::SeqCst);
        Waiter(&self.0.waiters)
    }

    /// Waits until the backlog is at most its limit, for `bound` at most; `false`: it still
    /// is over its limit.
    pub async fn wait(&self, bound: Duration) -> bool {
        let _waiter = self.waiter();
        let deadline = tokio::time::Instant::now() + bound;
        loop {
            let room = self.0.room.notified();
            tokio::pin!(room);
            // Registered before the check, so a wake-up between the two is not lost.
            room.as_mut().enable();
            if !self.over() {
                return true;
            }
            if tokio::time::timeout_at(deadline, room).await.is_err() {
                return !self.over();
            }
        }
    }

    /// [`Backlog::wait`] for plain threads.
    pub fn wait_blocking(&self, bound: Duration) -> bool {
        let _waiter = self.waiter();
        let deadline = Instant::now() + bound;
        let mut g = self.0.room_lock.lock().unwrap_or_else(|e| e.into_inner());
        while self.over() {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return false;
            };
            g = self
                .0
                .room_cv
                .wait_timeout(g, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_only_past_its_limit() {
        let b = Backlog::new(100);
        let other = b.clone();
        b.add(60);
        other.add(40);
        // 100 bytes: at the limit, not past it.
        assert_eq!(b.bytes(), 100);
        assert!(!b.over());
        assert!(b.wait_blocking(Duration::ZERO));
        b.add(1);
        assert!(other.over());
        // Nothing applies a record: the wait ends unfulfilled at its bound.
        assert!(!b.wait_blocking(Duration::from_millis(1)));
        other.done(60);
        assert_eq!(b.bytes(), 41);
        assert!(!b.over());
    }

    #[test]
    fn a_waiting_thread_and_task_resume_when_the_engine_applies_a_record() {
        let b = Backlog::new(100);
        b.add(150);
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = {
            let (b, tx) = (b.clone(), tx.clone());
            std::thread::spawn(move || {
                let room = b.wait_blocking(Backlog::MAX_WAIT);
                tx.send(("thread", room, b.bytes()))
            })
        };
        let task = {
            let b = b.clone();
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .build()
                    .unwrap();
                let room = rt.block_on(b.wait(Backlog::MAX_WAIT));
                tx.send(("task", room, b.bytes()))
            })
        };
        // 150 - 40 = 110: still over, no wake-up.
        b.done(40);
        assert!(b.over());
        // 110 - 10 = 100: at the limit; both resume, with room, and not before (they
        // report the backlog they saw on waking).
        b.done(10);
        let mut woke = [rx.recv().unwrap(), rx.recv().unwrap()];
        woke.sort();
        assert_eq!(woke, [("task", true, 100), ("thread", true, 100)]);
        thread.join().unwrap().unwrap();
        task.join().unwrap().unwrap();
    }

    /// Worked by hand: 100 bytes in memory, 300 in all.
    #[test]
    fn past_the_memory_limit_records_stay_in_the_log_until_the_engine_caught_up() {
        let b = Backlog::with_lag(100, 300);
        // 60 + 40 = 100: both fit in memory.
        assert_eq!(b.hand_over(1, 60, 50), Handoff::Engine);
        assert_eq!(b.hand_over(2, 40, 30), Handoff::Engine);
        // 100 + 1 does not: the record stays in the log (its length counts), the first to.
        assert_eq!(b.hand_over(3, 1, 1), Handoff::FirstInLog);
        // Behind it, even one that fits in memory stays in the log.
        b.done(60);
        assert_eq!(b.hand_over(4, 8, 5), Handoff::InLog);
        assert_eq!((b.bytes(), b.lag()), (40, 46));
        assert_eq!(b.left_upto(), Some(4));
        // The lag counts both: 46 + 255 = 301 is over 300.
        assert_eq!(b.hand_over(5, 400, 255), Handoff::InLog);
        assert!(b.over());
        // The engine read records 3 and 4 back: record 5 is still in the log only.
        b.done_from_log(1);
        b.done_from_log(5);
        assert!(!b.caught_up(4));
        assert!(b.left_upto().is_some());
        b.done_from_log(255);
        assert!(b.caught_up(5));
        assert!(b.left_upto().is_none());
        assert_eq!((b.bytes(), b.lag()), (40, 40));
        // Records are handed over again.
        assert_eq!(b.hand_over(6, 60, 50), Handoff::Engine);
        // With no room for a lag beyond memory (`new`), records are always handed over.
        let all_in_memory = Backlog::new(100);
        assert_eq!(all_in_memory.hand_over(1, 500, 400), Handoff::Engine);
        assert!(all_in_memory.over());
    }

    #[test]
    fn the_lag_limit_is_four_budgets_at_most_a_quarter_of_the_log() {
        // The defaults, 64 MiB and 1 GiB: 256 MiB.
        assert_eq!(Backlog::lag_limit_for(64 << 20, 1 << 30), 256 << 20);
        // A log of 8 MiB: 2 MiB.
        assert_eq!(Backlog::lag_limit_for(4 << 20, 8 << 20), 2 << 20);
        // A log of 2 MiB would give 512 KiB: the memory limit, 1 MiB (nothing stays in the log).
        assert_eq!(Backlog::lag_limit_for(4 << 20, 2 << 20), 1 << 20);
    }

    #[test]
    fn the_limit_is_a_quarter_of_the_budget_with_a_floor() {
        // The default budget, 64 MiB: 16 MiB.
        assert_eq!(Backlog::limit_for(64 << 20), 16 << 20);
        // 8 MiB: 2 MiB.
        assert_eq!(Backlog::limit_for(8 << 20), 2 << 20);
        // 2 MiB would give 512 KiB: the floor, 1 MiB.
        assert_eq!(Backlog::limit_for(2 << 20), 1 << 20);
    }
}
