//! Test helpers for the status page: headless Chromium (`--dump-dom`, `--screenshot`), a tiny
//! HTTP server for canned responses, and a reader for the figures in the dumped DOM.
//!
//! Use from a test crate with `#[path = "support/browser.rs"] mod browser;`. Chromium comes from
//! `$CHROMIUM`, else `chromium`, `chromium-browser` or `google-chrome` on `PATH`
//! (Debian: `apt-get install -y chromium`).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Longest a browser run may take before it is killed (a hang guard, not a timing assert).
const BROWSER_GUARD: Duration = Duration::from_secs(120);

/// A headless Chromium.
pub struct Chromium {
    bin: PathBuf,
}

impl Chromium {
    /// Finds the browser; panics with an install hint when there is none.
    pub fn find() -> Chromium {
        if let Some(p) = std::env::var_os("CHROMIUM") {
            return Chromium { bin: p.into() };
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            for dir in std::env::split_paths(&path) {
                let p = dir.join(name);
                if p.is_file() {
                    return Chromium { bin: p };
                }
            }
        }
        panic!("no Chromium found (set CHROMIUM or apt-get install -y chromium)");
    }

    fn run(&self, args: &[String], url: &str) -> Output {
        let profile = tempfile::tempdir().expect("profile dir");
        let mut cmd = Command::new(&self.bin);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--no-first-run",
            "--no-default-browser-check",
            "--mute-audio",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.bin.display()));
        let mut stdout = child.stdout.take().expect("stdout");
        let mut stderr = child.stderr.take().expect("stderr");
        let out_thread = std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = stdout.read_to_end(&mut v);
            v
        });
        let err_thread = std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = stderr.read_to_end(&mut v);
            v
        });
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().expect("wait for chromium") {
                break s;
            }
            if start.elapsed() > BROWSER_GUARD {
                let _ = child.kill();
                let _ = child.wait();
                panic!("chromium did not finish within {BROWSER_GUARD:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        Output {
            status,
            stdout: out_thread.join().unwrap_or_default(),
            stderr: err_thread.join().unwrap_or_default(),
        }
    }

    /// The DOM after the page has run for `virtual_ms` of virtual time (timers fire, fetches
    /// complete; no real waiting).
    pub fn dump_dom(&self, url: &str, virtual_ms: u64) -> String {
        let out = self.run(
            &[
                format!("--virtual-time-budget={virtual_ms}"),
                "--dump-dom".to_string(),
            ],
            url,
        );
        assert!(
            out.status.success(),
            "chromium --dump-dom failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("DOM is UTF-8")
    }

    /// Writes a PNG screenshot of the page after `virtual_ms` of virtual time.
    pub fn screenshot(&self, url: &str, png: &Path, width: u32, height: u32, virtual_ms: u64) {
        let out = self.run(
            &[
                format!("--virtual-time-budget={virtual_ms}"),
                format!("--window-size={width},{height}"),
                format!("--screenshot={}", png.display()),
            ],
            url,
        );
        assert!(
            out.status.success() && png.is_file(),
            "chromium --screenshot failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Builds a response body for the `n`-th request (1-based) to a path.
pub type Responder = Box<dyn Fn(u64) -> (String, String) + Send + Sync>;

/// A small HTTP/1.1 server answering GETs from canned responders, one thread per
/// connection, `Connection: close`. Stops when dropped.
pub struct FakeServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    counts: Arc<Mutex<BTreeMap<String, u64>>>,
}

impl FakeServer {
    /// Serves `routes` (path → responder giving content type and body) on 127.0.0.1:0.
    pub fn start(routes: Vec<(&str, Responder)>) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("addr");
        let routes: Arc<BTreeMap<String, Responder>> = Arc::new(
            routes
                .into_iter()
                .map(|(p, r)| (p.to_string(), r))
                .collect(),
        );
        let counts: Arc<Mutex<BTreeMap<String, u64>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (stop2, counts2) = (Arc::clone(&stop), Arc::clone(&counts));
        let thread = std::thread::spawn(move || {
            let seq = AtomicU64::new(0);
            while !stop2.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        seq.fetch_add(1, Ordering::Relaxed);
                        let (routes, counts) = (Arc::clone(&routes), Arc::clone(&counts2));
                        std::thread::spawn(move || serve(stream, &routes, &counts));
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    Err(_) => break,
                }
            }
        });
        FakeServer {
            addr,
            stop,
            thread: Some(thread),
            counts,
        }
    }

    /// `http://127.0.0.1:PORT` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// How many requests `path` has had.
    pub fn count(&self, path: &str) -> u64 {
        self.counts
            .lock()
            .map(|c| c.get(path).copied().unwrap_or(0))
            .unwrap_or(0)
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(
    stream: TcpStream,
    routes: &BTreeMap<String, Responder>,
    counts: &Mutex<BTreeMap<String, u64>>,
) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    loop {
        let mut header = String::new();
        match reader.read_line(&mut header) {
            Ok(0) => break,
            Ok(_) if header == "\r\n" || header == "\n" => break,
            Ok(_) => {}
            Err(_) => return,
        }
    }
    let target = request_line.split_whitespace().nth(1).unwrap_or("/");
    let path = target.split('?').next().unwrap_or("/").to_string();
    let n = {
        let mut c = counts.lock().unwrap_or_else(|e| e.into_inner());
        let e = c.entry(path.clone()).or_insert(0);
        *e += 1;
        *e
    };
    let (status, ctype, body) = match routes.get(&path) {
        Some(r) => {
            let (ctype, body) = r(n);
            ("200 OK", ctype, body)
        }
        None => (
            "404 Not Found",
            "text/plain".to_string(),
            "not found\n".to_string(),
        ),
    };
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.flush();
}

