//! Timestamp cells: epoch numbers, RFC 3339, ISO 8601 without offset and strftime patterns,
//! with an IANA time zone for local times and a DST-ambiguity rule, converted to the
//! pipeline's precision without overflow.

use chrono::format::{Item, Parsed, StrftimeItems};
use chrono::{DateTime, LocalResult, NaiveDate, NaiveDateTime, TimeZone};
use chrono_tz::Tz;

use super::options::{AmbiguousTime, TimeFormat};
use super::value::{short_int, show};
use crate::error::Error;
use crate::model::TimeUnit;

#[derive(Debug, Clone)]
enum Kind {
    Auto,
    Epoch(TimeUnit),
    Rfc3339,
    Strftime {
        pattern: String,
        items: Vec<Item<'static>>,
    },
}

#[derive(Debug, Clone, Copy)]
enum Zone {
    Utc,
    Tz(Tz),
}

/// A compiled timestamp format.
#[derive(Debug, Clone)]
pub struct TimeParser {
    kind: Kind,
    zone: Zone,
    zone_name: String,
    ambiguous: AmbiguousTime,
    precision: TimeUnit,
}

impl TimeParser {
    /// Compiles a format; errors name the option (`time_pattern`, `timezone`).
    pub fn new(
        format: &TimeFormat,
        timezone: &str,
        ambiguous: AmbiguousTime,
        precision: TimeUnit,
    ) -> Result<TimeParser, Error> {
        let kind = match format {
            TimeFormat::Auto => Kind::Auto,
            TimeFormat::EpochS => Kind::Epoch(TimeUnit::Seconds),
            TimeFormat::EpochMs => Kind::Epoch(TimeUnit::Millis),
            TimeFormat::EpochUs => Kind::Epoch(TimeUnit::Micros),
            TimeFormat::EpochNs => Kind::Epoch(TimeUnit::Nanos),
            TimeFormat::Rfc3339 => Kind::Rfc3339,
            TimeFormat::Strftime(p) => {
                let items =
                    StrftimeItems::new(p)
                        .parse_to_owned()
                        .map_err(|e| Error::CsvOption {
                            key: "time_pattern",
                            message: format!("{p:?}: {e}"),
                        })?;
                if items.is_empty() {
                    return Err(Error::CsvOption {
                        key: "time_pattern",
                        message: "empty pattern".into(),
                    });
                }
                Kind::Strftime {
                    pattern: p.clone(),
                    items,
                }
            }
        };
        let zone = if timezone.eq_ignore_ascii_case("UTC") {
            Zone::Utc
        } else {
            Zone::Tz(timezone.parse::<Tz>().map_err(|_| Error::CsvOption {
                key: "timezone",
                message: format!(
                    "{timezone:?} is not an IANA time-zone name such as \"Europe/Berlin\""
                ),
            })?)
        };
        Ok(TimeParser {
            kind,
            zone,
            zone_name: timezone.to_owned(),
            ambiguous,
            precision,
        })
    }

