//! The engine's backlog: durable records the write-ahead log handed to the engine and the
//! engine has not applied yet. The log's thread hands records over without waiting (the
//! engine's channel is unbounded), so an engine busy with a flush or a seal never delays an
//! acknowledgement; intake waits instead, before a batch enters the log, while the backlog is
//! over its limit (and is refused only when it waited in vain for [`Backlog::MAX_WAIT`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// Bytes of record payloads (their allocations) handed to the engine and not applied yet
/// (shared by the log's thread, which adds, the engine's thread, which subtracts, and intake,
/// which waits for room).
#[derive(Debug, Clone)]
pub struct Backlog(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    bytes: AtomicUsize,
    limit: usize,
    /// Tasks and threads waiting for room now.
    waiters: AtomicUsize,
    /// Woken when the backlog falls to its limit: tasks waiting for room.
    room: Notify,
    /// The same for threads ([`Backlog::wait_blocking`]).
    room_lock: Mutex<()>,
    room_cv: Condvar,
}

impl Backlog {
    /// The refusal reason intake reports when the backlog stayed over its limit for
    /// [`Backlog::MAX_WAIT`] (an engine that stopped applying records).
    pub const REASON: &'static str = "engine backlog";

    /// How long intake waits for room before refusing. A flush of the largest memtable holds
    /// the engine for well under a second between the points where it takes in records, so
    /// only an engine that is stuck makes a batch wait this long.
    pub const MAX_WAIT: Duration = Duration::from_secs(10);

    /// An empty backlog that makes intake wait once it holds more than `limit` bytes.
    pub fn new(limit: usize) -> Backlog {
        Backlog(Arc::new(Inner {
            bytes: AtomicUsize::new(0),
            limit,
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

    /// A record of `n` bytes was handed to the engine.
    pub fn add(&self, n: usize) {
        self.0.bytes.fetch_add(n, Ordering::SeqCst);
    }

    /// The engine applied a record of `n` bytes; wakes the waiting intake when that brings
    /// the backlog down to its limit.
    pub fn done(&self, n: usize) {
        let before = self.0.bytes.fetch_sub(n, Ordering::SeqCst);
        if before > self.0.limit && before - n <= self.0.limit {
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

    /// Whether intake waits: the backlog holds more than its limit.
    pub fn over(&self) -> bool {
        self.bytes() > self.0.limit
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
