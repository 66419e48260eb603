//! Small languages inside configuration values: file-name globs, path templates, MQTT topic
//! filters and topic templates, strftime patterns and time-zone names.

use std::fmt;

use crate::path::{check_node, is_node_char};
use crate::Error;

/// A file-name glob: `*` any run of characters, `?` one character, `[abc]`, `[a-z]` and
/// `[!x]` character classes. Matches the whole file name (not the directory part).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    text: String,
    tokens: Vec<GlobToken>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum GlobToken {
    Char(char),
    Any,
    AnyRun,
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

impl Glob {
    /// Parses a glob; refuses empty globs, `/` and unclosed `[`.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.is_empty() {
            return Err("empty file pattern".into());
        }
        if text.contains('/') {
            return Err(format!(
                "file pattern \"{text}\" contains '/'; patterns match file names only"
            ));
        }
        let chars: Vec<char> = text.chars().collect();
        let mut tokens = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '*' => {
                    if tokens.last() != Some(&GlobToken::AnyRun) {
                        tokens.push(GlobToken::AnyRun);
                    }
                    i += 1;
                }
                '?' => {
                    tokens.push(GlobToken::Any);
                    i += 1;
                }
                '[' => {
                    let mut j = i + 1;
                    let negated = matches!(chars.get(j), Some('!') | Some('^'));
                    if negated {
                        j += 1;
                    }
                    let mut ranges = Vec::new();
                    let mut first = true;
                    loop {
                        let Some(&c) = chars.get(j) else {
                            return Err(format!("file pattern \"{text}\": unclosed '['"));
                        };
                        if c == ']' && !first {
                            break;
                        }
                        first = false;
                        if chars.get(j + 1) == Some(&'-')
                            && chars.get(j + 2).is_some_and(|c| *c != ']')
                        {
                            let hi = chars[j + 2];
                            if hi < c {
                                return Err(format!(
                                    "file pattern \"{text}\": range {c}-{hi} is backwards"
                                ));
                            }
                            ranges.push((c, hi));
                            j += 3;
                        } else {
                            ranges.push((c, c));
                            j += 1;
                        }
                    }
                    tokens.push(GlobToken::Class { negated, ranges });
                    i = j + 1;
                }
                c => {
                    tokens.push(GlobToken::Char(c));
                    i += 1;
                }
            }
        }
        Ok(Glob {
            text: text.to_string(),
            tokens,
        })
    }

    /// The glob as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether a file name matches.
    pub fn matches(&self, name: &str) -> bool {
        let s: Vec<char> = name.chars().collect();
        let t = &self.tokens;
        let (mut ti, mut si) = (0usize, 0usize);
        let mut back: Option<(usize, usize)> = None;
        while si < s.len() {
            let ok = match t.get(ti) {
                Some(GlobToken::AnyRun) => {
                    back = Some((ti, si));
                    ti += 1;
                    continue;
                }
                Some(GlobToken::Any) => true,
                Some(GlobToken::Char(c)) => *c == s[si],
                Some(GlobToken::Class { negated, ranges }) => {
                    ranges.iter().any(|(lo, hi)| *lo <= s[si] && s[si] <= *hi) != *negated
                }
                None => false,
            };
            if ok {
                ti += 1;
                si += 1;
            } else if let Some((bt, bs)) = back {
                ti = bt + 1;
                si = bs + 1;
                back = Some((bt, bs + 1));
            } else {
                return false;
            }
        }
        t.get(ti..)
            .is_some_and(|rest| rest.iter().all(|x| *x == GlobToken::AnyRun))
    }
}

impl fmt::Display for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A part of a [`Template`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplatePart {
    /// Literal text.
    Literal(String),
    /// `{name}`: replaced by a value when rendering.
    Placeholder(String),
}

/// A path template with `{name}` placeholders, such as the CSV source's device template
/// `root.plant.{file_stem}` ([`Template::parse_csv_device`]): literal path text with `{name}`
/// placeholders, split into nodes by `.`. The line-protocol device template, with its
/// `{tags}` and `{tag:KEY|default}`, is [`DeviceTemplate`](crate::DeviceTemplate).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    text: String,
    parts: Vec<TemplatePart>,
}

