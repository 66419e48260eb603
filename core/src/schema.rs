//! TsFile 0.10 data types, encodings and compressions as the configuration names them, the
//! encoding/type pairs TsFile 0.10 accepts, and IoTDB path patterns for schema rules.
//!
//! This crate does not depend on the `tsfile` crate: the enums here carry the canonical TsFile
//! names ([`DataType::as_str`] etc.), which the daemon maps onto the format library's types.

use std::fmt;

use crate::path::check_node;

macro_rules! name_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $var:ident = $s:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($(#[$vm])* $var),* }

        impl $name {
            /// Every value, in the order TsFile lists them.
            pub const ALL: &'static [$name] = &[$($name::$var),*];

            /// The canonical TsFile name (upper case).
            pub fn as_str(self) -> &'static str {
                match self { $($name::$var => $s),* }
            }

            /// Parses a name, ignoring ASCII case.
            pub fn parse(s: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|v| v.as_str().eq_ignore_ascii_case(s))
            }

            /// The accepted names, for error messages: `"A", "B", "C"`.
            pub fn choices() -> String {
                Self::ALL.iter().map(|v| format!("\"{}\"", v.as_str())).collect::<Vec<_>>().join(", ")
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

name_enum! {
    /// A TsFile 0.10 data type.
    DataType {
        /// `BOOLEAN`
        Boolean = "BOOLEAN",
        /// `INT32`
        Int32 = "INT32",
        /// `INT64`
        Int64 = "INT64",
        /// `FLOAT`
        Float = "FLOAT",
        /// `DOUBLE`
        Double = "DOUBLE",
        /// `TEXT`
        Text = "TEXT",
    }
}

name_enum! {
    /// A TsFile 0.10 value encoding.
    Encoding {
        /// `PLAIN`
        Plain = "PLAIN",
        /// `RLE`
        Rle = "RLE",
        /// `TS_2DIFF`
        Ts2Diff = "TS_2DIFF",
        /// `GORILLA`
        Gorilla = "GORILLA",
        /// `REGULAR`
        Regular = "REGULAR",
    }
}

name_enum! {
    /// A TsFile 0.10 page compression.
    Compression {
        /// `UNCOMPRESSED`
        Uncompressed = "UNCOMPRESSED",
        /// `SNAPPY`
        Snappy = "SNAPPY",
    }
}

/// Whether TsFile 0.10 can write a series of type `t` with encoding `e`.
///
/// The matrix of the Java writer's encoder factory: PLAIN takes every type; RLE and TS_2DIFF
/// take the numeric types (RLE also BOOLEAN); GORILLA takes FLOAT and DOUBLE; REGULAR takes
/// INT32 and INT64; TEXT takes only PLAIN.
pub fn encoding_supported(t: DataType, e: Encoding) -> bool {
    use DataType as T;
    use Encoding as E;
    match e {
        E::Plain => true,
        E::Rle => matches!(t, T::Boolean | T::Int32 | T::Int64 | T::Float | T::Double),
        E::Ts2Diff => matches!(t, T::Int32 | T::Int64 | T::Float | T::Double),
        E::Gorilla => matches!(t, T::Float | T::Double),
        E::Regular => matches!(t, T::Int32 | T::Int64),
    }
}

/// Whether the daemon writes a series of type `t` with encoding `e` in TsFile v4
/// (`storage.format_version = 4`): the pairs the format library's v4 writer is verified to
/// round-trip, in its own tests and by the Apache TsFile library: PLAIN for every type, RLE
/// and TS_2DIFF for INT32 and INT64. TsFile 2.x has more (GORILLA and TS_2DIFF for FLOAT and
/// DOUBLE among them) that are not verified yet; REGULAR is gone from TsFile 2.x.
pub fn encoding_supported_v4(t: DataType, e: Encoding) -> bool {
    use DataType as T;
    use Encoding as E;
    match e {
        E::Plain => true,
        E::Rle | E::Ts2Diff => matches!(t, T::Int32 | T::Int64),
        E::Gorilla | E::Regular => false,
    }
}

/// The encodings [`encoding_supported_v4`] allows for `t`, for error messages.
pub fn encodings_for_v4(t: DataType) -> Vec<Encoding> {
    Encoding::ALL
        .iter()
        .copied()
        .filter(|e| encoding_supported_v4(t, *e))
        .collect()
}

/// The encodings TsFile 0.10 accepts for `t`, for error messages.
pub fn encodings_for(t: DataType) -> Vec<Encoding> {
    Encoding::ALL
        .iter()
        .copied()
        .filter(|e| encoding_supported(t, *e))
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
        assert!(encoding_supported(Boolean, Rle));
        assert!(!encoding_supported(Boolean, Ts2Diff));
        assert!(!encoding_supported(Boolean, Gorilla));
        assert!(!encoding_supported(Text, Rle));
        assert!(encoding_supported(Text, Plain));
        assert!(!encoding_supported(Int64, Gorilla));
        assert!(encoding_supported(Int64, Regular));
        assert!(!encoding_supported(Double, Regular));
        assert!(encoding_supported(Float, Ts2Diff));
        assert_eq!(encodings_for(Text), vec![Plain]);
        let accepted: usize = DataType::ALL.iter().map(|t| encodings_for(*t).len()).sum();
        assert_eq!(accepted, 2 + 4 + 4 + 4 + 4 + 1);
    }

    #[test]
    fn names() {
        assert_eq!(Encoding::parse("ts_2diff"), Some(Encoding::Ts2Diff));
        assert_eq!(DataType::parse("INT64"), Some(DataType::Int64));
        assert_eq!(DataType::parse("STRING"), None);
        assert_eq!(Compression::parse("gzip"), None);
        assert_eq!(Compression::choices(), "\"UNCOMPRESSED\", \"SNAPPY\"");
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
