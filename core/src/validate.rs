//! Stage-two helpers shared by every part of the configuration (top-level sections and
//! source plugins): typed values out of raw ones, with every problem collected as a
//! [`Diagnostic`] naming its key path, line and column.

use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use crate::diag::{Diagnostic, KeyPath};
use crate::locate::SpanIndex;
use crate::raw::Human;
use crate::schema::{
    encoding_supported, encoding_supported_v4, encodings_for, encodings_for_v4, unknown_name,
    Compression, ConfigName, DataType, Encoding, EncodingName, Named,
};
use crate::time::TimeUnit;
use crate::units::{format_duration, parse_duration, parse_size, ByteSize};

/// Collects problems while turning raw values into typed ones; on a problem it returns a
/// default so that validation goes on and finds the rest.
pub struct Validator<'a> {
    /// Positions of the document's keys.
    pub spans: &'a SpanIndex,
    /// Problems found so far.
    pub diags: Vec<Diagnostic>,
}

/// `"a", "b" or "c"`.
pub fn choices_text(choices: &[&str]) -> String {
    let quoted: Vec<String> = choices.iter().map(|c| format!("\"{c}\"")).collect();
    match quoted.len() {
        0 => String::new(),
        1 => quoted[0].clone(),
        n => format!("{} or {}", quoted[..n - 1].join(", "), quoted[n - 1]),
    }
}

/// Whether two paths name the same place (ignoring `.` components).
pub fn same_path(a: &Path, b: &Path) -> bool {
    let norm = |p: &Path| -> PathBuf {
        p.components()
            .filter(|c| !matches!(c, Component::CurDir))
            .collect()
    };
    norm(a) == norm(b)
}

