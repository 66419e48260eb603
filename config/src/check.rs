//! `tsfiled check-config`: checks of a valid configuration against the machine — directories
//! exist or can be created and are writable, ports are free, named files are readable, time
//! zones exist. Nothing is created or changed except short-lived probe files.

use std::fmt;
use std::fs;
use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::model::*;

/// Outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CheckLevel {
    /// Fine.
    Ok,
    /// Probably fine, but worth a look (e.g. could not be verified).
    Warning,
    /// Will fail at start.
    Error,
}

/// One check: which key, how it went, what was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckItem {
    /// Outcome.
    pub level: CheckLevel,
    /// The key path checked, e.g. `pipeline[0].storage.wal_dir`.
    pub subject: String,
    /// What was checked and found.
    pub message: String,
}

/// All checks of one configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// The checks, in configuration order.
    pub items: Vec<CheckItem>,
}

impl CheckReport {
    /// Whether no check failed (warnings allowed).
    pub fn is_ok(&self) -> bool {
        !self.items.iter().any(|i| i.level == CheckLevel::Error)
    }

    /// The failed checks.
    pub fn errors(&self) -> impl Iterator<Item = &CheckItem> {
        self.items.iter().filter(|i| i.level == CheckLevel::Error)
    }

    fn push(&mut self, level: CheckLevel, subject: impl Into<String>, message: impl Into<String>) {
        self.items.push(CheckItem {
            level,
            subject: subject.into(),
            message: message.into(),
        });
    }

    fn result(&mut self, subject: impl Into<String>, r: Result<String, String>) {
        match r {
            Ok(m) => self.push(CheckLevel::Ok, subject, m),
            Err(m) => self.push(CheckLevel::Error, subject, m),
        }
    }
}

impl fmt::Display for CheckReport {
    /// One line per check: `ok      key: message`, `warning key: message`, `error   key: message`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for i in &self.items {
            let tag = match i.level {
                CheckLevel::Ok => "ok     ",
                CheckLevel::Warning => "warning",
                CheckLevel::Error => "error  ",
            };
            writeln!(f, "{tag} {}: {}", i.subject, i.message)?;
        }
        Ok(())
    }
}

static PROBE: AtomicU64 = AtomicU64::new(0);

fn probe_write(dir: &Path) -> Result<(), std::io::Error> {
    let name = format!(
        ".tsfiled-check-{}-{}",
        std::process::id(),
        PROBE.fetch_add(1, Ordering::Relaxed)
    );
    let path = dir.join(name);
    let r = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map(drop);
    if r.is_ok() {
        let _ = fs::remove_file(&path);
    }
    r
}

/// The path itself, or its nearest existing ancestor (`.` for a relative path with none).
fn nearest_existing(path: &Path) -> PathBuf {
    for a in path.ancestors() {
        let a = if a.as_os_str().is_empty() {
            Path::new(".")
        } else {
            a
        };
        if a.exists() {
            return a.to_path_buf();
        }
    }
    PathBuf::from(".")
}

/// A directory that must be writable: it exists and takes a probe file, or the nearest
/// existing ancestor is a writable directory (so it can be created).
pub(crate) fn dir_writable(path: &Path) -> Result<String, String> {
    let shown = path.display();
    match fs::metadata(path) {
        Ok(m) if m.is_dir() => match probe_write(path) {
            Ok(()) => Ok(format!("{shown} is a writable directory")),
            Err(e) => Err(format!("{shown} is not writable: {e}")),
        },
        Ok(_) => Err(format!("{shown} exists but is not a directory")),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            let base = nearest_existing(path);
            match fs::metadata(&base) {
                Ok(m) if m.is_dir() => match probe_write(&base) {
                    Ok(()) => Ok(format!(
                        "{shown} does not exist yet and can be created (in {})",
                        base.display()
                    )),
                    Err(e) => Err(format!(
                        "{shown} does not exist and cannot be created: {} is not writable: {e}",
                        base.display()
                    )),
                },
                _ => Err(format!(
                    "{shown} cannot be created: {} is not a directory",
                    base.display()
                )),
            }
        }
        Err(e) => Err(format!("{shown}: {e}")),
    }
}

