//! systemd integration: service notifications over `NOTIFY_SOCKET` and a watchdog that
//! pings only while every registered component makes progress.
//!
//! Self-contained (std only). The daemon creates one [`Notifier`] with
//! [`Notifier::from_env`] (a disabled no-op when not started by systemd), sends
//! [`Notifier::ready`] once every pipeline is up, [`Notifier::status`] with a short
//! throughput summary, [`Notifier::reloading`] / [`Notifier::ready`] around a SIGHUP reload and
//! [`Notifier::stopping`] on shutdown.
//!
//! Liveness: every pipeline writer and every source registers with one [`ProgressTracker`]
//! and ticks its [`Progress`] handle (one atomic word: pending work and the time of the last
//! progress). A component with no pending work is idle, which is healthy however long it
//! lasts; a component with pending work and no progress for longer than its stall timeout is
//! wedged. [`Watchdog::spawn`] sends `WATCHDOG=1` every half `WATCHDOG_USEC` while no
//! component is wedged; a wedged writer or source stops the pings, so systemd's
//! `WatchdogSec=` restarts the service.

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Where notifications go: a filesystem socket or a Linux abstract socket (`@name`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotifyAddr {
    /// A unix datagram socket at this path.
    Path(PathBuf),
    /// A Linux abstract-namespace socket; the name without the leading `@`.
    Abstract(Vec<u8>),
}

impl NotifyAddr {
    /// Parses a `NOTIFY_SOCKET` value: `/path` or `@abstract-name`. Other forms (relative
    /// paths, `vsock:`) are refused with [`io::ErrorKind::InvalidInput`].
    pub fn parse(value: &std::ffi::OsStr) -> io::Result<NotifyAddr> {
        use std::os::unix::ffi::OsStrExt;
        let bytes = value.as_bytes();
        match bytes.first() {
            Some(b'/') => Ok(NotifyAddr::Path(PathBuf::from(value))),
            Some(b'@') if bytes.len() > 1 => Ok(NotifyAddr::Abstract(bytes[1..].to_vec())),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "NOTIFY_SOCKET {:?}: expected an absolute path or @abstract-name",
                    value
                ),
            )),
        }
    }
}

struct Target {
    socket: UnixDatagram,
    addr: NotifyAddr,
}

impl Target {
    fn send(&self, msg: &[u8]) -> io::Result<()> {
        let n = match &self.addr {
            NotifyAddr::Path(p) => self.socket.send_to(msg, p)?,
            NotifyAddr::Abstract(name) => send_abstract(&self.socket, msg, name)?,
        };
        if n == msg.len() {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!("notification truncated: {n} of {} bytes sent", msg.len()),
            ))
        }
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn send_abstract(socket: &UnixDatagram, msg: &[u8], name: &[u8]) -> io::Result<usize> {
    #[cfg(target_os = "android")]
    use std::os::android::net::SocketAddrExt;
    #[cfg(target_os = "linux")]
    use std::os::linux::net::SocketAddrExt;
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
    socket.send_to_addr(msg, &addr)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn send_abstract(_: &UnixDatagram, _: &[u8], _: &[u8]) -> io::Result<usize> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "abstract unix sockets exist only on Linux",
    ))
}

/// Sends sd_notify(3) messages to the service manager. Cheap to clone; a disabled
/// notifier (not run by systemd) accepts every call and sends nothing.
#[derive(Clone)]
pub struct Notifier {
    target: Option<Arc<Target>>,
}

impl fmt::Debug for Notifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.target {
            Some(t) => f.debug_tuple("Notifier").field(&t.addr).finish(),
            None => f.write_str("Notifier(disabled)"),
        }
    }
}

impl Notifier {
    /// A notifier that sends nothing.
    pub fn disabled() -> Notifier {
        Notifier { target: None }
    }

    /// Sends to `addr` (the value of `NOTIFY_SOCKET`, or a test's own socket).
    pub fn new(addr: NotifyAddr) -> io::Result<Notifier> {
        let socket = UnixDatagram::unbound()?;
        Ok(Notifier {
            target: Some(Arc::new(Target { socket, addr })),
        })
    }

    /// From `NOTIFY_SOCKET`: disabled when it is unset or empty, an error when it is malformed.
    pub fn from_env() -> io::Result<Notifier> {
        Notifier::from_value(std::env::var_os("NOTIFY_SOCKET"))
    }

