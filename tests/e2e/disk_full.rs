//! Storage faults under the real daemon: the data directory on a small tmpfs that fills up
//! (while running, and before a start), and a data directory remounted read-only. In every
//! case each acknowledged point ends up in the sealed files exactly once with its value,
//! intake is refused (503 with `Retry-After`) while storage is failing, and the daemon
//! resumes by itself once space or write access is back — no restart needed.
//!
//! These tests mount file systems, which needs root (CI runs as root); without it they
//! fail, they do not skip. Each test has a `_v4` twin, run with `storage.format_version = 4`.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tsfile::Value;

use crate::harness::*;

/// A file system mounted for one test (unmounted, lazily, when dropped).
struct Mount(PathBuf);

fn cstr(s: &str) -> CString {
    CString::new(s).unwrap()
}

fn mount_call(src: &str, target: &Path, fstype: &str, flags: libc::c_ulong, data: &str) {
    let target_c = cstr(target.to_str().unwrap());
    let (src, fstype, data) = (cstr(src), cstr(fstype), cstr(data));
    // SAFETY: mount(2) with NUL-terminated strings that outlive the call.
    let r = unsafe {
        libc::mount(
            src.as_ptr(),
            target_c.as_ptr(),
            fstype.as_ptr(),
            flags,
            data.as_ptr().cast(),
        )
    };
    if r != 0 {
        panic!(
            "mount({}, flags {flags:#x}, {data:?}) failed: {} (these tests need root)",
            target.display(),
            std::io::Error::last_os_error()
        );
    }
}

impl Mount {
    /// A tmpfs of `size` (e.g. `"24m"`) at `path`.
    fn tmpfs(path: &Path, size: &str) -> Mount {
        std::fs::create_dir_all(path).unwrap();
        mount_call("tmpfs", path, "tmpfs", 0, &format!("size={size}"));
        Mount(path.to_path_buf())
    }

    /// `mount -o remount,size=<size>`: grows (or shrinks) the tmpfs.
    fn resize(&self, size: &str) {
        mount_call(
            "tmpfs",
            &self.0,
            "tmpfs",
            libc::MS_REMOUNT,
            &format!("size={size}"),
        );
    }

    /// `dir` bound over itself, so it can be remounted read-only even while the daemon holds
    /// files open for writing under it (Linux refuses `remount,ro` of a mount with open
    /// writers; the daemon's open descriptors stay on the mount below).
    fn bind_self(dir: &Path) -> Mount {
        mount_call(dir.to_str().unwrap(), dir, "", libc::MS_BIND, "");
        Mount(dir.to_path_buf())
    }

    /// `mount -o remount,bind,ro` (`ro = true`) or `remount,bind,rw`.
    fn set_read_only(&self, ro: bool) {
        let flags = libc::MS_REMOUNT | libc::MS_BIND | if ro { libc::MS_RDONLY } else { 0 };
        mount_call("", &self.0, "", flags, "");
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let p = cstr(self.0.to_str().unwrap());
        // SAFETY: umount2(2) with a NUL-terminated path.
        unsafe {
            libc::umount2(p.as_ptr(), libc::MNT_DETACH);
        }
    }
}

fn config(data: &Path, storage: &str, fmt: Fmt) -> String {
    format!(
        r#"
data_dir = "{}"

[http]
listen = "127.0.0.1:0"

[[pipeline]]
name = "main"

[pipeline.storage]
{storage}
{}
[[pipeline.source]]
type = "http"
name = "push"
"#,
        data.display(),
        fmt.storage_lines()
    )
}

/// The issue's reproduction settings (a WAL budget of two thirds of a 24 MiB disk), and a
/// short idle time so that a seal is due while the disk is full and intake is refused.
const STORAGE: &str = r#"memtable_budget = "4MiB"
wal_max_size = "16MiB"
seal_size = "4MiB"
seal_idle = "2s""#;

/// Acknowledged points: (device, time) → value of measurement `v`.
type Acked = BTreeMap<(String, i64), f64>;

