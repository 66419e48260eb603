//! Human-readable sizes (`"64MiB"`, `"16 MB"`, `512`) and durations (`"1h30m"`, `"250ms"`).
//!
//! Both parsers are strict: a value either means exactly one number of bytes or nanoseconds, or
//! it is refused with a message saying what was expected. Both have a display form that parses
//! back to the same value, which is what the effective configuration prints.

use std::fmt;
use std::time::Duration;

use crate::Error;

/// A number of bytes, parsed from a plain integer or a string such as `"64MiB"` or `"16 MB"`.
///
/// Binary units (`KiB`, `MiB`, `GiB`, `TiB`) are powers of 1024, decimal units (`kB`/`KB`,
/// `MB`, `GB`, `TB`) powers of 1000, `B` is bytes. Units are matched case-insensitively; a
/// decimal fraction is allowed when the result is a whole number of bytes (`"1.5KiB"` = 1536).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ByteSize(pub u64);

impl ByteSize {
    /// One kibibyte (1024 bytes).
    pub const KIB: u64 = 1 << 10;
    /// One mebibyte.
    pub const MIB: u64 = 1 << 20;
    /// One gibibyte.
    pub const GIB: u64 = 1 << 30;

    /// The number of bytes.
    pub const fn bytes(self) -> u64 {
        self.0
    }

    /// `n` mebibytes.
    pub const fn mib(n: u64) -> Self {
        ByteSize(n * Self::MIB)
    }

    /// `n` kibibytes.
    pub const fn kib(n: u64) -> Self {
        ByteSize(n * Self::KIB)
    }

    /// The number of bytes as `usize`, saturating on 32-bit targets.
    pub fn as_usize(self) -> usize {
        usize::try_from(self.0).unwrap_or(usize::MAX)
    }
}

const SIZE_UNITS: &[(&str, u64)] = &[
    ("b", 1),
    ("kb", 1_000),
    ("mb", 1_000_000),
    ("gb", 1_000_000_000),
    ("tb", 1_000_000_000_000),
    ("kib", 1 << 10),
    ("mib", 1 << 20),
    ("gib", 1 << 30),
    ("tib", 1 << 40),
];

/// Display units; binary before decimal so that `1048576` shows as `1MiB`, not `1048576B`.
const SIZE_DISPLAY: &[(&str, u64)] = &[
    ("TiB", 1 << 40),
    ("GiB", 1 << 30),
    ("MiB", 1 << 20),
    ("KiB", 1 << 10),
    ("TB", 1_000_000_000_000),
    ("GB", 1_000_000_000),
    ("MB", 1_000_000),
    ("kB", 1_000),
];

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The unit giving the smallest number wins; binary units win ties.
        let n = self.0;
        let best = SIZE_DISPLAY
            .iter()
            .filter(|(_, unit)| n != 0 && n.is_multiple_of(*unit))
            .min_by_key(|(_, unit)| n / unit);
        match best {
            Some((name, unit)) => write!(f, "{}{}", n / unit, name),
            None => write!(f, "{n}B"),
        }
    }
}

impl std::str::FromStr for ByteSize {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_size(s)
    }
}

fn size_hint() -> &'static str {
    "expected a size such as \"64MiB\", \"16 MB\", \"512KiB\" or a plain number of bytes \
     (units: B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)"
}

/// Splits `"12.5 MiB"` into the number part `"12.5"` and the unit part `"MiB"`.
fn split_number(s: &str) -> (&str, &str) {
    let end = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.'))
        .map_or(s.len(), |(i, _)| i);
    (&s[..end], s[end..].trim_start())
}

/// A decimal number `int.frac` as mantissa and power of ten: `"12.5"` → (125, 1).
fn parse_decimal(num: &str) -> Option<(u128, u32)> {
    let (int, frac) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num, ""),
    };
    if int.is_empty() || !int.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if num.contains('.') && (frac.is_empty() || !frac.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    if int.len() + frac.len() > 30 {
        return None;
    }
    let digits: String = format!("{int}{frac}");
    let mantissa = digits.parse::<u128>().ok()?;
    Some((mantissa, u32::try_from(frac.len()).ok()?))
}

