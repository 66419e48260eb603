//! The systemd notification module, tested by playing systemd: the test binds the
//! `NOTIFY_SOCKET` datagram socket itself and reads what the daemon's code sends.

use std::ffi::OsString;
use std::io::ErrorKind;
use std::os::unix::net::UnixDatagram;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tsfiled::notify;
use tsfiled::notify::{
    watchdog_interval, ComponentHealth, Notifier, NotifyAddr, ProgressTracker, Watchdog,
};

/// Guards against a hang; never a timing assertion.
const HANG_GUARD: Duration = Duration::from_secs(20);

/// The service manager's end: a bound datagram socket in a temporary directory.
struct FakeSystemd {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    socket: UnixDatagram,
}

impl FakeSystemd {
    fn new() -> FakeSystemd {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("notify");
        let socket = UnixDatagram::bind(&path).expect("bind notify socket");
        socket.set_read_timeout(Some(HANG_GUARD)).expect("timeout");
        FakeSystemd {
            _dir: dir,
            path,
            socket,
        }
    }

    fn notifier(&self) -> Notifier {
        Notifier::new(NotifyAddr::Path(self.path.clone())).expect("notifier")
    }

    fn recv(&self) -> String {
        let mut buf = [0u8; 4096];
        let n = self.socket.recv(&mut buf).expect("a notification");
        String::from_utf8(buf[..n].to_vec()).expect("utf-8 notification")
    }

    /// Every datagram already queued, without waiting.
    fn drain(&self) -> Vec<String> {
        self.socket.set_nonblocking(true).expect("nonblocking");
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match self.socket.recv(&mut buf) {
                Ok(n) => out.push(String::from_utf8_lossy(&buf[..n]).into_owned()),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => panic!("recv: {e}"),
            }
        }
        self.socket.set_nonblocking(false).expect("blocking");
        out
    }

    /// Reads until a datagram equal to `want` arrives; returns the ones before it.
    fn recv_until(&self, want: &str) -> Vec<String> {
        self.recv_until_prefix(want, "")
    }

    /// Reads until a datagram `want` + `suffix…` arrives; returns the ones before it.
    fn recv_until_prefix(&self, want: &str, suffix: &str) -> Vec<String> {
        let mut before = Vec::new();
        loop {
            let m = self.recv();
            if m == want || (!suffix.is_empty() && m.starts_with(want) && m.ends_with(suffix)) {
                return before;
            }
            before.push(m);
        }
    }
}