impl Template {
    /// Parses a template. `allowed` lists the placeholder names it may use (`None`: any name,
    /// e.g. tag keys); `whole_node` lists placeholders that must fill a whole node alone.
    /// Its first node is level 0 of a path: it may be `root` (see [`Template::parse_at`]).
    pub fn parse(
        text: &str,
        allowed: Option<&[&str]>,
        whole_node: &[&str],
    ) -> Result<Self, String> {
        Template::parse_at(text, 0, allowed, whole_node)
    }

    /// Parses a template whose first node is at `first_level` of the device path, e.g. a
    /// template below a prefix of that many levels.
    /// A node of literal text alone must be a valid path node there
    /// ([`check_node`](crate::path::check_node): not `root` below level 0, not `1e5`, at most
    /// 255 bytes); the literal text of a node with placeholders must use node characters.
    pub fn parse_at(
        text: &str,
        first_level: usize,
        allowed: Option<&[&str]>,
        whole_node: &[&str],
    ) -> Result<Self, String> {
        if text.is_empty() {
            return Err("empty template".into());
        }
        let mut parts = Vec::new();
        let mut lit = String::new();
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            match c {
                '{' => {
                    let mut name = String::new();
                    loop {
                        match chars.next() {
                            Some('}') => break,
                            Some('{') | None => {
                                return Err(format!("template \"{text}\": unclosed '{{'"))
                            }
                            Some(c) => name.push(c),
                        }
                    }
                    if name.is_empty()
                        || !name
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                    {
                        return Err(format!(
                            "template \"{text}\": bad placeholder {{{name}}}; names use letters, digits, '_' and '-'"
                        ));
                    }
                    if let Some(allowed) = allowed {
                        if !allowed.contains(&name.as_str()) {
                            return Err(format!(
                                "template \"{text}\": unknown placeholder {{{name}}}; expected one of {}",
                                allowed
                                    .iter()
                                    .map(|a| format!("{{{a}}}"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ));
                        }
                    }
                    if !lit.is_empty() {
                        parts.push(TemplatePart::Literal(std::mem::take(&mut lit)));
                    }
                    parts.push(TemplatePart::Placeholder(name));
                }
                '}' => return Err(format!("template \"{text}\": '}}' without '{{'")),
                c => lit.push(c),
            }
        }
        if !lit.is_empty() {
            parts.push(TemplatePart::Literal(lit));
        }
        // Node structure: literals split into nodes at '.'; every node needs content, its
        // literal characters must be node characters, and some placeholders fill a node alone.
        struct Node {
            placeholders: Vec<String>,
            literal: String,
            parts: usize,
        }
        let new_node = || Node {
            placeholders: Vec::new(),
            literal: String::new(),
            parts: 0,
        };
        let mut nodes = vec![new_node()];
        for p in &parts {
            match p {
                TemplatePart::Literal(l) => {
                    for (i, piece) in l.split('.').enumerate() {
                        if i > 0 {
                            nodes.push(new_node());
                        }
                        if !piece.is_empty() {
                            if let Some(n) = nodes.last_mut() {
                                n.literal.push_str(piece);
                                n.parts += 1;
                            }
                        }
                    }
                }
                TemplatePart::Placeholder(name) => {
                    if let Some(n) = nodes.last_mut() {
                        n.placeholders.push(name.clone());
                        n.parts += 1;
                    }
                }
            }
        }
        if let Some(p) = whole_node.iter().find(|w| {
            parts
                .iter()
                .filter(|p| matches!(p, TemplatePart::Placeholder(n) if n == *w))
                .count()
                > 1
        }) {
            return Err(format!("template \"{text}\": {{{p}}} appears twice"));
        }
        for (i, n) in nodes.iter().enumerate() {
            if n.parts == 0 {
                return Err(format!(
                    "template \"{text}\": empty path node (two dots in a row, or a leading or trailing dot)"
                ));
            }
            if let Some(p) = n
                .placeholders
                .iter()
                .find(|p| whole_node.contains(&p.as_str()))
            {
                if n.parts > 1 {
                    return Err(format!(
                        "template \"{text}\": {{{p}}} must be a whole path node"
                    ));
                }
            }
            let level = first_level + i;
            let checked = if n.placeholders.is_empty() {
                check_node(&n.literal, level, false)
            } else {
                match n.literal.chars().find(|c| !is_node_char(*c)) {
                    Some(ch) => Err(Error::InvalidChar {
                        level,
                        node: n.literal.clone(),
                        ch,
                    }),
                    None => Ok(()),
                }
            };
            checked.map_err(|e| format!("template \"{text}\": {e}"))?;
        }
        Ok(Template {
            text: text.to_string(),
            parts,
        })
    }

    /// Parses the device template of a generic CSV source: a full device path starting with
    /// `root.`, with the placeholders `{file_stem}` and `{dir}` (e.g.
    /// `root.plant.{dir}.{file_stem}`).
    pub fn parse_csv_device(text: &str) -> Result<Self, String> {
        let t = Template::parse(text, Some(Self::CSV_DEVICE_PLACEHOLDERS), &[])?;
        if !text.starts_with("root.") {
            return Err(format!(
                "\"{text}\" must start with \"root.\" (e.g. \"root.plant.{{file_stem}}\")"
            ));
        }
        Ok(t)
    }

    /// The placeholders of a CSV device template ([`Template::parse_csv_device`]).
    pub const CSV_DEVICE_PLACEHOLDERS: &'static [&'static str] = &["file_stem", "dir"];