/// Parses a size: `"64MiB"`, `"16 MB"`, `"1.5GiB"`, `"512"` (bytes).
pub fn parse_size(input: &str) -> Result<ByteSize, Error> {
    let s = input.trim();
    if s.is_empty() {
        return Err(Error::Unit(format!("empty size; {}", size_hint())));
    }
    if s.starts_with('-') {
        return Err(Error::Unit(format!(
            "negative size \"{input}\"; {}",
            size_hint()
        )));
    }
    let (num, unit) = split_number(s);
    let Some((mantissa, scale)) = parse_decimal(num) else {
        return Err(Error::Unit(format!(
            "\"{input}\" does not start with a number; {}",
            size_hint()
        )));
    };
    let multiplier = if unit.is_empty() {
        1
    } else {
        let lower = unit.to_ascii_lowercase();
        match SIZE_UNITS.iter().find(|(name, _)| *name == lower) {
            Some((_, m)) => *m,
            None => {
                if matches!(lower.as_str(), "k" | "m" | "g" | "t") {
                    let u = unit.to_ascii_uppercase();
                    return Err(Error::Unit(format!(
                        "unknown size unit \"{unit}\" in \"{input}\"; a bare \"{unit}\" is ambiguous, write \"{num}{u}iB\" (binary) or \"{num}{u}B\" (decimal)"
                    )));
                }
                return Err(Error::Unit(format!(
                    "unknown size unit \"{unit}\" in \"{input}\"; {}",
                    size_hint()
                )));
            }
        }
    };
    let divisor = 10u128.pow(scale);
    let total = mantissa
        .checked_mul(u128::from(multiplier))
        .ok_or_else(|| Error::Unit(format!("size \"{input}\" is too large")))?;
    if total % divisor != 0 {
        return Err(Error::Unit(format!(
            "size \"{input}\" is not a whole number of bytes"
        )));
    }
    let bytes = u64::try_from(total / divisor).map_err(|_| {
        Error::Unit(format!(
            "size \"{input}\" is too large (at most 2^64-1 bytes)"
        ))
    })?;
    Ok(ByteSize(bytes))
}

const DURATION_UNITS: &[(&str, u64)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60 * 1_000_000_000),
    ("h", 3_600 * 1_000_000_000),
    ("d", 86_400 * 1_000_000_000),
];

fn duration_hint() -> &'static str {
    "expected a duration such as \"30s\", \"10m\", \"1h30m\" or \"250ms\" \
     (units: ns, us, ms, s, m, h, d)"
}