/// Waits until the watchdog has completed `n` more checks than `from`.
fn wait_checks(w: &Watchdog, from: u64, n: u64) {
    let start = Instant::now();
    while w.checks() < from + n {
        assert!(
            start.elapsed() < HANG_GUARD,
            "watchdog thread stopped checking"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn notify_socket_values_parse() {
    assert_eq!(
        NotifyAddr::parse("/run/systemd/notify".as_ref()).unwrap(),
        NotifyAddr::Path("/run/systemd/notify".into())
    );
    assert_eq!(
        NotifyAddr::parse("@/org/freedesktop/systemd1/notify/42".as_ref()).unwrap(),
        NotifyAddr::Abstract(b"/org/freedesktop/systemd1/notify/42".to_vec())
    );
    for bad in ["relative/sock", "@", "vsock:2:1234", ""] {
        let e = NotifyAddr::parse(bad.as_ref()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{bad:?}");
    }
    assert!(!Notifier::from_value(None).unwrap().is_enabled());
    assert!(!Notifier::from_value(Some(OsString::new()))
        .unwrap()
        .is_enabled());
    assert!(Notifier::from_value(Some("nonsense".into())).is_err());
    // A disabled notifier accepts every call.
    let off = Notifier::disabled();
    off.ready().unwrap();
    off.watchdog().unwrap();
    off.reloading().unwrap();
}

#[test]
fn lifecycle_messages_reach_the_path_socket() {
    let systemd = FakeSystemd::new();
    let n = Notifier::from_value(Some(systemd.path.clone().into_os_string())).unwrap();
    assert!(n.is_enabled());

    n.status("recovering: replaying 3 WAL segments").unwrap();
    assert_eq!(
        systemd.recv(),
        "STATUS=recovering: replaying 3 WAL segments"
    );
    n.extend_timeout(Duration::from_secs(90)).unwrap();
    assert_eq!(systemd.recv(), "EXTEND_TIMEOUT_USEC=90000000");
    n.ready().unwrap();
    assert_eq!(systemd.recv(), "READY=1");
    n.status("default: 12000 points/s\n0 rejected").unwrap();
    assert_eq!(systemd.recv(), "STATUS=default: 12000 points/s 0 rejected");
    n.watchdog().unwrap();
    assert_eq!(systemd.recv(), "WATCHDOG=1");

    let before = notify::monotonic_usec().expect("CLOCK_MONOTONIC");
    n.reloading().unwrap();
    let after = notify::monotonic_usec().expect("CLOCK_MONOTONIC");
    let msg = systemd.recv();
    let usec: u64 = msg
        .strip_prefix("RELOADING=1\nMONOTONIC_USEC=")
        .unwrap_or_else(|| panic!("unexpected {msg:?}"))
        .parse()
        .expect("a number");
    assert!(
        before <= usec && usec <= after,
        "{before} <= {usec} <= {after}"
    );
    n.ready_with_status("reloaded").unwrap();
    assert_eq!(systemd.recv(), "READY=1\nSTATUS=reloaded");
    n.stopping().unwrap();
    assert_eq!(systemd.recv(), "STOPPING=1");
    assert!(systemd.drain().is_empty());
}

#[test]
fn monotonic_usec_is_the_monotonic_clock() {
    // /proc/uptime is CLOCK_BOOTTIME, which never runs behind CLOCK_MONOTONIC and only runs
    // ahead by the time spent suspended; a wrong clock (realtime: ~1.7e15 µs) fails here.
    let usec = notify::monotonic_usec().expect("CLOCK_MONOTONIC");
    let uptime = std::fs::read_to_string("/proc/uptime").expect("/proc/uptime");
    let boot_secs: f64 = uptime
        .split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .expect("uptime seconds");
    assert!(usec > 0);
    assert!(
        (usec as f64) <= (boot_secs + 1.0) * 1e6,
        "{usec} µs vs uptime {boot_secs} s"
    );
}

#[test]
fn abstract_socket_receives() {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::SocketAddr;
    let name = format!("tsfiled-notify-test-{}", std::process::id());
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let socket = UnixDatagram::bind_addr(&addr).expect("bind abstract");
    socket.set_read_timeout(Some(HANG_GUARD)).unwrap();

    let n = Notifier::from_value(Some(format!("@{name}").into())).unwrap();
    n.ready().unwrap();
    n.watchdog().unwrap();
    let mut buf = [0u8; 256];
    let len = socket.recv(&mut buf).unwrap();
    assert_eq!(&buf[..len], b"READY=1");
    let len = socket.recv(&mut buf).unwrap();
    assert_eq!(&buf[..len], b"WATCHDOG=1");
}

#[test]
fn sending_to_a_missing_socket_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let n = Notifier::new(NotifyAddr::Path(dir.path().join("absent"))).unwrap();
    assert!(n.ready().is_err());
}

#[test]
fn watchdog_interval_is_half_of_watchdog_usec_for_this_pid() {
    let half = Some(Duration::from_secs(15));
    assert_eq!(watchdog_interval(Some("30000000"), None, 7), half);
    assert_eq!(watchdog_interval(Some("30000000"), Some("7"), 7), half);
    assert_eq!(watchdog_interval(Some("30000000"), Some("8"), 7), None);
    assert_eq!(watchdog_interval(Some("30000000"), Some("x"), 7), None);
    assert_eq!(watchdog_interval(Some("0"), None, 7), None);
    assert_eq!(watchdog_interval(Some("-5"), None, 7), None);
    assert_eq!(watchdog_interval(Some("30s"), None, 7), None);
    assert_eq!(watchdog_interval(None, Some("7"), 7), None);
}

#[test]
fn idle_is_healthy_and_pending_without_progress_is_wedged() {
    let tracker = ProgressTracker::new();
    let stall = Duration::from_secs(60);
    let writer = tracker.register("writer/default", stall);
    let t0 = Instant::now();
    let day = Duration::from_secs(86_400);

    // Idle for a day: healthy.
    assert!(tracker.wedged_at(t0 + day).is_empty());

    // Work arrives: the stall clock starts now, so it is not wedged at once.
    writer.add_pending(3);
    assert!(tracker.wedged_at(Instant::now()).is_empty());
    let wedged = tracker.wedged_at(Instant::now() + stall + Duration::from_secs(1));
    assert_eq!(wedged.len(), 1);
    assert_eq!(wedged[0].name, "writer/default");
    assert_eq!(wedged[0].pending, 3);

    // More work arriving does not hide the lack of progress.
    writer.add_pending(5);
    let wedged = tracker.wedged_at(Instant::now() + stall + Duration::from_secs(1));
    assert_eq!(wedged[0].pending, 8);

    // Progress with work left: healthy until the next stall timeout.
    writer.complete(2);
    let later = Instant::now();
    assert!(tracker.wedged_at(later).is_empty());
    assert_eq!(tracker.snapshot_at(later)[0].pending, 6);
    assert_eq!(
        tracker.wedged_at(later + stall + Duration::from_secs(1))[0].pending,
        6
    );

    // All done: idle again, healthy forever.
    writer.complete(6);
    assert!(tracker.wedged_at(Instant::now() + day).is_empty());

    // Completing more than pending saturates at zero.
    writer.complete(10);
    assert_eq!(tracker.snapshot()[0].pending, 0);
}

#[test]
fn sampled_queue_depth_and_deregistration() {
    let tracker = ProgressTracker::new();
    let stall = Duration::from_secs(30);
    let source = tracker.register("source/default/broker", stall);
    let clone = source.clone();
    source.set_pending(4);
    let late = Instant::now() + stall + Duration::from_secs(1);
    assert_eq!(tracker.wedged_at(late).len(), 1);
    // A progress tick resets the clock, pending unchanged.
    clone.progress();
    assert!(tracker.wedged_at(Instant::now()).is_empty());
    source.set_pending(0);
    assert!(tracker
        .wedged_at(Instant::now() + Duration::from_secs(3600))
        .is_empty());

    // The component is watched until the last handle goes.
    let other = tracker.register("writer/default", stall);
    assert_eq!(tracker.snapshot().len(), 2);
    drop(source);
    assert_eq!(tracker.snapshot().len(), 2);
    drop(clone);
    let names: Vec<String> = tracker.snapshot().into_iter().map(|c| c.name).collect();
    assert_eq!(names, ["writer/default"]);
    assert_eq!(other.name(), "writer/default");
}

#[test]
fn a_stalled_component_stops_the_watchdog_pings() {
    let systemd = FakeSystemd::new();
    let tracker = ProgressTracker::new();
    let writer = tracker.register("writer/default", Duration::from_secs(3600));
    // Zero stall timeout: wedged as soon as it has pending work and no progress.
    let source = tracker.register("source/default/broker", Duration::ZERO);
    let changes: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
    let seen = Arc::clone(&changes);
    let dog = Watchdog::spawn(
        systemd.notifier(),
        tracker.clone(),
        Duration::from_millis(5),
        Some(Box::new(move |w: &[ComponentHealth]| {
            seen.lock()
                .unwrap()
                .push(w.iter().map(|c| c.name.clone()).collect());
        })),
    )
    .unwrap();

    // Healthy (both idle, the writer busy but progressing): pings arrive.
    writer.add_pending(1);
    for _ in 0..3 {
        assert_eq!(systemd.recv(), "WATCHDOG=1");
    }
    writer.complete(1);

    // The source gets work and never makes progress: the watchdog says so, then goes quiet.
    source.add_pending(1);
    // "… for 0s" unless the machine is very slow.
    let before = systemd.recv_until_prefix(
        "STATUS=watchdog: wedged: source/default/broker: 1 pending, no progress for ",
        "s",
    );
    assert!(before.iter().all(|m| m == "WATCHDOG=1"), "{before:?}");
    let c = dog.checks();
    wait_checks(&dog, c, 5);
    let quiet = systemd.drain();
    assert!(quiet.is_empty(), "pings while wedged: {quiet:?}");

    // It recovers: the pings resume.
    source.complete(1);
    assert!(systemd
        .recv_until("STATUS=watchdog: healthy again")
        .is_empty());
    assert_eq!(systemd.recv(), "WATCHDOG=1");
    assert_eq!(systemd.recv(), "WATCHDOG=1");

    // A wedged writer stops them as well.
    let stuck_writer = tracker.register("writer/other", Duration::ZERO);
    stuck_writer.set_pending(2);
    let before = systemd.recv_until_prefix(
        "STATUS=watchdog: wedged: writer/other: 2 pending, no progress for ",
        "s",
    );
    assert!(before.iter().all(|m| m == "WATCHDOG=1"), "{before:?}");
    let c = dog.checks();
    wait_checks(&dog, c, 5);
    assert!(systemd.drain().is_empty());

    dog.stop();
    let changes = changes.lock().unwrap().clone();
    assert_eq!(
        changes,
        vec![
            vec!["source/default/broker".to_string()],
            vec![],
            vec!["writer/other".to_string()],
        ]
    );
}

#[test]
fn watchdog_stops_on_drop() {
    let systemd = FakeSystemd::new();
    let dog = Watchdog::spawn(
        systemd.notifier(),
        ProgressTracker::new(),
        Duration::from_millis(2),
        None,
    )
    .unwrap();
    assert_eq!(systemd.recv(), "WATCHDOG=1");
    drop(dog); // joins the thread
    let _ = systemd.drain();
    // After the join nothing can be sent any more: the queue stays empty.
    std::thread::sleep(Duration::from_millis(20));
    assert!(systemd.drain().is_empty());
}
