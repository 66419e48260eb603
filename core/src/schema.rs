//! TsFile data types, encodings and compressions (the `tsfile` crate's, re-exported: one
//! definition for the format library, the configuration, the sources and the daemon), the
//! subsets the daemon writes in format 000002 (TsFile 0.10) and format v4 (TsFile 2.x),
//! their configuration names (serde by IoTDB's upper-case names: [`Named`]), and IoTDB path
//! patterns for schema rules.
//!
//! Encoding names follow the format a pipeline writes, as TsFile and IoTDB name them
//! ([`EncodingName`]): in format 000002 `GORILLA` is TsFile 0.10's GORILLA (code 6); in v4
//! `GORILLA` is TsFile 2.x's GORILLA (code 8) and code 6 is called `GORILLA_V1`, as Apache
//! TsFile 2.x's `TSEncoding` and IoTDB 2.x's configuration name them.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::path::check_node;

pub use tsfile::{Compression, DataType, Encoding};

/// A TsFile enum the configuration names: the values the daemon writes, by their IoTDB name.
pub trait ConfigName: Copy + PartialEq + fmt::Display + 'static {
    /// What a value is called in messages (`data type`).
    const WHAT: &'static str;
    /// Every value of the type.
    fn all() -> &'static [Self];
    /// Whether the daemon writes this value (in either format).
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

impl ConfigName for Compression {
    const WHAT: &'static str = "compression";
    fn all() -> &'static [Self] {
        Compression::ALL
    }
    /// The compressions of format v4; format 000002 has UNCOMPRESSED and SNAPPY of them
    /// ([`Compression::is_supported`], checked by
    /// [`Validator::check_compression`](crate::Validator::check_compression)).
    fn written(self) -> bool {
        self.is_supported_v4()
    }
    fn name(self) -> &'static str {
        Compression::name(self)
    }
}

/// An encoding as the configuration names it: the five names of TsFile 0.10, then those
/// only TsFile 2.x (format v4) has. What a name stands for depends on the pipeline's format
/// ([`EncodingName::in_format`]): `GORILLA` is code 6 in format 000002 and code 8 in v4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EncodingName(&'static str);

impl EncodingName {
    /// `GORILLA`: TsFile 0.10's (code 6) in format 000002, TsFile 2.x's (code 8) in v4.
    pub const GORILLA: EncodingName = EncodingName("GORILLA");

    /// Every configuration name of an encoding, in the order messages list them.
    pub const ALL: &'static [EncodingName] = &[
        EncodingName("PLAIN"),
        EncodingName("RLE"),
        EncodingName("TS_2DIFF"),
        EncodingName::GORILLA,
        EncodingName("REGULAR"),
        EncodingName("DICTIONARY"),
        EncodingName("GORILLA_V1"),
        EncodingName("ZIGZAG"),
        EncodingName("CHIMP"),
        EncodingName("SPRINTZ"),
        EncodingName("RLBE"),
    ];

    /// The encoding this name stands for in format v4 (`v4`: TsFile 2.x's names,
    /// [`Encoding::from_v4_name`]) or format 000002 (TsFile 0.10's, [`Encoding::name`]);
    /// `None` for a TsFile 2.x name 0.10 has no encoding of (`DICTIONARY`, `GORILLA_V1`).
    pub fn in_format(self, v4: bool) -> Option<Encoding> {
        Encoding::ALL
            .iter()
            .copied()
            .find(|e| (if v4 { e.v4_name() } else { e.name() }) == self.0)
    }

    /// The configuration name of an encoding the daemon writes: its name in the format
    /// that writes it (code 6, which only 000002 writes, and code 8, which only v4 writes,
    /// are both `GORILLA`; code 1 is `DICTIONARY`).
    pub fn of(e: Encoding) -> EncodingName {
        let name = if e == Encoding::GORILLA {
            e.name()
        } else {
            e.v4_name()
        };
        EncodingName::ALL
            .iter()
            .copied()
            .find(|n| n.0 == name)
            .unwrap_or(EncodingName(name))
    }

    /// The name (`TS_2DIFF`).
    pub fn as_str(self) -> &'static str {
        self.0
    }
}

impl fmt::Display for EncodingName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl ConfigName for EncodingName {
    const WHAT: &'static str = "encoding";
    fn all() -> &'static [Self] {
        EncodingName::ALL
    }
    fn written(self) -> bool {
        true
    }
    fn name(self) -> &'static str {
        self.0
    }
}

