//! TsFile data types, encodings and compressions as the configuration names them, the
//! encoding/type pairs format 000002 (TsFile 0.10) and format v4 (TsFile 2.x) accept, and
//! IoTDB path patterns for schema rules.
//!
//! Encoding names follow the format a pipeline writes, as TsFile and IoTDB name them:
//! in format 000002 `GORILLA` is TsFile 0.10's GORILLA (code 6); in v4 `GORILLA` is TsFile
//! 2.x's GORILLA (code 8) and code 6 is called `GORILLA_V1`, as Apache TsFile 2.x's
//! `TSEncoding` and IoTDB 2.x's configuration name them.
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
    /// A value encoding by its configuration name: the five of TsFile 0.10, then those
    /// only TsFile 2.x (format v4) has. `Gorilla` is the format's own GORILLA (see the
    /// module documentation).
    Encoding {
        /// `PLAIN`
        Plain = "PLAIN",
        /// `RLE`
        Rle = "RLE",
        /// `TS_2DIFF`
        Ts2Diff = "TS_2DIFF",
        /// `GORILLA`: code 6 in format 000002, code 8 in v4.
        Gorilla = "GORILLA",
        /// `REGULAR` (format 000002 only).
        Regular = "REGULAR",
        /// `DICTIONARY` (v4 only; code 1).
        Dictionary = "DICTIONARY",
        /// `GORILLA_V1`: TsFile 2.x's name of code 6; no v4 writer writes it.
        GorillaV1 = "GORILLA_V1",
        /// `ZIGZAG` (v4 only).
        Zigzag = "ZIGZAG",
        /// `CHIMP` (v4 only).
        Chimp = "CHIMP",
        /// `SPRINTZ` (v4 only).
        Sprintz = "SPRINTZ",
        /// `RLBE` (v4 only).
        Rlbe = "RLBE",
    }
}

name_enum! {
    /// A page compression: the two of TsFile 0.10, then those only format v4 has.
    Compression {
        /// `UNCOMPRESSED`
        Uncompressed = "UNCOMPRESSED",
        /// `SNAPPY`
        Snappy = "SNAPPY",
        /// `GZIP` (v4 only).
        Gzip = "GZIP",
        /// `LZ4` (v4 only).
        Lz4 = "LZ4",
        /// `ZSTD` (v4 only).
        Zstd = "ZSTD",
    }
}

impl Compression {
    /// Whether format 000002 (TsFile 0.10) has this compression.
    pub fn supported_v2(self) -> bool {
        matches!(self, Compression::Uncompressed | Compression::Snappy)
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
        E::Dictionary | E::GorillaV1 | E::Zigzag | E::Chimp | E::Sprintz | E::Rlbe => false,
    }
}

/// Whether the daemon writes a series of type `t` with encoding `e` (a TsFile 2.x name) in
/// TsFile v4 (`storage.format_version = 4`): the format library's v4 matrix (the `tsfile`
/// crate's `Encoding::supports_v4`, the pairs the Apache TsFile 2.x C++ library writes and
/// reads; a daemon test checks that the two agree). PLAIN for every type; DICTIONARY for
/// TEXT; RLE and ZIGZAG for INT32 and INT64; TS_2DIFF, GORILLA, CHIMP, SPRINTZ and RLBE for
/// INT32, INT64, FLOAT and DOUBLE. BOOLEAN RLE is not written (the C++ library does not read
/// it back), GORILLA_V1 and REGULAR are not written in v4.
pub fn encoding_supported_v4(t: DataType, e: Encoding) -> bool {
    use DataType as T;
    use Encoding as E;
    match e {
        E::Plain => true,
        E::Dictionary => t == T::Text,
        E::Rle | E::Zigzag => matches!(t, T::Int32 | T::Int64),
        E::Ts2Diff | E::Gorilla | E::Chimp | E::Sprintz | E::Rlbe => {
            matches!(t, T::Int32 | T::Int64 | T::Float | T::Double)
        }
        E::GorillaV1 | E::Regular => false,
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
        // v4: BOOLEAN PLAIN; INT32/INT64 PLAIN RLE TS_2DIFF GORILLA ZIGZAG CHIMP SPRINTZ RLBE;
        // FLOAT/DOUBLE PLAIN TS_2DIFF GORILLA CHIMP SPRINTZ RLBE; TEXT PLAIN DICTIONARY.
        assert_eq!(encodings_for_v4(Boolean), vec![Plain]);
        assert_eq!(encodings_for_v4(Text), vec![Plain, Dictionary]);
        assert_eq!(
            encodings_for_v4(Int32),
            vec![Plain, Rle, Ts2Diff, Gorilla, Zigzag, Chimp, Sprintz, Rlbe]
        );
        assert_eq!(
            encodings_for_v4(Double),
            vec![Plain, Ts2Diff, Gorilla, Chimp, Sprintz, Rlbe]
        );
        assert!(!encoding_supported_v4(Double, GorillaV1));
        assert!(!encoding_supported_v4(Int64, Regular));
        assert!(!encoding_supported(Int64, Zigzag));
    }

    #[test]
    fn names() {
        assert_eq!(Encoding::parse("ts_2diff"), Some(Encoding::Ts2Diff));
        assert_eq!(DataType::parse("INT64"), Some(DataType::Int64));
        assert_eq!(DataType::parse("STRING"), None);
        assert_eq!(Compression::parse("gzip"), Some(Compression::Gzip));
        assert!(!Compression::Gzip.supported_v2());
        assert!(Compression::Snappy.supported_v2());
        assert_eq!(Encoding::parse("gorilla_v1"), Some(Encoding::GorillaV1));
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