impl Validator<'_> {
    /// Reports a problem with the value at `path` (positioned at the value).
    pub fn err(&mut self, path: &KeyPath, msg: impl Into<String>) {
        self.diags.push(self.spans.at_value(path, msg.into()));
    }

    /// Reports a problem with the key at `path` itself (positioned at the key), e.g. a key
    /// that must not be written.
    pub fn err_key(&mut self, path: &KeyPath, msg: impl Into<String>) {
        self.diags.push(self.spans.at_key(path, msg.into()));
    }

    /// Whether the document writes the key at `path`.
    pub fn written(&self, path: &KeyPath) -> bool {
        self.spans.contains(path)
    }

    /// A size (`"64MiB"` or a number of bytes); `default` when not written or invalid.
    pub fn size(&mut self, v: &Option<Human>, path: &KeyPath, default: ByteSize) -> ByteSize {
        match v {
            None => default,
            Some(Human::Int(n)) => match u64::try_from(*n) {
                Ok(b) => ByteSize(b),
                Err(_) => {
                    self.err(path, format!("negative size {n}"));
                    default
                }
            },
            Some(Human::Text(s)) => match parse_size(s) {
                Ok(b) => b,
                Err(e) => {
                    self.err(path, e.to_string());
                    default
                }
            },
        }
    }

    /// A size of at least `min`; `default` when not written or invalid.
    pub fn size_min(
        &mut self,
        v: &Option<Human>,
        path: &KeyPath,
        default: ByteSize,
        min: ByteSize,
    ) -> ByteSize {
        let s = self.size(v, path, default);
        if s < min {
            self.err(path, format!("{s} is too small; at least {min}"));
            return default;
        }
        s
    }

    /// A duration with a unit (`"30s"`); `default` when not written or invalid.
    pub fn duration(&mut self, v: &Option<Human>, path: &KeyPath, default: Duration) -> Duration {
        match v {
            None => default,
            Some(Human::Int(n)) => {
                self.err(
                    path,
                    format!("a duration needs a unit: write e.g. \"{n}s\" or \"{n}ms\""),
                );
                default
            }
            Some(Human::Text(s)) => match parse_duration(s) {
                Ok(d) => d,
                Err(e) => {
                    self.err(path, e.to_string());
                    default
                }
            },
        }
    }

    /// A duration above zero; `default` when not written or invalid.
    pub fn positive_duration(
        &mut self,
        v: &Option<Human>,
        path: &KeyPath,
        default: Duration,
    ) -> Duration {
        let d = self.duration(v, path, default);
        if d.is_zero() {
            self.err(path, "must be more than 0s");
            return default;
        }
        d
    }

    /// A whole number of seconds from `min_s` to `max_s`; `default` when not written or
    /// invalid.
    pub fn whole_seconds(
        &mut self,
        v: &Option<Human>,
        path: &KeyPath,
        default: Duration,
        min_s: u64,
        max_s: u64,
    ) -> Duration {
        let d = self.duration(v, path, default);
        if d.subsec_nanos() != 0 {
            self.err(
                path,
                format!("{} is not a whole number of seconds", format_duration(d)),
            );
            return default;
        }
        if d.as_secs() < min_s || d.as_secs() > max_s {
            self.err(
                path,
                format!(
                    "{} is out of range; expected {} to {}",
                    format_duration(d),
                    format_duration(Duration::from_secs(min_s)),
                    format_duration(Duration::from_secs(max_s))
                ),
            );
            return default;
        }
        d
    }

    /// One of the named `choices`; `default` when not written or unknown.
    pub fn choice<T: Copy>(
        &mut self,
        v: &Option<String>,
        path: &KeyPath,
        default: T,
        choices: &[(&str, T)],
    ) -> T {
        let Some(s) = v else { return default };
        match choices.iter().find(|(name, _)| name == s) {
            Some((_, t)) => *t,
            None => {
                let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
                self.err(
                    path,
                    format!("unknown value \"{s}\"; expected {}", choices_text(&names)),
                );
                default
            }
        }
    }

    /// An integer from `min` to `max`; `default` when not written or out of range.
    pub fn int(
        &mut self,
        v: &Option<i64>,
        path: &KeyPath,
        default: i64,
        min: i64,
        max: i64,
    ) -> i64 {
        match v {
            None => default,
            Some(n) if *n >= min && *n <= max => *n,
            Some(n) => {
                self.err(
                    path,
                    format!("{n} is out of range; expected {min} to {max}"),
                );
                default
            }
        }
    }

    /// The string unless it is blank (reported); `None` when not written.
    pub fn nonempty(&mut self, v: &Option<String>, path: &KeyPath) -> Option<String> {
        match v {
            Some(s) if s.trim().is_empty() => {
                self.err(path, "must not be empty");
                None
            }
            Some(s) => Some(s.clone()),
            None => None,
        }
    }

    /// The string at `parent.key`, reported when missing or blank.
    pub fn required<'s>(
        &mut self,
        v: &'s Option<String>,
        parent: &KeyPath,
        key: &str,
    ) -> Option<&'s str> {
        match v {
            None => {
                self.err(&parent.key(key), format!("missing required key `{key}`"));
                None
            }
            Some(s) if s.trim().is_empty() => {
                self.err(&parent.key(key), "must not be empty");
                None
            }
            Some(s) => Some(s.as_str()),
        }
    }

    /// The value at `parent.key`, reported ("missing required key") when not written.
    pub fn present<'s, T>(
        &mut self,
        v: &'s Option<T>,
        parent: &KeyPath,
        key: &str,
    ) -> Option<&'s T> {
        if v.is_none() {
            self.err(&parent.key(key), format!("missing required key `{key}`"));
        }
        v.as_ref()
    }

    /// The list at `parent.key`, reported when not written ("missing required key", then
    /// `need`) or empty (`need`, e.g. "at least one directory is required"); `None` then.
    pub fn nonempty_list<'s, T>(
        &mut self,
        v: &'s Option<Vec<T>>,
        parent: &KeyPath,
        key: &str,
        need: &str,
    ) -> Option<&'s [T]> {
        match v {
            None => {
                let msg = format!("missing required key `{key}`: {need}");
                self.err(&parent.key(key), msg);
                None
            }
            Some(list) if list.is_empty() => {
                self.err(&parent.key(key), need);
                None
            }
            Some(list) => Some(list),
        }
    }

    /// A growing delay (restart or reconnect backoff): the keys `initial` and `max` of the
    /// table at `parent`, both above zero, `max` not less than `initial`; `defaults` when not
    /// written or invalid.
    pub fn backoff(
        &mut self,
        (initial, max): (&Option<Human>, &Option<Human>),
        parent: &KeyPath,
        keys: [&str; 2],
        defaults: [Duration; 2],
    ) -> (Duration, Duration) {
        let first = self.positive_duration(initial, &parent.key(keys[0]), defaults[0]);
        let cap = self.positive_duration(max, &parent.key(keys[1]), defaults[1]);
        if cap < first {
            let msg = format!("must not be less than {}", keys[0]);
            self.err(&parent.key(keys[1]), msg);
        }
        (first, cap)
    }

    /// A path; `default` when not written or blank.
    pub fn path_or(&mut self, v: &Option<String>, path: &KeyPath, default: PathBuf) -> PathBuf {
        self.nonempty(v, path).map_or(default, PathBuf::from)
    }

    /// An IP address and port (`"127.0.0.1:8080"`), with a hint for the usual mistakes.
    pub fn socket_addr(&mut self, s: &str, path: &KeyPath) -> Option<SocketAddr> {
        match s.parse::<SocketAddr>() {
            Ok(a) => Some(a),
            Err(_) => {
                let hint = if s.starts_with("localhost") {
                    "; use 127.0.0.1 instead of localhost"
                } else if !s.contains(':') {
                    "; a port is required"
                } else {
                    ""
                };
                self.err(
                    path,
                    format!(
                        "\"{s}\" is not an IP address and port such as \"127.0.0.1:8080\", \"0.0.0.0:8080\" or \"[::]:8080\"{hint}"
                    ),
                );
                None
            }
        }
    }

    /// Whether `s` is a name (letters, digits, `_`, `-`); reported when not.
    pub fn name(&mut self, s: &str, path: &KeyPath) -> bool {
        if s.is_empty()
            || !s
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            self.err(
                path,
                format!(
                    "name \"{s}\" may only use letters, digits, '_' and '-' (and not be empty)"
                ),
            );
            return false;
        }
        true
    }

    /// Reports the key at `path` as unused (`why`) when it is `set`.
    pub fn not_with(&mut self, set: bool, path: &KeyPath, why: &str) {
        if set {
            self.err_key(path, format!("not used {why}; remove it"));
        }
    }

    /// The value of a TsFile name ([`Named`]); an unknown name is reported. `None` when not
    /// written or unknown.
    pub fn named<T: ConfigName>(&mut self, v: &Option<Named<T>>, path: &KeyPath) -> Option<T> {
        match v {
            None => None,
            Some(Named::Known(t)) => Some(*t),
            Some(Named::Unknown(s)) => {
                self.err(path, unknown_name::<T>(s));
                None
            }
        }
    }

    /// The encoding configuration name `name` stands for in the pipeline's format (`v4`:
    /// TsFile v4, else format 000002; see [`EncodingName::in_format`]) if that format writes
    /// type `t` with it ([`encoding_supported`], [`encoding_supported_v4`]); reported when
    /// not, with the encodings the type takes in that format.
    pub fn check_encoding(
        &mut self,
        t: DataType,
        name: EncodingName,
        v4: bool,
        path: &KeyPath,
    ) -> Option<Encoding> {
        let e = name.in_format(v4);
        if v4 {
            if let Some(e) = e.filter(|e| encoding_supported_v4(t, *e)) {
                return Some(e);
            }
            let ok: Vec<&str> = encodings_for_v4(t).iter().map(|e| e.v4_name()).collect();
            let note = match name.as_str() {
                "GORILLA_V1" => " (GORILLA_V1 is TsFile 2.x's name of format 000002's GORILLA; in v4 \"GORILLA\" is TsFile 2.x's GORILLA)",
                "REGULAR" => " (TsFile 2.x has no REGULAR encoder)",
                _ => "",
            };
            self.err(
                path,
                format!(
                    "{t} {name} is not written in TsFile v4 (storage.format_version = 4); {t} takes {}{note}",
                    choices_text(&ok)
                ),
            );
            return None;
        }
        if let Some(e) = e.filter(|e| encoding_supported(t, *e)) {
            return Some(e);
        }
        let ok: Vec<&str> = encodings_for(t).iter().map(|e| e.name()).collect();
        let note = if name
            .in_format(true)
            .is_some_and(|e| encoding_supported_v4(t, e))
        {
            format!(" ({t} {name} is written in TsFile v4: storage.format_version = 4)")
        } else {
            String::new()
        };
        self.err(
            path,
            format!(
                "TsFile 0.10 cannot encode {t} with {name}; {t} takes {}{note}",
                choices_text(&ok)
            ),
        );
        None
    }

    /// Whether the pipeline's format (`v4`, else format 000002) has compression `c`;
    /// reported when not.
    pub fn check_compression(&mut self, c: Compression, v4: bool, path: &KeyPath) -> bool {
        if v4 || c.is_supported() {
            return true;
        }
        self.err(
            path,
            format!(
                "TsFile 0.10 has no compression {c}; format 000002 takes \"UNCOMPRESSED\" or \"SNAPPY\" ({c} is written in TsFile v4: storage.format_version = 4)"
            ),
        );
        false
    }
}

/// The configuration's names of [`TimeUnit`]s ([`TimeUnit::name`]), in the order messages
/// list them.
pub const PRECISIONS: &[(&str, TimeUnit)] = &[
    (TimeUnit::Millis.name(), TimeUnit::Millis),
    (TimeUnit::Micros.name(), TimeUnit::Micros),
    (TimeUnit::Nanos.name(), TimeUnit::Nanos),
    (TimeUnit::Seconds.name(), TimeUnit::Seconds),
];
