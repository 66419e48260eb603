//! TsFile data types, encodings and compressions (the `tsfile` crate's, re-exported: one
//! definition for the format library, the configuration, the sources and the daemon), the
//! subsets the daemon writes ([`ConfigName`]), their configuration names (serde by IoTDB's
//! upper-case names: [`Named`]), and IoTDB path patterns for schema rules.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::path::check_node;

pub use tsfile::{Compression, DataType, Encoding};

/// A TsFile enum the configuration names: the values the daemon writes, by their IoTDB name.
pub trait ConfigName: Copy + PartialEq + fmt::Display + 'static {
    /// What a value is called in messages (`data type`).
    const WHAT: &'static str;
    /// Said after the choices in the message for an unknown name.
    const NOTE: &'static str = "";
    /// Every value of the type.
    fn all() -> &'static [Self];
    /// Whether the daemon writes this value (format 000002 as the Java 0.10 writer does).
    fn written(self) -> bool;
    /// The IoTDB name (`INT64`, `TS_2DIFF`, `SNAPPY`).
    fn name(self) -> &'static str;

    /// The values the daemon writes, in TsFile's order.
    fn accepted() -> Vec<Self> {
        Self::all()
            .iter()
            .copied()
            .filter(|v| v.written())
            .collect()
    }

    /// Parses an accepted value by name, ignoring ASCII case.
    fn parse_name(s: &str) -> Option<Self> {
        Self::all()
            .iter()
            .copied()
            .find(|v| v.written() && v.name().eq_ignore_ascii_case(s))
    }

    /// The accepted names, for error messages: `"A", "B", "C"`.
    fn choices() -> String {
        Self::accepted()
            .iter()
            .map(|v| format!("\"{}\"", v.name()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl ConfigName for DataType {
    const WHAT: &'static str = "data type";
    fn all() -> &'static [Self] {
        DataType::ALL
    }
    fn written(self) -> bool {
        self.in_v2()
    }
    fn name(self) -> &'static str {
        DataType::name(self)
    }
}

impl ConfigName for Encoding {
    const WHAT: &'static str = "encoding";
    fn all() -> &'static [Self] {
        Encoding::ALL
    }
    /// The encodings the 0.10 writer implements for some type.
    fn written(self) -> bool {
        DataType::ALL.iter().any(|t| self.supports(*t))
    }
    fn name(self) -> &'static str {
        Encoding::name(self)
    }
}

impl ConfigName for Compression {
    const WHAT: &'static str = "compression";
    const NOTE: &'static str = " (TsFile 0.10 as written by tsfiled)";
    fn all() -> &'static [Self] {
        Compression::ALL
    }
    fn written(self) -> bool {
        self.is_supported()
    }
    fn name(self) -> &'static str {
        Compression::name(self)
    }
}

/// The message for a name that is not an accepted `T`.
pub fn unknown_name<T: ConfigName>(s: &str) -> String {
    format!(
        "unknown {} \"{s}\"; expected one of {}{}",
        T::WHAT,
        T::choices(),
        T::NOTE
    )
}

/// A [`ConfigName`] value as a raw configuration table holds it: deserialized by its IoTDB
/// name (any case), or the text of a name that is not accepted, which stage two reports
/// ([`Validator::named`](crate::Validator::named)) with its position, so that one bad name
/// does not hide the file's other problems.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named<T> {
    /// An accepted value.
    Known(T),
    /// A name that is not accepted, as written.
    Unknown(String),
}

impl<'de, T: ConfigName> Deserialize<'de> for Named<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(match T::parse_name(&s) {
            Some(v) => Named::Known(v),
            None => Named::Unknown(s),
        })
    }
}

impl<T: ConfigName> Serialize for Named<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Named::Known(v) => s.serialize_str(v.name()),
            Named::Unknown(text) => s.serialize_str(text),
        }
    }
}

/// A data type declared by an input for a series, by IoTDB name (any case): the
/// `(INT32)` suffix of a CSV export header, a REST `data_types` entry. The types of format
/// 000002; newer IoTDB's `STRING` is read as TEXT.
pub fn declared_type(name: &str) -> Option<DataType> {
    if name.eq_ignore_ascii_case("STRING") {
        return Some(DataType::TEXT);
    }
    DataType::parse_name(name)
}

