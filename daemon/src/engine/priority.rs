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