    /// Parses a (trimmed, non-empty) time cell into the precision. The error says what was
    /// expected.
    pub fn parse(&self, cell: &[u8]) -> Result<i64, String> {
        match &self.kind {
            Kind::Epoch(unit) => parse_epoch(cell, *unit, self.precision),
            Kind::Auto => {
                if let Some(t) = short_epoch(cell, TimeUnit::Millis, self.precision) {
                    return t;
                }
                if is_integer(cell) {
                    return parse_epoch(cell, TimeUnit::Millis, self.precision);
                }
                let s = as_str(cell)?;
                if let Ok(dt) = DateTime::parse_from_rfc3339(s) {
                    return self.instant(dt.timestamp(), dt.timestamp_subsec_nanos(), s);
                }
                const NAIVE: [&str; 2] = ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"];
                for p in NAIVE {
                    if let Ok(n) = NaiveDateTime::parse_from_str(s, p) {
                        return self.local(n, s);
                    }
                }
                if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
                    if let Some(n) = d.and_hms_opt(0, 0, 0) {
                        return self.local(n, s);
                    }
                }
                Err(format!(
                    "{} is not an epoch time in milliseconds, an RFC 3339 time or an ISO 8601 date-time",
                    show(cell)
                ))
            }
            Kind::Rfc3339 => {
                let s = as_str(cell)?;
                let dt = DateTime::parse_from_rfc3339(s)
                    .map_err(|e| format!("{} is not an RFC 3339 time ({e})", show(cell)))?;
                self.instant(dt.timestamp(), dt.timestamp_subsec_nanos(), s)
            }
            Kind::Strftime { pattern, items } => {
                let s = as_str(cell)?;
                let mut parsed = Parsed::new();
                chrono::format::parse(&mut parsed, s, items.iter()).map_err(|e| {
                    format!(
                        "{} does not match the pattern {pattern:?} ({e})",
                        show(cell)
                    )
                })?;
                if parsed.offset().is_some() {
                    let dt = parsed.to_datetime().map_err(|e| {
                        format!(
                            "{} does not match the pattern {pattern:?} ({e})",
                            show(cell)
                        )
                    })?;
                    return self.instant(dt.timestamp(), dt.timestamp_subsec_nanos(), s);
                }
                if parsed.timestamp().is_some() {
                    let n = parsed.to_naive_datetime_with_offset(0).map_err(|e| {
                        format!(
                            "{} does not match the pattern {pattern:?} ({e})",
                            show(cell)
                        )
                    })?;
                    let u = n.and_utc();
                    return self.instant(u.timestamp(), u.timestamp_subsec_nanos(), s);
                }
                let naive = match parsed.to_naive_datetime_with_offset(0) {
                    Ok(n) => n,
                    Err(e) => match parsed.to_naive_date() {
                        // A pattern with a date only: midnight.
                        Ok(d) if parsed.hour_div_12().is_none() => {
                            d.and_hms_opt(0, 0, 0).ok_or_else(|| format!("{e}"))?
                        }
                        _ => {
                            return Err(format!(
                                "{} does not match the pattern {pattern:?} ({e})",
                                show(cell)
                            ))
                        }
                    },
                };
                self.local(naive, s)
            }
        }
    }

    fn local(&self, naive: NaiveDateTime, s: &str) -> Result<i64, String> {
        let tz = match self.zone {
            Zone::Utc => {
                let u = naive.and_utc();
                return self.instant(u.timestamp(), u.timestamp_subsec_nanos(), s);
            }
            Zone::Tz(tz) => tz,
        };
        let dt = match tz.from_local_datetime(&naive) {
            LocalResult::Single(dt) => dt,
            LocalResult::Ambiguous(earliest, latest) => match self.ambiguous {
                AmbiguousTime::Earliest => earliest,
                AmbiguousTime::Latest => latest,
                AmbiguousTime::Reject => {
                    return Err(format!(
                        "{s:?} is ambiguous in {} (it occurs twice when DST ends) and ambiguous_time = \"reject\"",
                        self.zone_name
                    ))
                }
            },
            LocalResult::None => {
                return Err(format!(
                    "{s:?} does not exist in {} (skipped when DST starts)",
                    self.zone_name
                ))
            }
        };
        self.instant(dt.timestamp(), dt.timestamp_subsec_nanos(), s)
    }

    fn instant(&self, secs: i64, nanos: u32, s: &str) -> Result<i64, String> {
        instant_to(secs, nanos, self.precision).ok_or_else(|| {
            format!(
                "{s:?} is out of range for {} timestamps",
                self.precision.name()
            )
        })
    }
}

/// `secs` + `nanos` since the epoch in `unit` (floor), `None` on overflow.
pub(crate) fn instant_to(secs: i64, nanos: u32, unit: TimeUnit) -> Option<i64> {
    let per_unit = unit.nanos_per_unit();
    let per_sec = 1_000_000_000 / per_unit;
    secs.checked_mul(per_sec)?
        .checked_add(i64::from(nanos) / per_unit)
}