/// The encodings TsFile 0.10 accepts for `t` ([`Encoding::supports`]), for error messages.
pub fn encodings_for(t: DataType) -> Vec<Encoding> {
    Encoding::ALL
        .iter()
        .copied()
        .filter(|e| e.supports(t))
        .collect()
}

/// Whether the daemon writes a series of type `t` with encoding `e` in TsFile v4
/// (`storage.format_version = 4`): of the encodings the configuration names (0.10's), those
/// the format library's v4 writer takes ([`Encoding::supports_v4`]) and that are verified to
/// round-trip, in its own tests and by the Apache TsFile library: PLAIN for every type, RLE
/// and TS_2DIFF for INT32 and INT64. TS_2DIFF of FLOAT and DOUBLE is not verified yet;
/// 0.10's GORILLA (code 6) is TsFile 2.x's GORILLA_V1, which v4 does not write; REGULAR is
/// gone from TsFile 2.x.
pub fn encoding_supported_v4(t: DataType, e: Encoding) -> bool {
    let unverified = e == Encoding::TS_2DIFF && matches!(t, DataType::FLOAT | DataType::DOUBLE);
    e.supports(t) && e.supports_v4(t) && !unverified
}

/// The encodings [`encoding_supported_v4`] allows for `t`, for error messages.
pub fn encodings_for_v4(t: DataType) -> Vec<Encoding> {
    Encoding::ALL
        .iter()
        .copied()
        .filter(|e| encoding_supported_v4(t, *e))
        .collect()
}

/// One node of a [`PathPattern`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatternNode {
    /// A literal node name.
    Literal(String),
    /// `*`: exactly one node.
    One,
    /// `**`: one or more nodes.
    Many,
}

/// An IoTDB path pattern over full series paths (device and measurement), e.g.
/// `root.plant.*.temperature` or `root.**.status`: `*` matches exactly one node, `**` one or
/// more nodes, anything else is a literal node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathPattern {
    text: String,
    nodes: Vec<PatternNode>,
}