    /// A stand-in used after an error has been recorded: the literal node `x`.
    pub fn fallback() -> Self {
        Template {
            text: "x".into(),
            parts: vec![TemplatePart::Literal("x".into())],
        }
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Literal text and placeholders in order.
    pub fn parts(&self) -> &[TemplatePart] {
        &self.parts
    }

    /// The placeholder names, in order of appearance.
    pub fn placeholders(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            TemplatePart::Placeholder(n) => Some(n.as_str()),
            TemplatePart::Literal(_) => None,
        })
    }

    /// Renders the template, asking `value` for each placeholder; `None` if one is missing.
    /// A placeholder whose value is empty removes its node.
    pub fn render<'a>(&self, mut value: impl FnMut(&str) -> Option<&'a str>) -> Option<String> {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                TemplatePart::Literal(l) => out.push_str(l),
                TemplatePart::Placeholder(n) => out.push_str(value(n)?),
            }
        }
        // Drop empty nodes left by empty values.
        let nodes: Vec<&str> = out.split('.').filter(|n| !n.is_empty()).collect();
        Some(nodes.join("."))
    }
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Checks an MQTT topic filter: non-empty, no NUL, `+` and `#` only as whole levels, `#` last.
pub fn check_topic_filter(filter: &str) -> Result<(), String> {
    if filter.is_empty() {
        return Err("empty topic filter".into());
    }
    if filter.len() > 65535 {
        return Err("topic filter longer than 65535 bytes".into());
    }
    if filter.contains('\0') {
        return Err("topic filter contains a NUL character".into());
    }
    if filter.starts_with("$share/") {
        return Err(format!(
            "topic filter \"{filter}\" is a shared subscription; write the plain filter and set `shared_group` on the source"
        ));
    }
    let levels: Vec<&str> = filter.split('/').collect();
    for (i, level) in levels.iter().enumerate() {
        if level.contains('#') && (*level != "#" || i + 1 != levels.len()) {
            return Err(format!(
                "topic filter \"{filter}\": '#' must be a whole level and the last one"
            ));
        }
        if level.contains('+') && *level != "+" {
            return Err(format!(
                "topic filter \"{filter}\": '+' must be a whole level"
            ));
        }
    }
    Ok(())
}

