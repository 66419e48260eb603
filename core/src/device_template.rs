//! The device-path template of line protocol (and other tagged inputs): one grammar and one
//! parser, used by the configuration (`path_prefix` + `device_template`) and by the sources
//! that render device paths with it.

use std::fmt;

use crate::path::{check_node, check_prefix, is_node_char, sanitize_node_into, MAX_DEVICE_BYTES};
use crate::Error;

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
/// Syntax: `.`-separated levels below a device-path prefix (`root`, `root.lp`); a level is
/// literal text (valid node characters) mixed with placeholders:
/// - `{measurement}`: the line-protocol measurement, sanitized;
/// - `{KEY}` or `{tag:KEY}` (any other name): the value of tag `KEY`, sanitized; a line without
///   that tag is rejected (InvalidPath), unless a default is given as `{tag:KEY|default}`;
/// - `{tags}` (alone in its level): the values of all tags not named by a `{KEY}`, sorted by
///   tag key, one level each; no level when there are none.
///
/// A level of literal text alone must be a valid path node at its level
/// ([`check_node`]: not `root`, not `1e5`, at most 255 bytes).
///
/// The configuration gives a `path_prefix` and a template below it:
/// [`DeviceTemplate::with_prefix`]`("root.lp", "{measurement}.{tags}")` is the default
/// ([`DeviceTemplate::DEFAULT`] = `root.lp.{measurement}.{tags}`). It mirrors IoTDB's own InfluxDB
/// adapter (measurement, then tag values as levels): `cpu,host=gw1,cpu=cpu0` becomes device
/// `root.lp.cpu.cpu0.gw1`. Note that `{tags}` carries values only: lines with different tag
/// *keys* but equal values map to the same device; use `{KEY}` levels when that matters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceTemplate {
    prefix: String,
    template: String,
    nodes: Vec<Node>,
    named_tags: Vec<String>,
    /// Table mode ([`DeviceTemplate::table`]): the database lines are stored in.
    table_database: Option<String>,
}

impl fmt::Display for DeviceTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.table_database {
            Some(db) => write!(f, "tables of database {db}"),
            None => write!(f, "{}.{}", self.prefix, self.template),
        }
    }
}

impl Default for DeviceTemplate {
    /// [`DeviceTemplate::DEFAULT`]: `{measurement}.{tags}` below `root.lp`.
    fn default() -> Self {
        DeviceTemplate::with_prefix("root.lp", "{measurement}.{tags}")
            .unwrap_or_else(|_| unreachable!())
    }
}

impl std::str::FromStr for DeviceTemplate {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
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
    pub fn with_prefix(prefix: &str, template: &str) -> Result<DeviceTemplate, Error> {
        check_prefix(prefix, true).map_err(|e| Error::Template {
            template: template.to_owned(),
            offset: 0,
            message: format!("prefix: {e}"),
        })?;
        let (nodes, named_tags) = parse_levels(template, prefix.split('.').count())?;
        Ok(DeviceTemplate {
            prefix: prefix.to_owned(),
            template: template.to_owned(),
            nodes,
            named_tags,
            table_database: None,
        })
    }

    /// Checks `template` as the levels below a prefix of `prefix_levels` levels (`root` is
    /// one), whatever the prefix: what [`DeviceTemplate::with_prefix`] finds wrong with the
    /// template itself.
    pub fn check_below(prefix_levels: usize, template: &str) -> Result<(), Error> {
        parse_levels(template, prefix_levels.max(1)).map(|_| ())
    }

    /// Parses a whole template whose first level is `root` (e.g. [`DeviceTemplate::DEFAULT`]).
    /// Error offsets count in `template`.
    pub fn parse(template: &str) -> Result<DeviceTemplate, Error> {
        let err = |offset: usize, message: &str| Error::Template {
            template: template.to_owned(),
            offset,
            message: message.to_owned(),
        };
        let below = match template.split_once('.') {
            Some(("root", below)) => below,
            None if template == "root" => {
                return Err(err(
                    template.len(),
                    "expected at least one level after `root`",
                ))
            }
            _ => return Err(err(0, "expected the first level to be `root`")),
        };
        let (nodes, named_tags) = parse_levels(below, 1).map_err(|e| match e {
            Error::Template {
                offset, message, ..
            } => err(offset + "root.".len(), &message),
            other => other,
        })?;
        Ok(DeviceTemplate {
            prefix: "root".to_owned(),
            template: below.to_owned(),
            nodes,
            named_tags,
            table_database: None,
        })
    }

    /// The table-model template of database `database` (see
    /// [`LineProtocolModel::Table`](crate::LineProtocolModel::Table)): it renders each line as a
    /// [`TableLine`](crate::TableLine) key (database, measurement and tags), not as a path.
    /// `prefix` is the `path_prefix` it was given as (`root.<database>`).
    pub fn table(prefix: &str, database: &str) -> DeviceTemplate {
        DeviceTemplate {
            prefix: prefix.to_owned(),
            template: String::new(),
            nodes: Vec::new(),
            named_tags: Vec::new(),
            table_database: Some(database.to_owned()),
        }
    }

    /// The database of a table-model template; `None` for a device-path template.
    pub fn table_database(&self) -> Option<&str> {
        self.table_database.as_deref()
    }

    /// The template below the prefix, as written.
    pub fn as_str(&self) -> &str {
        &self.template
    }

