//! `tsfiled check-config`: checks of a valid configuration against the machine — directories
//! exist or can be created and are writable, ports are free, named files are readable, time
//! zones exist. Nothing is created or changed except short-lived probe files.

use std::fmt;
use std::fs;
use std::path::Path;

use crate::model::*;
#[cfg(test)]
use tsfiled_core::probe::nearest_existing;
use tsfiled_core::probe::{dir_writable, file_readable, port_free};
pub use tsfiled_core::probe::{CheckItem, CheckLevel};

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
            s.settings.check(&sp, &mut r.items);
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::path::PathBuf;

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