/// Parses a duration: one or more `<integer><unit>` parts, e.g. `"1h30m"`, `"250ms"`, `"7d"`.
///
/// Units: `ns`, `us` (or `µs`), `ms`, `s`, `m` (minutes), `h`, `d` (24 h). A bare number is
/// refused because its unit would be a guess. Parts may be separated by spaces.
pub fn parse_duration(input: &str) -> Result<Duration, Error> {
    let s = input.trim();
    if s.is_empty() {
        return Err(Error::Unit(format!("empty duration; {}", duration_hint())));
    }
    let mut total: u128 = 0;
    let mut rest = s;
    while !rest.is_empty() {
        let digits_end = rest
            .char_indices()
            .find(|(_, c)| !c.is_ascii_digit())
            .map_or(rest.len(), |(i, _)| i);
        if digits_end == 0 {
            let what = if rest.starts_with('-') {
                format!("negative duration \"{input}\"")
            } else if rest.starts_with('.') || rest.contains('.') {
                format!(
                    "\"{input}\" has a fraction; write whole parts such as \"1h30m\" or \"1500ms\""
                )
            } else {
                format!("\"{input}\" is not a duration")
            };
            return Err(Error::Unit(format!("{what}; {}", duration_hint())));
        }
        let number: u128 = rest[..digits_end]
            .parse()
            .map_err(|_| Error::Unit(format!("duration \"{input}\" is too large")))?;
        rest = rest[digits_end..].trim_start();
        if rest.starts_with('.') {
            return Err(Error::Unit(format!(
                "\"{input}\" has a fraction; write whole parts such as \"1h30m\" or \"1500ms\""
            )));
        }
        let unit_end = rest
            .char_indices()
            .find(|(_, c)| c.is_ascii_digit() || c.is_whitespace())
            .map_or(rest.len(), |(i, _)| i);
        let unit = &rest[..unit_end];
        rest = rest[unit_end..].trim_start();
        if unit.is_empty() {
            return Err(Error::Unit(format!(
                "\"{input}\" lacks a unit after {number}; {}",
                duration_hint()
            )));
        }
        let Some((_, nanos)) = DURATION_UNITS.iter().find(|(name, _)| *name == unit) else {
            return Err(Error::Unit(format!(
                "unknown duration unit \"{unit}\" in \"{input}\"; {}",
                duration_hint()
            )));
        };
        total = number
            .checked_mul(u128::from(*nanos))
            .and_then(|p| total.checked_add(p))
            .ok_or_else(|| Error::Unit(format!("duration \"{input}\" is too large")))?;
    }
    let nanos = u64::try_from(total).map_err(|_| {
        Error::Unit(format!(
            "duration \"{input}\" is too large (at most ~584 years)"
        ))
    })?;
    Ok(Duration::from_nanos(nanos))
}