    /// The device-path prefix the template is below (`root`, `root.lp`).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The placeholder names below the prefix, in order of appearance (`measurement`, `tags`,
    /// the key of a `{KEY}` or `{tag:KEY}`).
    pub fn placeholders(&self) -> impl Iterator<Item = &str> {
        self.nodes.iter().flat_map(|n| {
            let parts: &[Part] = match n {
                Node::Tags => &[],
                Node::Parts(p) => p,
            };
            let tags = matches!(n, Node::Tags).then_some("tags");
            tags.into_iter().chain(parts.iter().filter_map(|p| match p {
                Part::Lit(_) => None,
                Part::Measurement => Some("measurement"),
                Part::Tag { key, .. } => Some(key.as_str()),
            }))
        })
    }

    /// Whether the template uses tags at all (`{tag:KEY}` or `{tags}`).
    pub fn uses_tags(&self) -> bool {
        self.table_database.is_some()
            || !self.named_tags.is_empty()
            || self.nodes.contains(&Node::Tags)
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
    pub fn render_with<K: AsRef<str>, V: AsRef<str>>(
        &self,
        measurement: &str,
        tags: &[(K, V)],
        out: &mut String,
    ) -> Result<(), String> {
        if let Some(db) = &self.table_database {
            return crate::TableLine::encode(db, measurement, tags, out);
        }
        out.clear();
        out.reserve(
            self.prefix.len()
                + 8
                + measurement.len()
                + tags
                    .iter()
                    .map(|(_, v)| v.as_ref().len() + 1)
                    .sum::<usize>(),
        );
        out.push_str(&self.prefix);
        let base = out.len();
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
        if out.len() == base && self.prefix == "root" {
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

/// Parses the levels of `template`, the first of which is level `first_level` of the device
/// path. Offsets count in `template`.
fn parse_levels(template: &str, first_level: usize) -> Result<(Vec<Node>, Vec<String>), Error> {
    let err = |offset: usize, message: String| Error::Template {
        template: template.to_owned(),
        offset,
        message,
    };
    let mut nodes = Vec::new();
    let mut named_tags = Vec::new();
    let mut offset = 0;
    for (i, text) in template.split('.').enumerate() {
        let level = first_level + i;
        let node_start = offset;
        offset += text.len() + 1;
        if text.is_empty() {
            return Err(err(
                node_start,
                "empty path node (two dots in a row, or a leading or trailing dot)".into(),
            ));
        }
        if text == "{tags}" {
            if nodes.contains(&Node::Tags) {
                return Err(err(node_start, "{tags} appears twice".into()));
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
                    return Err(err(pos, "unclosed '{'".into()));
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
                        return Err(err(pos, "empty tag key in {tag:KEY}".into()));
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
                    return Err(err(pos, "{tags} must be a whole path node".into()));
                } else if name.is_empty() || name.contains(['{', '|', ':']) {
                    return Err(err(
                        pos,
                        format!(
                            "bad placeholder {{{name}}}; expected {{measurement}}, {{tags}}, {{KEY}} or {{tag:KEY}}"
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
                    let e = Error::InvalidChar {
                        level,
                        node: text.to_owned(),
                        ch,
                    };
                    return Err(err(pos, e.to_string()));
                }
                parts.push(Part::Lit(lit.to_owned()));
                pos += end;
                rest = &rest[end..];
            }
        }
        if let [Part::Lit(lit)] = parts.as_slice() {
            check_node(lit, level, false).map_err(|e| err(node_start, e.to_string()))?;
        }
        nodes.push(Node::Parts(parts));
    }
    Ok((nodes, named_tags))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::validate_device;
    use proptest::prelude::*;

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
        let Error::Template {
            template, offset, ..
        } = DeviceTemplate::with_prefix("root.lp", "{measurement}.a-b").unwrap_err()
        else {
            panic!("not a template error")
        };
        assert_eq!((template.as_str(), offset), ("{measurement}.a-b", 14));
        let e = DeviceTemplate::with_prefix("root.l-p", "{measurement}").unwrap_err();
        let Error::Template {
            offset, message, ..
        } = &e
        else {
            panic!("not a template error: {e:?}")
        };
        assert_eq!(*offset, 0);
        assert!(message.contains("prefix"), "{e}");
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

        assert_eq!(
            t.placeholders().collect::<Vec<_>>(),
            vec!["host", "measurement"]
        );

        let t = DeviceTemplate::parse("root.{tags}").unwrap();
        assert_eq!(t.placeholders().collect::<Vec<_>>(), vec!["tags"]);
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
            assert!(
                matches!(e, Error::Template { offset: o, .. } if o == offset),
                "{t}: {e}"
            );
        }
    }

    const NODES: &[&str] = &[
        "a", "x1", "12", "root", "Root", "time", "1e5", "2E0", "e5", "a-b", "", "工厂",
    ];

    fn pick(from: &'static [&'static str], len: std::ops::Range<usize>) -> BoxedStrategy<String> {
        proptest::collection::vec(proptest::sample::select(from), len)
            .prop_map(|v| v.join("."))
            .boxed()
    }

    proptest! {
        /// A template of literal levels renders to exactly the path it spells, and is
        /// accepted exactly when that path is a valid device path.
        #[test]
        fn literal_templates_are_device_paths(
            below in pick(NODES, 0..3),
            fixed in pick(NODES, 1..4),
        ) {
            let prefix = if below.is_empty() { "root".to_string() } else { format!("root.{below}") };
            let full = format!("{prefix}.{fixed}");
            let t = DeviceTemplate::with_prefix(&prefix, &fixed);
            prop_assert_eq!(t.is_ok(), validate_device(&full).is_ok(), "{}: {:?}", full, t);
            if let Ok(t) = t {
                let mut out = String::new();
                t.render("m", &[("k", "v")], &mut out).unwrap();
                prop_assert_eq!(out, full);
            }
        }
    }
}
