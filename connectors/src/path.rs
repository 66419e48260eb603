//! IoTDB 0.10 path rules as the sources apply them: validation of device paths and
//! measurement names (the rules of [`tsfiled_core::path`], re-exported here, so that the
//! configuration refuses exactly the prefixes and template nodes the sources would), sanitizing
//! of free-form strings (tag values, topic levels) into path nodes, and device-path templates.
//!
//! # Sanitizing
//!
//! [`sanitize_node`] maps any string to a valid node: every character outside the allowed set
//! becomes `_`, an empty string becomes `_`, and a result that is reserved (`root`, `time`,
//! `timestamp`) or exponent-shaped gets a `_` prefix. Distinct inputs can map to the same node
//! (`a-b` and `a.b` both become `a_b`).

use std::collections::HashSet;
use std::fmt;

use tsfiled_core::path::{check_node, is_exponent_shaped, is_reserved};
pub use tsfiled_core::path::{
    is_node_char, validate_device, validate_measurement, validate_node, PathError,
    MAX_DEVICE_BYTES, MAX_NODE_BYTES,
};

/// Appends `raw` to `out` as a valid path node (see the module docs for the rule).
/// `measurement` also avoids the measurement-only reserved words.
pub fn sanitize_node_into(raw: &str, measurement: bool, out: &mut String) {
    let start = out.len();
    if !raw.is_empty()
        && raw.len() < MAX_NODE_BYTES
        && raw.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        if is_reserved(raw, measurement) || is_exponent_shaped(raw) {
            out.push('_');
        }
        out.push_str(raw);
        return;
    }
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
/// - `{KEY}` or `{tag:KEY}` (any other name): the value of tag `KEY`, sanitized; a line without
///   that tag is rejected (InvalidPath), unless a default is given as `{tag:KEY|default}`;
/// - `{tags}` (alone in its level): the values of all tags not named by a `{KEY}`, sorted by
///   tag key, one level each; no level when there are none.
///
/// The configuration gives a `path_prefix` and a template below it:
/// [`DeviceTemplate::with_prefix`]`("root.lp", "{measurement}.{tags}")` is the default
/// ([`DeviceTemplate::DEFAULT`] = `root.lp.{measurement}.{tags}`). It mirrors IoTDB's own InfluxDB
/// adapter (measurement, then tag values as levels): `cpu,host=gw1,cpu=cpu0` becomes device
/// `root.lp.cpu.cpu0.gw1`. Note that `{tags}` carries values only: lines with different tag
/// *keys* but equal values map to the same device; use `{KEY}` levels when that matters.
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
    /// The default template (the configuration's default `path_prefix` and
    /// `device_template` for line protocol over HTTP).
    pub const DEFAULT: &'static str = "root.lp.{measurement}.{tags}";

    /// Parses `template` as the device path below `prefix` (a device path such as `root.lp`,
    /// or `root`), as the configuration's `path_prefix` and `device_template` give them.
    /// Error offsets count in `template`; a bad prefix is reported at offset 0.
    pub fn with_prefix(prefix: &str, template: &str) -> Result<DeviceTemplate, TemplateError> {
        if prefix != "root" {
            validate_device(prefix).map_err(|e| TemplateError {
                template: template.to_owned(),
                offset: 0,
                message: format!("path prefix {prefix:?} {e}"),
            })?;
        }
        let full = format!("{prefix}.{template}");
        DeviceTemplate::parse(&full).map_err(|mut e| {
            e.template = template.to_owned();
            e.offset = e.offset.saturating_sub(prefix.len() + 1);
            e
        })
    }

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
                    } else if name.is_empty() || name.contains(['{', '|', ':']) {
                        return Err(err(
                            pos,
                            format!(
                                "bad placeholder `{{{name}}}`; expected {{measurement}}, {{tags}}, {{KEY}} or {{tag:KEY}}"
                            ),
                        ));
                    } else {
                        if !named_tags.iter().any(|k| k == name) {
                            named_tags.push(name.to_owned());
                        }
                        Part::Tag {
                            key: name.to_owned(),
                            default: None,
                        }
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
        self.render_with(measurement, tags, out)
    }

    /// [`render`](Self::render) over any string-like tag pairs.
    pub(crate) fn render_with<K: AsRef<str>, V: AsRef<str>>(
        &self,
        measurement: &str,
        tags: &[(K, V)],
        out: &mut String,
    ) -> Result<(), String> {
        out.clear();
        out.reserve(
            8 + measurement.len()
                + tags
                    .iter()
                    .map(|(_, v)| v.as_ref().len() + 1)
                    .sum::<usize>(),
        );
        out.push_str("root");
        let find = |key: &str| {
            tags.iter()
                .find(|(k, _)| k.as_ref() == key)
                .map(|(_, v)| v.as_ref())
        };
        for node in &self.nodes {
            match node {
                Node::Tags => {
                    let unnamed = |k: &str| !self.named_tags.iter().any(|n| n == k);
                    if tags.windows(2).all(|w| w[0].0.as_ref() <= w[1].0.as_ref()) {
                        for (k, v) in tags {
                            if unnamed(k.as_ref()) {
                                out.push('.');
                                sanitize_node_into(v.as_ref(), false, out);
                            }
                        }
                    } else {
                        let mut rest: Vec<(&str, &str)> = tags
                            .iter()
                            .map(|(k, v)| (k.as_ref(), v.as_ref()))
                            .filter(|(k, _)| unnamed(k))
                            .collect();
                        rest.sort_unstable_by(|a, b| a.0.cmp(b.0));
                        for (_, v) in rest {
                            out.push('.');
                            sanitize_node_into(v, false, out);
                        }
                    }
                }
                Node::Parts(parts) => {
                    out.push('.');
                    if let [single] = parts.as_slice() {
                        match single {
                            Part::Lit(l) => out.push_str(l),
                            Part::Measurement => sanitize_node_into(measurement, false, out),
                            Part::Tag { key, default } => match find(key) {
                                Some(v) => sanitize_node_into(v, false, out),
                                None => match default {
                                    Some(d) => out.push_str(d),
                                    None => return Err(format!("tag {key:?} is missing")),
                                },
                            },
                        }
                        continue;
                    }
                    let start = out.len();
                    for part in parts {
                        let raw = match part {
                            Part::Lit(l) => l.as_str(),
                            Part::Measurement => measurement,
                            Part::Tag { key, default } => match find(key) {
                                Some(v) => v,
                                None => match default {
                                    Some(d) => d.as_str(),
                                    None => return Err(format!("tag {key:?} is missing")),
                                },
                            },
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
pub(crate) fn has_duplicate_keys<K: AsRef<str>, V>(tags: &[(K, V)]) -> bool {
    if tags.windows(2).all(|w| w[0].0.as_ref() < w[1].0.as_ref()) {
        return false;
    }
    if tags.len() < 8 {
        return tags
            .iter()
            .enumerate()
            .any(|(i, (k, _))| tags[..i].iter().any(|(k2, _)| k2.as_ref() == k.as_ref()));
    }
    let mut seen = HashSet::with_capacity(tags.len());
    !tags.iter().all(|(k, _)| seen.insert(k.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
        assert_eq!(out, "root.lp.cpu.cpu0.gw_1");
        t.render("mem", &[], &mut out).unwrap();
        assert_eq!(out, "root.lp.mem");
        assert_eq!(
            t,
            DeviceTemplate::with_prefix("root.lp", "{measurement}.{tags}").unwrap()
        );

        // Configuration form: prefix + template with `{<tag key>}` placeholders.
        let t = DeviceTemplate::with_prefix("root.gw", "{host}.{measurement}.{tags}").unwrap();
        t.render(
            "cpu",
            &[("host", "h1"), ("cpu", "c0"), ("a", "x")],
            &mut out,
        )
        .unwrap();
        assert_eq!(out, "root.gw.h1.cpu.x.c0");
        assert_eq!(
            t.render("cpu", &[("cpu", "c0")], &mut out),
            Err("tag \"host\" is missing".into())
        );
        let t = DeviceTemplate::with_prefix("root", "{measurement}").unwrap();
        t.render("m", &[], &mut out).unwrap();
        assert_eq!(out, "root.m");
        let e = DeviceTemplate::with_prefix("root.lp", "{measurement}.a-b").unwrap_err();
        assert_eq!((e.template.as_str(), e.offset), ("{measurement}.a-b", 14));
        let e = DeviceTemplate::with_prefix("root.l-p", "{measurement}").unwrap_err();
        assert_eq!(e.offset, 0);
        assert!(e.message.contains("prefix"), "{e}");
        assert!(DeviceTemplate::with_prefix("lp", "{measurement}").is_err());

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
            ("root.{}", 5),
            ("root.{a|b}", 5),
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

    const NODES: &[&str] = &[
        "a", "x1", "12", "root", "Root", "time", "1e5", "2E0", "e5", "a-b", "", "工厂",
    ];
    const TEMPLATE_NODES: &[&str] = &[
        "{measurement}",
        "{host}",
        "{tags}",
        "x{host}",
        "1e{host}",
        "{host}-x",
        "a",
        "root",
        "1e5",
        "a-b",
        "",
    ];

    fn pick(from: &'static [&'static str], len: std::ops::Range<usize>) -> BoxedStrategy<String> {
        proptest::collection::vec(proptest::sample::select(from), len)
            .prop_map(|v| v.join("."))
            .boxed()
    }

    proptest! {
        /// The configuration accepts a line-protocol `path_prefix` and `device_template`
        /// exactly when the connector builds a template from them.
        #[test]
        fn configuration_accepts_what_line_templates_accept(
            below in pick(NODES, 0..3),
            template in pick(TEMPLATE_NODES, 1..4),
        ) {
            let prefix = if below.is_empty() { "root".to_string() } else { format!("root.{below}") };
            let first_level = prefix.split('.').count();
            let config = tsfiled_core::path::check_prefix(&prefix, true).is_ok()
                && tsfiled_core::Template::parse_at(&template, first_level, None, &["tags"]).is_ok();
            let connector = DeviceTemplate::with_prefix(&prefix, &template);
            prop_assert_eq!(config, connector.is_ok(), "{} {}: {:?}", prefix, template, connector);
        }

        /// The same for a CSV `path_prefix` and `device_template`.
        #[test]
        fn configuration_accepts_what_csv_paths_accept(
            below in pick(NODES, 0..3),
            fixed in pick(NODES, 1..3),
        ) {
            let prefix = if below.is_empty() { "root".to_string() } else { format!("root.{below}") };
            prop_assert_eq!(
                tsfiled_core::path::check_prefix(&prefix, false).is_ok(),
                validate_device(&prefix).is_ok()
            );
            // A template of fixed nodes renders to itself, which the parser validates.
            let template = format!("root.{fixed}.{{file_stem}}");
            let config = tsfiled_core::Template::parse_csv_device(&template).is_ok();
            prop_assert_eq!(config, validate_device(&format!("root.{fixed}.f")).is_ok(), "{}", template);
        }

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
            prop_assert_eq!(out.split('.').count(), 3 + tags.len());
        }
    }
}
