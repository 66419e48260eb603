//! Credentials (passwords, tokens): one type for every source, written inline or read from a
//! file, never shown by `Debug`.

use std::path::{Path, PathBuf};

use tsfiled_core::probe::{file_readable, CheckItem};
use tsfiled_core::{KeyPath, Validator};

use crate::Error;

/// A password or token: written in the configuration (`password = "…"`) or read from a file
/// (`password_file = "…"`, trailing newline removed) each time the source starts. `Debug`
/// never shows an inline value.
#[derive(Clone, PartialEq, Eq)]
pub enum Secret {
    /// Written in the configuration.
    Inline(String),
    /// Read from this file when the source starts.
    File(PathBuf),
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Secret::Inline(_) => f.write_str("Inline(***)"),
            Secret::File(p) => f.debug_tuple("File").field(p).finish(),
        }
    }
}

impl Secret {
    /// The inline value, or the file's content without its trailing newline.
    pub fn resolve(&self) -> Result<String, Error> {
        let path = match self {
            Secret::Inline(s) => return Ok(s.clone()),
            Secret::File(p) => p,
        };
        let mut s = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("reading {}", path.display()), &e))?;
        while s.ends_with('\n') || s.ends_with('\r') {
            s.pop();
        }
        Ok(s)
    }

    /// Validates the pair of keys `<key>` (inline) and `<key>_file` of the table at `at`: at
    /// most one of them, neither blank.
    pub fn from_keys(
        v: &mut Validator<'_>,
        inline: &Option<String>,
        file: &Option<String>,
        at: &KeyPath,
        key: &str,
    ) -> Option<Secret> {
        let file_key = format!("{key}_file");
        match (inline, file) {
            (Some(_), Some(_)) => {
                v.err_key(
                    &at.key(&file_key),
                    format!("give either {key} or {file_key}, not both"),
                );
                None
            }
            (Some(s), None) => Some(Secret::Inline(s.clone())),
            (None, Some(_)) => v
                .nonempty(file, &at.key(&file_key))
                .map(|f| Secret::File(PathBuf::from(f))),
            (None, None) => None,
        }
    }

    /// The two keys as written in the effective configuration; `redact` hides an inline value.
    pub fn to_keys(
        secret: Option<&Secret>,
        redact: &dyn Fn(&str) -> String,
    ) -> (Option<String>, Option<String>) {
        match secret {
            None => (None, None),
            Some(Secret::Inline(s)) => (Some(redact(s)), None),
            Some(Secret::File(f)) => (None, Some(f.to_string_lossy().into_owned())),
        }
    }

    /// `check-config`: a secret file must be readable (`<at>.<key>_file`).
    pub fn check(secret: Option<&Secret>, at: &str, key: &str, out: &mut Vec<CheckItem>) {
        if let Some(Secret::File(f)) = secret {
            out.push(CheckItem::from_result(
                format!("{at}.{key}_file"),
                file_readable(f),
            ));
        }
    }

    /// The file, if the secret is read from one.
    pub fn file(&self) -> Option<&Path> {
        match self {
            Secret::File(f) => Some(f),
            Secret::Inline(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_lose_their_trailing_newline_and_debug_hides_inline_values() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("pw");
        std::fs::write(&p, "s3cret\r\n").unwrap();
        assert_eq!(Secret::File(p.clone()).resolve().unwrap(), "s3cret");
        assert_eq!(Secret::Inline("x".into()).resolve().unwrap(), "x");
        let missing = Secret::File(dir.path().join("missing")).resolve();
        assert!(
            matches!(&missing, Err(Error::Io { kind, .. }) if *kind == std::io::ErrorKind::NotFound),
            "{missing:?}"
        );
        assert_eq!(format!("{:?}", Secret::Inline("pw".into())), "Inline(***)");
        assert!(format!("{:?}", Secret::File(p)).contains("pw"));
    }
}
