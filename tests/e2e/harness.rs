//! Test harness: run the real `tsfiled` program (this package's `tsfiled-e2e` binary) on a
//! temporary directory, a minimal HTTP/1.1 client, and a reader for every sealed file.
//!
//! Tests that run in both TsFile formats take a [`Fmt`]: `Fmt::V2` is the daemon's default
//! (format 000002), `Fmt::V4` sets `storage.format_version = 4`. [`read_all`] reads either
//! (by the file's version byte) and checks each `.resource` in the matching layout.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tsfile::file::reader::TsFileReader;
use tsfile::file::v4::TsFileReaderV4;
use tsfile::Value;

/// The TsFile format a test runs the daemon with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fmt {
    /// Format 000002 (the default).
    V2,
    /// TsFile v4 (`storage.format_version = 4`).
    V4,
}

impl Fmt {
    /// Lines for a `[pipeline.storage]` table of a test's configuration.
    pub fn storage_lines(self) -> &'static str {
        match self {
            Fmt::V2 => "",
            Fmt::V4 => "format_version = 4\n",
        }
    }

    /// The embedded default configuration in this format.
    pub fn default_config(self) -> String {
        let text = tsfiled_config::DEFAULT_CONFIG;
        let table = "[pipeline.storage]\n";
        assert!(
            text.contains(table),
            "the default configuration has {table}"
        );
        text.replacen(table, &format!("{table}{}", self.storage_lines()), 1)
    }
}

/// A running daemon process.
pub struct DaemonProc {
    child: Child,
    /// Its HTTP address.
    pub addr: SocketAddr,
    /// Everything it logged so far.
    pub log: Arc<Mutex<String>>,
}

impl DaemonProc {
    /// Starts `tsfiled run --data-dir <data> --http-listen 127.0.0.1:0 <extra>` and waits
    /// for its bound address.
    pub fn start(data: &Path, extra: &[&str]) -> DaemonProc {
        let data = data.to_str().expect("UTF-8 path");
        let mut args = vec!["run", "--data-dir", data, "--http-listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        DaemonProc::start_with(&args)
    }

    /// [`DaemonProc::start`] in format `fmt`: with `Fmt::V4`, the embedded default
    /// configuration plus `storage.format_version = 4`, written next to `data`.
    pub fn start_fmt(data: &Path, extra: &[&str], fmt: Fmt) -> DaemonProc {
        if fmt == Fmt::V2 {
            return DaemonProc::start(data, extra);
        }
        let file = data.with_extension("v4.toml");
        std::fs::write(&file, fmt.default_config()).expect("write the v4 configuration");
        let mut args = vec!["--config", file.to_str().expect("UTF-8 path")];
        args.extend_from_slice(extra);
        DaemonProc::start(data, &args)
    }

    /// Starts `tsfiled <args>` and waits for its bound address.
    pub fn start_with(args: &[&str]) -> DaemonProc {
        DaemonProc::start_env(args, &[])
    }

    /// [`DaemonProc::start_with`] with extra environment variables.
    pub fn start_env(args: &[&str], envs: &[(&str, &str)]) -> DaemonProc {
        DaemonProc::spawn(env!("CARGO_BIN_EXE_tsfiled-e2e"), &[], args, envs)
    }

    /// [`DaemonProc::start_env`] with test faults injected: `hooks` are the first arguments
    /// of `tsfiled-e2e-hooks` (`--stall-engine`, `--wal-sync-delay-ms=N`, `--seal-delay-ms=N`).
    pub fn start_hooked(hooks: &[&str], args: &[&str], envs: &[(&str, &str)]) -> DaemonProc {
        DaemonProc::spawn(env!("CARGO_BIN_EXE_tsfiled-e2e-hooks"), hooks, args, envs)
    }

    fn spawn(program: &str, hooks: &[&str], args: &[&str], envs: &[(&str, &str)]) -> DaemonProc {
        let mut child = Command::new(program)
            .args(hooks)
            .args(args)
            .envs(envs.iter().copied())
            .env("TSFILED_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn tsfiled");
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        {
            let log = log.clone();
            std::thread::spawn(move || {
                let mut tx = Some(tx);
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    if let Some(i) = line.find("HTTP listening on http://") {
                        let addr = line[i + 25..]
                            .split_whitespace()
                            .next()
                            .unwrap_or("")
                            .to_string();
                        if let Some(tx) = tx.take() {
                            let _ = tx.send(addr);
                        }
                    }
                    let mut l = log.lock().unwrap();
                    l.push_str(&line);
                    l.push('\n');
                }
            });
        }
        let addr = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(a) => a.parse().expect("address"),
            Err(_) => {
                let _ = child.kill();
                panic!("daemon did not start:\n{}", log.lock().unwrap());
            }
        };
        DaemonProc { child, addr, log }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a signal.
    pub fn signal(&self, sig: i32) {
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.pid() as i32, sig);
        }
    }

    /// SIGTERM, then waits; returns the exit code.
    pub fn stop(mut self) -> (i32, String) {
        self.signal(libc::SIGTERM);
        let status = wait_timeout(&mut self.child, Duration::from_secs(60));
        let log = self.log.lock().unwrap().clone();
        (status, log)
    }

    /// SIGKILL, then waits.
    pub fn kill(mut self) {
        self.signal(libc::SIGKILL);
        let _ = self.child.wait();
    }
}

