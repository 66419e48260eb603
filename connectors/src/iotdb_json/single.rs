//! A direct reader of the plain single-record form, the form of most MQTT messages:
//! `{"device":"root.sg.d1","timestamp":1,"measurements":["s1","s2"],"values":[1,2.5]}`.
//!
//! It reads the payload in one pass without serde and builds the record straight from the
//! bytes. The names of a measurement list are kept in the [`Names`] cache under the list's raw
//! text: a stream that repeats its list (the usual case) finds them with one comparison. It
//! takes only what it reads exactly as the general parser does and yields no rejection; on
//! anything else (another form or key, `values` before `measurements` or `measurements` after
//! them, an escape in a string, a number it cannot convert exactly, an invalid name, a length
//! mismatch, a bad timestamp, any syntax error) it returns `None` and the general parser reads
//! the payload from the start (and reports what is wrong). A repeated key counts last, as in
//! the general parser.

use std::sync::Arc;

use crate::model::{put_field, Field, FieldValue, Record};
use crate::names::Names;

use super::JsonOptions;

/// The powers of ten up to 10^19, one per count of digits after a point ([`Reader::number`]
/// reads at most 19).
const TEN: [u64; 20] = {
    let mut t = [1u64; 20];
    let mut k = 1;
    while k < 20 {
        t[k] = t[k - 1] * 10;
        k += 1;
    }
    t
};

/// Reads `input` (without its byte-order mark) if it is a plain single record that parses
/// without rejection, appending its record to `records` (none when every value is `null`).
/// `None`: nothing was appended, the general parser must read it.
pub(super) fn parse_into(
    input: &[u8],
    opts: &JsonOptions,
    names: &mut Names,
    records: &mut Vec<Record>,
) -> Option<()> {
    let mut r = Reader { s: input, i: 0 };
    r.ws();
    r.eat(b'{')?;
    let mut device: Option<&[u8]> = None;
    let mut time: Option<i64> = None;
    // The raw text between `measurements`' brackets, and whether it is the list `names` kept.
    let mut measurements: Option<(&[u8], bool)> = None;
    let mut fields: Option<Vec<Field>> = None;
    r.ws();
    if r.peek()? != b'}' {
        loop {
            r.ws();
            let key = r.string()?;
            r.ws();
            r.eat(b':')?;
            r.ws();
            // A repeated key: the last one counts, as in the general parser (a list of
            // measurements after the values is left to it).
            match key {
                b"device" => device = Some(r.string()?),
                b"timestamp" => match r.number()? {
                    FieldValue::Int(t) => time = Some(t),
                    _ => return None,
                },
                b"measurements" if fields.is_none() => {
                    r.eat(b'[')?;
                    let at = r.i;
                    // The list kept last, if the text goes on with it: one comparison.
                    let after = input[at..]
                        .strip_prefix(names.list_text())
                        .and_then(|rest| rest.strip_prefix(b"]"));
                    let kept = match after {
                        Some(after) => {
                            r.i = input.len() - after.len();
                            true
                        }
                        None => {
                            r.skip_strings()?;
                            false
                        }
                    };
                    measurements = Some((&input[at..r.i - 1], kept));
                }
                b"values" => {
                    // The kept list's names, found by the comparison above; another list is
                    // read and kept instead.
                    fields = Some(match measurements? {
                        (_, true) => r.values(names.list_names())?,
                        (list, false) => {
                            let read = read_names(list, names)?;
                            let fields = r.values(&read)?;
                            names.keep_list(list, read);
                            fields
                        }
                    });
                }
                _ => return None,
            }
            r.ws();
            match r.next()? {
                b',' => {}
                b'}' => break,
                _ => return None,
            }
        }
    }
    r.ws();
    if r.i != input.len() {
        return None;
    }
    let (device, time, fields) = (device?, time?, fields?);
    let time = opts.input_unit.convert(time, opts.stored_unit)?;
    let device = names.device_bytes(device)?;
    if !fields.is_empty() {
        records.push(Record {
            device,
            time,
            fields,
        });
    }
    Some(())
}

/// The measurements of the list whose text between the brackets is `list` (already checked
/// to be strings without escapes), if every one is a valid name.
fn read_names(list: &[u8], names: &mut Names) -> Option<Vec<Arc<str>>> {
    let mut r = Reader { s: list, i: 0 };
    let mut read = Vec::new();
    r.ws();
    while r.i < list.len() {
        let name = std::str::from_utf8(r.string()?).ok()?;
        read.push(names.measurement_at(read.len(), name).ok()?);
        r.ws();
        if r.i < list.len() {
            r.eat(b',')?;
            r.ws();
        }
    }
    Some(read)
}

/// Whether `b` is JSON whitespace.
#[inline(always)]
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// The end of the run of digits `[0-9]*` of `s` starting at `i`, and their value continuing
/// `n` (wrapped past 19 digits in all, which the callers refuse or read again).
#[inline(always)]
fn digit_run(s: &[u8], mut i: usize, mut n: u64) -> (usize, u64) {
    while let Some(&b) = s.get(i) {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        n = n.wrapping_mul(10).wrapping_add(u64::from(d));
        i += 1;
    }
    (i, n)
}

