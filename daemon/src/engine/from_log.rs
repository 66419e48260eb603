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
        let Some(wal) = &self.wal else {
            return;
        };
        self.from_log = Some(FromLog {
            reader: LogReader::new(self.opts.fs.clone(), wal.dir.clone(), from),
            received,
            retry: None,
        });
        self.catch_up(true);
    }

    /// Applies the records left in the log, up to the last one the log left, until it left
    /// none after the last applied. A failed read is logged and tried again on a later tick
    /// (from the same record) with backoff; `now` tries at once. The thread runs at its
    /// lowest priority meanwhile, while the backlog is under half its lag limit
    /// ([`Niceness`]): in a burst, intake, which acknowledges, gets the cores first.
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
        let mut nice = Niceness::own();
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
                    nice.lower(backlog.lag() < backlog.lag_limit() / 2);
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

/// The engine thread's scheduling priority while it reads the log back. Lowered to nice 19
/// only where the thread may raise it back to its own (as root, or within `RLIMIT_NICE`),
/// and raised back when the backlog grows to half its lag limit and when reading ends.
struct Niceness {
    own: i32,
    low: bool,
    may_restore: bool,
}

impl Niceness {
    /// The calling thread's own priority.
    fn own() -> Niceness {
        let own = thread_nice();
        Niceness {
            own: own.unwrap_or(0),
            low: false,
            may_restore: own.is_some_and(may_return_to),
        }
    }

    /// Lowers (`true`) or restores the thread's priority.
    fn lower(&mut self, low: bool) {
        if low != self.low && self.may_restore {
            let nice = if low { LOW } else { self.own };
            if set_thread_nice(nice) {
                self.low = low;
            }
        }
    }
}

impl Drop for Niceness {
    fn drop(&mut self) {
        self.lower(false);
    }
}

/// The lowest priority (the highest nice value).
const LOW: i32 = 19;

#[cfg(target_os = "linux")]
fn thread_nice() -> Option<i32> {
    // SAFETY: plain system calls on the calling thread; -1 is told from an error by errno.
    unsafe {
        *libc::__errno_location() = 0;
        let nice = libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t);
        (nice != -1 || *libc::__errno_location() == 0).then_some(nice)
    }
}

#[cfg(target_os = "linux")]
fn set_thread_nice(nice: i32) -> bool {
    // SAFETY: a plain system call on the calling thread.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, nice) == 0 }
}

/// Whether a thread at nice `own` that lowered its priority may raise it back: as root, or
/// within `RLIMIT_NICE` (whose ceiling is nice `20 - limit`).
#[cfg(target_os = "linux")]
fn may_return_to(own: i32) -> bool {
    // SAFETY: plain system calls filling a local struct.
    unsafe {
        if libc::geteuid() == 0 {
            return true;
        }
        let mut lim = std::mem::zeroed::<libc::rlimit>();
        if libc::getrlimit(libc::RLIMIT_NICE, &mut lim) != 0 {
            return false;
        }
        lim.rlim_cur == libc::RLIM_INFINITY || 20 - (lim.rlim_cur.min(40) as i32) <= own
    }
}

#[cfg(not(target_os = "linux"))]
fn thread_nice() -> Option<i32> {
    None
}

#[cfg(not(target_os = "linux"))]
fn set_thread_nice(_nice: i32) -> bool {
    false
}

#[cfg(not(target_os = "linux"))]
fn may_return_to(_own: i32) -> bool {
    false
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The priority as the kernel reports it for this thread: field 19 of
    /// `/proc/thread-self/stat` (after the parenthesised name).
    fn reported_nice() -> i32 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        let after_name = stat.rsplit_once(')').unwrap().1;
        after_name
            .split_whitespace()
            .nth(16)
            .unwrap()
            .parse()
            .unwrap()
    }

    /// On a thread of its own (a test's): lowered to 19 and back where it may return (as
    /// root, as CI runs), unchanged where it may not.
    #[test]
    fn the_priority_is_lowered_and_restored_only_where_it_can_return() {
        std::thread::spawn(|| {
            let own = reported_nice();
            let mut nice = Niceness::own();
            assert_eq!(nice.own, own);
            nice.lower(true);
            let lowered = reported_nice();
            nice.lower(false);
            assert_eq!(reported_nice(), own);
            if nice.may_restore {
                assert_eq!(lowered, 19);
                nice.lower(true);
                drop(nice);
                assert_eq!(reported_nice(), own);
            } else {
                assert_eq!(lowered, own);
            }
        })
        .join()
        .unwrap();
    }
}
