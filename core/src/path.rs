//! IoTDB 0.10 path rules: which device paths, nodes and measurement names tsfiled writes.
//! The configuration checks its prefixes and the fixed nodes of its templates with them, and
//! `tsfiled-connectors` checks every incoming path with the same functions, so that what
//! `check-config` accepts is what the sources accept at run time.
//!
//! # The rule
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
//!
//! The checks run once per incoming point: they do not allocate unless they fail, and they are
//! `#[inline]` so that the connectors compile them with their own optimisation.

use crate::Error;

/// Longest allowed node, in bytes.
pub const MAX_NODE_BYTES: usize = 255;
/// Longest allowed device path, in bytes.
pub const MAX_DEVICE_BYTES: usize = 1024;

/// Whether `c` may appear in an unquoted IoTDB 0.10 path node.
#[inline]
pub fn is_node_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || ('\u{2E80}'..='\u{9FFF}').contains(&c)
}

/// Whether `node` reads as a number with an exponent (`1e5`, `2E10`: digits, `e` or `E`,
/// digits), which IoTDB 0.10 does not take as a path node.
#[inline]
pub fn is_exponent_shaped(node: &str) -> bool {
    let b = node.as_bytes();
    let Some(e) = b.iter().position(|&c| c == b'e' || c == b'E') else {
        return false;
    };
    e > 0
        && e + 1 < b.len()
        && b[..e].iter().all(u8::is_ascii_digit)
        && b[e + 1..].iter().all(u8::is_ascii_digit)
}

/// Whether `node` is a reserved word below level 0: `root` (any case), and for a
/// `measurement` also `time` and `timestamp`.
#[inline]
pub fn is_reserved(node: &str, measurement: bool) -> bool {
    node.eq_ignore_ascii_case("root")
        || (measurement
            && (node.eq_ignore_ascii_case("time") || node.eq_ignore_ascii_case("timestamp")))
}

/// Checks one node at `level` (0 is `root`'s; reserved words are refused below it); with
/// `measurement` also the measurement-only rules (no `.`, not `time`/`timestamp`).
#[inline]
pub fn check_node(node: &str, level: usize, measurement: bool) -> Result<(), Error> {
    if node.is_empty() {
        return Err(Error::EmptyNode { level });
    }
    if node.len() > MAX_NODE_BYTES {
        return Err(Error::TooLong {
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
                return Err(Error::DottedMeasurement(node.to_owned()));
            }
            return Err(Error::InvalidChar {
                level,
                node: node.to_owned(),
                ch,
            });
        }
    }
    if level > 0 && is_reserved(node, measurement) {
        return Err(Error::Reserved {
            level,
            node: node.to_owned(),
        });
    }
    if is_exponent_shaped(node) {
        return Err(Error::Exponent {
            level,
            node: node.to_owned(),
        });
    }
    Ok(())
}

/// Validates one device-path node (not the first `root`) at `level`.
#[inline]
pub fn validate_node(node: &str, level: usize) -> Result<(), Error> {
    check_node(node, level.max(1), false)
}

/// Validates a device path: `root` followed by one or more `.`-separated nodes.
#[inline]
pub fn validate_device(path: &str) -> Result<(), Error> {
    if path.is_empty() {
        return Err(Error::Empty);
    }
    if path.len() > MAX_DEVICE_BYTES {
        return Err(Error::TooLong {
            len: path.len(),
            max: MAX_DEVICE_BYTES,
        });
    }
    let mut nodes = path.split('.');
    if nodes.next() != Some("root") {
        return Err(Error::NoRoot);
    }
    let mut count = 0;
    for (i, node) in nodes.enumerate() {
        check_node(node, i + 1, false)?;
        count += 1;
    }
    if count == 0 {
        return Err(Error::TooShort);
    }
    Ok(())
}

/// Validates a measurement name (the last level of a series path): a single valid node,
/// not `time`/`timestamp`.
#[inline]
pub fn validate_measurement(name: &str) -> Result<(), Error> {
    if name.is_empty() {
        return Err(Error::Empty);
    }
    check_node(name, 1, true)
}

/// Checks a configured device-path prefix such as `root.plant` (`root` alone too when
/// `root_allowed`: the source adds at least one level below it); the message names the path.
pub fn check_prefix(prefix: &str, root_allowed: bool) -> Result<(), String> {
    if root_allowed && prefix == "root" {
        return Ok(());
    }
    validate_device(prefix).map_err(|e| format!("path \"{prefix}\" {e}"))
}