    /// As [`Notifier::from_env`] for a given value of `NOTIFY_SOCKET`.
    pub fn from_value(value: Option<OsString>) -> io::Result<Notifier> {
        match value {
            Some(v) if !v.is_empty() => Notifier::new(NotifyAddr::parse(&v)?),
            _ => Ok(Notifier::disabled()),
        }
    }

    /// Whether notifications are sent anywhere.
    pub fn is_enabled(&self) -> bool {
        self.target.is_some()
    }

    /// Sends raw `KEY=VALUE` lines (newline-separated) as one datagram.
    pub fn send(&self, state: &str) -> io::Result<()> {
        match &self.target {
            Some(t) => t.send(state.as_bytes()),
            None => Ok(()),
        }
    }

    /// `READY=1`: startup finished (every pipeline is up), or a reload finished.
    pub fn ready(&self) -> io::Result<()> {
        self.send("READY=1")
    }

    /// `READY=1` with a `STATUS=` line in the same datagram.
    pub fn ready_with_status(&self, status: &str) -> io::Result<()> {
        self.send(&format!("READY=1\nSTATUS={}", one_line(status)))
    }

    /// `STOPPING=1`: shutdown has begun.
    pub fn stopping(&self) -> io::Result<()> {
        self.send("STOPPING=1")
    }

    /// `RELOADING=1` with `MONOTONIC_USEC=` (CLOCK_MONOTONIC now), as systemd requires for
    /// reloads; follow it with [`Notifier::ready`] when the reload is done (or failed and
    /// the old configuration stays).
    pub fn reloading(&self) -> io::Result<()> {
        match monotonic_usec() {
            Some(usec) => self.send(&format!("RELOADING=1\nMONOTONIC_USEC={usec}")),
            None => self.send("RELOADING=1"),
        }
    }

    /// `STATUS=…`: a one-line status shown by `systemctl status`. Newlines become spaces.
    pub fn status(&self, text: &str) -> io::Result<()> {
        self.send(&format!("STATUS={}", one_line(text)))
    }

    /// `WATCHDOG=1`: the service is alive.
    pub fn watchdog(&self) -> io::Result<()> {
        self.send("WATCHDOG=1")
    }

    /// `EXTEND_TIMEOUT_USEC=…`: asks for more time for the current start-up, reload or stop
    /// (e.g. while a long recovery replays the write-ahead log).
    pub fn extend_timeout(&self, by: Duration) -> io::Result<()> {
        self.send(&format!("EXTEND_TIMEOUT_USEC={}", by.as_micros()))
    }
}

fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect()
}

/// CLOCK_MONOTONIC in microseconds, the clock systemd compares `MONOTONIC_USEC` with.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn monotonic_usec() -> Option<u64> {
    use std::ffi::{c_int, c_long};
    // `struct timespec` of the default (non-`_TIME_BITS=64`) `clock_gettime` symbol:
    // both fields are `long` on glibc and musl, 32- and 64-bit alike.
    #[repr(C)]
    struct Timespec {
        tv_sec: c_long,
        tv_nsec: c_long,
    }
    extern "C" {
        fn clock_gettime(clock: c_int, tp: *mut Timespec) -> c_int;
    }
    const CLOCK_MONOTONIC: c_int = 1;
    let mut ts = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { clock_gettime(CLOCK_MONOTONIC, &mut ts) };
    if rc != 0 {
        return None;
    }
    let secs = u64::try_from(ts.tv_sec).ok()?;
    let nanos = u64::try_from(ts.tv_nsec).ok()?;
    secs.checked_mul(1_000_000)?.checked_add(nanos / 1_000)
}

/// CLOCK_MONOTONIC is not read on this platform.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub fn monotonic_usec() -> Option<u64> {
    None
}

/// The ping interval (half of `WATCHDOG_USEC`) when systemd's watchdog is enabled for this
/// process: `WATCHDOG_USEC` set to a positive number and `WATCHDOG_PID`, if set, equal to our
/// pid.
pub fn watchdog_interval_from_env() -> Option<Duration> {
    watchdog_interval(
        std::env::var("WATCHDOG_USEC").ok().as_deref(),
        std::env::var("WATCHDOG_PID").ok().as_deref(),
        std::process::id(),
    )
}

/// As [`watchdog_interval_from_env`] for given variable values and pid.
pub fn watchdog_interval(usec: Option<&str>, pid: Option<&str>, my_pid: u32) -> Option<Duration> {
    let usec: u64 = usec?.trim().parse().ok()?;
    if usec == 0 {
        return None;
    }
    if let Some(pid) = pid {
        if pid.trim().parse::<u32>().ok()? != my_pid {
            return None;
        }
    }
    Some(Duration::from_micros(usec / 2))
}