/// Sends IoTDB JSON batches of 200 pseudo-random doubles over 10 devices (`root.df.d0`..`d9`,
/// 20 consecutive times each) and remembers what was acknowledged.
struct Pusher {
    addr: SocketAddr,
    conn: Option<Conn>,
    next_time: i64,
    rng: u64,
    acked: Acked,
    /// Answers other than 200 so far, by status code.
    refused: BTreeMap<u16, u64>,
    /// The last refusal's body and `Retry-After`.
    last_refusal: Option<(String, Option<String>)>,
}

impl Pusher {
    fn new(addr: SocketAddr, first_time: i64) -> Pusher {
        Pusher {
            addr,
            conn: None,
            next_time: first_time,
            rng: 0x9E37_79B9_7F4A_7C15,
            acked: Acked::new(),
            refused: BTreeMap::new(),
            last_refusal: None,
        }
    }

    fn random(&mut self) -> f64 {
        // xorshift64*: values the daemon cannot guess.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let x = self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (x >> 11) as f64 / (1u64 << 53) as f64 * 1000.0 - 500.0
    }

    /// One batch, retried (same points) until acknowledged or `deadline` passes. Returns
    /// whether it was acknowledged and whether any attempt was refused.
    fn push_one(&mut self, deadline: Instant) -> (bool, bool) {
        let t0 = self.next_time;
        let mut records = Vec::new();
        let mut points = Vec::new();
        for d in 0..10 {
            let device = format!("root.df.d{d}");
            let times: Vec<i64> = (t0..t0 + 20).collect();
            let values: Vec<f64> = times.iter().map(|_| self.random()).collect();
            for (t, v) in times.iter().zip(&values) {
                points.push((device.clone(), *t, *v));
            }
            // Rows: one per timestamp, one value per measurement.
            let rows: Vec<[f64; 1]> = values.iter().map(|v| [*v]).collect();
            records.push(serde_json::json!({
                "device": device, "timestamps": times, "measurements": ["v"], "values": rows,
            }));
        }
        let body = serde_json::Value::Array(records).to_string();
        let mut refused = false;
        loop {
            let conn = match &mut self.conn {
                Some(c) => c,
                None => self.conn.insert(Conn::new(self.addr).expect("connect")),
            };
            match conn.request("POST", "/ingest/iotdb-json", &[], body.as_bytes()) {
                Ok(r) if r.status == 200 => {
                    self.next_time += 20;
                    for (d, t, v) in points {
                        self.acked.insert((d, t), v);
                    }
                    return (true, refused);
                }
                Ok(r) => {
                    assert!(
                        r.status == 503 || r.status == 429,
                        "unexpected answer {}: {}",
                        r.status,
                        r.body
                    );
                    refused = true;
                    *self.refused.entry(r.status).or_default() += 1;
                    let retry_after = r.header("retry-after").map(str::to_string);
                    self.last_refusal = Some((r.body, retry_after));
                }
                Err(_) => self.conn = None,
            }
            if Instant::now() > deadline {
                return (false, refused);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The degraded gauge of pipeline `main` (None: not exported).
fn degraded(addr: SocketAddr) -> Option<f64> {
    metric(
        &get(addr, "/metrics").body,
        r#"tsfiled_storage_degraded{pipeline="main"}"#,
    )
}

/// The sum of `tsfiled_storage_errors_total` of pipeline `main` for one `kind` and `op`
/// (`""`: every op).
fn storage_errors(metrics: &str, kind: &str, op: &str) -> f64 {
    metrics
        .lines()
        .filter(|l| {
            l.starts_with("tsfiled_storage_errors_total{")
                && l.contains(r#"pipeline="main""#)
                && l.contains(&format!(r#"kind="{kind}""#))
                && (op.is_empty() || l.contains(&format!(r#"op="{op}""#)))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Checks every acknowledged point is in the sealed files exactly once with its value;
/// prints and returns (acknowledged, found, missing, duplicated, wrong values).
fn check(data: &Path, acked: &Acked, what: &str, fmt: Fmt) -> (usize, usize, usize, usize, usize) {
    let (points, files) = read_all_in(data, fmt);
    let (mut missing, mut dup, mut wrong) = (0, 0, 0);
    for ((d, t), v) in acked {
        match points.get(&(d.clone(), "v".to_string(), *t)) {
            None => missing += 1,
            Some(vals) => {
                if vals.len() > 1 {
                    dup += 1;
                }
                if vals.iter().any(|x| *x != Value::Double(*v)) {
                    wrong += 1;
                }
            }
        }
    }
    eprintln!(
        "{what}: {} acknowledged points, {} points in {} sealed files, {missing} missing, {dup} duplicated, {wrong} with a wrong value",
        acked.len(),
        points.len(),
        files.len()
    );
    (acked.len(), points.len(), missing, dup, wrong)
}

/// The issue's reproduction: push until the 24 MiB disk is full and intake is refused, grow
/// the tmpfs, push on (intake resumes without a restart), SIGTERM, start and stop again:
/// every acknowledged point is in the sealed files exactly once.
#[test]
fn a_full_disk_loses_no_acknowledged_point_and_intake_resumes_by_itself() {
    a_full_disk_loses_no_acknowledged_point_and_intake_resumes_by_itself_in(Fmt::V2);
}

#[test]
fn a_full_disk_loses_no_acknowledged_point_and_intake_resumes_by_itself_v4() {
    a_full_disk_loses_no_acknowledged_point_and_intake_resumes_by_itself_in(Fmt::V4);
}

fn a_full_disk_loses_no_acknowledged_point_and_intake_resumes_by_itself_in(fmt: Fmt) {
    let tmp = tempfile::tempdir().unwrap();
    let mnt = Mount::tmpfs(&tmp.path().join("mnt"), "24m");
    let data = mnt.0.join("data");
    let file = tmp.path().join("tsfiled.toml");
    std::fs::write(&file, config(&data, STORAGE, fmt)).unwrap();
    let file = file.to_str().unwrap().to_string();
    let d = DaemonProc::start_with(&["run", "--config", &file]);
    let mut p = Pusher::new(d.addr, 1_700_000_000_000);
    // Fill the disk: push until a refusal and the daemon has hit ENOSPC, then a little more.
    let start = Instant::now();
    let mut saw_degraded = false;
    let mut status_while_full = None;
    let full_at = loop {
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "the disk never filled: {} points acknowledged",
            p.acked.len()
        );
        let (_, refused) = p.push_one(Instant::now() + Duration::from_secs(2));
        if refused && d.log.lock().unwrap().contains("No space left on device") {
            break Instant::now();
        }
    };
    // (At most 30 s while the status page does not show it; asserted at the end.)
    while full_at.elapsed() < Duration::from_secs(5)
        || (status_while_full.is_none() && full_at.elapsed() < Duration::from_secs(30))
    {
        p.push_one(Instant::now());
        saw_degraded |= degraded(d.addr) == Some(1.0);
        let st = get(d.addr, "/api/status").json();
        if st["pipelines"][0]["storage"]["degraded"] == true {
            status_while_full.get_or_insert(st);
        }
    }
    let acked_before = p.acked.len();
    let (body, retry_after) = p.last_refusal.clone().expect("a refusal");
    eprintln!(
        "disk full after {acked_before} acknowledged points; refusals {:?}; last: {body} (Retry-After {retry_after:?})",
        p.refused
    );
    assert!(retry_after.is_some(), "a refusal without Retry-After");
    // Space comes back: intake resumes by itself.
    mnt.resize("128m");
    let resumed = Instant::now();
    let mut resumed_batches = 0;
    while resumed_batches < 100 && p.push_one(resumed + Duration::from_secs(120)).0 {
        resumed_batches += 1;
    }
    let refusal_after = p.last_refusal.clone();
    let mut recovered = false;
    let deadline = Instant::now() + Duration::from_secs(60);
    while !recovered && Instant::now() < deadline {
        recovered = degraded(d.addr) == Some(0.0);
        std::thread::sleep(Duration::from_millis(100));
    }
    let metrics_after = get(d.addr, "/metrics").body;
    let (code, log) = d.stop();
    let d = DaemonProc::start_with(&["run", "--config", &file]);
    let (code2, log2) = d.stop();
    // The daemon's distinct warnings and errors (without their times), for the record.
    let mut seen = std::collections::BTreeSet::new();
    for l in log.lines().chain(log2.lines()) {
        if l.contains("ERROR") || l.contains("WARN") || l.contains("replayed") {
            let text = l.split_once(' ').map_or(l, |x| x.1);
            if seen.insert(text.chars().take(300).collect::<String>()) {
                eprintln!("daemon: {}", &l[..l.len().min(400)]);
            }
        }
    }
    let (acked, _, missing, dup, wrong) = check(&data, &p.acked, "disk full", fmt);
    assert_eq!(missing, 0, "acknowledged points lost\n{log}\n{log2}");
    assert_eq!(dup, 0, "acknowledged points written twice");
    assert_eq!(wrong, 0, "acknowledged points with another value");
    assert_eq!(
        resumed_batches, 100,
        "intake did not resume within 120 s after space came back: {refusal_after:?}"
    );
    assert!(acked > acked_before);
    assert_eq!(code, 0, "{log}");
    assert_eq!(code2, 0, "{log2}");
    assert!(temporaries(&data).is_empty(), "{:?}", temporaries(&data));
    // What the operator saw: the storage error counted, the degraded gauge up while full and
    // down again afterwards, and the status page naming the reason.
    assert!(
        saw_degraded,
        "tsfiled_storage_degraded never showed 1 while full"
    );
    assert!(recovered, "tsfiled_storage_degraded did not return to 0");
    assert!(
        storage_errors(&metrics_after, "no_space", "") >= 1.0,
        "no storage error counted:\n{metrics_after}"
    );
    let status_while_full = status_while_full.expect("the status page never showed degraded");
    let st = &status_while_full["pipelines"][0]["storage"];
    assert!(
        st["degraded"] == true
            && st["reason"]
                .as_str()
                .is_some_and(|r| r.contains("No space left on device")),
        "status page while full: {status_while_full}"
    );
}

/// Pushes `n` batches, each retried until acknowledged (120 s at most).
fn push_acknowledged(p: &mut Pusher, n: usize, what: &str) {
    for _ in 0..n {
        let (ok, _) = p.push_one(Instant::now() + Duration::from_secs(120));
        assert!(
            ok,
            "{what}: not acknowledged within 120 s: {:?}",
            p.last_refusal
        );
    }
}

/// Pushes until a batch is refused (`secs` at most); returns the refusal's body.
fn push_until_refused(p: &mut Pusher, secs: u64, what: &str) -> String {
    let start = Instant::now();
    loop {
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "{what}: intake was never refused"
        );
        let (_, refused) = p.push_one(Instant::now());
        if refused {
            let (body, retry_after) = p.last_refusal.clone().expect("a refusal");
            assert!(
                retry_after.is_some(),
                "a refusal without Retry-After: {body}"
            );
            return body;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Fills the file system holding `dir` with one file until it is full.
fn fill(dir: &Path) -> PathBuf {
    use std::io::Write;
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).unwrap();
    for chunk in [1 << 20, 4096, 64] {
        let buf = vec![0x5a; chunk];
        while f.write_all(&buf).and_then(|_| f.sync_all()).is_ok() {}
    }
    path
}

/// Waits (30 s at most) for a systemd notification containing `needle`; returns it.
fn notified(sock: &std::os::unix::net::UnixDatagram, needle: &str) -> String {
    let start = Instant::now();
    let mut seen = Vec::new();
    let mut buf = vec![0u8; 4096];
    while start.elapsed() < Duration::from_secs(30) {
        if let Ok(n) = sock.recv(&mut buf) {
            let msg = String::from_utf8_lossy(&buf[..n]).to_string();
            if msg.contains(needle) {
                return msg;
            }
            seen.push(msg);
        }
    }
    panic!("no notification with {needle:?}; saw {seen:?}");
}

/// A disk full before the daemon starts (with acknowledged points waiting in its WAL after a
/// crash): it starts, refuses intake saying why, and writes everything once space returns.
#[test]
fn a_full_disk_at_start_up_starts_degraded_and_resumes_when_space_returns() {
    a_full_disk_at_start_up_starts_degraded_and_resumes_when_space_returns_in(Fmt::V2);
}

#[test]
fn a_full_disk_at_start_up_starts_degraded_and_resumes_when_space_returns_v4() {
    a_full_disk_at_start_up_starts_degraded_and_resumes_when_space_returns_in(Fmt::V4);
}

fn a_full_disk_at_start_up_starts_degraded_and_resumes_when_space_returns_in(fmt: Fmt) {
    let tmp = tempfile::tempdir().unwrap();
    let mnt = Mount::tmpfs(&tmp.path().join("mnt"), "24m");
    let data = mnt.0.join("data");
    let file = tmp.path().join("tsfiled.toml");
    let storage = r#"memtable_budget = "1MiB"
seal_idle = "1s""#;
    std::fs::write(&file, config(&data, storage, fmt)).unwrap();
    let file = file.to_str().unwrap().to_string();
    let d = DaemonProc::start_with(&["run", "--config", &file]);
    let mut p = Pusher::new(d.addr, 1_700_000_000_000);
    push_acknowledged(&mut p, 50, "before the crash");
    d.kill();
    // What a restart would delete anyway, then fill the disk to the last byte.
    for t in temporaries(&data) {
        std::fs::remove_file(t).unwrap();
    }
    let filler = fill(&mnt.0);
    // Under a fake systemd: its status line says why intake is refused.
    let sock_path = tmp.path().join("notify.sock");
    let sock = std::os::unix::net::UnixDatagram::bind(&sock_path).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let d = DaemonProc::start_env(
        &["run", "--config", &file],
        &[("NOTIFY_SOCKET", sock_path.to_str().unwrap())],
    );
    p.addr = d.addr;
    p.conn = None;
    let refusal = push_until_refused(&mut p, 60, "full at start-up");
    assert!(refusal.contains("no space left"), "{refusal}");
    until("the status page shows the storage degraded", 60, || {
        let st = get(d.addr, "/api/status").json();
        let s = &st["pipelines"][0]["storage"];
        s["degraded"] == true && s["faults"][0]["kind"] == "no_space"
    });
    assert_eq!(degraded(d.addr), Some(1.0));
    let status = notified(&sock, "STATUS=pipeline main: storage degraded (");
    assert!(status.contains("No space left on device"), "{status}");
    std::fs::remove_file(filler).unwrap();
    push_acknowledged(&mut p, 50, "after space came back");
    until("tsfiled_storage_degraded back to 0", 60, || {
        degraded(d.addr) == Some(0.0)
    });
    notified(&sock, "STATUS=1 pipeline(s) up");
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    let d = DaemonProc::start_with(&["run", "--config", &file]);
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    let (_, _, missing, dup, wrong) = check(&data, &p.acked, "full at start-up", fmt);
    assert_eq!((missing, dup, wrong), (0, 0, 0));
    assert!(temporaries(&data).is_empty(), "{:?}", temporaries(&data));
}

/// The data directory remounted read-only under the running daemon: intake is refused naming
/// the read-only file system, nothing acknowledged is lost, and intake resumes after
/// `remount,rw`. (Linux refuses `remount,ro` of a mount with files open for writing, so the
/// directory is bind-mounted over itself and that mount is made read-only: files the daemon
/// opens, creates or renames from then on fail with `EROFS`, as on a file system the kernel
/// remounted read-only after an error.)
#[test]
fn a_data_directory_remounted_read_only_refuses_intake_and_resumes_after_rw() {
    a_data_directory_remounted_read_only_refuses_intake_and_resumes_after_rw_in(Fmt::V2);
}

#[test]
fn a_data_directory_remounted_read_only_refuses_intake_and_resumes_after_rw_v4() {
    a_data_directory_remounted_read_only_refuses_intake_and_resumes_after_rw_in(Fmt::V4);
}

fn a_data_directory_remounted_read_only_refuses_intake_and_resumes_after_rw_in(fmt: Fmt) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let file = tmp.path().join("tsfiled.toml");
    let storage = r#"memtable_budget = "1MiB"
seal_size = "256KiB"
seal_idle = "1s""#;
    std::fs::write(&file, config(&data, storage, fmt)).unwrap();
    let file = file.to_str().unwrap().to_string();
    let d = DaemonProc::start_with(&["run", "--config", &file]);
    let mut p = Pusher::new(d.addr, 1_700_000_000_000);
    push_acknowledged(&mut p, 20, "before");
    let ro = Mount::bind_self(&data);
    ro.set_read_only(true);
    let refusal = push_until_refused(&mut p, 120, "read-only");
    assert!(refusal.contains("read-only"), "{refusal}");
    until("the status page shows the storage degraded", 60, || {
        let st = get(d.addr, "/api/status").json();
        let s = &st["pipelines"][0]["storage"];
        s["degraded"] == true && s["faults"][0]["kind"] == "read_only"
    });
    ro.set_read_only(false);
    push_acknowledged(&mut p, 50, "after remount,rw");
    until("tsfiled_storage_degraded back to 0", 60, || {
        degraded(d.addr) == Some(0.0)
    });
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    drop(ro);
    let d = DaemonProc::start_with(&["run", "--config", &file]);
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    let (_, _, missing, dup, wrong) = check(&data, &p.acked, "read-only", fmt);
    assert_eq!((missing, dup, wrong), (0, 0, 0));
    assert!(temporaries(&data).is_empty(), "{:?}", temporaries(&data));
}

/// The loss of the issue, made deterministic: a seal that fails for lack of space (the disk
/// filled while the partition's points were only in memory and the WAL), space back, more
/// points in the same partition sealed, SIGTERM, restart. The failed seal's points must be
/// sealed exactly once: no later seal of the partition may claim them as covered before.
#[test]
fn a_seal_failed_for_lack_of_space_is_redone_before_the_partition_seals_again() {
    a_seal_failed_for_lack_of_space_is_redone_before_the_partition_seals_again_in(Fmt::V2);
}

#[test]
fn a_seal_failed_for_lack_of_space_is_redone_before_the_partition_seals_again_v4() {
    a_seal_failed_for_lack_of_space_is_redone_before_the_partition_seals_again_in(Fmt::V4);
}

fn a_seal_failed_for_lack_of_space_is_redone_before_the_partition_seals_again_in(fmt: Fmt) {
    let tmp = tempfile::tempdir().unwrap();
    let mnt = Mount::tmpfs(&tmp.path().join("mnt"), "16m");
    let data = mnt.0.join("data");
    let file = tmp.path().join("tsfiled.toml");
    std::fs::write(&file, config(&data, r#"seal_idle = "3s""#, fmt)).unwrap();
    let file = file.to_str().unwrap().to_string();
    let d = DaemonProc::start_with(&["run", "--config", &file]);
    let mut p = Pusher::new(d.addr, 1_700_000_000_000);
    push_acknowledged(&mut p, 10, "first points");
    // Full before the idle seal writes the partition's first file.
    let filler = fill(&mnt.0);
    until("the idle seal failing for lack of space", 60, || {
        storage_errors(&get(d.addr, "/metrics").body, "no_space", "seal") >= 1.0
    });
    std::fs::remove_file(filler).unwrap();
    push_acknowledged(&mut p, 10, "after space came back");
    until("the later points sealed", 60, || {
        !sealed_files(&data).is_empty() && temporaries(&data).is_empty()
    });
    let (code, log) = d.stop();
    let d = DaemonProc::start_with(&["run", "--config", &file]);
    let (code2, log2) = d.stop();
    let (_, _, missing, dup, wrong) = check(&data, &p.acked, "failed seal", fmt);
    assert_eq!(missing, 0, "acknowledged points lost\n{log}\n{log2}");
    assert_eq!((dup, wrong), (0, 0));
    assert_eq!((code, code2), (0, 0), "{log}\n{log2}");
}