impl Drop for DaemonProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_timeout(child: &mut Child, d: Duration) -> i32 {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().expect("wait") {
            return s.code().unwrap_or(-1);
        }
        if start.elapsed() > d {
            let _ = child.kill();
            panic!("daemon did not exit within {d:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An HTTP response.
#[derive(Debug)]
pub struct Resp {
    /// Status code.
    pub status: u16,
    /// Headers, lower-case names.
    pub headers: Vec<(String, String)>,
    /// Body.
    pub body: String,
}

impl Resp {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|h| h.0 == name)
            .map(|h| h.1.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// A keep-alive HTTP/1.1 connection.
pub struct Conn {
    stream: BufReader<TcpStream>,
}

impl Conn {
    /// Connects.
    pub fn new(addr: SocketAddr) -> std::io::Result<Conn> {
        let s = TcpStream::connect(addr)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        Ok(Conn {
            stream: BufReader::new(s),
        })
    }

    /// Sends a request and reads the answer.
    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> std::io::Result<Resp> {
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        let s = self.stream.get_mut();
        s.write_all(req.as_bytes())?;
        s.write_all(body)?;
        let mut line = String::new();
        self.stream.read_line(&mut line)?;
        if line.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "connection closed",
            ));
        }
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| std::io::Error::other(format!("bad status line {line:?}")))?;
        let mut headers = Vec::new();
        let mut len = 0usize;
        loop {
            line.clear();
            self.stream.read_line(&mut line)?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                let k = k.trim().to_ascii_lowercase();
                let v = v.trim().to_string();
                if k == "content-length" {
                    len = v.parse().unwrap_or(0);
                }
                headers.push((k, v));
            }
        }
        let mut b = vec![0; len];
        self.stream.read_exact(&mut b)?;
        Ok(Resp {
            status,
            headers,
            body: String::from_utf8_lossy(&b).to_string(),
        })
    }
}

/// One request on a fresh connection.
pub fn post(addr: SocketAddr, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Resp {
    Conn::new(addr)
        .unwrap()
        .request("POST", path, headers, body)
        .unwrap()
}

/// One GET on a fresh connection.
pub fn get(addr: SocketAddr, path: &str) -> Resp {
    Conn::new(addr)
        .unwrap()
        .request("GET", path, &[], b"")
        .unwrap()
}

/// A point as read back: (device, measurement, time) → values (more than one: duplicates).
pub type PointMap = BTreeMap<(String, String, i64), Vec<Value>>;

/// Sealed files under `data` (final names only), sorted.
pub fn sealed_files(data: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![data.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                if !p.ends_with("state") && !p.ends_with("wal") {
                    stack.push(p);
                }
            } else if p.extension().is_some_and(|x| x == "tsfile") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

/// Files whose name ends in `.tmp` under `data` (outside `state/` and `wal/`).
pub fn temporaries(data: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![data.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                if !p.ends_with("state") && !p.ends_with("wal") {
                    stack.push(p);
                }
            } else if p.to_string_lossy().ends_with(".tmp") {
                out.push(p);
            }
        }
    }
    out
}

