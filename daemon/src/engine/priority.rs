//! The engine thread's priority: lowered while the engine's backlog is small, so that in a
//! burst intake, which acknowledges, gets the cores first and the engine applies records in
//! the cores' idle time (records past the backlog's memory limit wait in the log, see
//! [`Backlog`](crate::pipeline::Backlog)); its own again once the backlog grows to half its
//! lag limit, so that under steady load the engine keeps its share against other processes.

use super::Engine;

impl Engine {
    /// Sets the engine thread's priority for the backlog now: lowered at a quarter of the lag
    /// limit or less, its own at half or more (between the two, as it was).
    pub(super) fn pace(&mut self) {
        let (Some(nice), Some(backlog)) = (self.priority.as_mut(), self.backlog.as_ref()) else {
            return;
        };
        let (lag, limit) = (backlog.lag(), backlog.lag_limit());
        if lag <= limit / 4 {
            nice.lower(true);
        } else if lag >= limit / 2 {
            nice.lower(false);
        }
    }
}

/// A thread's scheduling priority: its own, or lowered to nice 19, only where the thread may
/// raise it back to its own (as root, or within `RLIMIT_NICE`).
pub(super) struct Niceness {
    own: i32,
    low: bool,
    may_restore: bool,
}

impl Niceness {
    /// The calling thread's own priority.
    pub(super) fn own() -> Niceness {
        let own = thread_nice();
        Niceness {
            own: own.unwrap_or(0),
            low: false,
            may_restore: own.is_some_and(may_return_to),
        }
    }

    /// Lowers (`true`) or restores the thread's priority.
    pub(super) fn lower(&mut self, low: bool) {
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
/// within `RLIMIT_NICE` (whose ceiling is nice `20 - limit`), read from `/proc/self/limits`
/// rather than through `getrlimit`, which a systemd unit's `~@resources` filter may forbid.
#[cfg(target_os = "linux")]
fn may_return_to(own: i32) -> bool {
    // SAFETY: a plain system call.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    nice_ceiling(&limits).is_some_and(|ceiling| ceiling <= own)
}

/// The lowest nice value `RLIMIT_NICE` lets a thread return to, from the text of
/// `/proc/self/limits` (its soft limit `n` allows `20 - n`; `unlimited`, any).
#[cfg(target_os = "linux")]
fn nice_ceiling(limits: &str) -> Option<i32> {
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max nice priority"))?;
    let soft = line["Max nice priority".len()..]
        .split_whitespace()
        .next()?;
    if soft == "unlimited" {
        return Some(-20);
    }
    Some(20 - soft.parse::<i32>().ok()?.clamp(0, 40))
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

    /// `/proc/self/limits` as Linux prints it (`proc(5)`): the soft limit is the first
    /// column. 0 (the default) allows nice 20 and up, i.e. no return; 20 (`LimitNICE=+0`)
    /// nice 0.
    #[test]
    fn the_nice_ceiling_comes_from_the_soft_limit() {
        let limits = |soft: &str| {
            format!(
                "Limit                     Soft Limit           Hard Limit           Units     \n\
                 Max realtime priority     0                    0                    \n\
                 Max nice priority         {soft:<20} 40                   \n"
            )
        };
        assert_eq!(nice_ceiling(&limits("0")), Some(20));
        assert_eq!(nice_ceiling(&limits("20")), Some(0));
        assert_eq!(nice_ceiling(&limits("40")), Some(-20));
        assert_eq!(nice_ceiling(&limits("unlimited")), Some(-20));
        assert_eq!(nice_ceiling("Max open files 1024 1024 files\n"), None);
    }

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
    /// Lag limit 1000 (a quarter 250, half 500): low up to 250, its own from 500, as it was
    /// in between (where the priority cannot return, it never changes).
    #[test]
    fn the_engine_runs_low_up_to_a_quarter_of_its_lag_limit_and_its_own_from_half() {
        use crate::engine::schema::Registry;
        use crate::engine::EngineOptions;
        use crate::metrics::Metrics;
        use crate::pipeline::Backlog;
        use std::sync::{Arc, Mutex};
        std::thread::spawn(|| {
            let tmp = tempfile::tempdir().unwrap();
            let registry = Arc::new(Mutex::new(Registry::in_memory(vec![])));
            let opts = EngineOptions::new("t", tmp.path());
            let mut e = Engine::open(opts, registry, Metrics::new()).unwrap();
            // A memory limit of 10 bytes: from the second record of 10 on, all in the log.
            let backlog = Backlog::with_lag(10, 1000);
            e.set_backlog(backlog.clone());
            let own = reported_nice();
            e.priority = Some(Niceness::own());
            let low = if e.priority.as_ref().unwrap().may_restore {
                19
            } else {
                own
            };
            let mut lsn = 1 << 40;
            let mut lag_to = |n: usize| {
                while backlog.lag() < n {
                    backlog.hand_over(lsn, 10, 10);
                    lsn += 18;
                }
                assert_eq!(backlog.lag(), n);
            };
            let nice_at = |e: &mut Engine| {
                e.pace();
                reported_nice()
            };
            assert_eq!(nice_at(&mut e), low);
            lag_to(250);
            assert_eq!(nice_at(&mut e), low);
            lag_to(300);
            assert_eq!(nice_at(&mut e), low);
            lag_to(500);
            assert_eq!(nice_at(&mut e), own);
            backlog.done_from_log(200);
            assert_eq!(nice_at(&mut e), own);
            backlog.done_from_log(50);
            assert_eq!(nice_at(&mut e), low);
            drop(e);
            assert_eq!(reported_nice(), own);
        })
        .join()
        .unwrap();
    }

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