impl PathPattern {
    /// Parses a pattern; it must start with `root` and have at least one node after it.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut parts = text.split('.');
        if parts.next() != Some("root") {
            return Err(format!(
                "pattern \"{text}\" must start with \"root.\" (e.g. \"root.sg.*.temperature\")"
            ));
        }
        let mut nodes = Vec::new();
        for (i, p) in parts.enumerate() {
            nodes.push(match p {
                "*" => PatternNode::One,
                "**" => PatternNode::Many,
                _ if p.contains('*') => {
                    return Err(format!(
                        "in pattern \"{text}\": \"{p}\": '*' and '**' must be a whole path node"
                    ))
                }
                "" => {
                    return Err(format!(
                        "in pattern \"{text}\": empty path node (two dots in a row, or a leading or trailing dot)"
                    ))
                }
                _ => {
                    check_node(p, i + 1, false)
                        .map_err(|e| format!("in pattern \"{text}\": {e}"))?;
                    PatternNode::Literal(p.to_string())
                }
            });
        }
        if nodes.is_empty() {
            return Err(format!(
                "pattern \"{text}\" matches no series; add nodes after \"root\""
            ));
        }
        Ok(PathPattern {
            text: text.to_string(),
            nodes,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The nodes after `root`.
    pub fn nodes(&self) -> &[PatternNode] {
        &self.nodes
    }

    /// Whether a full series path (`root.sg.d1.s1`) matches.
    pub fn matches(&self, path: &str) -> bool {
        let mut it = path.split('.');
        if it.next() != Some("root") {
            return false;
        }
        let nodes: Vec<&str> = it.collect();
        self.matches_nodes(&nodes)
    }

    /// Whether the nodes after `root` of a series path match.
    pub fn matches_nodes(&self, nodes: &[&str]) -> bool {
        match_nodes(&self.nodes, nodes)
    }
}

impl fmt::Display for PathPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn match_nodes(pat: &[PatternNode], path: &[&str]) -> bool {
    // Iterative matcher with one backtrack point per `**` (like glob `*` over nodes).
    let (mut p, mut s) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while s < path.len() {
        match pat.get(p) {
            Some(PatternNode::Literal(l)) if l == path[s] => {
                p += 1;
                s += 1;
            }
            Some(PatternNode::One) => {
                p += 1;
                s += 1;
            }
            Some(PatternNode::Many) => {
                // `**` takes at least one node.
                star = Some((p, s + 1));
                p += 1;
                s += 1;
            }
            _ => match star {
                Some((sp, ss)) if ss < path.len() => {
                    p = sp + 1;
                    s = ss + 1;
                    star = Some((sp, ss + 1));
                }
                _ => return false,
            },
        }
    }
    p == pat.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrix() {
        use DataType::*;
        use Encoding::*;
        assert!(RLE.supports(BOOLEAN));
        assert!(!TS_2DIFF.supports(BOOLEAN));
        assert!(!GORILLA.supports(BOOLEAN));
        assert!(!RLE.supports(TEXT));
        assert!(PLAIN.supports(TEXT));
        assert!(!GORILLA.supports(INT64));
        assert!(REGULAR.supports(INT64));
        assert!(!REGULAR.supports(DOUBLE));
        assert!(TS_2DIFF.supports(FLOAT));
        assert_eq!(encodings_for(TEXT), vec![PLAIN]);
        assert_eq!(encodings_for(BOOLEAN), vec![PLAIN, RLE]);
        let accepted: usize = DataType::accepted()
            .iter()
            .map(|t| encodings_for(*t).len())
            .sum();
        assert_eq!(accepted, 2 + 4 + 4 + 4 + 4 + 1);
        // The v4 pairs the daemon writes (docs/configuration.md, storage.format_version).
        for t in DataType::accepted() {
            let want: &[Encoding] = match t {
                INT32 | INT64 => &[PLAIN, RLE, TS_2DIFF],
                _ => &[PLAIN],
            };
            assert_eq!(encodings_for_v4(t), want, "{t}");
        }
    }

    #[test]
    fn names() {
        assert_eq!(Encoding::parse_name("ts_2diff"), Some(Encoding::TS_2DIFF));
        assert_eq!(DataType::parse_name("INT64"), Some(DataType::INT64));
        assert_eq!(DataType::parse_name("STRING"), None);
        assert_eq!(declared_type("string"), Some(DataType::TEXT));
        assert_eq!(declared_type("DATE"), None);
        assert_eq!(Encoding::parse_name("GORILLA_V2"), None);
        assert_eq!(Compression::parse_name("gzip"), None);
        assert_eq!(Compression::choices(), "\"UNCOMPRESSED\", \"SNAPPY\"");
        assert_eq!(
            Encoding::choices(),
            "\"PLAIN\", \"RLE\", \"TS_2DIFF\", \"GORILLA\", \"REGULAR\""
        );
        assert_eq!(
            DataType::choices(),
            "\"BOOLEAN\", \"INT32\", \"INT64\", \"FLOAT\", \"DOUBLE\", \"TEXT\""
        );
    }

    #[test]
    fn patterns() {
        let p = PathPattern::parse("root.sg.*.temperature").unwrap();
        assert!(p.matches("root.sg.d1.temperature"));
        assert!(!p.matches("root.sg.d1.x.temperature"));
        assert!(!p.matches("root.sg.temperature"));
        let p = PathPattern::parse("root.**.status").unwrap();
        assert!(p.matches("root.a.status"));
        assert!(p.matches("root.a.b.c.status"));
        assert!(!p.matches("root.status"));
        assert!(!p.matches("root.a.status.x"));
        let p = PathPattern::parse("root.sg.**").unwrap();
        assert!(p.matches("root.sg.d.s"));
        assert!(!p.matches("root.sg"));
        let p = PathPattern::parse("root.**.d.**").unwrap();
        assert!(p.matches("root.a.b.d.c"));
        assert!(!p.matches("root.d.c"));
        assert!(!p.matches("other.sg.d"));
        assert!(PathPattern::parse("sg.d1").is_err());
        assert!(PathPattern::parse("root").is_err());
        for (pattern, why) in [
            ("root.s*", "whole path node"),
            ("root..a", "empty path node"),
            ("root.a b", "' '"),
            // Literal nodes follow the path rules, so that a pattern can match what is written.
            (
                "root.*.1e5",
                "level 2 \"1e5\" reads as a number with an exponent",
            ),
            ("root.**.root.x", "level 2 \"root\" is a reserved word"),
        ] {
            let e = PathPattern::parse(pattern).unwrap_err();
            assert!(e.contains(why), "{pattern}: {e}");
        }
    }
}