/// One level of a [`TopicTemplate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopicLevel {
    /// Must equal this text.
    Literal(String),
    /// `{device}`: one node of the device path (several such levels join with `.`).
    Device,
    /// `{device+}`: one or more levels (as many as the rest of the template leaves), each a
    /// node of the device path; at most once, not together with `#`.
    DeviceMulti,
    /// `{measurement}`: the measurement name.
    Measurement,
    /// `+`: any one level, ignored.
    Skip,
    /// `#`: any remaining levels, ignored (last level only).
    Rest,
}

/// How a topic names its series, e.g. `plant/{device}/{measurement}`: the device path is the
/// source's `path_prefix` plus the `{device}` levels, the measurement is the
/// `{measurement}` level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicTemplate {
    text: String,
    levels: Vec<TopicLevel>,
}

impl TopicTemplate {
    /// Parses a topic template (the one grammar of topic templates, used by the configuration
    /// and by the MQTT source): levels separated by `/`, each a literal, `+` (any one level),
    /// `#` (the rest, last level only), `{device}` (one device node, any number of times),
    /// `{device+}` (one or more device nodes, at most once, not with `#`) or `{measurement}`
    /// (exactly once).
    pub fn parse(text: &str) -> Result<Self, String> {
        Self::parse_levels(text)
            .map(|levels| TopicTemplate {
                text: text.to_string(),
                levels,
            })
            .map_err(|(_, m)| format!("topic template \"{text}\": {m}"))
    }

    /// The levels of `text`, or the 0-based level of the first problem (0 for the template as
    /// a whole) and what it is.
    pub fn parse_levels(text: &str) -> Result<Vec<TopicLevel>, (usize, String)> {
        if text.is_empty() {
            return Err((0, "empty topic template".into()));
        }
        let parts: Vec<&str> = text.split('/').collect();
        let mut levels = Vec::new();
        for (i, l) in parts.iter().enumerate() {
            levels.push(match *l {
                "{device}" => TopicLevel::Device,
                "{device+}" => TopicLevel::DeviceMulti,
                "{measurement}" => TopicLevel::Measurement,
                "+" => TopicLevel::Skip,
                "#" if i + 1 == parts.len() => TopicLevel::Rest,
                "#" => return Err((i, "'#' must be the last level".into())),
                l if l.contains('{') || l.contains('}') => {
                    return Err((
                        i,
                        format!("level \"{l}\": placeholders are {{device}}, {{device+}} and {{measurement}}, each a whole level"),
                    ))
                }
                l if l.contains('+') || l.contains('#') => {
                    return Err((i, "'+' and '#' must be whole levels".into()))
                }
                l => TopicLevel::Literal(l.to_string()),
            });
        }
        let count = |x: &TopicLevel| levels.iter().filter(|l| *l == x).count();
        let m = count(&TopicLevel::Measurement);
        if m != 1 {
            return Err((
                0,
                format!("must contain {{measurement}} exactly once (found {m})"),
            ));
        }
        if count(&TopicLevel::DeviceMulti) > 1 {
            return Err((0, "at most one {device+} level".into()));
        }
        if count(&TopicLevel::DeviceMulti) == 1 && count(&TopicLevel::Rest) == 1 {
            return Err((0, "{device+} cannot be combined with '#'".into()));
        }
        Ok(levels)
    }

