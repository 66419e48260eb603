//! IoTDB 0.10 path rules: validation of device paths and measurement names, sanitizing of
//! free-form strings (tag values, topic levels) into path nodes, and device-path templates.
//!
//! # The rule we enforce
//!
//! IoTDB 0.10's SQL grammar (`SqlBase.g4`) accepts an unquoted path node when it lexes as an
//! `ID` (one or more of `A-Z a-z 0-9 _` and the CJK range U+2E80..=U+9FFF), an `INT` or a
//! `DURATION` (both are made of the same characters). We accept exactly that character set, so
//! every series we write can be named in 0.10 SQL without quoting. In particular `-`, `.`,
//! `:`, `/`, spaces and all other punctuation are **not** allowed (`-` lexes as MINUS in 0.10).
//!
//! On top of the character set we are conservative:
//! - a node that lexes as an `EXPONENT` literal (`1e5`, digits `e|E` digits) is rejected: 0.10's
//!   grammar has no path rule for it;
//! - `root` (any case) is only allowed as the first node (it lexes as the ROOT keyword);
//! - measurements named `time` or `timestamp` (any case) are rejected: they collide with the
//!   time column in SQL and in result sets;
//! - a node is at most [`MAX_NODE_BYTES`] bytes and a device path at most [`MAX_DEVICE_BYTES`]
//!   (storage-group paths become directory names; 255 bytes is the usual file-name limit).
//!
//! Other SQL keywords (`level`, `count`, `device`, ...) are accepted as nodes: TsFiles and `load`
//! do not care, but a 0.10 SQL query must quote such a node (`select "level" from ...`).
//!
//! Measurement names never contain `.`: TsFile sorts and splits series paths on `.`, and a dotted
//! measurement would be read back as a deeper device.
//!
//! # Sanitizing
//!
//! [`sanitize_node`] maps any string to a valid node: every character outside the allowed set
//! becomes `_`, an empty string becomes `_`, and a result that is reserved (`root`, `time`,
//! `timestamp`) or exponent-shaped gets a `_` prefix. Distinct inputs can map to the same node
//! (`a-b` and `a.b` both become `a_b`).

use std::collections::HashSet;
use std::fmt;

/// Longest allowed node, in bytes.
pub const MAX_NODE_BYTES: usize = 255;
/// Longest allowed device path, in bytes.
pub const MAX_DEVICE_BYTES: usize = 1024;

/// Why a string is not a valid device path, node or measurement name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The string is empty.
    #[error("is empty")]
    Empty,
    /// A device path does not start with `root`.
    #[error("must start with `root.`")]
    NoRoot,
    /// A device path has no level after `root`.
    #[error("needs at least one level after `root`")]
    TooShort,
    /// A level is empty (`root..d1`, trailing `.`).
    #[error("level {level} is empty")]
    EmptyNode {
        /// 0-based level index (`root` is level 0).
        level: usize,
    },
    /// A character outside the allowed set.
    #[error(
        "level {level} {node:?}: character {ch:?} is not allowed (letters, digits, `_`, CJK U+2E80..U+9FFF)"
    )]
    InvalidChar {
        /// 0-based level index.
        level: usize,
        /// The offending node.
        node: String,
        /// The first offending character.
        ch: char,
    },
    /// A measurement name contains `.`.
    #[error("measurement {0:?} contains `.`")]
    DottedMeasurement(String),
    /// A reserved word (`root` after level 0, `time`/`timestamp` as measurement).
    #[error("level {level} {node:?} is a reserved word")]
    Reserved {
        /// 0-based level index.
        level: usize,
        /// The offending node.
        node: String,
    },
    /// A node that IoTDB 0.10 lexes as a number with an exponent (`1e5`).
    #[error("level {level} {node:?} reads as a number with an exponent")]
    Exponent {
        /// 0-based level index.
        level: usize,
        /// The offending node.
        node: String,
    },
    /// Over a length limit.
    #[error("is {len} bytes long, more than the {max} allowed")]
    TooLong {
        /// Actual length in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
}

/// Whether `c` may appear in an unquoted IoTDB 0.10 path node.
#[inline]
pub fn is_node_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || ('\u{2E80}'..='\u{9FFF}').contains(&c)
}