/// A device's time range in a `.resource`: (device, start, end).
pub type DeviceRange = (String, i64, i64);

/// Parses the `.resource` of a v4 file in IoTDB 2.x's layout (`TsFileResource.serializeTo`
/// with an `ArrayDeviceTimeIndex`): (device, start, end). Panics (fails the test) on
/// anything else.
pub fn parse_resource_v4(b: &[u8]) -> Vec<DeviceRange> {
    let mut p = 0usize;
    let mut take = |n: usize| {
        let s = &b[p..p + n];
        p += n;
        s
    };
    assert_eq!(
        take(2),
        [1, 3],
        "resource version 1, array device time index"
    );
    let n = i32::from_be_bytes(take(4).try_into().unwrap()) as usize;
    let times: Vec<(i64, i64)> = (0..n)
        .map(|_| {
            let s = i64::from_be_bytes(take(8).try_into().unwrap());
            let e = i64::from_be_bytes(take(8).try_into().unwrap());
            (s, e)
        })
        .collect();
    let mut out = vec![None; n];
    for _ in 0..n {
        // device id: var-int segment count, segments as zigzag var-int length + UTF-8
        // (every count and length here is below 64: one byte each)
        let segs = take(1)[0] as usize;
        assert!(segs < 0x80);
        let parts: Vec<String> = (0..segs)
            .map(|_| {
                let z = take(1)[0];
                assert!(z < 0x80 && z % 2 == 0, "a short non-null segment");
                String::from_utf8(take(z as usize / 2).to_vec()).unwrap()
            })
            .collect();
        let i = i32::from_be_bytes(take(4).try_into().unwrap()) as usize;
        assert!(out[i].is_none(), "index {i} twice");
        out[i] = Some((parts.join("."), times[i].0, times[i].1));
    }
    assert_eq!(i64::from_be_bytes(take(8).try_into().unwrap()), i64::MIN);
    assert_eq!(i64::from_be_bytes(take(8).try_into().unwrap()), i64::MAX);
    assert_eq!(take(4), [0xff; 4], "no modification file");
    assert_eq!(take(1), [0], "an empty block");
    assert_eq!(p, b.len(), "resource length");
    out.into_iter().map(Option::unwrap).collect()
}

/// Parses a `.resource` file: (device, start, end).
pub fn parse_resource(b: &[u8]) -> Vec<(String, i64, i64)> {
    let mut pos = 0;
    let mut i32_at = |b: &[u8]| {
        let v = i32::from_be_bytes(b[pos..pos + 4].try_into().unwrap());
        pos += 4;
        v
    };
    let n = i32_at(b) as usize;
    let mut out = Vec::new();
    let mut p = pos;
    for _ in 0..n {
        let len = i32::from_be_bytes(b[p..p + 4].try_into().unwrap()) as usize;
        p += 4;
        let dev = String::from_utf8(b[p..p + len].to_vec()).unwrap();
        p += len;
        let start = i64::from_be_bytes(b[p..p + 8].try_into().unwrap());
        p += 8;
        out.push((dev, start, 0));
    }
    let n2 = i32::from_be_bytes(b[p..p + 4].try_into().unwrap()) as usize;
    assert_eq!(n, n2);
    p += 4;
    for d in out.iter_mut() {
        let len = i32::from_be_bytes(b[p..p + 4].try_into().unwrap()) as usize;
        p += 4 + len;
        d.2 = i64::from_be_bytes(b[p..p + 8].try_into().unwrap());
        p += 8;
    }
    let h = i32::from_be_bytes(b[p..p + 4].try_into().unwrap());
    assert_eq!(h, 1);
    assert_eq!(b.len(), p + 12, "resource length");
    out
}