/// One element of a dumped DOM: its attributes and its own leading text.
#[derive(Debug, Clone, PartialEq)]
pub struct Element {
    /// Attributes, unescaped.
    pub attrs: BTreeMap<String, String>,
    /// Text from the end of the start tag to the next tag, unescaped and trimmed.
    pub text: String,
}

impl Element {
    /// An attribute's value.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs.get(name).map(String::as_str)
    }

    /// `data-value` as a number (panics with the element when it is not one).
    pub fn value(&self) -> f64 {
        self.attr("data-value")
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no numeric data-value: {self:?}"))
    }
}

fn unescape(s: &str) -> String {
    s.replace("&nbsp;", "\u{a0}")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Parses the start tag beginning at `lt` (a `<`); returns the attributes and the index
/// after the tag's `>`.
fn start_tag(dom: &str, lt: usize) -> Option<(BTreeMap<String, String>, usize)> {
    let b = dom.as_bytes();
    let mut i = lt + 1;
    while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'>' {
        i += 1;
    }
    let mut attrs = BTreeMap::new();
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        match b.get(i)? {
            b'>' => return Some((attrs, i + 1)),
            b'/' => i += 1,
            _ => {
                let start = i;
                while i < b.len() && !b"=> \t\n".contains(&b[i]) {
                    i += 1;
                }
                let name = dom[start..i].to_string();
                if b.get(i) == Some(&b'=') && b.get(i + 1) == Some(&b'"') {
                    let vstart = i + 2;
                    let vend = vstart + dom[vstart..].find('"')?;
                    attrs.insert(name, unescape(&dom[vstart..vend]));
                    i = vend + 1;
                } else {
                    attrs.insert(name, String::new());
                }
            }
        }
    }
}

/// Every element whose start tag has `attr="value"`.
pub fn find_all(dom: &str, attr: &str, value: &str) -> Vec<Element> {
    let needle = format!(" {attr}=\"{value}\"");
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(pos) = dom[from..].find(&needle) {
        let at = from + pos;
        from = at + needle.len();
        let Some(lt) = dom[..at].rfind('<') else {
            continue;
        };
        let Some((attrs, end)) = start_tag(dom, lt) else {
            continue;
        };
        if attrs.get(attr).map(String::as_str) != Some(value) {
            continue;
        }
        let text_end = dom[end..].find('<').map_or(dom.len(), |p| end + p);
        out.push(Element {
            attrs,
            text: unescape(dom[end..text_end].trim()),
        });
    }
    out
}

/// The element with this id (panics with the DOM's start when there is none).
pub fn by_id(dom: &str, id: &str) -> Element {
    let mut all = find_all(dom, "id", id);
    match all.len() {
        1 => all.remove(0),
        0 => panic!(
            "no element #{id} in the DOM:\n{}",
            dom.chars().take(4000).collect::<String>()
        ),
        n => panic!("{n} elements #{id}"),
    }
}

/// The first `<TAG …>` start tag of the DOM, e.g. `body`.
pub fn first_tag(dom: &str, tag: &str) -> Element {
    let lt = dom
        .find(&format!("<{tag} "))
        .or_else(|| dom.find(&format!("<{tag}>")))
        .unwrap_or_else(|| panic!("no <{tag}> in the DOM"));
    let (attrs, end) = start_tag(dom, lt).unwrap_or_else(|| panic!("bad <{tag}> tag"));
    let text_end = dom[end..].find('<').map_or(dom.len(), |p| end + p);
    Element {
        attrs,
        text: unescape(dom[end..text_end].trim()),
    }
}