fn is_exponent_shaped(node: &str) -> bool {
    let b = node.as_bytes();
    let Some(e) = b.iter().position(|&c| c == b'e' || c == b'E') else {
        return false;
    };
    e > 0
        && e + 1 < b.len()
        && b[..e].iter().all(u8::is_ascii_digit)
        && b[e + 1..].iter().all(u8::is_ascii_digit)
}

fn is_reserved(node: &str, measurement: bool) -> bool {
    node.eq_ignore_ascii_case("root")
        || (measurement
            && (node.eq_ignore_ascii_case("time") || node.eq_ignore_ascii_case("timestamp")))
}

fn check_node(node: &str, level: usize, measurement: bool) -> Result<(), PathError> {
    if node.is_empty() {
        return Err(PathError::EmptyNode { level });
    }
    if node.len() > MAX_NODE_BYTES {
        return Err(PathError::TooLong {
            len: node.len(),
            max: MAX_NODE_BYTES,
        });
    }
    // Fast path: pure ASCII.
    let bytes = node.as_bytes();
    if !bytes
        .iter()
        .all(|&b| b.is_ascii_alphanumeric() || b == b'_')
    {
        if let Some(ch) = node.chars().find(|&c| !is_node_char(c)) {
            if ch == '.' && measurement {
                return Err(PathError::DottedMeasurement(node.to_owned()));
            }
            return Err(PathError::InvalidChar {
                level,
                node: node.to_owned(),
                ch,
            });
        }
    }
    if level > 0 && is_reserved(node, measurement) {
        return Err(PathError::Reserved {
            level,
            node: node.to_owned(),
        });
    }
    if is_exponent_shaped(node) {
        return Err(PathError::Exponent {
            level,
            node: node.to_owned(),
        });
    }
    Ok(())
}

/// Validates one device-path node (not the first `root`) at `level`.
pub fn validate_node(node: &str, level: usize) -> Result<(), PathError> {
    check_node(node, level.max(1), false)
}

/// Validates a device path: `root` followed by one or more `.`-separated nodes.
pub fn validate_device(path: &str) -> Result<(), PathError> {
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    if path.len() > MAX_DEVICE_BYTES {
        return Err(PathError::TooLong {
            len: path.len(),
            max: MAX_DEVICE_BYTES,
        });
    }
    let mut nodes = path.split('.');
    if nodes.next() != Some("root") {
        return Err(PathError::NoRoot);
    }
    let mut count = 0;
    for (i, node) in nodes.enumerate() {
        check_node(node, i + 1, false)?;
        count += 1;
    }
    if count == 0 {
        return Err(PathError::TooShort);
    }
    Ok(())
}

/// Validates a measurement name (the last level of a series path): a single valid node,
/// not `time`/`timestamp`.
pub fn validate_measurement(name: &str) -> Result<(), PathError> {
    if name.is_empty() {
        return Err(PathError::Empty);
    }
    check_node(name, 1, true)
}

/// Appends `raw` to `out` as a valid path node (see the module docs for the rule).
/// `measurement` also avoids the measurement-only reserved words.
pub fn sanitize_node_into(raw: &str, measurement: bool, out: &mut String) {
    let start = out.len();
    let mut bytes_left = MAX_NODE_BYTES - 1; // keep room for a `_` prefix
    for c in raw.chars() {
        let c = if is_node_char(c) { c } else { '_' };
        if c.len_utf8() > bytes_left {
            break;
        }
        bytes_left -= c.len_utf8();
        out.push(c);
    }
    let node = &out[start..];
    if node.is_empty() {
        out.push('_');
    } else if is_reserved(node, measurement) || is_exponent_shaped(node) {
        out.insert(start, '_');
    }
}

/// `raw` as a valid path node (see the module docs for the rule).
pub fn sanitize_node(raw: &str) -> String {
    let mut s = String::with_capacity(raw.len());
    sanitize_node_into(raw, false, &mut s);
    s
}

/// `raw` as a valid measurement name (like [`sanitize_node`], also avoiding `time`/`timestamp`).
pub fn sanitize_measurement(raw: &str) -> String {
    let mut s = String::with_capacity(raw.len());
    sanitize_node_into(raw, true, &mut s);
    s
}

/// Whether `raw` is already a valid measurement name, so sanitizing can be skipped.
#[inline]
pub(crate) fn is_clean_measurement(raw: &str) -> bool {
    !raw.is_empty()
        && raw.len() < MAX_NODE_BYTES
        && raw
            .as_bytes()
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'_')
        && !is_reserved(raw, true)
        && !is_exponent_shaped(raw)
}