fn as_str(cell: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(cell).map_err(|_| format!("{} is not valid UTF-8", show(cell)))
}

fn is_integer(cell: &[u8]) -> bool {
    let digits = match cell.first() {
        Some(b'-' | b'+') => &cell[1..],
        _ => cell,
    };
    !digits.is_empty() && digits.iter().all(u8::is_ascii_digit)
}

fn overflows(cell: &[u8], target: TimeUnit) -> String {
    format!("{} overflows {} timestamps", show(cell), target.name())
}

/// [`parse_epoch`]'s fast path: `Some` for a [`short_int`] cell, `None` for any other.
#[inline]
fn short_epoch(cell: &[u8], unit: TimeUnit, target: TimeUnit) -> Option<Result<i64, String>> {
    let v = short_int(cell)?;
    Some(
        unit.convert(v, target)
            .ok_or_else(|| overflows(cell, target)),
    )
}

/// An epoch number in `unit` (optional sign, digits, optional `.fraction`) in `target`,
/// exactly (integer arithmetic; fractions below a nanosecond are dropped, the result is
/// floored to the target unit).
pub(crate) fn parse_epoch(cell: &[u8], unit: TimeUnit, target: TimeUnit) -> Result<i64, String> {
    let bad = || {
        format!(
            "{} is not an epoch time in {}",
            show(cell),
            unit_words(unit)
        )
    };
    let (neg, body) = match cell.first() {
        Some(b'-') => (true, &cell[1..]),
        Some(b'+') => (false, &cell[1..]),
        _ => (false, cell),
    };
    let overflow = || overflows(cell, target);
    if let Some(t) = short_epoch(cell, unit, target) {
        return t;
    }
    let (int, frac) = match memchr::memchr(b'.', body) {
        Some(i) => (&body[..i], &body[i + 1..]),
        None => (body, &body[..0]),
    };
    if (int.is_empty() && frac.is_empty())
        || !int.iter().all(u8::is_ascii_digit)
        || !frac.iter().all(u8::is_ascii_digit)
        || (int.is_empty() && memchr::memchr(b'.', body).is_none())
    {
        return Err(bad());
    }
    // General path in i128 nanoseconds.
    let int = trim_leading_zeros(int);
    // 29 digits are at least 10^28 units, at least 10^28 ns = 10^19 s: past i64 in every unit.
    // Up to 28 digits, `whole * per_unit` stays below 10^37 and fits i128.
    if int.len() > 28 {
        return Err(overflow());
    }
    let mut whole: i128 = 0;
    for &d in int {
        whole = whole * 10 + i128::from(d - b'0');
    }
    let per_unit = i128::from(unit.nanos_per_unit());
    let mut ns = whole * per_unit;
    // Fraction of one `unit`, in nanoseconds.
    let mut scale = per_unit;
    for &d in frac {
        if scale == 1 {
            break;
        }
        scale /= 10;
        ns += i128::from(d - b'0') * scale;
    }
    if neg {
        ns = -ns;
    }
    let t = ns.div_euclid(i128::from(target.nanos_per_unit()));
    i64::try_from(t).map_err(|_| overflow())
}

fn trim_leading_zeros(d: &[u8]) -> &[u8] {
    let n = d.iter().take_while(|&&c| c == b'0').count();
    &d[n..]
}