/// A file that must be readable now.
pub(crate) fn file_readable(path: &Path) -> Result<String, String> {
    let shown = path.display();
    match fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(format!("{shown} is a directory, not a file")),
        Ok(_) => {
            let mut buf = [0u8; 1];
            match fs::File::open(path).and_then(|mut f| f.read(&mut buf)) {
                Ok(_) => Ok(format!("{shown} is readable")),
                Err(e) => Err(format!("{shown} is not readable: {e}")),
            }
        }
        Err(e) => Err(format!("{shown}: {e}")),
    }
}

/// A listen address that must be bindable now.
pub(crate) fn port_free(addr: SocketAddr) -> Result<String, String> {
    match TcpListener::bind(addr) {
        Ok(l) => {
            drop(l);
            if addr.port() == 0 {
                Ok(format!(
                    "{} is local; a free port will be picked at start",
                    addr.ip()
                ))
            } else {
                Ok(format!("{addr} is free"))
            }
        }
        Err(e) => Err(match e.kind() {
            std::io::ErrorKind::AddrInUse => {
                format!("{addr} is in use (is tsfiled or another service already running?)")
            }
            std::io::ErrorKind::PermissionDenied => {
                format!("{addr}: permission denied (ports below 1024 need privileges)")
            }
            std::io::ErrorKind::AddrNotAvailable => {
                format!("{addr}: {} is not an address of this machine", addr.ip())
            }
            _ => format!("{addr}: {e}"),
        }),
    }
}

#[cfg(unix)]
fn device_of(path: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(nearest_existing(path)).ok().map(|m| m.dev())
}

#[cfg(not(unix))]
fn device_of(_path: &Path) -> Option<u64> {
    None
}

fn check_timezone_exists(tz: &str) -> (CheckLevel, String) {
    if tz == "UTC" {
        return (CheckLevel::Ok, "UTC".into());
    }
    let zoneinfo = Path::new("/usr/share/zoneinfo");
    if !zoneinfo.is_dir() {
        return (
            CheckLevel::Warning,
            format!("cannot verify time zone \"{tz}\": no /usr/share/zoneinfo on this machine"),
        );
    }
    if zoneinfo.join(tz).is_file() {
        (CheckLevel::Ok, format!("time zone \"{tz}\" exists"))
    } else {
        (
            CheckLevel::Error,
            format!("unknown time zone \"{tz}\" (not in /usr/share/zoneinfo)"),
        )
    }
}

fn check_token_file(path: &Path) -> Result<String, String> {
    file_readable(path)?;
    let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let n = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .count();
    if n == 0 {
        Err(format!(
            "{} holds no token; every push would be refused",
            path.display()
        ))
    } else {
        Ok(format!("{} holds {n} token(s)", path.display()))
    }
}

fn check_user_file(path: &Path) -> Result<String, String> {
    file_readable(path)?;
    let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    match crate::model::parse_user_file(&text) {
        Ok(users) if users.is_empty() => Err(format!(
            "{} holds no user; Basic authentication would refuse everyone",
            path.display()
        )),
        Ok(users) => Ok(format!("{} holds {} user(s)", path.display(), users.len())),
        Err((line, message)) => Err(format!("{}:{line}: {message}", path.display())),
    }
}