/// An error in a device template.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("device template {template:?}, byte {offset}: {message}")]
pub struct TemplateError {
    /// The template as given.
    pub template: String,
    /// Byte offset of the problem.
    pub offset: usize,
    /// What is wrong / what was expected.
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Lit(String),
    Measurement,
    Tag {
        key: String,
        default: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Parts(Vec<Part>),
    /// All tags not named by a `{tag:KEY}`, sorted by key, one node per value.
    Tags,
}

/// A device-path template for line protocol (and other tagged sources).
///
/// Syntax: `.`-separated levels starting with the literal `root`; a level is literal text
/// (valid node characters) mixed with placeholders:
/// - `{measurement}`: the line-protocol measurement, sanitized;
/// - `{tag:KEY}`: the value of tag `KEY`, sanitized; a line without that tag is rejected
///   (InvalidPath), unless a default is given as `{tag:KEY|default}`;
/// - `{tags}` (alone in its level): the values of all tags not named by a `{tag:KEY}`, sorted by
///   tag key, one level each; no level when there are none.
///
/// The default, [`DeviceTemplate::DEFAULT`] = `root.{measurement}.{tags}`, mirrors IoTDB's own
/// InfluxDB adapter (measurement, then tag values as levels): `cpu,host=gw1,cpu=cpu0` becomes
/// device `root.cpu.cpu0.gw1`. Note that `{tags}` carries values only: lines with different tag
/// *keys* but equal values map to the same device; use `{tag:KEY}` levels when that matters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceTemplate {
    source: String,
    nodes: Vec<Node>,
    named_tags: Vec<String>,
}

impl fmt::Display for DeviceTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl Default for DeviceTemplate {
    fn default() -> Self {
        DeviceTemplate::parse(Self::DEFAULT).unwrap_or_else(|_| unreachable!())
    }
}

impl std::str::FromStr for DeviceTemplate {
    type Err = TemplateError;
    fn from_str(s: &str) -> Result<Self, TemplateError> {
        DeviceTemplate::parse(s)
    }
}

impl DeviceTemplate {
    /// The default template.
    pub const DEFAULT: &'static str = "root.{measurement}.{tags}";

    /// The template text.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Parses a template.
    pub fn parse(template: &str) -> Result<DeviceTemplate, TemplateError> {
        let err = |offset: usize, message: String| TemplateError {
            template: template.to_owned(),
            offset,
            message,
        };
        let mut nodes = Vec::new();
        let mut named_tags = Vec::new();
        let mut offset = 0;
        for (level, text) in template.split('.').enumerate() {
            let node_start = offset;
            offset += text.len() + 1;
            if level == 0 {
                if text != "root" {
                    return Err(err(0, "expected the first level to be `root`".into()));
                }
                continue;
            }
            if text.is_empty() {
                return Err(err(node_start, format!("level {level} is empty")));
            }
            if text == "{tags}" {
                if nodes.contains(&Node::Tags) {
                    return Err(err(node_start, "`{tags}` appears twice".into()));
                }
                nodes.push(Node::Tags);
                continue;
            }
            let mut parts = Vec::new();
            let mut rest = text;
            let mut pos = node_start;
            while !rest.is_empty() {
                if let Some(after) = rest.strip_prefix('{') {
                    let Some(close) = after.find('}') else {
                        return Err(err(pos, "unclosed `{`".into()));
                    };
                    let name = &after[..close];
                    let part = if name == "measurement" {
                        Part::Measurement
                    } else if let Some(spec) = name.strip_prefix("tag:") {
                        let (key, default) = match spec.split_once('|') {
                            Some((k, d)) => (k, Some(d)),
                            None => (spec, None),
                        };
                        if key.is_empty() {
                            return Err(err(pos, "empty tag key in `{tag:KEY}`".into()));
                        }
                        if let Some(d) = default {
                            if d.is_empty() || !d.chars().all(is_node_char) {
                                return Err(err(
                                    pos,
                                    format!("default {d:?} is not a valid path node"),
                                ));
                            }
                        }
                        if !named_tags.iter().any(|k| k == key) {
                            named_tags.push(key.to_owned());
                        }
                        Part::Tag {
                            key: key.to_owned(),
                            default: default.map(str::to_owned),
                        }
                    } else if name == "tags" {
                        return Err(err(pos, "`{tags}` must be a whole level".into()));
                    } else {
                        return Err(err(
                            pos,
                            format!(
                                "unknown placeholder `{{{name}}}`; expected {{measurement}}, {{tag:KEY}} or {{tags}}"
                            ),
                        ));
                    };
                    parts.push(part);
                    pos += close + 2;
                    rest = &after[close + 1..];
                } else {
                    let end = rest.find('{').unwrap_or(rest.len());
                    let lit = &rest[..end];
                    if let Some(ch) = lit.chars().find(|&c| !is_node_char(c)) {
                        return Err(err(
                            pos,
                            format!(
                                "character {ch:?} is not allowed in a path (letters, digits, `_`, CJK)"
                            ),
                        ));
                    }
                    parts.push(Part::Lit(lit.to_owned()));
                    pos += end;
                    rest = &rest[end..];
                }
            }
            if let [Part::Lit(lit)] = parts.as_slice() {
                check_node(lit, level, false)
                    .map_err(|e| err(node_start, format!("level {level}: {e}")))?;
            }
            nodes.push(Node::Parts(parts));
        }
        if nodes.is_empty() {
            return Err(err(
                template.len(),
                "expected at least one level after `root`".into(),
            ));
        }
        Ok(DeviceTemplate {
            source: template.to_owned(),
            nodes,
            named_tags,
        })
    }

