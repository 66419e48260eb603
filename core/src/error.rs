//! The crate's error type.

/// Errors of `tsfiled-core`: why a string is not a valid device path, node or measurement
/// name ([`path`](crate::path)), a device template does not parse ([`Error::Template`]), or
/// a size or duration is refused ([`Error::Unit`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A path, node or measurement name is empty.
    #[error("is empty")]
    Empty,
    /// A device path does not start with `root`.
    #[error("must start with \"root\"")]
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
    /// A device template does not parse.
    #[error("device template {template:?}, byte {offset}: {message}")]
    Template {
        /// The template as given.
        template: String,
        /// Byte offset of the problem in `template`.
        offset: usize,
        /// What is wrong / what was expected.
        message: String,
    },
    /// A size or duration is refused; the message says what was expected.
    #[error("{0}")]
    Unit(String),
}
