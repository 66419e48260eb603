//! Value cells: typed by a declared [`DataType`], or inferred the way IoTDB's CSV import infers
//! them (`true`/`false` → boolean, integers → integer, numbers → floating point, anything else
//! → text).

use crate::model::{DataType, FieldValue, RejectReason};

/// A cell for messages: quoted, lossy UTF-8, at most 64 characters.
pub(crate) fn show(cell: &[u8]) -> String {
    let s = String::from_utf8_lossy(cell);
    if s.chars().count() > 64 {
        let cut: String = s.chars().take(64).collect();
        format!("{cut:?}…")
    } else {
        format!("{s:?}")
    }
}

/// Trims ASCII spaces and tabs.
#[inline]
pub(crate) fn trim(cell: &[u8]) -> &[u8] {
    let blank = |c: &u8| matches!(c, b' ' | b'\t');
    // Most cells have nothing to trim.
    if !cell.first().is_some_and(blank) && !cell.last().is_some_and(blank) {
        return cell;
    }
    let mut a = 0;
    let mut b = cell.len();
    while a < b && matches!(cell[a], b' ' | b'\t') {
        a += 1;
    }
    while b > a && matches!(cell[b - 1], b' ' | b'\t') {
        b -= 1;
    }
    &cell[a..b]
}

/// An optional sign and 1 to 18 digits (below 10^18, so reading them cannot overflow); `None`
/// for any other cell.
#[inline]
pub(crate) fn short_int(cell: &[u8]) -> Option<i64> {
    let (neg, digits) = match cell.first()? {
        b'-' => (true, &cell[1..]),
        b'+' => (false, &cell[1..]),
        _ => (false, cell),
    };
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    let mut v: i64 = 0;
    for &d in digits {
        let d = d.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + i64::from(d);
    }
    Some(if neg { -v } else { v })
}

/// An integer: optional sign and 1..=19 digits, fitting i64.
#[inline]
pub(crate) fn parse_int(cell: &[u8]) -> Option<i64> {
    if let Some(v) = short_int(cell) {
        return Some(v);
    }
    let (neg, digits) = match cell.first()? {
        b'-' => (true, &cell[1..]),
        b'+' => (false, &cell[1..]),
        _ => (false, cell),
    };
    if digits.len() != 19 {
        return None;
    }
    let mut v: i64 = 0;
    for &d in digits {
        let d = d.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?;
        v = if neg {
            v.checked_sub(i64::from(d))?
        } else {
            v.checked_add(i64::from(d))?
        };
    }
    Some(v)
}

/// A number as Java's `Double.parseDouble` would read it (decimal forms plus `NaN`, `Infinity`),
/// without its hexadecimal and `d`/`f` suffix forms.
#[inline]
pub(crate) fn parse_float(cell: &[u8]) -> Option<f64> {
    if let Some(f) = fast_float(cell) {
        return Some(f);
    }
    let s = std::str::from_utf8(cell).ok()?;
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    if body
        .bytes()
        .any(|b| b.is_ascii_alphabetic() && b != b'e' && b != b'E')
    {
        return match s {
            "NaN" => Some(f64::NAN),
            "Infinity" | "+Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            _ => None,
        };
    }
    s.parse::<f64>().ok()
}

/// Clinger's fast path for plain decimals (`[+-]digits[.digits]`): with at most 15 digits the
/// digits form an integer `m` below 2^53 and there are at most 15 decimals `k`, so
/// `m / 10^k` of two exact doubles is the correctly rounded result. Anything else returns
/// `None` (the caller falls back to the full parser).
#[inline]
fn fast_float(cell: &[u8]) -> Option<f64> {
    let (neg, body) = match cell.first()? {
        b'-' => (true, &cell[1..]),
        b'+' => (false, &cell[1..]),
        _ => (false, cell),
    };
    // 15 digits and a point at most (so `m` cannot overflow while it is read).
    if body.len() > 16 {
        return None;
    }
    // One pass: digits into `m`, the position of a single point.
    let mut m: u64 = 0;
    let mut point = None;
    for (i, &c) in body.iter().enumerate() {
        let d = c.wrapping_sub(b'0');
        if d <= 9 {
            m = m * 10 + u64::from(d);
        } else if c == b'.' && point.is_none() {
            point = Some(i);
        } else {
            return None;
        }
    }
    let (digits, k) = match point {
        Some(p) => (body.len() - 1, body.len() - 1 - p),
        None => (body.len(), 0),
    };
    if digits == 0 || digits > 15 {
        return None;
    }
    let v = crate::decimal::exact(m, k)?;
    Some(if neg { -v } else { v })
}