    /// Whether the template uses tags at all (`{tag:KEY}` or `{tags}`).
    pub fn uses_tags(&self) -> bool {
        !self.named_tags.is_empty() || self.nodes.contains(&Node::Tags)
    }

    /// Renders the device path for `measurement` and `tags` (key, value; any order, keys
    /// unique) into `out` (cleared first). Returns the reason when a tag is missing or the
    /// result is not a valid device path.
    pub fn render(
        &self,
        measurement: &str,
        tags: &[(&str, &str)],
        out: &mut String,
    ) -> Result<(), String> {
        out.clear();
        out.push_str("root");
        for node in &self.nodes {
            match node {
                Node::Tags => {
                    let mut rest: Vec<&(&str, &str)> = tags
                        .iter()
                        .filter(|(k, _)| !self.named_tags.iter().any(|n| n == k))
                        .collect();
                    rest.sort_unstable_by(|a, b| a.0.cmp(b.0));
                    for (_, v) in rest {
                        out.push('.');
                        sanitize_node_into(v, false, out);
                    }
                }
                Node::Parts(parts) => {
                    out.push('.');
                    if let [single] = parts.as_slice() {
                        match single {
                            Part::Lit(l) => out.push_str(l),
                            Part::Measurement => sanitize_node_into(measurement, false, out),
                            Part::Tag { key, default } => {
                                match tags.iter().find(|(k, _)| k == key) {
                                    Some((_, v)) => sanitize_node_into(v, false, out),
                                    None => match default {
                                        Some(d) => out.push_str(d),
                                        None => return Err(format!("tag {key:?} is missing")),
                                    },
                                }
                            }
                        }
                        continue;
                    }
                    let start = out.len();
                    for part in parts {
                        let raw = match part {
                            Part::Lit(l) => l.as_str(),
                            Part::Measurement => measurement,
                            Part::Tag { key, default } => {
                                match tags.iter().find(|(k, _)| k == key) {
                                    Some((_, v)) => v,
                                    None => match default {
                                        Some(d) => d.as_str(),
                                        None => return Err(format!("tag {key:?} is missing")),
                                    },
                                }
                            }
                        };
                        for c in raw.chars() {
                            out.push(if is_node_char(c) { c } else { '_' });
                        }
                    }
                    let node = out[start..].to_owned();
                    out.truncate(start);
                    sanitize_node_into(&node, false, out);
                }
            }
        }
        if out.len() == 4 {
            return Err("the template produced no level after `root` (no tags)".into());
        }
        if out.len() > MAX_DEVICE_BYTES {
            return Err(format!(
                "device path is {} bytes long, more than the {MAX_DEVICE_BYTES} allowed",
                out.len()
            ));
        }
        Ok(())
    }
}

