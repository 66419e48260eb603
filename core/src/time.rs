//! Units of timestamps.

use std::time::Duration;

/// Unit of timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimePrecision {
    /// Seconds.
    S,
    /// Milliseconds.
    Ms,
    /// Microseconds.
    Us,
    /// Nanoseconds.
    Ns,
}

impl TimePrecision {
    /// The configuration name: `"s"`, `"ms"`, `"us"`, `"ns"`.
    pub fn as_str(self) -> &'static str {
        match self {
            TimePrecision::S => "s",
            TimePrecision::Ms => "ms",
            TimePrecision::Us => "us",
            TimePrecision::Ns => "ns",
        }
    }

    /// Nanoseconds in one unit.
    pub fn nanos_per_unit(self) -> u64 {
        match self {
            TimePrecision::S => 1_000_000_000,
            TimePrecision::Ms => 1_000_000,
            TimePrecision::Us => 1_000,
            TimePrecision::Ns => 1,
        }
    }

    /// Parses `"s"`, `"ms"`, `"us"`, `"ns"`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "s" => Some(TimePrecision::S),
            "ms" => Some(TimePrecision::Ms),
            "us" => Some(TimePrecision::Us),
            "ns" => Some(TimePrecision::Ns),
            _ => None,
        }
    }

    /// A duration in this unit, if it is a whole number of units.
    pub fn units_of(self, d: Duration) -> Option<i64> {
        let n = d.as_nanos();
        let u = u128::from(self.nanos_per_unit());
        if n.is_multiple_of(u) {
            i64::try_from(n / u).ok()
        } else {
            None
        }
    }
}
