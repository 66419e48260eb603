//! `tsfiled-loadgen`: pushes deterministic data to a tsfiled over HTTP with several
//! keep-alive connections and reports acknowledged points/s and ack latency.
//!
//! Without `--addr` it starts the `tsfiled` binary next to itself on a temporary data
//! directory (port 0), stops it with SIGTERM at the end and reports its peak RSS.
//!
//! ```text
//! cargo run -p tsfiled --release --bin tsfiled-loadgen -- --format json --duration 60
//! ```

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
enum Format {
    /// IoTDB JSON batch form.
    Json,
    /// InfluxDB line protocol.
    Line,
}

/// Load generator for tsfiled's HTTP push.
#[derive(Parser, Debug)]
#[command(name = "tsfiled-loadgen")]
struct Args {
    /// Daemon address; without it a daemon is started on a temporary directory.
    #[arg(long)]
    addr: Option<SocketAddr>,
    /// Payload format.
    #[arg(long, value_enum, default_value = "json")]
    format: Format,
    /// Concurrent connections.
    #[arg(long, default_value_t = 4)]
    connections: usize,
    /// Seconds to run.
    #[arg(long, default_value_t = 60)]
    duration: u64,
    /// Points per request.
    #[arg(long, default_value_t = 1000)]
    batch: usize,
    /// Measurements per device (a request holds batch / measurements timestamps).
    #[arg(long, default_value_t = 10)]
    measurements: usize,
    /// Devices per connection (requests rotate over them).
    #[arg(long, default_value_t = 10)]
    devices: usize,
    /// Extra arguments for the started daemon (e.g. "--memtable-bytes 67108864").
    #[arg(long, allow_hyphen_values = true)]
    daemon_args: Option<String>,
}

struct Stats {
    acked_points: u64,
    requests: u64,
    errors: u64,
    latencies_us: Vec<u32>,
    /// The slowest acknowledgement's latency (µs) and when it came.
    slowest: Option<(u32, Instant)>,
}

fn body(args: &Args, conn: usize, seq: u64, out: &mut Vec<u8>) {
    use std::fmt::Write as _;
    out.clear();
    let m = args.measurements.max(1);
    let rows = (args.batch / m).max(1);
    let dev = (seq as usize) % args.devices.max(1);
    // Each (connection, device) advances its own clock: rows per request.
    let t0 = 1_600_000_000_000i64 + ((seq / args.devices.max(1) as u64) * rows as u64) as i64;
    let mut s = String::with_capacity(rows * m * 12 + 200);
    match args.format {
        Format::Json => {
            let _ = write!(
                s,
                "{{\"device\":\"root.bench.c{conn}.d{dev}\",\"timestamps\":["
            );
            for r in 0..rows {
                if r > 0 {
                    s.push(',');
                }
                let _ = write!(s, "{}", t0 + r as i64);
            }
            s.push_str("],\"measurements\":[");
            for j in 0..m {
                if j > 0 {
                    s.push(',');
                }
                let _ = write!(s, "\"s{j}\"");
            }
            // IoTDB's batch form: one row per timestamp, one value per measurement.
            s.push_str("],\"values\":[");
            for r in 0..rows {
                if r > 0 {
                    s.push(',');
                }
                s.push('[');
                let t = t0 + r as i64;
                for j in 0..m {
                    if j > 0 {
                        s.push(',');
                    }
                    if j % 2 == 0 {
                        let _ = write!(s, "{}", (t % 1000) + j as i64);
                    } else {
                        let _ = write!(s, "{}.5", (t % 977) + j as i64);
                    }
                }
                s.push(']');
            }
            s.push_str("]}");
        }
        Format::Line => {
            for r in 0..rows {
                let t = t0 + r as i64;
                let _ = write!(s, "bench,conn=c{conn},dev=d{dev} ");
                for j in 0..m {
                    if j > 0 {
                        s.push(',');
                    }
                    if j % 2 == 0 {
                        let _ = write!(s, "s{j}={}i", (t % 1000) + j as i64);
                    } else {
                        let _ = write!(s, "s{j}={}.5", (t % 977) + j as i64);
                    }
                }
                let _ = writeln!(s, " {t}");
            }
        }
    }
    out.extend_from_slice(s.as_bytes());
}