/// Distinct keys check used by tests and callers that want to reject duplicate tag keys.
pub(crate) fn has_duplicate_keys(tags: &[(&str, &str)]) -> bool {
    if tags.len() < 8 {
        return tags
            .iter()
            .enumerate()
            .any(|(i, (k, _))| tags[..i].iter().any(|(k2, _)| k2 == k));
    }
    let mut seen = HashSet::with_capacity(tags.len());
    !tags.iter().all(|(k, _)| seen.insert(*k))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn devices() {
        assert_eq!(validate_device("root.sg.d1"), Ok(()));
        assert_eq!(validate_device("root.sg"), Ok(()));
        assert_eq!(validate_device("root.车间.设备_1"), Ok(()));
        assert_eq!(validate_device("root.sg.123"), Ok(()));
        assert_eq!(validate_device("root.sg.12d"), Ok(()));
        assert_eq!(validate_device(""), Err(PathError::Empty));
        assert_eq!(validate_device("root"), Err(PathError::TooShort));
        assert_eq!(validate_device("sg.d1"), Err(PathError::NoRoot));
        assert_eq!(validate_device("ROOT.sg"), Err(PathError::NoRoot));
        assert_eq!(
            validate_device("root..d1"),
            Err(PathError::EmptyNode { level: 1 })
        );
        assert_eq!(
            validate_device("root.sg."),
            Err(PathError::EmptyNode { level: 2 })
        );
        assert_eq!(
            validate_device("root.sg.d-1"),
            Err(PathError::InvalidChar {
                level: 2,
                node: "d-1".into(),
                ch: '-'
            })
        );
        assert_eq!(
            validate_device("root.sg.d 1"),
            Err(PathError::InvalidChar {
                level: 2,
                node: "d 1".into(),
                ch: ' '
            })
        );
        assert_eq!(
            validate_device("root.sg.é"),
            Err(PathError::InvalidChar {
                level: 2,
                node: "é".into(),
                ch: 'é'
            })
        );
        assert_eq!(
            validate_device("root.sg.Root"),
            Err(PathError::Reserved {
                level: 2,
                node: "Root".into()
            })
        );
        assert_eq!(
            validate_device("root.sg.1e5"),
            Err(PathError::Exponent {
                level: 2,
                node: "1e5".into()
            })
        );
        // `time` is fine as a device level, only reserved for measurements.
        assert_eq!(validate_device("root.sg.time"), Ok(()));
        let long = format!("root.{}", "a".repeat(MAX_NODE_BYTES + 1));
        assert_eq!(
            validate_device(&long),
            Err(PathError::TooLong {
                len: MAX_NODE_BYTES + 1,
                max: MAX_NODE_BYTES
            })
        );
        let many = format!("root{}", ".abcdefghi".repeat(110));
        assert!(matches!(
            validate_device(&many),
            Err(PathError::TooLong {
                max: MAX_DEVICE_BYTES,
                ..
            })
        ));
    }

    #[test]
    fn measurements() {
        assert_eq!(validate_measurement("s1"), Ok(()));
        assert_eq!(validate_measurement("温度"), Ok(()));
        assert_eq!(validate_measurement("level"), Ok(()));
        assert_eq!(validate_measurement(""), Err(PathError::Empty));
        assert_eq!(
            validate_measurement("a.b"),
            Err(PathError::DottedMeasurement("a.b".into()))
        );
        assert_eq!(
            validate_measurement("Time"),
            Err(PathError::Reserved {
                level: 1,
                node: "Time".into()
            })
        );
        assert!(matches!(
            validate_measurement("timestamp"),
            Err(PathError::Reserved { .. })
        ));
        assert!(matches!(
            validate_measurement("2E10"),
            Err(PathError::Exponent { .. })
        ));
        assert!(matches!(
            validate_measurement("s\u{0}"),
            Err(PathError::InvalidChar { ch: '\u{0}', .. })
        ));
    }

    #[test]
    fn sanitizing() {
        assert_eq!(sanitize_node("gw-1.local"), "gw_1_local");
        assert_eq!(sanitize_node(""), "_");
        assert_eq!(sanitize_node("/"), "_");
        assert_eq!(sanitize_node("root"), "_root");
        assert_eq!(sanitize_node("time"), "time");
        assert_eq!(sanitize_measurement("time"), "_time");
        assert_eq!(sanitize_node("1e3"), "_1e3");
        assert_eq!(sanitize_node("车间 A"), "车间_A");
        assert_eq!(sanitize_node("ü"), "_");
        let long = sanitize_node(&"x".repeat(1000));
        assert_eq!(long.len(), MAX_NODE_BYTES - 1);
        assert!(is_clean_measurement("usage_idle"));
        assert!(!is_clean_measurement("usage-idle"));
        assert!(!is_clean_measurement("time"));
    }

    #[test]
    fn templates() {
        let t = DeviceTemplate::default();
        let mut out = String::new();
        t.render("cpu", &[("host", "gw-1"), ("cpu", "cpu0")], &mut out)
            .unwrap();
        assert_eq!(out, "root.cpu.cpu0.gw_1");
        t.render("mem", &[], &mut out).unwrap();
        assert_eq!(out, "root.mem");

        let t = DeviceTemplate::parse("root.telegraf.{tag:host}.{measurement}.{tags}").unwrap();
        t.render(
            "disk",
            &[("path", "/"), ("host", "h"), ("device", "sda")],
            &mut out,
        )
        .unwrap();
        assert_eq!(out, "root.telegraf.h.disk.sda._");
        assert_eq!(
            t.render("disk", &[("path", "/")], &mut out),
            Err("tag \"host\" is missing".into())
        );

        let t = DeviceTemplate::parse("root.sg.{tag:host|unknown}").unwrap();
        t.render("x", &[], &mut out).unwrap();
        assert_eq!(out, "root.sg.unknown");

        let t = DeviceTemplate::parse("root.tg_{tag:host}x.{measurement}").unwrap();
        t.render("root", &[("host", "a.b")], &mut out).unwrap();
        assert_eq!(out, "root.tg_a_bx._root");

        let t = DeviceTemplate::parse("root.{tags}").unwrap();
        assert!(t.render("x", &[], &mut out).is_err());
        assert!(t.uses_tags());
        assert!(!DeviceTemplate::parse("root.a.{measurement}")
            .unwrap()
            .uses_tags());
    }

    #[test]
    fn template_errors() {
        for (t, offset) in [
            ("", 0),
            ("sg.{measurement}", 0),
            ("root", 4),
            ("root.", 5),
            ("root.a..b", 7),
            ("root.{measurement", 5),
            ("root.{foo}", 5),
            ("root.x{tags}", 6),
            ("root.{tag:}", 5),
            ("root.a-b", 5),
            ("root.{tags}.{tags}", 12),
            ("root.{tag:h|a-b}", 5),
            ("root.root", 5),
        ] {
            let e = DeviceTemplate::parse(t).unwrap_err();
            assert_eq!(e.offset, offset, "{t}: {e}");
        }
    }

    #[test]
    fn duplicate_keys() {
        assert!(has_duplicate_keys(&[("a", "1"), ("a", "2")]));
        assert!(!has_duplicate_keys(&[("a", "1"), ("b", "2")]));
        let many: Vec<(String, String)> = (0..10).map(|i| (format!("k{i}"), "v".into())).collect();
        let mut refs: Vec<(&str, &str)> =
            many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert!(!has_duplicate_keys(&refs));
        refs.push(("k3", "x"));
        assert!(has_duplicate_keys(&refs));
    }

    proptest! {
        #[test]
        fn sanitized_nodes_validate(raw in any::<String>()) {
            let n = sanitize_node(&raw);
            prop_assert_eq!(validate_node(&n, 1), Ok(()));
            prop_assert_eq!(validate_device(&format!("root.{n}")), Ok(()));
            let m = sanitize_measurement(&raw);
            prop_assert_eq!(validate_measurement(&m), Ok(()));
        }

        #[test]
        fn valid_nodes_are_kept(raw in "[a-zA-Z_\u{4e00}-\u{4e10}][a-zA-Z0-9_\u{4e00}-\u{4e10}]{0,20}") {
            prop_assume!(validate_measurement(&raw).is_ok());
            prop_assert_eq!(sanitize_measurement(&raw), raw);
        }

        #[test]
        fn rendered_templates_validate(
            m in any::<String>(),
            tags in proptest::collection::btree_map(any::<String>(), any::<String>(), 0..5),
        ) {
            let tags: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let t = DeviceTemplate::default();
            let mut out = String::new();
            t.render(&m, &tags, &mut out).unwrap();
            prop_assert_eq!(validate_device(&out), Ok(()));
            prop_assert_eq!(out.split('.').count(), 2 + tags.len());
        }
    }
}