// One word per component: pending work in the high bits, last progress in the low bits.
const TIME_BITS: u32 = 40;
const TIME_MASK: u64 = (1 << TIME_BITS) - 1;
const MAX_PENDING: u64 = (1 << (64 - TIME_BITS)) - 1;

fn pack(pending: u64, ms: u64) -> u64 {
    (pending.min(MAX_PENDING) << TIME_BITS) | (ms & TIME_MASK)
}

fn unpack(word: u64) -> (u64, u64) {
    (word >> TIME_BITS, word & TIME_MASK)
}

struct ComponentState {
    name: String,
    stall_after: Duration,
    word: AtomicU64,
}

struct TrackerInner {
    epoch: Instant,
    components: Mutex<Vec<Weak<ComponentState>>>,
}

impl TrackerInner {
    /// Milliseconds since the tracker's epoch (40 bits hold 34 years).
    fn ms(&self, at: Instant) -> u64 {
        let ms = at.saturating_duration_since(self.epoch).as_millis();
        u64::try_from(ms).unwrap_or(TIME_MASK).min(TIME_MASK)
    }
}

/// The set of components whose progress the watchdog watches. Cheap to clone.
#[derive(Clone)]
pub struct ProgressTracker {
    inner: Arc<TrackerInner>,
}

impl Default for ProgressTracker {
    fn default() -> Self {
        ProgressTracker::new()
    }
}

impl fmt::Debug for ProgressTracker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProgressTracker")
            .field("components", &self.snapshot())
            .finish()
    }
}

impl ProgressTracker {
    /// An empty tracker (healthy).
    pub fn new() -> ProgressTracker {
        ProgressTracker {
            inner: Arc::new(TrackerInner {
                epoch: Instant::now(),
                components: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Registers a component, e.g. `writer/default` or `source/default/broker`. It counts as
    /// wedged once it has had pending work and no progress for longer than `stall_after`.
    /// The component is watched until the last clone of the returned handle is dropped.
    pub fn register(&self, name: impl Into<String>, stall_after: Duration) -> Progress {
        let state = Arc::new(ComponentState {
            name: name.into(),
            stall_after,
            word: AtomicU64::new(pack(0, self.inner.ms(Instant::now()))),
        });
        let mut list = self
            .inner
            .components
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        list.retain(|w| w.strong_count() > 0);
        list.push(Arc::downgrade(&state));
        Progress {
            state,
            tracker: Arc::clone(&self.inner),
        }
    }

    /// The state of every live component now.
    pub fn snapshot(&self) -> Vec<ComponentHealth> {
        self.snapshot_at(Instant::now())
    }

    /// The state of every live component as of `now` (tests pass a later instant instead of
    /// sleeping).
    pub fn snapshot_at(&self, now: Instant) -> Vec<ComponentHealth> {
        let now_ms = self.inner.ms(now);
        let mut list = self
            .inner
            .components
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        list.retain(|w| w.strong_count() > 0);
        list.iter()
            .filter_map(Weak::upgrade)
            .map(|c| {
                let (pending, last_ms) = unpack(c.word.load(Ordering::Acquire));
                let since = Duration::from_millis(now_ms.saturating_sub(last_ms));
                ComponentHealth {
                    name: c.name.clone(),
                    pending,
                    since_progress: since,
                    wedged: pending > 0 && since >= c.stall_after,
                }
            })
            .collect()
    }

    /// The wedged components now (empty: healthy).
    pub fn wedged(&self) -> Vec<ComponentHealth> {
        self.wedged_at(Instant::now())
    }

    /// The wedged components as of `now`.
    pub fn wedged_at(&self, now: Instant) -> Vec<ComponentHealth> {
        self.snapshot_at(now)
            .into_iter()
            .filter(|c| c.wedged)
            .collect()
    }

    /// Whether no component is wedged now.
    pub fn is_healthy(&self) -> bool {
        self.wedged().is_empty()
    }
}

/// One component's state in a [`ProgressTracker::snapshot`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentHealth {
    /// The name given at registration.
    pub name: String,
    /// Pending work items (saturates at 2^24 - 1).
    pub pending: u64,
    /// Time since the last progress, or since work became pending after an idle spell.
    pub since_progress: Duration,
    /// Pending work and no progress for at least the stall timeout.
    pub wedged: bool,
}

impl fmt::Display for ComponentHealth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} pending, no progress for {}s",
            self.name,
            self.pending,
            self.since_progress.as_secs()
        )
    }
}