fn run_conn(args: &Args, addr: SocketAddr, conn: usize, until: Instant) -> Stats {
    let mut st = Stats {
        acked_points: 0,
        requests: 0,
        errors: 0,
        latencies_us: Vec::new(),
        slowest: None,
    };
    let Ok(stream) = TcpStream::connect(addr) else {
        st.errors += 1;
        return st;
    };
    let _ = stream.set_nodelay(true);
    let mut reader = BufReader::new(stream.try_clone().expect("clone socket"));
    let mut writer = stream;
    let path = match args.format {
        Format::Json => "/ingest/iotdb-json",
        Format::Line => "/write?precision=ms&db=bench",
    };
    let m = args.measurements.max(1);
    let points = ((args.batch / m).max(1) * m) as u64;
    let mut buf = Vec::new();
    let mut req = Vec::new();
    let mut line = String::new();
    let mut seq = 0u64;
    while Instant::now() < until {
        body(args, conn, seq, &mut buf);
        seq += 1;
        req.clear();
        let _ = write!(
            req,
            "POST {path} HTTP/1.1\r\nHost: bench\r\nContent-Length: {}\r\n\r\n",
            buf.len()
        );
        req.extend_from_slice(&buf);
        let start = Instant::now();
        if writer.write_all(&req).is_err() {
            st.errors += 1;
            break;
        }
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            st.errors += 1;
            break;
        }
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let mut len = 0usize;
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some(v) = l
                .split_once(':')
                .filter(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            {
                len = v.1.trim().parse().unwrap_or(0);
            }
        }
        let mut sink = vec![0; len];
        if reader.read_exact(&mut sink).is_err() {
            st.errors += 1;
            break;
        }
        let us = start.elapsed().as_micros().min(u32::MAX as u128) as u32;
        st.requests += 1;
        if status == 200 || status == 204 {
            st.acked_points += points;
            st.latencies_us.push(us);
            if st.slowest.is_none_or(|(worst, _)| us > worst) {
                st.slowest = Some((us, Instant::now()));
            }
        } else {
            st.errors += 1;
            if status == 429 || status == 503 {
                std::thread::sleep(Duration::from_millis(10));
            } else if st.errors < 3 {
                eprintln!("HTTP {status}: {}", String::from_utf8_lossy(&sink));
            }
        }
    }
    st
}