/// The value of the `n` (1 to 8) decimal digits in the low bytes of `d`, one digit value
/// (0 to 9) a byte, the first digit in the lowest byte (the bytes above them are ignored):
/// the digits are moved to the top (zeros before them, the bytes above them shifted out) and
/// combined pairwise, then in fours, then in eights.
#[inline(always)]
fn swar_digits(d: u64, n: usize) -> u64 {
    let x = d << (8 * (8 - n));
    // Each byte: the digit before it × 10 + its own (the odd bytes are the pairs' values).
    let x = x.wrapping_mul(10).wrapping_add(x >> 8);
    // The pairs' values combined in fours and then in eights (below 10^8: no overflow).
    const MASK: u64 = 0x0000_00FF_0000_00FF;
    const MUL1: u64 = 100 + (1_000_000 << 32);
    const MUL2: u64 = 1 + (10_000 << 32);
    ((x & MASK)
        .wrapping_mul(MUL1)
        .wrapping_add(((x >> 16) & MASK).wrapping_mul(MUL2)))
        >> 32
}

/// Per byte of `w`, a bit set in the byte's top nibble or in its bit 4 when it is not an
/// ASCII digit. A byte's flag can be wrong only above a flagged byte (a carry), which the
/// callers never look at: they want the first flagged byte.
#[inline(always)]
fn non_digits(w: u64) -> u64 {
    let t = w ^ 0x3030_3030_3030_3030;
    (t & 0xF0F0_F0F0_F0F0_F0F0) | (t.wrapping_add(0x0606_0606_0606_0606) & 0x1010_1010_1010_1010)
}

/// A mask of the low `n` bytes (at most 7) of a word.
#[inline(always)]
fn low_bytes(n: usize) -> u64 {
    (1u64 << (8 * n)) - 1
}

/// A short number of `s` whose first digit is at `i` (after the `-` when `negative`), read 8
/// bytes at once: an integer part of 1 to 6 digits without leading zero and, after a point,
/// 1 or more digits, ending within the 8 bytes; the value and where it ends. `None`:
/// [`number_at`]'s general reading decides (fewer than 8 bytes left, a longer number, a
/// leading zero, no digits).
#[inline(always)]
fn short_number(s: &[u8], i: usize, negative: bool) -> Option<(FieldValue, usize)> {
    let bytes: [u8; 8] = s.get(i..i + 8)?.try_into().ok()?;
    let w = u64::from_le_bytes(bytes);
    let flags = non_digits(w);
    // Digits of the integer part (8 when the word holds nothing else).
    let p = (flags.trailing_zeros() / 8) as usize;
    let digits = w ^ 0x3030_3030_3030_3030;
    if p == 0 || p > 6 || (p > 1 && digits & 0xFF == 0) {
        return None;
    }
    if bytes[p] != b'.' {
        // `swar_digits` drops the bytes past the `p` digits itself.
        let n = swar_digits(digits, p) as i64;
        if negative && n == 0 {
            return None;
        }
        return Some((FieldValue::Int(if negative { -n } else { n }), i + p));
    }
    // Digits after the point, ended within the word (`after` is 0 when they are not).
    let after = flags >> (8 * (p + 1));
    let q = (after.trailing_zeros() / 8) as usize;
    if after == 0 || q == 0 {
        return None;
    }
    // The digits without the point: those after it moved down one byte next to the integer
    // part's (the bytes past the `p + q` digits are dropped by `swar_digits`). At most 6
    // digits in all: exact as a double, and so is 10^q.
    let int_part = low_bytes(p);
    let m = swar_digits((digits & int_part) | ((digits >> 8) & !int_part), p + q);
    let v = crate::decimal::exact(m, q)?;
    Some((
        FieldValue::Float(if negative { -v } else { v }),
        i + p + 1 + q,
    ))
}

/// The JSON number of `s` at `i` and where it ends: an integer within `i64` as serde_json
/// reads it to an integer (not `-0`, which it reads as a float), or a decimal fraction without
/// exponent whose digits form an integer of at most 2^53 with at most 19 of them after the
/// point: that integer divided by a power of ten, both exact, is the correctly rounded value
/// serde_json (with `float_roundtrip`) reads too. An exponent is left unread (the caller then
/// finds no separator and gives up).
#[inline(always)]
fn number_at(s: &[u8], i: usize) -> Option<(FieldValue, usize)> {
    let negative = *s.get(i)? == b'-';
    let start = i + usize::from(negative);
    match short_number(s, start, negative) {
        Some(read) => Some(read),
        None => number_general(s, start, negative),
    }
}

/// [`number_at`] for any length, from the first digit at `start`.
#[inline(never)]
fn number_general(s: &[u8], start: usize, negative: bool) -> Option<(FieldValue, usize)> {
    // The integer part: `0` or no leading zero, at most 19 digits (no overflow).
    let (end, int) = digit_run(s, start, 0);
    let int_len = end - start;
    if int_len == 0 || int_len > 19 || (int_len > 1 && s[start] == b'0') {
        return None;
    }
    if s.get(end) != Some(&b'.') {
        let n = i64::try_from(int).ok()?;
        if negative && n == 0 {
            return None;
        }
        return Some((FieldValue::Int(if negative { -n } else { n }), end));
    }
    // The digits after the point continue the integer: with at most 19 digits in all, `m` is
    // `int * 10^count + frac` without overflow.
    let (after, m) = digit_run(s, end + 1, int);
    let count = after - end - 1;
    if count == 0 || count > 19 {
        return None;
    }
    let m = if int_len + count <= 19 {
        m
    } else {
        // More digits in all (leading zeros after the point, say): the fraction alone.
        let (_, frac) = digit_run(s, end + 1, 0);
        int.checked_mul(TEN[count])?.checked_add(frac)?
    };
    let v = crate::decimal::exact(m, count)?;
    Some((FieldValue::Float(if negative { -v } else { v }), after))
}