fn unit_words(unit: TimeUnit) -> &'static str {
    match unit {
        TimeUnit::Seconds => "seconds",
        TimeUnit::Millis => "milliseconds",
        TimeUnit::Micros => "microseconds",
        TimeUnit::Nanos => "nanoseconds",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(format: TimeFormat, tz: &str, amb: AmbiguousTime, prec: TimeUnit) -> TimeParser {
        TimeParser::new(&format, tz, amb, prec).unwrap()
    }

    #[test]
    fn epochs_convert_exactly() {
        let ms = TimeUnit::Millis;
        assert_eq!(
            parse_epoch(b"1700000000", TimeUnit::Seconds, ms),
            Ok(1_700_000_000_000)
        );
        assert_eq!(parse_epoch(b"1.5", TimeUnit::Seconds, ms), Ok(1500));
        assert_eq!(parse_epoch(b"-1.5", TimeUnit::Seconds, ms), Ok(-1500));
        assert_eq!(parse_epoch(b"+12", TimeUnit::Millis, ms), Ok(12));
        assert_eq!(parse_epoch(b"1999999", TimeUnit::Nanos, ms), Ok(1));
        assert_eq!(parse_epoch(b"-1", TimeUnit::Nanos, ms), Ok(-1));
        assert_eq!(
            parse_epoch(b"1234.5678", TimeUnit::Micros, TimeUnit::Nanos),
            Ok(1_234_567)
        );
        assert_eq!(
            parse_epoch(b"0.123456789123", TimeUnit::Seconds, TimeUnit::Nanos),
            Ok(123_456_789)
        );
        assert_eq!(
            parse_epoch(b"9223372036854775807", TimeUnit::Nanos, TimeUnit::Nanos),
            Ok(i64::MAX)
        );
        assert_eq!(
            parse_epoch(b"-9223372036854775808", TimeUnit::Nanos, TimeUnit::Nanos),
            Ok(i64::MIN)
        );
        assert!(
            parse_epoch(b"9223372036854775808", TimeUnit::Nanos, TimeUnit::Nanos)
                .unwrap_err()
                .contains("overflows")
        );
        assert!(
            parse_epoch(b"9223372036854776", TimeUnit::Millis, TimeUnit::Nanos)
                .unwrap_err()
                .contains("overflows")
        );
        assert!(parse_epoch(&[b'9'; 60], TimeUnit::Seconds, ms).is_err());
        // 10^27 ns is 10^18 s; 10^28 ns is 10^19 s, past i64::MAX (about 9.22 * 10^18).
        let e27 = format!("1{}", "0".repeat(27));
        let s = TimeUnit::Seconds;
        assert_eq!(
            parse_epoch(e27.as_bytes(), TimeUnit::Nanos, s),
            Ok(1_000_000_000_000_000_000)
        );
        assert_eq!(
            parse_epoch(format!("-{e27}").as_bytes(), TimeUnit::Nanos, s),
            Ok(-1_000_000_000_000_000_000)
        );
        assert_eq!(
            parse_epoch(format!("000{e27}.5").as_bytes(), TimeUnit::Nanos, s),
            Ok(1_000_000_000_000_000_000)
        );
        assert!(
            parse_epoch(format!("{e27}0").as_bytes(), TimeUnit::Nanos, s)
                .unwrap_err()
                .contains("overflows")
        );
        // Long digit strings are overflows in every unit, never an arithmetic overflow.
        for n in 29..=40 {
            let digits = "9".repeat(n);
            for unit in UNITS {
                for target in UNITS {
                    for cell in [digits.clone(), format!("-{digits}.9")] {
                        assert!(
                            parse_epoch(cell.as_bytes(), unit, target)
                                .unwrap_err()
                                .contains("overflows"),
                            "{cell} {unit:?} -> {target:?}"
                        );
                    }
                }
            }
        }
        for bad in [&b"1e5"[..], b"", b"-", b".", b"1.2.3", b"12a", b" 1"] {
            assert!(parse_epoch(bad, TimeUnit::Seconds, ms).is_err(), "{bad:?}");
        }
        assert_eq!(parse_epoch(b".5", TimeUnit::Seconds, ms), Ok(500));
    }

    #[test]
    fn rfc3339_and_auto() {
        let rfc = p(
            TimeFormat::Rfc3339,
            "UTC",
            AmbiguousTime::Earliest,
            TimeUnit::Millis,
        );
        assert_eq!(rfc.parse(b"1970-01-01T00:00:01.5Z"), Ok(1500));
        assert_eq!(rfc.parse(b"1970-01-01T08:00:00.001+08:00"), Ok(1));
        assert_eq!(rfc.parse(b"1969-12-31T23:59:59.9995Z"), Ok(-1));
        assert!(rfc.parse(b"1970-01-01").is_err());
        let ns = p(
            TimeFormat::Rfc3339,
            "UTC",
            AmbiguousTime::Earliest,
            TimeUnit::Nanos,
        );
        assert_eq!(
            ns.parse(b"2024-01-01T00:00:00.123456789Z"),
            Ok(1_704_067_200_123_456_789)
        );
        assert!(ns
            .parse(b"2263-01-01T00:00:00Z")
            .unwrap_err()
            .contains("out of range"));
        let ms = p(
            TimeFormat::Rfc3339,
            "UTC",
            AmbiguousTime::Earliest,
            TimeUnit::Millis,
        );
        assert_eq!(ms.parse(b"2263-01-01T00:00:00Z"), Ok(9_246_182_400_000));

        let auto = p(
            TimeFormat::Auto,
            "Europe/Berlin",
            AmbiguousTime::Earliest,
            TimeUnit::Millis,
        );
        assert_eq!(auto.parse(b"1500"), Ok(1500));
        assert_eq!(auto.parse(b"1970-01-01T00:00:01Z"), Ok(1000));
        // Naive: Berlin is UTC+1 in January.
        assert_eq!(auto.parse(b"1970-01-01 01:00:00"), Ok(0));
        assert_eq!(auto.parse(b"1970-01-01T01:00:00.250"), Ok(250));
        assert_eq!(auto.parse(b"1970-01-02"), Ok(23 * 3_600_000));
        assert!(auto
            .parse(b"yesterday")
            .unwrap_err()
            .contains("epoch time in milliseconds"));
    }

    #[test]
    fn strftime_zones_and_dst() {
        let fmt = TimeFormat::Strftime("%d.%m.%Y %H:%M:%S".into());
        let berlin = |amb| p(fmt.clone(), "Europe/Berlin", amb, TimeUnit::Seconds);
        // Summer time: UTC+2.
        assert_eq!(
            berlin(AmbiguousTime::Reject).parse(b"01.07.2024 12:00:00"),
            Ok(1_719_828_000)
        );
        // 2024-10-27 02:30 happens twice in Berlin: 00:30 UTC (CEST) and 01:30 UTC (CET).
        let amb = b"27.10.2024 02:30:00";
        assert_eq!(
            berlin(AmbiguousTime::Earliest).parse(amb),
            Ok(1_729_989_000)
        );
        assert_eq!(berlin(AmbiguousTime::Latest).parse(amb), Ok(1_729_992_600));
        assert!(berlin(AmbiguousTime::Reject)
            .parse(amb)
            .unwrap_err()
            .contains("ambiguous"));
        // 2024-03-31 02:30 does not exist in Berlin.
        for a in [
            AmbiguousTime::Earliest,
            AmbiguousTime::Latest,
            AmbiguousTime::Reject,
        ] {
            assert!(berlin(a)
                .parse(b"31.03.2024 02:30:00")
                .unwrap_err()
                .contains("does not exist"));
        }
        assert!(berlin(AmbiguousTime::Earliest)
            .parse(b"2024-03-31 02:30")
            .unwrap_err()
            .contains("does not match"));

        // An offset in the pattern wins over the zone; %s is UTC; a date alone is midnight.
        let off = p(
            TimeFormat::Strftime("%Y-%m-%d %H:%M:%S%.f %z".into()),
            "Europe/Berlin",
            AmbiguousTime::Earliest,
            TimeUnit::Micros,
        );
        assert_eq!(off.parse(b"1970-01-01 00:00:00.000002 +0000"), Ok(2));
        let s = p(
            TimeFormat::Strftime("%s".into()),
            "Asia/Tokyo",
            AmbiguousTime::Reject,
            TimeUnit::Millis,
        );
        assert_eq!(s.parse(b"86400"), Ok(86_400_000));
        let d = p(
            TimeFormat::Strftime("%Y%m%d".into()),
            "Asia/Tokyo",
            AmbiguousTime::Reject,
            TimeUnit::Seconds,
        );
        assert_eq!(d.parse(b"19700102"), Ok(86_400 - 9 * 3600));
    }

    /// The fast path takes exactly an optional sign and 1 to 18 digits (anything else goes to
    /// the general path, which gives the same results, so only this test tells them apart).
    #[test]
    fn short_epochs_are_a_sign_and_up_to_18_digits() {
        let ms = TimeUnit::Millis;
        assert_eq!(short_epoch(b"-15", ms, ms), Some(Ok(-15)));
        assert_eq!(short_epoch(b"+15", ms, ms), Some(Ok(15)));
        assert_eq!(short_epoch(b"99", ms, ms), Some(Ok(99)));
        assert_eq!(short_epoch(b"9", TimeUnit::Seconds, ms), Some(Ok(9000)));
        assert_eq!(
            short_epoch(b"999999999999999999", ms, ms),
            Some(Ok(999_999_999_999_999_999))
        );
        assert_eq!(
            short_epoch(b"9223372036855", ms, TimeUnit::Nanos),
            Some(Err("\"9223372036855\" overflows ns timestamps".to_string()))
        );
        for cell in ["1000000000000000000", "-", "", "1.5", "19:", "+-1"] {
            assert_eq!(short_epoch(cell.as_bytes(), ms, ms), None, "{cell:?}");
        }
    }

    #[test]
    fn signed_epochs_and_messages() {
        let auto = p(
            TimeFormat::Auto,
            "UTC",
            AmbiguousTime::Reject,
            TimeUnit::Millis,
        );
        assert_eq!(auto.parse(b"-1500"), Ok(-1500));
        assert_eq!(auto.parse(b"+1500"), Ok(1500));
        // 18 digits (the short path) and 19 (the general one).
        assert_eq!(
            auto.parse(b"999999999999999999"),
            Ok(999_999_999_999_999_999)
        );
        assert_eq!(
            auto.parse(b"1000000000000000000"),
            Ok(1_000_000_000_000_000_000)
        );
        assert!(auto.parse(b"17000000000x0").is_err());
        assert!(auto.parse(b"-").is_err());
        // Milliseconds into nanoseconds (x 10^6): i64::MAX ns is 9,223,372,036,854.775807 ms.
        let nanos = p(
            TimeFormat::Auto,
            "UTC",
            AmbiguousTime::Reject,
            TimeUnit::Nanos,
        );
        assert_eq!(nanos.parse(b"9223372036854"), Ok(9_223_372_036_854_000_000));
        assert_eq!(
            nanos.parse(b"9223372036855"),
            Err("\"9223372036855\" overflows ns timestamps".to_string())
        );
        assert!(auto.parse(b"\xff").unwrap_err().contains("not valid UTF-8"));
        for (unit, words) in [
            (TimeUnit::Seconds, "seconds"),
            (TimeUnit::Millis, "milliseconds"),
            (TimeUnit::Micros, "microseconds"),
            (TimeUnit::Nanos, "nanoseconds"),
        ] {
            assert_eq!(
                parse_epoch(b"x", unit, TimeUnit::Millis),
                Err(format!("\"x\" is not an epoch time in {words}"))
            );
        }
        // An hour without minutes is not a time; a date alone is midnight.
        let hour = p(
            TimeFormat::Strftime("%Y-%m-%d %H".into()),
            "UTC",
            AmbiguousTime::Reject,
            TimeUnit::Seconds,
        );
        assert!(hour
            .parse(b"1970-01-02 05")
            .unwrap_err()
            .contains("does not match"));
    }

    #[test]
    fn bad_options_are_errors() {
        assert!(matches!(
            TimeParser::new(
                &TimeFormat::Auto,
                "Mars/Olympus",
                AmbiguousTime::Reject,
                TimeUnit::Millis
            ),
            Err(Error::CsvOption {
                key: "timezone",
                ..
            })
        ));
        assert!(matches!(
            TimeParser::new(
                &TimeFormat::Strftime("%Q".into()),
                "UTC",
                AmbiguousTime::Reject,
                TimeUnit::Millis
            ),
            Err(Error::CsvOption {
                key: "time_pattern",
                ..
            })
        ));
    }

    proptest::proptest! {
        #[test]
        fn epoch_never_panics(s in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40)) {
            for unit in [TimeUnit::Seconds, TimeUnit::Millis, TimeUnit::Micros, TimeUnit::Nanos] {
                let _ = parse_epoch(&s, unit, TimeUnit::Nanos);
                let _ = parse_epoch(&s, TimeUnit::Nanos, unit);
            }
        }

        #[test]
        fn epoch_integers_match_exact_arithmetic(v in proptest::prelude::any::<i64>()) {
            let s = v.to_string();
            for unit in UNITS {
                for target in UNITS {
                    let got = parse_epoch(s.as_bytes(), unit, target).ok();
                    proptest::prop_assert_eq!(got, exact(v, unit, target), "{} {:?}->{:?}", v, unit, target);
                }
            }
        }
    }

    const UNITS: [TimeUnit; 4] = [
        TimeUnit::Seconds,
        TimeUnit::Millis,
        TimeUnit::Micros,
        TimeUnit::Nanos,
    ];

    /// Decimal exponent of a unit: 10^-0 s, 10^-3 s, 10^-6 s, 10^-9 s.
    fn exponent(u: TimeUnit) -> u32 {
        match u {
            TimeUnit::Seconds => 0,
            TimeUnit::Millis => 3,
            TimeUnit::Micros => 6,
            TimeUnit::Nanos => 9,
        }
    }

    /// The test's own oracle: `v` units converted in i128, floored (the module documents
    /// flooring to the target unit), `None` outside the i64 range.
    fn exact(v: i64, unit: TimeUnit, target: TimeUnit) -> Option<i64> {
        let (eu, et) = (exponent(unit), exponent(target));
        let r = if et >= eu {
            i128::from(v) * 10i128.pow(et - eu)
        } else {
            i128::from(v).div_euclid(10i128.pow(eu - et))
        };
        i64::try_from(r).ok()
    }

    #[test]
    fn epoch_integers_by_hand() {
        use TimeUnit::*;
        let cases: &[(&str, TimeUnit, TimeUnit, Option<i64>)] = &[
            ("1999", Millis, Seconds, Some(1)),
            ("-1", Millis, Seconds, Some(-1)),
            ("-1000", Millis, Seconds, Some(-1)),
            ("-1001", Millis, Seconds, Some(-2)),
            ("-9223372036854775808", Nanos, Seconds, Some(-9_223_372_037)),
            ("9223372036854775807", Nanos, Seconds, Some(9_223_372_036)),
            (
                "9223372036854775807",
                Nanos,
                Micros,
                Some(9_223_372_036_854_775),
            ),
            (
                "9223372036",
                Seconds,
                Nanos,
                Some(9_223_372_036_000_000_000),
            ),
            ("9223372037", Seconds, Nanos, None),
            (
                "-9223372036",
                Seconds,
                Nanos,
                Some(-9_223_372_036_000_000_000),
            ),
            ("-9223372037", Seconds, Nanos, None),
            (
                "9223372036854775",
                Micros,
                Nanos,
                Some(9_223_372_036_854_775_000),
            ),
            ("9223372036854776", Micros, Nanos, None),
            ("5", Seconds, Millis, Some(5_000)),
            ("5", Micros, Micros, Some(5)),
        ];
        for &(s, unit, target, want) in cases {
            assert_eq!(
                parse_epoch(s.as_bytes(), unit, target).ok(),
                want,
                "{s} {unit:?} -> {target:?}"
            );
            assert_eq!(
                exact(s.parse().unwrap(), unit, target),
                want,
                "oracle: {s} {unit:?} -> {target:?}"
            );
        }
    }
}