fn start_daemon(extra: &Option<String>) -> (Child, SocketAddr, tempdir::Dir) {
    let exe = std::env::current_exe().expect("current exe");
    let daemon: PathBuf = exe.with_file_name("tsfiled");
    let dir = tempdir::Dir::new();
    let mut cmd = Command::new(&daemon);
    cmd.arg("run")
        .arg("--data-dir")
        .arg(dir.path())
        .args(["--http-listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(e) = extra {
        cmd.args(e.split_whitespace());
    }
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", daemon.display()));
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let addr = loop {
        let Some(Ok(l)) = lines.next() else {
            panic!("daemon exited before listening")
        };
        if let Some(i) = l.find("HTTP listening on http://") {
            break l[i + 25..]
                .split_whitespace()
                .next()
                .unwrap_or("")
                .parse()
                .expect("address");
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (child, addr, dir)
}

mod tempdir {
    /// A temporary directory removed on drop.
    pub struct Dir(std::path::PathBuf);
    impl Dir {
        pub fn new() -> Dir {
            let p = std::env::temp_dir().join(format!(
                "tsfiled-loadgen-{}-{}",
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos())
                    .unwrap_or(0)
            ));
            std::fs::create_dir_all(&p).expect("temp dir");
            Dir(p)
        }
        pub fn path(&self) -> &std::path::Path {
            &self.0
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// utime + stime of a process in seconds.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Some(ticks / hz.max(1.0))
}

fn peak_rss_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

/// `println!` that ignores a closed standard output (`tsfiled-loadgen … | head`): the run's
/// clean-up (stopping the daemon it started) must still happen, so no panic and no SIGPIPE.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

fn main() {
    let args = Args::parse();
    let (mut child, addr, dir) = match args.addr {
        Some(a) => (None, a, None),
        None => {
            let (c, a, d) = start_daemon(&args.daemon_args);
            (Some(c), a, Some(d))
        }
    };
    eprintln!(
        "tsfiled-loadgen: {:?}, {} connections, {} points/request, {} s against {addr}",
        args.format, args.connections, args.batch, args.duration
    );
    let daemon_cpu0 = child.as_ref().and_then(|c| cpu_seconds(c.id()));
    let self_cpu0 = cpu_seconds(std::process::id());
    let start = Instant::now();
    let until = start + Duration::from_secs(args.duration);
    let stats: Vec<Stats> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..args.connections)
            .map(|c| {
                let a = &args;
                s.spawn(move || run_conn(a, addr, c, until))
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("thread")).collect()
    });
    let elapsed = start.elapsed().as_secs_f64();
    let acked: u64 = stats.iter().map(|s| s.acked_points).sum();
    let requests: u64 = stats.iter().map(|s| s.requests).sum();
    let errors: u64 = stats.iter().map(|s| s.errors).sum();
    let slowest_at = stats
        .iter()
        .filter_map(|s| s.slowest)
        .max_by_key(|&(us, _)| us)
        .map(|(_, at)| at.duration_since(start).as_secs_f64());
    let mut lat: Vec<u32> = stats.into_iter().flat_map(|s| s.latencies_us).collect();
    lat.sort_unstable();
    let pct = |p: f64| -> f64 {
        if lat.is_empty() {
            return 0.0;
        }
        let i = ((lat.len() as f64 - 1.0) * p).round() as usize;
        lat[i.min(lat.len() - 1)] as f64 / 1000.0
    };
    let rss = child.as_ref().and_then(|c| peak_rss_kib(c.id()));
    let daemon_cpu = child
        .as_ref()
        .and_then(|c| Some(cpu_seconds(c.id())? - daemon_cpu0?));
    let self_cpu = cpu_seconds(std::process::id()).and_then(|c| Some(c - self_cpu0?));
    out!(
        "acknowledged points/s: {:.0}\nacknowledged points: {acked}\nrequests: {requests} ({:.0}/s), non-2xx or failed: {errors}\nack latency ms: p50 {:.2}, p99 {:.2}, max {:.2}\nelapsed s: {elapsed:.1}",
        acked as f64 / elapsed,
        requests as f64 / elapsed,
        pct(0.5),
        pct(0.99),
        pct(1.0),
    );
    if let Some(at) = slowest_at {
        let over_50ms = lat.iter().filter(|&&us| us > 50_000).count();
        out!("slowest ack ended at s: {at:.1}; acks over 50 ms: {over_50ms}");
    }
    if let Some(kib) = rss {
        out!("daemon peak RSS MiB: {:.1}", kib as f64 / 1024.0);
    }
    let per_m = |cpu: f64| cpu / (acked.max(1) as f64 / 1e6);
    if let Some(c) = daemon_cpu {
        out!(
            "daemon CPU: {c:.1} s ({:.2} cores), {:.3} CPU-s per million points",
            c / elapsed,
            per_m(c)
        );
    }
    if let Some(c) = self_cpu {
        out!(
            "generator CPU: {c:.1} s ({:.2} cores), {:.3} CPU-s per million points",
            c / elapsed,
            per_m(c)
        );
    }
    if let Some(c) = child.as_mut() {
        // SAFETY: kill(2) on our own child.
        unsafe {
            libc::kill(c.id() as i32, libc::SIGTERM);
        }
        let t = Instant::now();
        let status = c.wait();
        out!(
            "daemon stopped in {:.1} s: {:?}",
            t.elapsed().as_secs_f64(),
            status.map(|s| s.code())
        );
        if let Some(d) = &dir {
            let mut files = 0;
            let mut bytes = 0;
            let mut stack = vec![d.path().to_path_buf()];
            while let Some(p) = stack.pop() {
                for e in std::fs::read_dir(&p).into_iter().flatten().flatten() {
                    let path = e.path();
                    if path.is_dir() {
                        stack.push(path);
                    } else if path.extension().is_some_and(|x| x == "tsfile") {
                        files += 1;
                        bytes += e.metadata().map(|m| m.len()).unwrap_or(0);
                    }
                }
            }
            out!(
                "sealed files: {files}, {:.1} MiB ({:.2} bytes/point)",
                bytes as f64 / 1048576.0,
                bytes as f64 / acked.max(1) as f64
            );
        }
    }
}