    /// Whether the template names device levels (`{device}` or `{device+}`).
    pub fn has_device(&self) -> bool {
        self.levels
            .iter()
            .any(|l| matches!(l, TopicLevel::Device | TopicLevel::DeviceMulti))
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The levels.
    pub fn levels(&self) -> &[TopicLevel] {
        &self.levels
    }

    /// Splits a topic into (device levels, measurement), or `None` if it does not fit.
    pub fn apply<'t>(&self, topic: &'t str) -> Option<(Vec<&'t str>, &'t str)> {
        let parts: Vec<&str> = topic.split('/').collect();
        // Levels `{device+}` takes: all but those the other levels need (at least one).
        let multi = if self.levels.contains(&TopicLevel::DeviceMulti) {
            let n = parts.len().checked_sub(self.levels.len() - 1)?;
            if n == 0 {
                return None;
            }
            n
        } else {
            1
        };
        let mut device = Vec::new();
        let mut measurement = None;
        let mut i = 0;
        for level in &self.levels {
            if *level == TopicLevel::Rest {
                return measurement.map(|m| (device, m));
            }
            if *level == TopicLevel::DeviceMulti {
                device.extend(parts.get(i..i + multi)?);
                i += multi;
                continue;
            }
            let p = *parts.get(i)?;
            i += 1;
            match level {
                TopicLevel::Literal(l) if l != p => return None,
                TopicLevel::Device => device.push(p),
                TopicLevel::Measurement => measurement = Some(p),
                _ => {}
            }
        }
        if i != parts.len() {
            return None;
        }
        measurement.map(|m| (device, m))
    }
}

impl fmt::Display for TopicTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Checks a strftime pattern against the specifiers a chrono-style parser understands.
pub fn check_strftime(pattern: &str) -> Result<(), String> {
    const SPECS: &str = "YCymbBhdeaAwuUWGgVjDxFvHkIlPpMSfRTXrZzsnt%";
    if pattern.is_empty() {
        return Err("empty time pattern".into());
    }
    let mut chars = pattern.chars().peekable();
    let mut has_spec = false;
    while let Some(c) = chars.next() {
        if c != '%' {
            continue;
        }
        // Optional padding flag, width digits, or '.'/':' prefixes (%.3f, %:z, %-d).
        let mut spec = chars.next();
        while matches!(
            spec,
            Some('-') | Some('_') | Some('0') | Some('.') | Some(':') | Some('#')
        ) || spec.is_some_and(|c| c.is_ascii_digit())
        {
            spec = chars.next();
        }
        match spec {
            Some(s) if SPECS.contains(s) => {
                if s != '%' && s != 'n' && s != 't' {
                    has_spec = true;
                }
            }
            Some(s) => {
                return Err(format!(
                    "time pattern \"{pattern}\": unknown specifier %{s}"
                ))
            }
            None => return Err(format!("time pattern \"{pattern}\" ends with a lone '%'")),
        }
    }
    if !has_spec {
        return Err(format!(
            "time pattern \"{pattern}\" has no time specifiers such as %Y or %H"
        ));
    }
    Ok(())
}