/// A component's handle: tick it when work arrives and when work gets done. Every call is
/// one atomic read-modify-write; clones share the component.
#[derive(Clone)]
pub struct Progress {
    state: Arc<ComponentState>,
    tracker: Arc<TrackerInner>,
}

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (pending, _) = unpack(self.state.word.load(Ordering::Relaxed));
        f.debug_struct("Progress")
            .field("name", &self.state.name)
            .field("pending", &pending)
            .finish()
    }
}

impl Progress {
    fn update(&self, f: impl Fn(u64, u64, u64) -> (u64, u64)) {
        let now = self.tracker.ms(Instant::now());
        let _ = self
            .state
            .word
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
                let (pending, last) = unpack(w);
                let (p, t) = f(pending, last, now);
                Some(pack(p, t))
            });
    }

    /// Progress was made (a batch written, a message handled); pending work is unchanged.
    pub fn progress(&self) {
        self.update(|pending, _, now| (pending, now));
    }

    /// `n` work items arrived. After an idle spell the stall clock starts now; otherwise the
    /// time of the last progress stays, so steady arrivals cannot hide a wedge.
    pub fn add_pending(&self, n: u64) {
        self.update(|pending, last, now| {
            let t = if pending == 0 { now } else { last };
            (pending.saturating_add(n), t)
        });
    }

    /// `n` work items are done: progress, and `n` fewer pending.
    pub fn complete(&self, n: u64) {
        self.update(|pending, _, now| (pending.saturating_sub(n), now));
    }

    /// Sets the pending count to a sampled value (e.g. a queue's length). Like
    /// [`Progress::add_pending`], going from idle to busy starts the stall clock.
    pub fn set_pending(&self, n: u64) {
        self.update(|pending, last, now| {
            let t = if pending == 0 && n > 0 { now } else { last };
            (n, t)
        });
    }

    /// The component's name.
    pub fn name(&self) -> &str {
        &self.state.name
    }
}

/// A callback told about changes between healthy (empty slice) and wedged.
pub type OnChange = Box<dyn Fn(&[ComponentHealth]) + Send + 'static>;

/// The watchdog thread: every `interval` it checks the tracker and sends `WATCHDOG=1` only
/// when no component is wedged. On a change between healthy and wedged it sends a `STATUS=`
/// line naming the wedged components (or "watchdog: healthy again") and calls the callback.
/// Stops when dropped or on [`Watchdog::stop`].
pub struct Watchdog {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    checks: Arc<AtomicU64>,
}

impl fmt::Debug for Watchdog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watchdog")
            .field("checks", &self.checks())
            .finish()
    }
}

impl Watchdog {
    /// Starts the watchdog thread; `interval` is normally [`watchdog_interval_from_env`].
    pub fn spawn(
        notifier: Notifier,
        tracker: ProgressTracker,
        interval: Duration,
        on_change: Option<OnChange>,
    ) -> io::Result<Watchdog> {
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let checks = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&checks);
        let thread = std::thread::Builder::new()
            .name("watchdog".into())
            .spawn(move || {
                let mut was_healthy = true;
                loop {
                    let wedged = tracker.wedged();
                    let healthy = wedged.is_empty();
                    if healthy != was_healthy {
                        let status = if healthy {
                            "watchdog: healthy again".to_string()
                        } else {
                            let names: Vec<String> = wedged.iter().map(|c| c.to_string()).collect();
                            format!("watchdog: wedged: {}", names.join("; "))
                        };
                        let _ = notifier.status(&status);
                        if let Some(f) = &on_change {
                            f(&wedged);
                        }
                        was_healthy = healthy;
                    }
                    if healthy {
                        let _ = notifier.watchdog();
                    }
                    counter.fetch_add(1, Ordering::Release);
                    match stop_rx.recv_timeout(interval) {
                        Err(RecvTimeoutError::Timeout) => continue,
                        Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
            })?;
        Ok(Watchdog {
            stop: Some(stop_tx),
            thread: Some(thread),
            checks,
        })
    }

    /// How many checks the thread has completed (each one pinged if healthy).
    pub fn checks(&self) -> u64 {
        self.checks.load(Ordering::Acquire)
    }

    /// Stops the thread and waits for it.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.shutdown();
    }
}