/// Appends `raw` to `out` as a valid path node (see the module docs, "Sanitizing").
/// `measurement` also avoids the measurement-only reserved words.
#[inline]
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
pub fn is_clean_measurement(raw: &str) -> bool {
    !raw.is_empty()
        && raw.len() < MAX_NODE_BYTES
        && raw
            .as_bytes()
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'_')
        && !is_reserved(raw, true)
        && !is_exponent_shaped(raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices() {
        assert_eq!(validate_device("root.sg.d1"), Ok(()));
        assert_eq!(validate_device("root.sg"), Ok(()));
        assert_eq!(validate_device("root.车间.设备_1"), Ok(()));
        assert_eq!(validate_device("root.sg.123"), Ok(()));
        assert_eq!(validate_device("root.sg.12d"), Ok(()));
        assert_eq!(validate_device(""), Err(Error::Empty));
        assert_eq!(validate_device("root"), Err(Error::TooShort));
        assert_eq!(validate_device("sg.d1"), Err(Error::NoRoot));
        assert_eq!(validate_device("ROOT.sg"), Err(Error::NoRoot));
        assert_eq!(
            validate_device("root..d1"),
            Err(Error::EmptyNode { level: 1 })
        );
        assert_eq!(
            validate_device("root.sg."),
            Err(Error::EmptyNode { level: 2 })
        );
        assert_eq!(
            validate_device("root.sg.d-1"),
            Err(Error::InvalidChar {
                level: 2,
                node: "d-1".into(),
                ch: '-'
            })
        );
        assert_eq!(
            validate_device("root.sg.d 1"),
            Err(Error::InvalidChar {
                level: 2,
                node: "d 1".into(),
                ch: ' '
            })
        );
        assert_eq!(
            validate_device("root.sg.é"),
            Err(Error::InvalidChar {
                level: 2,
                node: "é".into(),
                ch: 'é'
            })
        );
        assert_eq!(
            validate_device("root.sg.Root"),
            Err(Error::Reserved {
                level: 2,
                node: "Root".into()
            })
        );
        assert_eq!(
            validate_device("root.sg.1e5"),
            Err(Error::Exponent {
                level: 2,
                node: "1e5".into()
            })
        );
        // `time` is fine as a device level, only reserved for measurements.
        assert_eq!(validate_device("root.sg.time"), Ok(()));
        let long = format!("root.{}", "a".repeat(MAX_NODE_BYTES + 1));
        assert_eq!(
            validate_device(&long),
            Err(Error::TooLong {
                len: MAX_NODE_BYTES + 1,
                max: MAX_NODE_BYTES
            })
        );
        let many = format!("root{}", ".abcdefghi".repeat(110));
        assert!(matches!(
            validate_device(&many),
            Err(Error::TooLong {
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
        assert_eq!(validate_measurement(""), Err(Error::Empty));
        assert_eq!(
            validate_measurement("a.b"),
            Err(Error::DottedMeasurement("a.b".into()))
        );
        assert_eq!(
            validate_measurement("Time"),
            Err(Error::Reserved {
                level: 1,
                node: "Time".into()
            })
        );
        assert!(matches!(
            validate_measurement("timestamp"),
            Err(Error::Reserved { .. })
        ));
        assert!(matches!(
            validate_measurement("2E10"),
            Err(Error::Exponent { .. })
        ));
        assert!(matches!(
            validate_measurement("s\u{0}"),
            Err(Error::InvalidChar { ch: '\u{0}', .. })
        ));
    }

    #[test]
    fn nodes() {
        assert!(is_exponent_shaped("1e5") && is_exponent_shaped("12E034"));
        for n in ["e5", "1e", "1e5x", "1.5e3", "", "1ee5", "15"] {
            assert!(!is_exponent_shaped(n), "{n}");
        }
        // `root` is fine as the first node only.
        assert_eq!(check_node("root", 0, false), Ok(()));
        assert!(check_node("ROOT", 1, false).is_err());
        assert_eq!(validate_node("root", 0), check_node("root", 1, false));
        assert_eq!(check_node("time", 3, false), Ok(()));
        assert!(check_node("time", 3, true).is_err());
    }

    #[test]
    fn prefixes() {
        assert_eq!(check_prefix("root.plant", false), Ok(()));
        assert_eq!(check_prefix("root", true), Ok(()));
        assert_eq!(
            check_prefix("root", false).unwrap_err(),
            "path \"root\" needs at least one level after `root`"
        );
        assert_eq!(
            check_prefix("root.1e5", true).unwrap_err(),
            "path \"root.1e5\" level 1 \"1e5\" reads as a number with an exponent"
        );
        assert_eq!(
            check_prefix("lp", true).unwrap_err(),
            "path \"lp\" must start with \"root\""
        );
        assert!(check_prefix("root.a.root", true)
            .unwrap_err()
            .contains("reserved"));
        assert!(check_prefix("root.plant.line_1", false).is_ok());
        // '-' needs quoting in IoTDB 0.10 SQL, so it is refused unquoted.
        assert!(check_prefix("root.plant.line-1", false).is_err());
        assert!(check_prefix("root.工厂", false).is_ok());
        assert!(check_prefix("plant", true).is_err());
        assert!(check_prefix("root.a.", true).is_err());
        let long = format!("root{}", ".abcdefghi".repeat(110));
        assert!(check_prefix(&long, true)
            .unwrap_err()
            .contains("more than the 1024 allowed"));
    }
}