#[inline]
fn parse_bool(cell: &[u8]) -> Option<bool> {
    if cell.eq_ignore_ascii_case(b"true") {
        Some(true)
    } else if cell.eq_ignore_ascii_case(b"false") {
        Some(false)
    } else {
        None
    }
}

fn text(raw: &[u8]) -> Result<FieldValue, (RejectReason, String)> {
    match std::str::from_utf8(raw) {
        Ok(s) => Ok(FieldValue::Text(s.to_owned())),
        Err(e) => Err((
            RejectReason::Parse,
            format!(
                "{} is not valid UTF-8 (byte {})",
                show(raw),
                e.valid_up_to()
            ),
        )),
    }
}

/// Parses a value cell. `trimmed` is the cell without surrounding blanks (non-empty), `raw` the
/// cell as written (text values keep it verbatim).
#[inline]
pub(crate) fn parse_value(
    trimmed: &[u8],
    raw: &[u8],
    hint: Option<DataType>,
) -> Result<FieldValue, (RejectReason, String)> {
    let mismatch = |ty: &str| {
        (
            RejectReason::TypeMismatch,
            format!("{} is not {ty}", show(trimmed)),
        )
    };
    // Declared types are those of format 000002 (`declared_type`); a v4-only type would be
    // read as the type that stores it.
    match hint.map(DataType::storage_type) {
        None => {
            if let Some(i) = parse_int(trimmed) {
                return Ok(FieldValue::Int(i));
            }
            if let Some(b) = parse_bool(trimmed) {
                return Ok(FieldValue::Bool(b));
            }
            if let Some(f) = parse_float(trimmed) {
                return Ok(FieldValue::Float(f));
            }
            text(raw)
        }
        Some(DataType::BOOLEAN) => parse_bool(trimmed)
            .map(FieldValue::Bool)
            .ok_or_else(|| mismatch("a BOOLEAN (true or false)")),
        Some(DataType::INT32) => parse_int(trimmed)
            .filter(|i| i32::try_from(*i).is_ok())
            .map(FieldValue::Int)
            .ok_or_else(|| mismatch("an INT32")),
        Some(DataType::INT64) => parse_int(trimmed)
            .map(FieldValue::Int)
            .ok_or_else(|| mismatch("an INT64")),
        Some(DataType::FLOAT | DataType::DOUBLE) => parse_float(trimmed)
            .map(FieldValue::Float)
            .ok_or_else(|| mismatch("a number")),
        Some(_) => text(raw),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn infer(s: &str) -> FieldValue {
        parse_value(trim(s.as_bytes()), s.as_bytes(), None).unwrap()
    }

    #[test]
    fn inference_like_iotdb() {
        assert_eq!(infer("42"), FieldValue::Int(42));
        assert_eq!(infer("-9223372036854775808"), FieldValue::Int(i64::MIN));
        assert_eq!(
            infer("9223372036854775808"),
            FieldValue::Float(9.223372036854776e18)
        );
        assert_eq!(infer("TRUE"), FieldValue::Bool(true));
        assert_eq!(infer("false"), FieldValue::Bool(false));
        assert_eq!(infer("1.5"), FieldValue::Float(1.5));
        assert_eq!(infer("-2e3"), FieldValue::Float(-2000.0));
        assert_eq!(infer(" 7 "), FieldValue::Int(7));
        assert_eq!(infer("Infinity"), FieldValue::Float(f64::INFINITY));
        assert!(matches!(infer("NaN"), FieldValue::Float(f) if f.is_nan()));
        assert_eq!(infer("inf"), FieldValue::Text("inf".into()));
        assert_eq!(infer("nan"), FieldValue::Text("nan".into()));
        assert_eq!(
            infer(" hello, world "),
            FieldValue::Text(" hello, world ".into())
        );
        assert_eq!(infer("0x10"), FieldValue::Text("0x10".into()));
        assert!(parse_value(b"\xff", b"\xff", None).is_err());
    }

    #[test]
    fn declared_types() {
        let v = |s: &str, t| parse_value(s.as_bytes(), s.as_bytes(), Some(t));
        assert_eq!(v("12", DataType::TEXT), Ok(FieldValue::Text("12".into())));
        assert_eq!(v("12", DataType::DOUBLE), Ok(FieldValue::Float(12.0)));
        assert_eq!(v("12", DataType::INT32), Ok(FieldValue::Int(12)));
        assert_eq!(v("true", DataType::BOOLEAN), Ok(FieldValue::Bool(true)));
        assert_eq!(
            v("2147483648", DataType::INT64),
            Ok(FieldValue::Int(2_147_483_648))
        );
        for (s, t) in [
            ("2147483648", DataType::INT32),
            ("1.5", DataType::INT64),
            ("yes", DataType::BOOLEAN),
            ("abc", DataType::FLOAT),
        ] {
            assert_eq!(
                v(s, t).unwrap_err().0,
                RejectReason::TypeMismatch,
                "{s} {t}"
            );
        }
    }

    /// The fast path agrees bit for bit with the standard library's correctly rounded parser
    /// on every plain decimal it takes, and leaves the rest to it.
    #[test]
    fn fast_floats_equal_the_standard_parser() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut taken = 0;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let n = 1 + (x % 18) as usize;
            let mut s = String::new();
            match (x >> 8) % 4 {
                0 => s.push('-'),
                1 => s.push('+'),
                _ => {}
            }
            let mut y = x >> 16;
            for _ in 0..n {
                s.push(char::from(b'0' + (y % 10) as u8));
                y /= 10;
                if y == 0 {
                    y = x.rotate_left(29);
                }
            }
            if !(x >> 12).is_multiple_of(8) {
                let at = s.len() - (x >> 20) as usize % (n + 1);
                s.insert(at, '.');
            }
            let got = fast_float(s.as_bytes());
            let digits = s.bytes().filter(u8::is_ascii_digit).count();
            if digits <= 15 {
                taken += 1;
                let want: f64 = s.parse().unwrap();
                assert_eq!(got.map(f64::to_bits), Some(want.to_bits()), "{s}");
            } else {
                assert_eq!(got, None, "{s}");
            }
            assert_eq!(
                parse_float(s.as_bytes()).map(f64::to_bits),
                s.parse::<f64>().ok().map(f64::to_bits),
                "{s}"
            );
        }
        assert!(taken > 100_000, "{taken}");
        for s in ["", "-", "+", ".", "-.", "1.2.3", "1e5", "12a", "1 2", "..5"] {
            assert_eq!(fast_float(s.as_bytes()), None, "{s:?}");
        }
        assert_eq!(fast_float(b"5."), Some(5.0));
        assert_eq!(fast_float(b"-.25"), Some(-0.25));
        assert_eq!(fast_float(b"99999.75"), Some(99_999.75));
    }

    #[test]
    fn shown_cells_are_cut_at_64_characters() {
        let a64 = "a".repeat(64);
        assert_eq!(show(a64.as_bytes()), format!("\"{a64}\""));
        assert_eq!(show(format!("{a64}b").as_bytes()), format!("\"{a64}\"…"));
        // Characters, not bytes: 64 two-byte characters are shown whole.
        let e64 = "é".repeat(64);
        assert_eq!(show(e64.as_bytes()), format!("\"{e64}\""));
        assert_eq!(show(b"a\xffb"), "\"a\u{fffd}b\"");
    }

    #[test]
    fn trims_spaces_and_tabs_only() {
        assert_eq!(trim(b""), b"");
        assert_eq!(trim(b" \t \t"), b"");
        assert_eq!(trim(b"\t x y \t"), b"x y");
        assert_eq!(trim(b"x "), b"x");
        assert_eq!(trim(b" x"), b"x");
        assert_eq!(trim(b"\rx\n"), b"\rx\n");
    }

    #[test]
    fn integers_and_numbers_by_hand() {
        for (s, want) in [
            ("+5", Some(5)),
            ("-0", Some(0)),
            ("0009", Some(9)),
            ("1234567890123456789", Some(1_234_567_890_123_456_789)),
            ("9223372036854775807", Some(i64::MAX)),
            ("-9223372036854775808", Some(i64::MIN)),
            ("999999999999999999", Some(999_999_999_999_999_999)),
            ("-999999999999999999", Some(-999_999_999_999_999_999)),
            ("9223372036854775808", None),
            ("12a4", None),
            ("00000000000000000001", None),
            ("-9223372036854775809", None),
            ("+", None),
            ("-", None),
            ("", None),
            ("1a", None),
            ("1/", None),
            ("1:", None),
            ("+-1", None),
        ] {
            assert_eq!(parse_int(s.as_bytes()), want, "{s:?}");
        }
        for (s, want) in [
            ("1e5", FieldValue::Float(100_000.0)),
            ("1E5", FieldValue::Float(100_000.0)),
            ("+1.25", FieldValue::Float(1.25)),
            ("-0.5", FieldValue::Float(-0.5)),
            ("5.", FieldValue::Float(5.0)),
            (".5", FieldValue::Float(0.5)),
            ("0.000001", FieldValue::Float(1e-6)),
            ("123456789012.345", FieldValue::Float(123_456_789_012.345)),
            // 21 digits: past the fast path's 15 and past u64.
            (
                "123456789012345678901",
                FieldValue::Float(123_456_789_012_345_678_901.0),
            ),
            ("+Infinity", FieldValue::Float(f64::INFINITY)),
            ("-Infinity", FieldValue::Float(f64::NEG_INFINITY)),
            ("-.5", FieldValue::Float(-0.5)),
            // 16 digits: past the fast path.
            (
                "1234567890.123456",
                FieldValue::Float(1_234_567_890.123_456),
            ),
            ("1.2.3", FieldValue::Text("1.2.3".into())),
            ("1..5", FieldValue::Text("1..5".into())),
            ("+.", FieldValue::Text("+.".into())),
            (".", FieldValue::Text(".".into())),
            ("-", FieldValue::Text("-".into())),
            ("1e", FieldValue::Text("1e".into())),
            ("1x5", FieldValue::Text("1x5".into())),
            ("-NaN", FieldValue::Text("-NaN".into())),
            ("Infinityy", FieldValue::Text("Infinityy".into())),
        ] {
            assert_eq!(infer(s), want, "{s:?}");
        }
        assert!(matches!(infer("-NaN"), FieldValue::Text(_)));
        let e = parse_value(b"a\xff", b"a\xff", None).unwrap_err();
        assert_eq!(e.0, RejectReason::Parse);
        assert!(e.1.contains("not valid UTF-8 (byte 1)"), "{}", e.1);
        let v = |s: &str, t| parse_value(s.as_bytes(), s.as_bytes(), Some(t));
        assert_eq!(
            v("-2147483648", DataType::INT32),
            Ok(FieldValue::Int(-2_147_483_648))
        );
        assert!(v("-2147483649", DataType::INT32).is_err());
        assert_eq!(v("False", DataType::BOOLEAN), Ok(FieldValue::Bool(false)));
        assert_eq!(v("7", DataType::FLOAT), Ok(FieldValue::Float(7.0)));
        assert!(v("1", DataType::BOOLEAN).is_err());
        assert_eq!(
            v("x", DataType::INT64).unwrap_err().1,
            "\"x\" is not an INT64"
        );
        assert_eq!(
            parse_value(b"7", b" 7 ", Some(DataType::TEXT)),
            Ok(FieldValue::Text(" 7 ".into()))
        );
    }

    proptest::proptest! {
        #[test]
        fn ints_round_trip(i in proptest::prelude::any::<i64>()) {
            proptest::prop_assert_eq!(parse_int(i.to_string().as_bytes()), Some(i));
        }

        #[test]
        fn floats_round_trip(f in proptest::prelude::any::<f64>()) {
            let s = format!("{f:?}");
            let back = parse_float(s.as_bytes());
            if f.is_nan() {
                proptest::prop_assert!(back.is_none() || back.is_some_and(f64::is_nan));
            } else if f.is_finite() {
                proptest::prop_assert_eq!(back, Some(f));
            }
        }

        #[test]
        fn fast_path_agrees_with_std(m in 0u64..10_000_000_000_000_000, k in 0usize..20, neg in proptest::prelude::any::<bool>()) {
            let digits = m.to_string();
            let s = if k == 0 || k >= digits.len() {
                format!("{}{digits}", if neg { "-" } else { "" })
            } else {
                let (a, b) = digits.split_at(digits.len() - k);
                format!("{}{a}.{b}", if neg { "-" } else { "" })
            };
            let want: f64 = s.parse().unwrap();
            proptest::prop_assert_eq!(parse_float(s.as_bytes()), Some(want), "{}", s);
            if let Some(f) = fast_float(s.as_bytes()) {
                proptest::prop_assert_eq!(f.to_bits(), want.to_bits(), "{}", s);
            }
        }

        #[test]
        fn never_panics(s in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..30)) {
            for h in [None, Some(DataType::INT32), Some(DataType::DOUBLE), Some(DataType::TEXT)] {
                let _ = parse_value(trim(&s), &s, h);
            }
        }
    }
}