/// Reads every point of every sealed file; checks each file opens (complete tail),
/// that its `.resource` matches its device time ranges, and that every series is
/// strictly increasing within a sequence file.
pub fn read_all(data: &Path) -> (PointMap, Vec<PathBuf>) {
    let files = sealed_files(data);
    let mut map = PointMap::new();
    for f in &files {
        let seq = f.to_string_lossy().contains("/sequence/");
        let head = std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let v4 = head.get(..7) == Some(b"TsFile\x04".as_slice());
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let parts = name.trim_end_matches(".tsfile").split('-').count();
        assert_eq!(
            parts,
            if v4 { 4 } else { 3 },
            "{}: IoTDB {} names",
            f.display(),
            if v4 { "2.x" } else { "0.10" }
        );
        let mut ranges: BTreeMap<String, (i64, i64)> = BTreeMap::new();
        if v4 {
            read_v4(f, seq, &mut map, &mut ranges);
            check_resource(f, &ranges, parse_resource_v4);
            continue;
        }
        let r = TsFileReader::open_path(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for (dev, ts) in r.all_series().unwrap() {
            let sr = r.series_reader_for(&dev, &ts).unwrap();
            let mut last = None;
            for p in sr.points() {
                let (t, v) = p.unwrap_or_else(|e| panic!("{}: {e}", f.display()));
                if seq {
                    assert!(
                        last.is_none_or(|l| t > l),
                        "{}: {dev}.{} not increasing at {t}",
                        f.display(),
                        ts.measurement
                    );
                }
                last = Some(t);
                let e = ranges.entry(dev.clone()).or_insert((t, t));
                e.0 = e.0.min(t);
                e.1 = e.1.max(t);
                map.entry((dev.clone(), ts.measurement.clone(), t))
                    .or_default()
                    .push(v);
            }
        }
        check_resource(f, &ranges, parse_resource);
    }
    (map, files)
}

/// [`read_all`], also checking that every sealed file is in format `fmt` (its version byte).
pub fn read_all_in(data: &Path, fmt: Fmt) -> (PointMap, Vec<PathBuf>) {
    let (points, files) = read_all(data);
    let want = match fmt {
        Fmt::V2 => b"TsFile000002".as_slice(),
        Fmt::V4 => b"TsFile\x04".as_slice(),
    };
    for f in &files {
        let head = std::fs::read(f).unwrap();
        assert!(head.starts_with(want), "{}: not in {fmt:?}", f.display());
    }
    (points, files)
}

/// Reads a v4 file with our v4 reader into `map` and `ranges` (as [`read_all`]).
fn read_v4(f: &Path, seq: bool, map: &mut PointMap, ranges: &mut BTreeMap<String, (i64, i64)>) {
    let r = TsFileReaderV4::open_path(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
    for d in r
        .devices()
        .unwrap_or_else(|e| panic!("{}: {e}", f.display()))
    {
        let dev = d.device.path();
        for ts in &d.series {
            let points = r
                .series_points(ts, None)
                .unwrap_or_else(|e| panic!("{}: {dev}.{}: {e}", f.display(), ts.measurement));
            let mut last = None;
            for (t, v) in points {
                if seq {
                    assert!(
                        last.is_none_or(|l| t > l),
                        "{}: {dev}.{} not increasing at {t}",
                        f.display(),
                        ts.measurement
                    );
                }
                last = Some(t);
                let e = ranges.entry(dev.clone()).or_insert((t, t));
                e.0 = e.0.min(t);
                e.1 = e.1.max(t);
                map.entry((dev.clone(), ts.measurement.clone(), t))
                    .or_default()
                    .push(v);
            }
        }
    }
}

/// Checks that `f`'s `.resource`, parsed by `parse`, holds exactly `ranges`.
fn check_resource(
    f: &Path,
    ranges: &BTreeMap<String, (i64, i64)>,
    parse: fn(&[u8]) -> Vec<DeviceRange>,
) {
    let mut res_path = f.as_os_str().to_owned();
    res_path.push(".resource");
    let res = std::fs::read(&res_path)
        .unwrap_or_else(|e| panic!("{}: {e}", Path::new(&res_path).display()));
    let got: BTreeMap<String, (i64, i64)> = parse(&res)
        .into_iter()
        .map(|(d, s, e)| (d, (s, e)))
        .collect();
    assert_eq!(
        &got,
        ranges,
        "{}: .resource differs from the file's device time ranges",
        f.display()
    );
}

/// The points of v4 files as the PyPI `tsfile` library (Apache TsFile's C++ reader) reads
/// them, one canonical dump line `device TAB measurement TAB TYPE TAB time TAB value` each,
/// sorted. Fails (never skips) when python3 or the library is missing
/// (`ops/ci-deps.sh` installs it).
pub fn pytsfile_lines(files: &[PathBuf]) -> Vec<String> {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../format/tests/v4/read_with_pytsfile.py");
    let mut lines = Vec::new();
    for f in files {
        let out = Command::new("python3")
            .arg(&script)
            .arg(f)
            .output()
            .unwrap_or_else(|e| panic!("python3 is required (run ops/ci-deps.sh): {e}"));
        assert!(
            out.status.success(),
            "the PyPI tsfile library cannot read {} ({}); is it installed (ops/ci-deps.sh)?\n{}",
            f.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        lines.extend(
            String::from_utf8(out.stdout)
                .unwrap()
                .lines()
                .map(str::to_string),
        );
    }
    lines.sort();
    lines
}

/// The canonical dump lines (as [`pytsfile_lines`]) of points given by a test, sorted.
pub fn canonical_lines<'a>(
    points: impl IntoIterator<Item = (&'a str, &'a str, i64, &'a Value)>,
) -> Vec<String> {
    use tsfile::tools::dump::value_text_v4;
    use tsfile::DataType;
    let mut lines: Vec<String> = points
        .into_iter()
        .map(|(d, m, t, v)| {
            let ty = match v {
                Value::Boolean(_) => DataType::BOOLEAN,
                Value::Int32(_) => DataType::INT32,
                Value::Int64(_) => DataType::INT64,
                Value::Float(_) => DataType::FLOAT,
                Value::Double(_) => DataType::DOUBLE,
                Value::Text(_) => DataType::TEXT,
            };
            format!("{d}\t{m}\t{}\t{t}\t{}", ty.name(), value_text_v4(ty, v))
        })
        .collect();
    lines.sort();
    lines
}

/// Polls `f` every 50 ms until it holds; fails naming `what` after `secs` seconds.
pub fn until(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "timed out: {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Extracts a metric sample's value from Prometheus text.
pub fn metric(text: &str, name_and_labels: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(name_and_labels) && l[name_and_labels.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// One series of a sealed file: (device, measurement, data type, the encodings of its
/// chunks in file order), in either format, in the file's index order.
pub type FileSeries = (String, String, tsfile::DataType, Vec<tsfile::Encoding>);

/// The series of a sealed file of either format (by its version byte).
pub fn file_series(f: &Path) -> Vec<FileSeries> {
    use tsfile::{DataType, Encoding};
    let head = std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
    let mut out = Vec::new();
    if head.starts_with(b"TsFile\x04") {
        let r = TsFileReaderV4::open(head).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for dev in r.devices().unwrap() {
            for ts in dev.series {
                let encodings = ts
                    .chunks
                    .iter()
                    .map(|(offset, _)| {
                        let (h, _) = r.chunk_header(*offset).unwrap();
                        Encoding::from_code(h.encoding as i16).unwrap()
                    })
                    .collect();
                out.push((
                    dev.device.path(),
                    ts.measurement,
                    DataType::from_code(ts.type_code as i16).unwrap(),
                    encodings,
                ));
            }
        }
    } else {
        let r = TsFileReader::open_path(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for (dev, ts) in r.all_series().unwrap() {
            let encodings = r
                .chunk_metadata_list(&ts)
                .unwrap()
                .iter()
                .map(|cm| r.read_chunk_header(cm).unwrap().0.encoding)
                .collect();
            out.push((dev, ts.measurement, ts.data_type, encodings));
        }
    }
    out
}