/// A cursor over the payload.
struct Reader<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.i += 1;
        Some(b)
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.next()? == b).then_some(())
    }

    /// Skips JSON whitespace.
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    /// The bytes of a string without escapes or control characters (not yet checked to be
    /// UTF-8).
    fn string(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let rest = &self.s[self.i..];
        let len = rest
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        if rest[len] != b'"' {
            return None;
        }
        self.i += len + 1;
        Some(&rest[..len])
    }

    /// Skips the strings of a list up to and including its `]` (just after its `[`).
    fn skip_strings(&mut self) -> Option<()> {
        self.ws();
        if self.peek()? == b']' {
            self.i += 1;
            return Some(());
        }
        loop {
            self.ws();
            self.string()?;
            self.ws();
            match self.next()? {
                b',' => {}
                b']' => return Some(()),
                _ => return None,
            }
        }
    }

    /// A JSON number ([`number_at`]).
    fn number(&mut self) -> Option<FieldValue> {
        let (value, end) = number_at(self.s, self.i)?;
        self.i = end;
        Some(value)
    }

    /// The value list (just before its `[`), one value per name of `columns`: the fields of
    /// the record, in order, without the `null`s.
    fn values(&mut self, columns: &[Arc<str>]) -> Option<Vec<Field>> {
        self.eat(b'[')?;
        self.ws();
        if self.peek()? == b']' {
            self.i += 1;
            return columns.is_empty().then(Vec::new);
        }
        let last = columns.len().checked_sub(1)?;
        // A recycled vector when there is one (its fields are overwritten in place, see
        // `put_field`); `w` fields of it are this record's.
        let mut fields = crate::model::spare_fields(columns.len());
        let mut w = 0;
        // The cursor in a local while numbers are read (the common case).
        let s = self.s;
        let mut i = self.i;
        // The common shape first, in a loop of its own: short numbers each followed at once by
        // a `,`. The first other value (or separator) and the rest, and always the last value,
        // are read below.
        let mut k = 0;
        for name in &columns[..last] {
            let negative = *s.get(i)? == b'-';
            let Some((value, end)) = short_number(s, i + usize::from(negative), negative) else {
                break;
            };
            if s.get(end) != Some(&b',') {
                break;
            }
            put_field(&mut fields, w, name, value, None);
            w += 1;
            i = end + 1;
            k += 1;
        }
        for (k, name) in columns.iter().enumerate().skip(k) {
            let mut b = *s.get(i)?;
            while is_ws(b) {
                i += 1;
                b = *s.get(i)?;
            }
            let negative = b == b'-';
            let start = i + usize::from(negative);
            let value = match short_number(s, start, negative) {
                Some((value, end)) => {
                    i = end;
                    Some(value)
                }
                None if negative || b.is_ascii_digit() => {
                    let (value, end) = number_general(s, start, negative)?;
                    i = end;
                    Some(value)
                }
                None => {
                    self.i = i;
                    let value = self.other_value()?;
                    i = self.i;
                    value
                }
            };
            if let Some(value) = value {
                put_field(&mut fields, w, name, value, None);
                w += 1;
            }
            // The separator: `,`, or the `]` after the last value (more values than names
            // leave the payload to the general parser).
            let mut b = *s.get(i)?;
            i += 1;
            while is_ws(b) {
                b = *s.get(i)?;
                i += 1;
            }
            if k == last {
                self.i = i;
                fields.truncate(w);
                return (b == b']').then_some(fields);
            }
            if b != b',' {
                return None;
            }
        }
        None
    }

    /// A value that is not a number: a string, `true`, `false` or `null` (`Some(None)`).
    #[inline(never)]
    fn other_value(&mut self) -> Option<Option<FieldValue>> {
        Some(match self.peek()? {
            b'"' => Some(FieldValue::Text(
                std::str::from_utf8(self.string()?).ok()?.to_owned(),
            )),
            b't' => {
                self.literal(b"true")?;
                Some(FieldValue::Bool(true))
            }
            b'f' => {
                self.literal(b"false")?;
                Some(FieldValue::Bool(false))
            }
            b'n' => {
                self.literal(b"null")?;
                None
            }
            _ => return None,
        })
    }

    /// The literal `word` (its first byte already peeked).
    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.i + word.len();
        if self.s.get(self.i..end)? != word {
            return None;
        }
        self.i = end;
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{parse_general, parse_iotdb_json_with};
    use super::*;
    use crate::model::Batch;
    use crate::model::TimeUnit;
    use proptest::prelude::*;

    fn ms() -> JsonOptions {
        JsonOptions::default()
    }

    /// [`parse_into`] as a batch of its record.
    fn parse(input: &[u8], opts: &JsonOptions, names: &mut Names) -> Option<Batch> {
        let mut batch = Batch::default();
        parse_into(input, opts, names, &mut batch.records)?;
        Some(batch)
    }

    fn direct(s: &str) -> Option<Batch> {
        parse(s.as_bytes(), &ms(), &mut Names::default())
    }

    fn fields(b: &Batch) -> Vec<(&str, FieldValue)> {
        b.records[0]
            .fields
            .iter()
            .map(|f| (&*f.measurement, f.value.clone()))
            .collect()
    }

    /// A recycled field vector is refilled: the fields of the payload parsed into it are
    /// those written in it (hand-read from the literals), whatever the vector held (more
    /// fields, other names, a `null` shifting the names).
    #[test]
    fn recycled_field_vectors_are_refilled() {
        use FieldValue::{Float, Int};
        // Another thread's pool would not be this test's: the vectors stay on this thread.
        let mut names = Names::default();
        let text = |values: &str, list: &str| {
            format!(
                r#"{{"device":"root.sg.d1","timestamp":5,"measurements":[{list}],"values":[{values}]}}"#
            )
        };
        let read = |b: &Batch| -> Vec<(String, FieldValue)> {
            fields(b)
                .into_iter()
                .map(|(m, v)| (m.to_string(), v))
                .collect()
        };
        let pairs = |p: &[(&str, FieldValue)]| -> Vec<(String, FieldValue)> {
            p.iter().map(|(m, v)| (m.to_string(), v.clone())).collect()
        };
        let abc = r#""a","b","c""#;
        let first = parse(text("1.5,2,3.25", abc).as_bytes(), &ms(), &mut names).unwrap();
        assert_eq!(
            read(&first),
            pairs(&[("a", Float(1.5)), ("b", Int(2)), ("c", Float(3.25))])
        );
        let at = first.records[0].fields.as_ptr();
        crate::model::recycle_fields(first.records.into_iter().next().unwrap().fields);
        // The same names: the vector comes back with new values.
        let again = parse(text("-7,8.5,9", abc).as_bytes(), &ms(), &mut names).unwrap();
        assert_eq!(again.records[0].fields.as_ptr(), at);
        assert_eq!(
            read(&again),
            pairs(&[("a", Int(-7)), ("b", Float(8.5)), ("c", Int(9))])
        );
        crate::model::recycle_fields(again.records.into_iter().next().unwrap().fields);
        // A null: the fields after it move up one place, and the vector is cut to two.
        let null = parse(text("null,0.5,6", abc).as_bytes(), &ms(), &mut names).unwrap();
        assert_eq!(null.records[0].fields.as_ptr(), at);
        assert_eq!(read(&null), pairs(&[("b", Float(0.5)), ("c", Int(6))]));
        crate::model::recycle_fields(null.records.into_iter().next().unwrap().fields);
        // Other names, more of them than the vector held.
        let other = parse(
            text("1,2,3,4", r#""w","x","y","z""#).as_bytes(),
            &ms(),
            &mut names,
        )
        .unwrap();
        assert_eq!(
            read(&other),
            pairs(&[("w", Int(1)), ("x", Int(2)), ("y", Int(3)), ("z", Int(4))])
        );
    }

    /// The values' common shape (short numbers, each followed at once by a `,`) is read by a
    /// loop of its own; the first other value and everything after it by the general loop,
    /// whatever breaks the shape and wherever it does. Expected values: the literals.
    #[test]
    fn the_common_shape_and_what_breaks_it() {
        use FieldValue::{Bool, Float, Int, Text};
        let names = ["a", "b", "c", "d", "e"];
        let list = r#""a","b","c","d","e""#;
        let read = |values: &str| {
            let text = format!(
                r#"{{"device":"root.sg.d1","timestamp":5,"measurements":[{list}],"values":[{values}]}}"#
            );
            direct(&text).map(|b| {
                let got: Vec<(String, FieldValue)> = fields(&b)
                    .into_iter()
                    .map(|(m, v)| (m.to_string(), v))
                    .collect();
                got
            })
        };
        let want = |values: &[Option<FieldValue>]| {
            let pairs: Vec<(String, FieldValue)> = names
                .iter()
                .zip(values)
                .filter_map(|(m, v)| v.clone().map(|v| (m.to_string(), v)))
                .collect();
            Some(pairs)
        };
        let f = |v: f64| Some(Float(v));
        let i = |v: i64| Some(Int(v));
        // All short: the last value (fewer than 8 bytes before the end) is read by the
        // general loop.
        assert_eq!(
            read("1.5,-2.25,30,-4,0.5"),
            want(&[f(1.5), f(-2.25), i(30), i(-4), f(0.5)])
        );
        // Broken at each position by a space, a long number, a string, a literal, a null.
        assert_eq!(
            read("1.5 ,2.5,3.5,4.5,5.5"),
            want(&[f(1.5), f(2.5), f(3.5), f(4.5), f(5.5)])
        );
        assert_eq!(
            read("1.5,1234567.25,3,4,5"),
            want(&[f(1.5), f(1_234_567.25), i(3), i(4), i(5)])
        );
        assert_eq!(
            read(r#"1,2,"x",4.5,5"#),
            want(&[i(1), i(2), Some(Text("x".into())), f(4.5), i(5)])
        );
        assert_eq!(
            read("1,2,3,true,-5.5"),
            want(&[i(1), i(2), i(3), Some(Bool(true)), f(-5.5)])
        );
        assert_eq!(
            read("null,2.5,null,4,null"),
            want(&[None, f(2.5), None, i(4), None])
        );
        assert_eq!(
            read(" 1, 2 ,\n3\t,4 , 5 "),
            want(&[i(1), i(2), i(3), i(4), i(5)])
        );
        // A number the direct reader does not read, before or after the loop breaks, and a
        // count of values other than the names': left to the general parser.
        for values in [
            "1,-0,3,4,5",
            "1,2,01,4,5",
            "1,2,3,4,1e5",
            "1,2,3,4",
            "1,2,3,4,5,6",
            "1,2,3,4,5,",
            "1,2,3,4,5 6",
        ] {
            assert_eq!(read(values), None, "{values}");
        }
    }

    /// A list of measurements whose text is over 64 KiB is read each time (it is not kept),
    /// and the list kept before it is forgotten.
    #[test]
    fn a_list_too_long_to_keep_is_read_each_time() {
        let count = 9000;
        let list: Vec<String> = (0..count).map(|k| format!("\"m{k}\"")).collect();
        let list = list.join(",");
        assert!(list.len() > 64 * 1024);
        let values: Vec<String> = (0..count).map(|k| format!("{k}.5")).collect();
        let text = format!(
            r#"{{"device":"root.sg.d1","timestamp":5,"measurements":[{list}],"values":[{}]}}"#,
            values.join(",")
        );
        let mut names = Names::default();
        let short = r#"{"device":"root.sg.d1","timestamp":5,"measurements":["x"],"values":[1]}"#;
        parse(short.as_bytes(), &ms(), &mut names).unwrap();
        assert_eq!(names.list_text(), br#""x""#);
        for _ in 0..2 {
            let b = parse(text.as_bytes(), &ms(), &mut names).unwrap();
            let got = &b.records[0].fields;
            assert_eq!(got.len(), count);
            assert_eq!(&*got[8999].measurement, "m8999");
            assert_eq!(got[8999].value, FieldValue::Float(8999.5));
            assert_eq!(&*got[17].measurement, "m17");
            assert_eq!(got[17].value, FieldValue::Float(17.5));
            assert_eq!(names.list_text(), b"");
            assert!(names.list_names().is_empty());
        }
        // An empty list still matches the (empty) text kept.
        let empty = r#"{"device":"root.sg.d1","timestamp":5,"measurements":[],"values":[]}"#;
        assert_eq!(
            parse(empty.as_bytes(), &ms(), &mut names),
            Some(Batch::default())
        );
        let mismatch = r#"{"device":"root.sg.d1","timestamp":5,"measurements":[],"values":[1]}"#;
        assert_eq!(parse(mismatch.as_bytes(), &ms(), &mut names), None);
    }

    #[test]
    fn reads_the_plain_single_record() {
        let b = direct(
            r#"{"device":"root.sg.d1","timestamp":1586076045524,"measurements":["s1","s2","s3","s4","s5"],"values":[1,2.5,true,"x",null]}"#,
        )
        .expect("read directly");
        assert!(b.rejections.is_empty());
        assert_eq!(b.records.len(), 1);
        assert_eq!(&*b.records[0].device, "root.sg.d1");
        assert_eq!(b.records[0].time, 1586076045524);
        assert_eq!(
            fields(&b),
            [
                ("s1", FieldValue::Int(1)),
                ("s2", FieldValue::Float(2.5)),
                ("s3", FieldValue::Bool(true)),
                ("s4", FieldValue::Text("x".into())),
            ]
        );
        assert!(b.records[0].fields.iter().all(|f| f.type_hint.is_none()));
    }

    #[test]
    fn whitespace_key_order_and_units() {
        let text = " \r\n{ \"values\" :[ false ] ,\"measurements\":[\"b\"],\"timestamp\":-2,\"device\":\"root.a.b\"}\t";
        // `values` before `measurements`: left to the general parser.
        assert!(direct(text).is_none());
        let text = " \r\n{ \"measurements\" :[ \"b\" , \"c\" ] ,\"values\":[ false,\n-7 ],\"timestamp\":-2,\"device\":\"root.a.b\"}\t";
        let b = direct(text).expect("read directly");
        assert_eq!(b.records[0].time, -2);
        assert_eq!(
            fields(&b),
            [("b", FieldValue::Bool(false)), ("c", FieldValue::Int(-7))]
        );
        // Seconds in, microseconds stored.
        let opts = JsonOptions {
            input_unit: TimeUnit::Seconds,
            stored_unit: TimeUnit::Micros,
        };
        let b = parse(text.as_bytes(), &opts, &mut Names::default()).unwrap();
        assert_eq!(b.records[0].time, -2_000_000);
        // Spaces and other characters in a string are its own; a raw control character is
        // not JSON (the general parser refuses it).
        let b = direct(
            r#"{"device":"root.a.b","timestamp":1,"measurements":["t"],"values":[" a é~ "]}"#,
        )
        .unwrap();
        assert_eq!(fields(&b), [("t", FieldValue::Text(" a é~ ".into()))]);
        for control in ["\t", "\n", "\u{1}", "\u{1f}"] {
            let text = format!(
                r#"{{"device":"root.a.b","timestamp":1,"measurements":["t"],"values":["a{control}b"]}}"#
            );
            assert!(direct(&text).is_none(), "{control:?}");
        }
        // Only nulls: no record, nothing rejected.
        let b =
            direct(r#"{"device":"root.a.b","timestamp":1,"measurements":["x"],"values":[null]}"#)
                .unwrap();
        assert!(b.records.is_empty() && b.rejections.is_empty());
        let b =
            direct(r#"{"device":"root.a.b","timestamp":1,"measurements":[],"values":[]}"#).unwrap();
        assert!(b.records.is_empty() && b.rejections.is_empty());
    }

    #[test]
    fn a_repeated_key_counts_last() {
        let b = direct(
            r#"{"device":"root.a.b","timestamp":1,"measurements":["v"],"values":[1],"device":"root.a.c","timestamp":2,"values":[3],"measurements":["x"]}"#,
        );
        assert!(b.is_none(), "measurements after the values");
        let b = direct(
            r#"{"device":"root.a.b","timestamp":1,"measurements":["v"],"measurements":["w","x"],"values":[1,2],"device":"root.a.c","timestamp":2,"values":[3,null]}"#,
        )
        .unwrap();
        assert_eq!(&*b.records[0].device, "root.a.c");
        assert_eq!(b.records[0].time, 2);
        assert_eq!(fields(&b), [("w", FieldValue::Int(3))]);
    }

    #[test]
    fn decimal_fractions_are_the_nearest_double() {
        // Expected values: Rust's own (correctly rounded) reading of the same literals.
        let cases: [(&str, f64); 9] = [
            ("0.1", 0.1),
            ("-123.456", -123.456),
            ("-0.0", -0.0),
            ("0.3000000000000004", 0.300_000_000_000_000_4),
            ("9007199254740.992", 9_007_199_254_740.992),
            ("0.0000000000000000001", 1e-19),
            ("999.9", 999.9),
            ("4.0", 4.0),
            ("-0.5", -0.5),
        ];
        for (text, want) in cases {
            let payload = format!(
                r#"{{"device":"root.a.b","timestamp":1,"measurements":["v"],"values":[{text}]}}"#
            );
            let b = direct(&payload).unwrap_or_else(|| panic!("{text} read directly"));
            match fields(&b)[0].1 {
                FieldValue::Float(got) => {
                    assert_eq!(got.to_bits(), want.to_bits(), "{text}")
                }
                ref other => panic!("{text}: {other:?}"),
            }
        }
        assert_eq!(
            fields(
                &direct(r#"{"device":"root.a.b","timestamp":1,"measurements":["v"],"values":[9223372036854775807]}"#)
                    .unwrap()
            )[0]
            .1,
            FieldValue::Int(i64::MAX)
        );
    }

    #[test]
    fn anything_else_is_left_to_the_general_parser() {
        let base = |values: &str| {
            format!(
                r#"{{"device":"root.a.b","timestamp":1,"measurements":["v"],"values":[{values}]}}"#
            )
        };
        let left = [
            // Numbers it does not convert itself.
            base("1e3"),
            base("1.5E-3"),
            base("-0"),
            base("9223372036854775808"),
            base("-9223372036854775808"),
            base("9007199254740.993"),
            base("0.30000000000000004"),
            base("1.00000000000000000000001"),
            base("0.00000000000000000001"),
            // Not JSON.
            base("01"),
            base("1."),
            base(".5"),
            base("+1"),
            base("tru"),
            base("nul"),
            base("1x"),
            base(r#""a\"b""#),
            base("[1]"),
            base("{}"),
            base("1,"),
            format!("{} x", base("1")),
            // Other forms, keys and shapes.
            base("1,2"),
            base(""),
            r#"{"device":"root.a.b","timestamp":1,"measurements":["v","w"],"values":[1]}"#.into(),
            r#"{"device":"root.a.b","timestamps":[1],"measurements":["v"],"values":[[1]]}"#.into(),
            r#"[{"device":"root.a.b","timestamp":1,"measurements":["v"],"values":[1]}]"#.into(),
            r#"{"device":"root.a.b","timestamp":1,"measurements":["v"],"values":[1],"x":0}"#.into(),
            r#"{"device":"root.a.b","timestamp":1,"measurements":["v"],"values":[1],"measurements":["w"]}"#.into(),
            r#"{"device":"root.a.b","timestamp":1,"measurements":["v"],"values":[1],"timestamp":1.5}"#.into(),
            r#"{"device":"root.a.b","timestamp":"1","measurements":["v"],"values":[1]}"#.into(),
            r#"{"device":"root.a.b","timestamp":1.0,"measurements":["v"],"values":[1]}"#.into(),
            r#"{"device":"root.a.b","timestamp":-0,"measurements":["v"],"values":[1]}"#.into(),
            r#"{"device":"root.a.b","measurements":["v"],"values":[1]}"#.into(),
            r#"{"timestamp":1,"measurements":["v"],"values":[1]}"#.into(),
            r#"{"device":"root.a.b","timestamp":1,"measurements":["v"]}"#.into(),
            r#"{"device":"root.a.b","timestamp":1,"values":[1]}"#.into(),
            r#"{"dev\u0069ce":"root.a.b","timestamp":1,"measurements":["v"],"values":[1]}"#.into(),
            // What the general parser rejects.
            r#"{"device":"root.a.b","timestamp":1,"measurements":["time"],"values":[1]}"#.into(),
            r#"{"device":"root.a.b","timestamp":1,"measurements":["time"],"values":[null]}"#.into(),
            r#"{"device":"sg.d1","timestamp":1,"measurements":["v"],"values":[1]}"#.into(),
            r#"{"device":"root.a.b","timestamp":1,"measurements":[1],"values":[1]}"#.into(),
            r#"{"device":"root.a.b","timestamp":9223372036854775807,"measurements":["v"],"values":[1]}"#.into(),
            "{}".into(),
            "".into(),
        ];
        for text in &left {
            let opts = JsonOptions {
                input_unit: TimeUnit::Millis,
                stored_unit: TimeUnit::Nanos,
            };
            assert!(
                parse(text.as_bytes(), &opts, &mut Names::default()).is_none(),
                "{text}"
            );
        }
        // Invalid UTF-8 in a string.
        let mut bad = base(r#""xy""#).into_bytes();
        let at = bad.len() - 4;
        bad[at] = 0xFF;
        assert!(parse(&bad, &ms(), &mut Names::default()).is_none());
    }

    fn number() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<i64>().prop_map(|i| i.to_string()),
            any::<f64>().prop_map(|f| format!("{f:?}")),
            (
                any::<bool>(),
                0u64..100_000_000_000_000,
                "[0-9]{1,24}",
                prop_oneof![Just(""), Just("e2"), Just("E-1")]
            )
                .prop_map(|(neg, int, frac, exp)| format!(
                    "{}{int}.{frac}{exp}",
                    if neg { "-" } else { "" }
                )),
            prop_oneof![
                Just("-0"),
                Just("0"),
                Just("00"),
                Just("1."),
                Just("18446744073709551616"),
                Just("-9223372036854775809")
            ]
            .prop_map(String::from),
        ]
    }

    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => number(),
            6 => "-?(0|[1-9][0-9]{0,6})\\.[0-9]{1,8}",
            1 => Just("null".to_string()),
            1 => any::<bool>().prop_map(|b| b.to_string()),
            1 => "[a-z\\\\\"é ]{0,4}".prop_map(|s| format!("\"{s}\"")),
            1 => prop_oneof![Just("[]"), Just("{}"), Just("nul"), Just("1e5")].prop_map(String::from),
        ]
    }

    fn ws() -> impl Strategy<Value = &'static str> {
        prop_oneof![4 => Just(""), 1 => Just(" "), 1 => Just("\n\t ")]
    }

    prop_compose! {
        /// Payloads in (and near) the plain single-record form: mostly the form itself.
        fn payload()(
            device in prop_oneof![
                6 => Just("root.sg.d1"), 2 => Just("root.sg.d2"), 1 => Just("sg.d1"), 1 => Just("root.a\\u002eb")
            ],
            time in prop_oneof![
                6 => any::<i64>().prop_map(|t| (t / 1_000_000).to_string()),
                1 => any::<i64>().prop_map(|t| t.to_string()),
                1 => Just("-0".to_string()),
                1 => Just("\"12\"".to_string()),
                1 => Just("1.5".to_string()),
            ],
            columns in prop::collection::vec((prop_oneof![
                8 => "s[0-9]{1,2}", 1 => Just("time".to_string()), 1 => Just("a.b".to_string())
            ], value()), 0..6),
            more in prop_oneof![6 => Just(None), 1 => value().prop_map(Some)],
            fewer in prop_oneof![6 => Just(false), 1 => Just(true)],
            order in prop_oneof![
                3 => Just(["device", "timestamp", "measurements", "values"]),
                1 => Just(["device", "timestamp", "measurements", "values"]).prop_shuffle(),
            ],
            sp in ws(),
        ) -> String {
            let names: Vec<String> = columns.iter().map(|(n, _)| format!("\"{n}\"")).collect();
            let mut values: Vec<String> = columns.into_iter().map(|(_, v)| v).collect();
            values.extend(more);
            if fewer {
                values.pop();
            }
            let parts: Vec<String> = order
                .iter()
                .map(|k| {
                    let v = match *k {
                        "device" => format!("\"{device}\""),
                        "timestamp" => time.clone(),
                        "measurements" => format!("[{}]", names.join(&format!(",{sp}"))),
                        _ => format!("[{sp}{}]", values.join(",")),
                    };
                    format!("{sp}\"{k}\"{sp}:{v}")
                })
                .collect();
            format!("{sp}{{{}}}", parts.join(","))
        }
    }

    #[test]
    fn a_repeated_list_is_found_whole_and_a_changed_one_read_again() {
        let mut names = Names::default();
        let one = |names: &mut Names, list: &str, values: &str| {
            let text = format!(
                r#"{{"device":"root.a.b","timestamp":1,"measurements":[{list}],"values":[{values}]}}"#
            );
            parse(text.as_bytes(), &ms(), names)
        };
        let b = one(&mut names, r#""x","y""#, "1,2").unwrap();
        let first = b.records[0].fields[1].measurement.clone();
        assert_eq!(&*first, "y");
        let b = one(&mut names, r#""x","y""#, "3,4").unwrap();
        assert!(Arc::ptr_eq(&first, &b.records[0].fields[1].measurement));
        assert_eq!(
            fields(&b),
            [("x", FieldValue::Int(3)), ("y", FieldValue::Int(4))]
        );
        // Same length, another name; then a list with an invalid name is not read directly
        // (and the list kept before is not taken for it).
        let b = one(&mut names, r#""x","z""#, "5,6").unwrap();
        assert_eq!(
            fields(&b),
            [("x", FieldValue::Int(5)), ("z", FieldValue::Int(6))]
        );
        assert!(one(&mut names, r#""x","time""#, "5,6").is_none());
        assert!(one(&mut names, r#""x","z""#, "5").is_none());
        assert!(one(&mut names, r#""x","z""#, "5,6,7").is_none());
        assert_eq!(
            fields(&one(&mut names, r#"  "x" ,"z""#, "7 ,8").unwrap()),
            [("x", FieldValue::Int(7)), ("z", FieldValue::Int(8))]
        );
    }

    #[test]
    fn eight_digits_at_once() {
        // Digit values, the first digit in the lowest byte.
        let word = |digits: &str| {
            digits
                .bytes()
                .rev()
                .fold(0u64, |w, b| (w << 8) | u64::from(b - b'0'))
        };
        for (digits, want) in [
            ("7", 7),
            ("42", 42),
            ("105", 105),
            ("9999", 9999),
            ("12345", 12345),
            ("000001", 1),
            ("9876543", 9_876_543),
            ("12345678", 12_345_678),
            ("99999999", 99_999_999),
        ] {
            assert_eq!(swar_digits(word(digits), digits.len()), want, "{digits}");
        }
        // The first non-digit of a word, by its flags (bytes in text order).
        let first = |text: &[u8; 8]| non_digits(u64::from_le_bytes(*text)).trailing_zeros() / 8;
        assert_eq!(first(b"123.4,56"), 3);
        assert_eq!(first(b"0/9:a-1 "), 1, "'/' and ':' are next to the digits");
        assert_eq!(first(b"\xff1234567"), 0);
        assert_eq!(first(b"1234567\xfa"), 7);
        assert_eq!(first(b"12345678"), 8);
    }

    /// Where a number ends and what it is, read by [`number_at`] from the start of `text`.
    fn read_number(text: &str) -> Option<(FieldValue, usize)> {
        number_at(text.as_bytes(), 0)
    }

    #[test]
    fn short_numbers_end_where_they_end() {
        // Expected values: the literals themselves, and their lengths.
        assert_eq!(
            read_number("123.4,56.7"),
            Some((FieldValue::Float(123.4), 5))
        );
        assert_eq!(
            read_number("-0.5]}    "),
            Some((FieldValue::Float(-0.5), 4))
        );
        assert_eq!(
            read_number("999999.9]}"),
            Some((FieldValue::Float(999_999.9), 8))
        );
        assert_eq!(read_number("12,3456789"), Some((FieldValue::Int(12), 2)));
        assert_eq!(read_number("-7 ,      "), Some((FieldValue::Int(-7), 2)));
        assert_eq!(read_number("0]}       "), Some((FieldValue::Int(0), 1)));
        // Near the end of the payload (fewer than 8 bytes left) and long numbers: the
        // general reading, same results.
        assert_eq!(read_number("1.25]}"), Some((FieldValue::Float(1.25), 4)));
        assert_eq!(
            read_number("1234567.5,"),
            Some((FieldValue::Float(1_234_567.5), 9))
        );
        assert_eq!(
            read_number("0.000001,   "),
            Some((FieldValue::Float(1e-6), 8))
        );
        // Not numbers JSON allows, or not read here.
        for text in [
            "-0,        ",
            "01.5,      ",
            "00,        ",
            "1.,        ",
            "-.5,       ",
            "-x        ",
        ] {
            assert_eq!(read_number(text), None, "{text}");
        }
        // An exponent is left unread.
        assert_eq!(read_number("12e3,     "), Some((FieldValue::Int(12), 2)));
        assert_eq!(read_number("1.5e3,    "), Some((FieldValue::Float(1.5), 3)));
    }

    proptest! {
        /// Numbers as the standard library reads the same text: integers within `i64`
        /// (not `-0`), decimal fractions whose digits form an integer of at most 2^53;
        /// whatever follows them.
        #[test]
        fn numbers_read_as_the_standard_library_reads_them(
            negative in any::<bool>(),
            int in "0|[1-9][0-9]{0,8}",
            frac in prop::option::of("[0-9]{1,9}"),
            tail in prop_oneof![Just(""), Just(","), Just("]}"), Just(",12.5,3]}"), Just(" , 1"), Just("e5,      ")],
        ) {
            let text = format!("{}{int}{}", if negative { "-" } else { "" }, frac.as_ref().map(|f| format!(".{f}")).unwrap_or_default());
            let want = match &frac {
                None if negative && int == "0" => None,
                None => Some(FieldValue::Int(text.parse().unwrap())),
                Some(f) => {
                    let digits: u128 = format!("{int}{f}").parse().unwrap();
                    (digits <= 1 << 53).then(|| FieldValue::Float(text.parse().unwrap()))
                }
            };
            let got = read_number(&format!("{text}{tail}"));
            match (got, want) {
                (Some((FieldValue::Float(g), end)), Some(FieldValue::Float(w))) => {
                    prop_assert_eq!(g.to_bits(), w.to_bits(), "{}", text);
                    prop_assert_eq!(end, text.len());
                }
                (Some((g, end)), Some(w)) => {
                    prop_assert_eq!(g, w);
                    prop_assert_eq!(end, text.len());
                }
                (got, want) => prop_assert_eq!(got.map(|g| g.0), want, "{}", text),
            }
        }

        /// A stream of payloads through one cache each: the same batches either way.
        #[test]
        fn a_stream_reads_as_the_general_parser_reads_it(texts in prop::collection::vec(payload(), 1..6)) {
            let opts = ms();
            let (mut a, mut b) = (Names::default(), Names::default());
            for text in &texts {
                prop_assert_eq!(
                    parse_iotdb_json_with(text.as_bytes(), &opts, &mut a),
                    parse_general(text.as_bytes(), &opts, &mut b),
                    "{}", text
                );
            }
        }

        /// The direct reader gives what the general parser gives, or leaves the payload to it.
        #[test]
        fn same_as_the_general_parser(
            text in payload(),
            stored in prop_oneof![Just(TimeUnit::Millis), Just(TimeUnit::Nanos), Just(TimeUnit::Seconds)],
        ) {
            let opts = JsonOptions { input_unit: TimeUnit::Millis, stored_unit: stored };
            let general = parse_general(text.as_bytes(), &opts, &mut Names::default());
            if let Some(b) = parse(text.as_bytes(), &opts, &mut Names::default()) {
                prop_assert_eq!(&b, &general, "{}", text);
            }
            prop_assert_eq!(
                parse_iotdb_json_with(text.as_bytes(), &opts, &mut Names::default()),
                general
            );
        }
    }
}

#[cfg(test)]
mod mutant_gaps_tests;