/// Checks a validated configuration against this machine. Never creates directories; probe
/// files are removed at once.
pub fn check(config: &Config) -> CheckReport {
    let mut r = CheckReport::default();
    r.result("http.listen", port_free(config.http.listen));
    if let Some(f) = &config.http.token_file {
        r.result("http.token_file", check_token_file(f));
    }
    if let Some(f) = &config.http.user_file {
        r.result("http.user_file", check_user_file(f));
    }
    if config.metrics.enabled {
        if let Some(a) = config.metrics.listen {
            r.result("metrics.listen", port_free(a));
        }
    }
    for (i, p) in config.pipelines.iter().enumerate() {
        let pp = format!("pipeline[{i}]");
        r.result(
            format!("{pp}.storage.data_dir"),
            dir_writable(&p.storage.data_dir),
        );
        r.result(
            format!("{pp}.storage.wal_dir"),
            dir_writable(&p.storage.wal_dir),
        );
        for (j, s) in p.sources.iter().enumerate() {
            let sp = format!("{pp}.source[{j}]");
            match &s.kind {
                SourceKind::Http(_) => {}
                SourceKind::Mqtt(m) => {
                    if let Some(Password::File(f)) = &m.password {
                        r.result(format!("{sp}.password_file"), file_readable(f));
                    }
                    if let Some(tls) = &m.tls {
                        if let Some(ca) = &tls.ca_file {
                            r.result(format!("{sp}.ca_file"), file_readable(ca));
                        }
                        if let Some((c, k)) = &tls.client_auth {
                            r.result(format!("{sp}.client_cert_file"), file_readable(c));
                            r.result(format!("{sp}.client_key_file"), file_readable(k));
                        }
                    }
                    let dl = &m.dead_letter_file;
                    let parent = dl
                        .parent()
                        .filter(|p| !p.as_os_str().is_empty())
                        .unwrap_or(Path::new("."));
                    let res = if dl.is_dir() {
                        Err(format!("{} is a directory", dl.display()))
                    } else {
                        dir_writable(parent).map(|_| format!("{} can be written", dl.display()))
                    };
                    r.result(format!("{sp}.dead_letter_file"), res);
                }
                SourceKind::Csv(c) => {
                    for (k, dir) in c.directories.iter().enumerate() {
                        let subject = format!("{sp}.directories[{k}]");
                        r.result(&subject, dir_writable(dir));
                        let mut targets = vec![("error_dir", c.error_dir_for(dir))];
                        if c.on_success == OnSuccess::Move {
                            targets.insert(0, ("done_dir", c.done_dir_for(dir)));
                        }
                        for (key, target) in targets {
                            let key_subject = format!("{sp}.{key}");
                            match dir_writable(&target) {
                                Err(e) => r.push(CheckLevel::Error, &key_subject, e),
                                Ok(m) => match (device_of(dir), device_of(&target)) {
                                    (Some(a), Some(b)) if a != b => r.push(
                                        CheckLevel::Error,
                                        &key_subject,
                                        format!(
                                            "{} is on another filesystem than {}; files are moved by rename, which needs the same filesystem",
                                            target.display(),
                                            dir.display()
                                        ),
                                    ),
                                    _ => r.push(CheckLevel::Ok, &key_subject, m),
                                },
                            }
                        }
                    }
                    let (level, msg) = check_timezone_exists(&c.timezone);
                    r.push(level, format!("{sp}.timezone"), msg);
                }
            }
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(dir_writable(tmp.path())
            .unwrap()
            .contains("writable directory"));
        let missing = tmp.path().join("a/b/c");
        assert!(dir_writable(&missing).unwrap().contains("can be created"));
        let file = tmp.path().join("f");
        fs::write(&file, b"x").unwrap();
        assert!(dir_writable(&file).unwrap_err().contains("not a directory"));
        assert!(dir_writable(&file.join("sub"))
            .unwrap_err()
            .contains("not a directory"));
        // no probe files left behind
        let left: Vec<_> = fs::read_dir(tmp.path()).unwrap().collect();
        assert_eq!(left.len(), 1);
    }

    #[test]
    fn files() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("pw");
        fs::write(&f, b"secret\n").unwrap();
        assert!(file_readable(&f).is_ok());
        assert!(file_readable(&tmp.path().join("nope")).is_err());
        assert!(file_readable(tmp.path()).unwrap_err().contains("directory"));
        let tokens = tmp.path().join("tokens");
        fs::write(&tokens, b"# comment\n\n").unwrap();
        assert!(check_token_file(&tokens).unwrap_err().contains("no token"));
        fs::write(&tokens, b"a\nb\n").unwrap();
        assert!(check_token_file(&tokens).unwrap().contains("2 token"));
        let users = tmp.path().join("users");
        fs::write(&users, b"# who\nroot:root\nops:p:w d\n").unwrap();
        assert!(check_user_file(&users).unwrap().contains("2 user"));
        fs::write(&users, b"root:root\nnopassword\n").unwrap();
        let e = check_user_file(&users).unwrap_err();
        assert_eq!(
            e,
            format!("{}:2: expected `name:password`", users.display())
        );
        fs::write(&users, b"root:secret1\nroot:secret2\n").unwrap();
        let e = check_user_file(&users).unwrap_err();
        assert!(e.ends_with(":2: user \"root\" is listed twice"), "{e}");
        assert!(!e.contains("secret"), "{e}");
    }

    #[test]
    fn ports() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let taken = l.local_addr().unwrap();
        assert!(port_free(taken).unwrap_err().contains("in use"));
        drop(l);
        assert!(port_free("127.0.0.1:0".parse().unwrap())
            .unwrap()
            .contains("free port"));
    }

    #[test]
    fn nearest() {
        assert_eq!(
            nearest_existing(Path::new("no/such/dir")),
            PathBuf::from(".")
        );
    }
}