/// The message for a name that is not an accepted `T`.
pub fn unknown_name<T: ConfigName>(s: &str) -> String {
    format!(
        "unknown {} \"{s}\"; expected one of {}",
        T::WHAT,
        T::choices()
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

/// Whether the daemon writes a series of type `t` with encoding `e` in format 000002
/// (TsFile 0.10, [`Encoding::supports`]).
pub fn encoding_supported(t: DataType, e: Encoding) -> bool {
    t.in_v2() && e.supports(t)
}

/// The encodings [`encoding_supported`] allows for `t`, for error messages.
pub fn encodings_for(t: DataType) -> Vec<Encoding> {
    Encoding::ALL
        .iter()
        .copied()
        .filter(|e| encoding_supported(t, *e))
        .collect()
}

/// Whether the daemon writes a series of type `t` with encoding `e` in TsFile v4
/// (`storage.format_version = 4`): the format library's v4 matrix
/// ([`Encoding::supports_v4`], the pairs the Apache TsFile 2.x C++ library writes and reads)
/// without BOOLEAN RLE (the C++ library does not read it back). By TsFile 2.x's names: PLAIN
/// for every type; DICTIONARY for TEXT; RLE and ZIGZAG for INT32 and INT64; TS_2DIFF,
/// GORILLA, CHIMP, SPRINTZ and RLBE for INT32, INT64, FLOAT and DOUBLE. GORILLA_V1 (code 6)
/// and REGULAR are not written in v4.
pub fn encoding_supported_v4(t: DataType, e: Encoding) -> bool {
    t.in_v2() && e.supports_v4(t) && !(t == DataType::BOOLEAN && e == Encoding::RLE)
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
        // v4 (TsFile 2.x names): BOOLEAN PLAIN; INT32/INT64 PLAIN RLE TS_2DIFF GORILLA
        // ZIGZAG CHIMP SPRINTZ RLBE; FLOAT/DOUBLE PLAIN TS_2DIFF GORILLA CHIMP SPRINTZ RLBE;
        // TEXT PLAIN DICTIONARY.
        let v4 = |t| -> Vec<&str> { encodings_for_v4(t).iter().map(|e| e.v4_name()).collect() };
        assert_eq!(v4(BOOLEAN), ["PLAIN"]);
        assert_eq!(v4(TEXT), ["PLAIN", "DICTIONARY"]);
        for t in [INT32, INT64] {
            assert_eq!(
                v4(t),
                ["PLAIN", "RLE", "TS_2DIFF", "GORILLA", "ZIGZAG", "CHIMP", "SPRINTZ", "RLBE"],
                "{t}"
            );
        }
        for t in [FLOAT, DOUBLE] {
            assert_eq!(
                v4(t),
                ["PLAIN", "TS_2DIFF", "GORILLA", "CHIMP", "SPRINTZ", "RLBE"],
                "{t}"
            );
        }
        assert!(!encoding_supported_v4(BOOLEAN, RLE));
        // GORILLA_V1 (code 6) and REGULAR are not written in v4; ZIGZAG not in 000002.
        assert!(!encoding_supported_v4(DOUBLE, GORILLA));
        assert!(!encoding_supported_v4(INT64, REGULAR));
        assert!(!encoding_supported(INT64, ZIGZAG));
        assert!(!encoding_supported(DOUBLE, GORILLA_V2));
        assert!(encodings_for_v4(TIMESTAMP).is_empty());
    }

    #[test]
    fn names() {
        assert_eq!(DataType::parse_name("INT64"), Some(DataType::INT64));
        assert_eq!(DataType::parse_name("STRING"), None);
        assert_eq!(declared_type("string"), Some(DataType::TEXT));
        assert_eq!(declared_type("DATE"), None);
        assert_eq!(Compression::parse_name("gzip"), Some(Compression::GZIP));
        assert_eq!(Compression::parse_name("LZO"), None);
        assert!(!Compression::GZIP.is_supported());
        assert!(Compression::SNAPPY.is_supported());
        assert_eq!(
            Compression::choices(),
            "\"UNCOMPRESSED\", \"SNAPPY\", \"GZIP\", \"LZ4\", \"ZSTD\""
        );
        assert_eq!(
            DataType::choices(),
            "\"BOOLEAN\", \"INT32\", \"INT64\", \"FLOAT\", \"DOUBLE\", \"TEXT\""
        );
        assert_eq!(
            EncodingName::choices(),
            "\"PLAIN\", \"RLE\", \"TS_2DIFF\", \"GORILLA\", \"REGULAR\", \"DICTIONARY\", \"GORILLA_V1\", \"ZIGZAG\", \"CHIMP\", \"SPRINTZ\", \"RLBE\""
        );
        let name = |s| EncodingName::parse_name(s).unwrap();
        assert_eq!(EncodingName::parse_name("GORILLA_V2"), None);
        assert_eq!(EncodingName::parse_name("PLAIN_DICTIONARY"), None);
        // Codes by TsFile 0.10's names in format 000002, by TsFile 2.x's in v4 (Apache
        // TsFile 2.x `TSEncoding`: DICTIONARY 1, GORILLA_V1 6, GORILLA 8, ZIGZAG 9, CHIMP 11,
        // SPRINTZ 12, RLBE 13).
        let code = |s, v4| name(s).in_format(v4).map(|e: Encoding| e.code());
        assert_eq!(code("ts_2diff", false), Some(4));
        assert_eq!(code("GORILLA", false), Some(6));
        assert_eq!(code("GORILLA", true), Some(8));
        assert_eq!(code("gorilla_v1", true), Some(6));
        assert_eq!(code("DICTIONARY", true), Some(1));
        assert_eq!(code("ZIGZAG", true), Some(9));
        assert_eq!(code("CHIMP", true), Some(11));
        assert_eq!(code("SPRINTZ", true), Some(12));
        assert_eq!(code("RLBE", true), Some(13));
        assert_eq!(code("TS_2DIFF", true), Some(4));
        assert_eq!(code("REGULAR", true), Some(7));
        assert_eq!(code("GORILLA_V1", false), None);
        assert_eq!(code("DICTIONARY", false), None);
        // Every written encoding has one configuration name, which stands for it in the
        // format that writes it.
        for t in DataType::accepted() {
            for (v4, es) in [(false, encodings_for(t)), (true, encodings_for_v4(t))] {
                for e in es {
                    assert_eq!(EncodingName::of(e).in_format(v4), Some(e), "{t} {e} {v4}");
                }
            }
        }
        assert_eq!(
            EncodingName::of(Encoding::GORILLA_V2),
            EncodingName::GORILLA
        );
        assert_eq!(EncodingName::of(Encoding::GORILLA), EncodingName::GORILLA);
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