/// Checks the form of an IANA time-zone name (`UTC`, `Europe/Berlin`,
/// `America/Argentina/Buenos_Aires`, `Etc/GMT+1`). Whether the zone exists is checked by
/// `check-config` against the system's zoneinfo, and by the connector that resolves it.
pub fn check_timezone(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.split('/').all(|p| {
            !p.is_empty()
                && p.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+'))
        });
    if ok {
        Ok(())
    } else {
        Err(format!(
            "\"{name}\" is not an IANA time-zone name such as \"UTC\" or \"Europe/Berlin\""
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        let g = Glob::parse("*.csv").unwrap();
        assert!(g.matches("a.csv"));
        assert!(g.matches(".csv"));
        assert!(!g.matches("a.csv.gz"));
        assert!(!g.matches("a.tsv"));
        let g = Glob::parse(".*").unwrap();
        assert!(g.matches(".hidden"));
        assert!(!g.matches("x.hidden"));
        let g = Glob::parse("data-??.[ct]sv").unwrap();
        assert!(g.matches("data-01.csv"));
        assert!(g.matches("data-ab.tsv"));
        assert!(!g.matches("data-1.csv"));
        let g = Glob::parse("[!a-c]*").unwrap();
        assert!(g.matches("d.csv"));
        assert!(!g.matches("b.csv"));
        let g = Glob::parse("*a*b*").unwrap();
        assert!(g.matches("xaybz"));
        assert!(!g.matches("xbya"));
        assert!(Glob::parse("[abc").is_err());
        assert!(Glob::parse("a/b").is_err());
        assert!(Glob::parse("").is_err());
        assert!(Glob::parse("[z-a]").is_err());
        assert!(Glob::parse("[]]").unwrap().matches("]"));
        let g = |s| Glob::parse(s).unwrap();
        assert!(g("*.csv.gz").matches("a.csv.gz"));
        assert!(g("*.tmp").matches("a.csv.tmp"));
        assert!(g("a*b*c").matches("aXXbYYc"));
        assert!(!g("a*b*c").matches("aXXbYY"));
        assert!(g("[^x]").matches("y") && !g("[^x]").matches("x"));
        assert_eq!(g("data-??.[ct]sv").as_str(), "data-??.[ct]sv");
    }

    #[test]
    fn csv_device_templates() {
        let t = Template::parse_csv_device("root.plant.{dir}.{file_stem}").unwrap();
        assert_eq!(
            t.placeholders().collect::<Vec<_>>(),
            vec!["dir", "file_stem"]
        );
        assert!(Template::parse_csv_device("root.{host}")
            .unwrap_err()
            .contains("unknown placeholder {host}"));
        assert!(Template::parse_csv_device("plant.{file_stem}")
            .unwrap_err()
            .contains("must start with \"root.\""));
    }

    #[test]
    fn templates() {
        let t = Template::parse("{measurement}.{tags}", None, &["tags"]).unwrap();
        let r = t.render(|n| match n {
            "measurement" => Some("cpu"),
            "tags" => Some(""),
            _ => None,
        });
        assert_eq!(r.as_deref(), Some("cpu"));
        let t = Template::parse("site_{host}.{measurement}", None, &["tags"]).unwrap();
        assert_eq!(
            t.placeholders().collect::<Vec<_>>(),
            vec!["host", "measurement"]
        );
        assert_eq!(
            t.render(|n| Some(if n == "host" { "a" } else { "m" }))
                .as_deref(),
            Some("site_a.m")
        );
        assert_eq!(t.render(|_| None), None);
        assert!(Template::parse("a.{tags}x", None, &["tags"])
            .unwrap_err()
            .contains("whole path node"));
        assert!(Template::parse("{tags}.a.{tags}", None, &["tags"])
            .unwrap_err()
            .contains("{tags} appears twice"));
        assert!(Template::parse("a..b", None, &[])
            .unwrap_err()
            .contains("empty path node"));
        assert!(Template::parse("{x", None, &[])
            .unwrap_err()
            .contains("unclosed"));
        assert!(Template::parse("x}", None, &[]).is_err());
        assert!(Template::parse("{a b}", None, &[]).is_err());
        assert!(Template::parse("root.{file}", Some(&["file_stem"]), &[])
            .unwrap_err()
            .contains("unknown placeholder {file}"));
        assert!(Template::parse("root.a b", None, &[]).is_err());
    }

    #[test]
    fn template_nodes_follow_the_path_rules() {
        // A node of literal text alone is a path node at its level.
        assert!(Template::parse_csv_device("root.plant.{file_stem}").is_ok());
        for (text, why) in [
            (
                "root.root.{file_stem}",
                "level 1 \"root\" is a reserved word",
            ),
            ("root.1e5.{file_stem}", "level 1 \"1e5\" reads as a number"),
            ("root.a-b.{dir}", "level 1 \"a-b\": character '-'"),
        ] {
            let e = Template::parse_csv_device(text).unwrap_err();
            assert!(e.starts_with(&format!("template \"{text}\": {why}")), "{e}");
        }
        let long = format!("root.{}.{{dir}}", "x".repeat(256));
        assert!(Template::parse_csv_device(&long)
            .unwrap_err()
            .contains("more than the 255 allowed"));
        // Below a prefix (`root.lp`: 2 levels), the first node is level 2: no `root` there.
        let e = Template::parse_at("root.{measurement}", 2, None, &["tags"]).unwrap_err();
        assert!(e.contains("level 2 \"root\" is a reserved word"), "{e}");
        let e = Template::parse_at("{measurement}.2E3", 2, None, &[]).unwrap_err();
        assert!(e.contains("level 3 \"2E3\" reads as a number"), "{e}");
        // Literal text next to a placeholder is only part of a node: characters are checked,
        // the node as a whole is known when rendering.
        assert!(Template::parse_at("{measurement}.1e{host}", 2, None, &[]).is_ok());
        assert!(Template::parse_at("x{host}root", 2, None, &[]).is_ok());
        let e = Template::parse_at("{measurement}.a-{host}", 2, None, &[]).unwrap_err();
        assert!(e.contains("level 3 \"a-\": character '-'"), "{e}");
    }

    #[test]
    fn topic_filters() {
        assert!(check_topic_filter("plant/#").is_ok());
        assert!(check_topic_filter("+/x/+").is_ok());
        assert!(check_topic_filter("#").is_ok());
        assert!(check_topic_filter("a/#/b").is_err());
        assert!(check_topic_filter("a/b#").is_err());
        assert!(check_topic_filter("a/b+").is_err());
        assert!(check_topic_filter("").is_err());
        assert!(check_topic_filter("$share/g/a")
            .unwrap_err()
            .contains("shared_group"));
    }

    #[test]
    fn topic_templates() {
        let t = TopicTemplate::parse("plant/{device}/{measurement}").unwrap();
        assert_eq!(t.apply("plant/d1/temp"), Some((vec!["d1"], "temp")));
        assert_eq!(t.apply("plant/d1/temp/x"), None);
        assert_eq!(t.apply("other/d1/temp"), None);
        let t = TopicTemplate::parse("+/{device}/{device}/{measurement}/#").unwrap();
        assert_eq!(t.apply("x/a/b/m/q/r"), Some((vec!["a", "b"], "m")));
        assert!(TopicTemplate::parse("plant/{device}").is_err());
        assert!(TopicTemplate::parse("a/{measurement}/{measurement}").is_err());
        assert!(TopicTemplate::parse("a/dev{device}/{measurement}").is_err());
        assert!(TopicTemplate::parse("#/{measurement}").is_err());
        let t = TopicTemplate::parse("site/{device+}/{measurement}").unwrap();
        assert_eq!(
            t.apply("site/a/b/c/temp"),
            Some((vec!["a", "b", "c"], "temp"))
        );
        assert_eq!(t.apply("site/a/temp"), Some((vec!["a"], "temp")));
        assert_eq!(t.apply("site/temp"), None);
        assert!(TopicTemplate::parse("{device+}/{device+}/{measurement}").is_err());
        assert!(TopicTemplate::parse("{device+}/{measurement}/#").is_err());
    }

    #[test]
    fn strftime() {
        assert!(check_strftime("%Y-%m-%d %H:%M:%S%.3f").is_ok());
        assert!(check_strftime("%d/%m/%Y %H:%M %:z").is_ok());
        assert!(check_strftime("%-d.%-m.%Y").is_ok());
        assert!(check_strftime("%Q").unwrap_err().contains("%Q"));
        assert!(check_strftime("%Y %").is_err());
        assert!(check_strftime("hello").is_err());
        assert!(check_strftime("").is_err());
    }

    #[test]
    fn timezones() {
        assert!(check_timezone("UTC").is_ok());
        assert!(check_timezone("Europe/Berlin").is_ok());
        assert!(check_timezone("America/Argentina/Buenos_Aires").is_ok());
        assert!(check_timezone("Etc/GMT+1").is_ok());
        assert!(check_timezone("Europe/").is_err());
        assert!(check_timezone("+01:00").is_err());
        assert!(check_timezone("").is_err());
    }
}
