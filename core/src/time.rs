//! The one unit of timestamps: stored precision, payload precisions, configuration values.

use std::fmt;
use std::time::Duration;

/// Unit of a timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeUnit {
    /// Seconds.
    Seconds,
    /// Milliseconds (IoTDB's default precision).
    Millis,
    /// Microseconds.
    Micros,
    /// Nanoseconds.
    Nanos,
}

impl TimeUnit {
    /// Converts `t` from `self` to `target`; `None` when the result overflows i64.
    /// Conversions to a coarser unit truncate toward negative infinity.
    pub fn convert(self, t: i64, target: TimeUnit) -> Option<i64> {
        let (from, to) = (self.nanos_per_unit(), target.nanos_per_unit());
        if from >= to {
            t.checked_mul(from / to)
        } else {
            Some(t.div_euclid(to / from))
        }
    }

    /// Nanoseconds in one unit.
    pub fn nanos_per_unit(self) -> i64 {
        match self {
            TimeUnit::Seconds => 1_000_000_000,
            TimeUnit::Millis => 1_000_000,
            TimeUnit::Micros => 1_000,
            TimeUnit::Nanos => 1,
        }
    }

    /// A duration in this unit, if it is a whole number of units.
    pub fn units_of(self, d: Duration) -> Option<i64> {
        let n = d.as_nanos();
        let u = self.nanos_per_unit() as u128;
        if n.is_multiple_of(u) {
            i64::try_from(n / u).ok()
        } else {
            None
        }
    }

    /// The configuration's name: `"s"`, `"ms"`, `"us"`, `"ns"` (as [`TimeUnit::name`]).
    pub fn as_str(self) -> &'static str {
        self.name()
    }

    /// Short name: `s`, `ms`, `us`, `ns`.
    pub const fn name(self) -> &'static str {
        match self {
            TimeUnit::Seconds => "s",
            TimeUnit::Millis => "ms",
            TimeUnit::Micros => "us",
            TimeUnit::Nanos => "ns",
        }
    }

    /// Parses `s`, `ms`, `us`, `ns` (also InfluxDB's `u`, `n`).
    pub fn parse(s: &str) -> Option<TimeUnit> {
        Some(match s {
            "s" => TimeUnit::Seconds,
            "ms" => TimeUnit::Millis,
            "us" | "u" | "µs" => TimeUnit::Micros,
            "ns" | "n" => TimeUnit::Nanos,
            _ => return None,
        })
    }
}

impl fmt::Display for TimeUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
