//! Checks against the machine for `tsfiled check-config`: directories writable, files
//! readable, ports free, time zones present. Nothing is created or changed except short-lived
//! probe files.

use std::fs;
use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

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

impl CheckItem {
    /// A check with this outcome.
    pub fn new(level: CheckLevel, subject: impl Into<String>, message: impl Into<String>) -> Self {
        CheckItem {
            level,
            subject: subject.into(),
            message: message.into(),
        }
    }

    /// `Ok` for `Ok(message)`, `Error` for `Err(message)`.
    pub fn from_result(subject: impl Into<String>, r: Result<String, String>) -> Self {
        match r {
            Ok(m) => CheckItem::new(CheckLevel::Ok, subject, m),
            Err(m) => CheckItem::new(CheckLevel::Error, subject, m),
        }
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
pub fn nearest_existing(path: &Path) -> PathBuf {
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
pub fn dir_writable(path: &Path) -> Result<String, String> {
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
pub fn file_readable(path: &Path) -> Result<String, String> {
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
pub fn port_free(addr: SocketAddr) -> Result<String, String> {
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
pub fn device_of(path: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(nearest_existing(path)).ok().map(|m| m.dev())
}

#[cfg(not(unix))]
pub fn device_of(_path: &Path) -> Option<u64> {
    None
}

/// Whether an IANA time zone exists on this machine (`/usr/share/zoneinfo`).
pub fn check_timezone_exists(tz: &str) -> (CheckLevel, String) {
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