/// The display form of a duration, which [`parse_duration`] reads back exactly:
/// `5400s` → `"1h30m"`, `0` → `"0s"`, `1.5s` → `"1s500ms"`.
///
/// Durations of more than `u64::MAX` nanoseconds are clamped to that.
pub fn format_duration(d: Duration) -> String {
    let mut nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    if nanos == 0 {
        return "0s".to_string();
    }
    let mut out = String::new();
    for (name, unit) in [
        ("d", 86_400_000_000_000u64),
        ("h", 3_600_000_000_000),
        ("m", 60_000_000_000),
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
        ("us", 1_000),
        ("ns", 1),
    ] {
        let count = nanos / unit;
        if count > 0 {
            out.push_str(&count.to_string());
            out.push_str(name);
            nanos %= unit;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64MiB").unwrap(), ByteSize(64 << 20));
        assert_eq!(parse_size("16 MB").unwrap(), ByteSize(16_000_000));
        assert_eq!(parse_size("512KiB").unwrap(), ByteSize(512 * 1024));
        assert_eq!(parse_size("512").unwrap(), ByteSize(512));
        assert_eq!(parse_size("0").unwrap(), ByteSize(0));
        assert_eq!(parse_size("1kb").unwrap(), ByteSize(1000));
        assert_eq!(parse_size("1KB").unwrap(), ByteSize(1000));
        assert_eq!(parse_size("2gib").unwrap(), ByteSize(2 << 30));
        assert_eq!(parse_size("1.5KiB").unwrap(), ByteSize(1536));
        assert_eq!(parse_size(" 7 B ").unwrap(), ByteSize(7));
        assert_eq!(parse_size("1TiB").unwrap(), ByteSize(1 << 40));
    }

    #[test]
    fn bad_sizes() {
        let e = parse_size("64M").unwrap_err().to_string();
        assert!(e.contains("ambiguous") && e.contains("64MiB"), "{e}");
        let e = parse_size("12 parsecs").unwrap_err().to_string();
        assert!(e.contains("unknown size unit \"parsecs\""), "{e}");
        assert!(parse_size("").unwrap_err().to_string().contains("empty"));
        assert!(parse_size("-1MiB")
            .unwrap_err()
            .to_string()
            .contains("negative"));
        assert!(parse_size("MiB")
            .unwrap_err()
            .to_string()
            .contains("does not start with a number"));
        assert!(parse_size("1.2345B")
            .unwrap_err()
            .to_string()
            .contains("whole number of bytes"));
        assert!(parse_size("1.B").is_err());
        assert!(parse_size("1..2B").is_err());
        assert!(parse_size("99999999999TiB")
            .unwrap_err()
            .to_string()
            .contains("too large"));
        assert!(parse_size("18446744073709551616")
            .unwrap_err()
            .to_string()
            .contains("too large"));
        assert_eq!(
            parse_size("18446744073709551615").unwrap(),
            ByteSize(u64::MAX)
        );
    }

    #[test]
    fn size_display() {
        assert_eq!(ByteSize(64 << 20).to_string(), "64MiB");
        assert_eq!(ByteSize(16_000_000).to_string(), "16MB");
        assert_eq!(ByteSize(1536).to_string(), "1536B");
        assert_eq!(ByteSize(0).to_string(), "0B");
        assert_eq!(ByteSize(1000).to_string(), "1kB");
        assert_eq!(ByteSize(3 << 40).to_string(), "3TiB");
    }

    #[test]
    fn durations() {
        let d = |s| parse_duration(s).unwrap();
        assert_eq!(d("10m"), Duration::from_secs(600));
        assert_eq!(d("30s"), Duration::from_secs(30));
        assert_eq!(d("1h30m"), Duration::from_secs(5400));
        assert_eq!(d("1h 30m"), Duration::from_secs(5400));
        assert_eq!(d("250ms"), Duration::from_millis(250));
        assert_eq!(d("7d"), Duration::from_secs(7 * 86400));
        assert_eq!(d("0s"), Duration::ZERO);
        assert_eq!(d("1s500ms"), Duration::from_millis(1500));
        assert_eq!(d("3us"), Duration::from_micros(3));
        assert_eq!(d("3µs"), Duration::from_micros(3));
        assert_eq!(d("12ns"), Duration::from_nanos(12));
    }

    #[test]
    fn bad_durations() {
        let e = |s| parse_duration(s).unwrap_err().to_string();
        assert!(e("30").contains("lacks a unit"), "{}", e("30"));
        assert!(e("1.5h").contains("fraction"));
        assert!(e("10 minutes").contains("unknown duration unit \"minutes\""));
        assert!(e("").contains("empty"));
        assert!(e("-5s").contains("negative"));
        assert!(e("s").contains("not a duration"));
        assert!(e("999999999999d").contains("too large"));
        assert!(e("1h30").contains("lacks a unit"));
    }

    #[test]
    fn duration_display() {
        assert_eq!(format_duration(Duration::from_secs(5400)), "1h30m");
        assert_eq!(format_duration(Duration::ZERO), "0s");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1s500ms");
        assert_eq!(format_duration(Duration::from_secs(7 * 86400)), "7d");
        assert_eq!(format_duration(Duration::from_nanos(1)), "1ns");
    }

    proptest! {
        #[test]
        fn size_round_trip(n in any::<u64>()) {
            let shown = ByteSize(n).to_string();
            prop_assert_eq!(parse_size(&shown).unwrap(), ByteSize(n));
        }

        #[test]
        fn size_round_trip_units(n in 0u64..1_000_000, unit in 0usize..SIZE_DISPLAY.len()) {
            let v = n * SIZE_DISPLAY[unit].1;
            prop_assert_eq!(parse_size(&ByteSize(v).to_string()).unwrap(), ByteSize(v));
        }

        #[test]
        fn duration_round_trip(n in any::<u64>()) {
            let d = Duration::from_nanos(n);
            prop_assert_eq!(parse_duration(&format_duration(d)).unwrap(), d);
        }

        #[test]
        fn duration_round_trip_seconds(s in 0u64..10_000_000) {
            let d = Duration::from_secs(s);
            let shown = format_duration(d);
            prop_assert!(!shown.contains("ms"));
            prop_assert_eq!(parse_duration(&shown).unwrap(), d);
        }

        #[test]
        fn parsers_never_panic(s in "\\PC{0,12}") {
            let _ = parse_size(&s);
            let _ = parse_duration(&s);
        }
    }
}
