//! REGULAR encoding for INT32/INT64 (spec §6.6).
//!
//! Blocks of up to 128 values (buffered; a block is written when it fills or at page
//! flush):
//!
//! ```text
//! u8   isMissingPoint (0/1)
//! if isMissingPoint: i32 bitmapLen, bitmap (BitSet.toByteArray: bit i -> byte i/8, LSB first)
//! i32  count   (values, or positions of the reconstructed progression if points are missing)
//! minDelta     (i32 / i64; MAX_VALUE for a single value)
//! firstValue   (i32 / i64)
//! ```
//!
//! # What is accepted
//!
//! Java's `RegularDataDecoder` rebuilds `first + k * minDelta` and returns the positions
//! whose bitmap bit is set, so only arithmetic progressions round-trip, optionally with
//! whole missing steps (conformance quirk 4, spec §13.7). [`RegularEncoder`] accepts a
//! value only if the current block, flushed right after it, is one Java encodes without
//! an exception **and** decodes back exactly:
//!
//! * one value, or all deltas equal (any step: constant, descending, wrapping), or
//! * positive minimum delta `m` dividing every delta (whole missing steps), the span
//!   `last - first` not overflowing, at most [`MAX_POSITIONS`] positions
//!   (a policy limit: Java would allocate a bitmap and a decoder array of that size),
//!   and — for a partial block — Java's scan of the unused zero slot after the last value
//!   (`data2Diff` walks all 128 slots) not overflowing its bit index (which throws).
//!
//! Anything else (a gap in a descending series, a delta that is not a whole multiple of
//! the step, a zero step with gaps, …) is refused with [`Error::InvalidInput`] and the
//! encoder state is left unchanged, so the caller can seal the page or pick another
//! encoding. Accepted blocks are byte-identical with Java's.
//!
//! # Decoding
//!
//! [`decode_into`] follows Java's decoder state machine exactly, including its reading of
//! the bitmap: position 0 is always returned first, each later value is the next set bit
//! after the previous one, and a block ends when the returned position reaches
//! `count - 1` (`readIntTotalCount = count - 2` with missing points, `count - 1` without).
//! Where Java would throw or loop forever (truncated data, `count < 1`, no further set
//! bit, an index beyond the block) an error is returned.

use super::bitpack::JavaInt;
use super::Encoder;
use crate::errors::{Error, Result};
use crate::util::io::put_i32;

/// Values per block (Java's constant `BLOCK_DEFAULT_SIZE`).
pub const BLOCK_SIZE: usize = 128;

/// Most positions (values plus missing steps) one block with missing points may span.
pub const MAX_POSITIONS: i64 = 1 << 20;

/// Java `IntRegularEncoder`.
pub type IntRegularEncoder = RegularEncoder<i32>;
/// Java `LongRegularEncoder`.
pub type LongRegularEncoder = RegularEncoder<i64>;

/// Statistics of the deltas of the current block.
#[derive(Debug, Clone, Copy)]
struct Stats<T> {
    /// The first delta (`data[1] - data[0]`).
    d1: T,
    /// Whether every delta equals `d1`.
    equal: bool,
    /// Minimum delta.
    min: T,
    /// Exact sum of the deltas (only kept once they differ).
    sum: i128,
    /// gcd of the absolute deltas (only kept once they differ).
    gcd: u64,
}

/// Java `RegularDataEncoder` over `i32` or `i64`, refusing values Java cannot round-trip.
#[derive(Debug, Clone)]
pub struct RegularEncoder<T: JavaInt> {
    data: Vec<T>,
    stats: Option<Stats<T>>,
}

impl<T: JavaInt> Default for RegularEncoder<T> {
    fn default() -> Self {
        Self::new()
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl<T: JavaInt> RegularEncoder<T> {
    /// A fresh encoder.
    pub fn new() -> Self {
        RegularEncoder {
            data: Vec::with_capacity(BLOCK_SIZE),
            stats: None,
        }
    }

    /// The block statistics after appending `v`, or why Java could not carry the block.
    fn admit(&self, v: T) -> std::result::Result<Option<Stats<T>>, String> {
        let Some(&last) = self.data.last() else {
            return Ok(None);
        };
        let d = v.wsub(last);
        let s = match self.stats {
            None => Stats {
                d1: d,
                equal: true,
                min: d,
                sum: 0,
                gcd: 0,
            },
            // Fast path: the block stays an exact progression.
            Some(s) if s.equal && d == s.d1 => return Ok(Some(s)),
            Some(s) if s.equal => {
                // First differing delta: all earlier ones were d1.
                let earlier = (self.data.len() - 1) as i128;
                let a = d.to_i128().unsigned_abs() as u64;
                let b = s.d1.to_i128().unsigned_abs() as u64;
                Stats {
                    d1: s.d1,
                    equal: false,
                    min: s.d1.min(d),
                    sum: s.d1.to_i128() * earlier + d.to_i128(),
                    gcd: gcd(a, b),
                }
            }
            Some(s) => Stats {
                d1: s.d1,
                equal: false,
                min: s.min.min(d),
                sum: s.sum + d.to_i128(),
                gcd: gcd(s.gcd, d.to_i128().unsigned_abs() as u64),
            },
        };
        if s.equal {
            return Ok(Some(s));
        }
        let m = s.min.to_i128();
        if m <= 0 {
            return Err(if m == 0 {
                "the block repeats a value but is not constant (Java divides by the zero minimum step)"
                    .to_string()
            } else {
                format!(
                    "the block's steps are not all equal and the minimum step {m} is not positive \
                     (only ascending series may have missing steps)"
                )
            });
        }
        if s.gcd as i128 != m {
            return Err(format!(
                "the step {} is not a whole multiple of the minimum step {m}",
                d.to_i128()
            ));
        }
        if s.sum > T::MAX.to_i128() {
            return Err("the block's span last - first overflows".to_string());
        }
        let positions = (s.sum / m) as i64 + 1;
        if positions > MAX_POSITIONS {
            return Err(format!(
                "the block would span {positions} positions (more than {MAX_POSITIONS}) of step {m}"
            ));
        }
        if self.data.len() + 1 < BLOCK_SIZE {
            // Java's data2Diff also visits the first unused (zero) slot: it clears the
            // bits from index `positions` on, which only throws if the index overflows.
            let d0 = T::default().wsub(v);
            if d0 != s.min {
                let k = d0.jdiv(s.min).low_i32().wrapping_sub(1);
                if k >= 1 && positions + k as i64 - 1 > i32::MAX as i64 {
                    return Err(
                        "Java's bitmap construction overflows on this partial block".to_string()
                    );
                }
            }
        }
        Ok(Some(s))
    }

    /// Encodes one value, or refuses it (state unchanged) if the block could not be
    /// decoded back exactly by Java. A block that fills is written to `out` at once.
    pub fn encode(&mut self, v: T, out: &mut Vec<u8>) -> Result<()> {
        let stats = self.admit(v).map_err(|why| {
            Error::invalid(format!(
                "REGULAR cannot encode {} after {} value(s) of this block: {why}; REGULAR only \
                 round-trips arithmetic progressions with whole missing steps (use TS_2DIFF)",
                v.to_i128(),
                self.data.len()
            ))
        })?;
        self.stats = stats;
        self.data.push(v);
        if self.data.len() == BLOCK_SIZE {
            self.flush_block(out);
        }
        Ok(())
    }

    /// Writes the current block (if any) and starts a new one.
    pub fn flush_block(&mut self, out: &mut Vec<u8>) {
        let Some(&first) = self.data.first() else {
            return;
        };
        match self.stats {
            None => {
                out.push(0);
                put_i32(out, 1);
                T::MAX.put_be(out);
            }
            Some(s) if s.equal => {
                out.push(0);
                put_i32(out, self.data.len() as i32);
                s.d1.put_be(out);
            }
            Some(s) => {
                let m = s.min.to_i128();
                let positions = (s.sum / m) as usize + 1;
                let mut bitmap = vec![0u8; positions.div_ceil(8)];
                let mut p = 0usize;
                bitmap[0] |= 1;
                for w in self.data.windows(2) {
                    p += (w[1].wsub(w[0]).to_i128() / m) as usize;
                    bitmap[p / 8] |= 1 << (p % 8);
                }
                out.push(1);
                put_i32(out, bitmap.len() as i32);
                out.extend_from_slice(&bitmap);
                put_i32(out, positions as i32);
                s.min.put_be(out);
            }
        }
        first.put_be(out);
        self.data.clear();
        self.stats = None;
    }

    /// Java `getMaxByteSize`: `20 + wi*2/8 + wi*4` (INT32) / `28 + wi*2/8 + wi*8`
    /// (INT64), `wi` = values in the block or −1 when empty.
    pub fn max_byte_size(&self) -> usize {
        let wi = if self.data.is_empty() {
            -1i64
        } else {
            self.data.len() as i64
        };
        let base = if T::BITS == 32 { 20 } else { 28 };
        (base + wi * 2 / 8 + wi * T::BYTES as i64) as usize
    }
}

impl Encoder for RegularEncoder<i32> {
    fn encode_i32(&mut self, v: i32, out: &mut Vec<u8>) -> Result<()> {
        self.encode(v, out)
    }
    fn flush(&mut self, out: &mut Vec<u8>) -> Result<()> {
        self.flush_block(out);
        Ok(())
    }
    fn max_byte_size(&self) -> usize {
        RegularEncoder::max_byte_size(self)
    }
}

impl Encoder for RegularEncoder<i64> {
    fn encode_i64(&mut self, v: i64, out: &mut Vec<u8>) -> Result<()> {
        self.encode(v, out)
    }
    fn flush(&mut self, out: &mut Vec<u8>) -> Result<()> {
        self.flush_block(out);
        Ok(())
    }
    fn max_byte_size(&self) -> usize {
        RegularEncoder::max_byte_size(self)
    }
}

/// Decodes exactly `count` values, following Java's `RegularDataDecoder`; bytes after the
/// `count`-th value are ignored.
pub fn decode_into<T: JavaInt>(
    stream: &'static str,
    data: &[u8],
    count: usize,
    out: &mut Vec<T>,
) -> Result<()> {
    let mut pos = 0usize;
    let take = |pos: &mut usize, n: usize, what: &str| -> Result<&[u8]> {
        match data.get(*pos..*pos + n) {
            Some(s) => {
                *pos += n;
                Ok(s)
            }
            None => Err(Error::decode(
                stream,
                *pos,
                format_args!(
                    "{what} ({n} bytes), but only {} bytes remain",
                    data.len() - *pos
                ),
            )),
        }
    };
    // Java's readIntTotalCount / nextReadIndex (ints; i64 here to keep Java's values).
    let (mut total, mut next) = (0i64, 0i64);
    let mut missing = false;
    let mut bitmap: &[u8] = &[];
    let mut bidx = 0i64;
    let (mut pack_num, mut first, mut min) = (0i64, T::default(), T::default());
    let mut left = count;
    while left > 0 {
        if next == total {
            let block_at = pos;
            missing = take(&mut pos, 1, "the missing-point flag")?[0] == 1;
            if missing {
                let len_at = pos;
                let len = i32::from_be_bytes(
                    take(&mut pos, 4, "the bitmap length")?
                        .try_into()
                        .unwrap_or([0; 4]),
                );
                if len < 0 {
                    return Err(Error::decode(
                        stream,
                        len_at,
                        format_args!("a bitmap length >= 0, found {len}"),
                    ));
                }
                bitmap = take(&mut pos, len as usize, "the missing-point bitmap")?;
                bidx = 0;
            }
            let n_at = pos;
            pack_num = i32::from_be_bytes(
                take(&mut pos, 4, "the block count")?
                    .try_into()
                    .unwrap_or([0; 4]),
            ) as i64;
            min = T::from_be_slice(take(&mut pos, T::BYTES, "the minimum delta")?);
            first = T::from_be_slice(take(&mut pos, T::BYTES, "the first value")?);
            if pack_num < 1 {
                return Err(Error::decode(
                    stream,
                    n_at,
                    format_args!("a block count >= 1, found {pack_num} (block at byte {block_at})"),
                ));
            }
            total = if missing { pack_num - 2 } else { pack_num - 1 };
            next = 0;
            out.push(first);
            left -= 1;
        } else if missing {
            bidx += 1;
            loop {
                let byte = (bidx / 8) as usize;
                match bitmap.get(byte) {
                    Some(b) if (b >> (bidx % 8)) & 1 == 1 => break,
                    Some(_) => bidx += 1,
                    None => {
                        return Err(Error::decode(
                            stream,
                            pos,
                            format_args!(
                                "another set bit in the missing-point bitmap after position {}",
                                next + 1
                            ),
                        ))
                    }
                }
            }
            next = bidx - 1;
            if next >= pack_num - 1 {
                return Err(Error::decode(
                    stream,
                    pos,
                    format_args!("bitmap position {bidx} inside the block's {pack_num} positions"),
                ));
            }
            out.push(first.wadd(min.wmul(T::from_i64(next + 1))));
            left -= 1;
        } else {
            // Values first + k*min for k = next+1 ..= total.
            let n = ((total - next) as usize).min(left);
            out.reserve(n);
            let mut v = first.wadd(min.wmul(T::from_i64(next)));
            for _ in 0..n {
                v = v.wadd(min);
                out.push(v);
            }
            next += n as i64;
            left -= n;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    fn enc<T: JavaInt>(v: &[T]) -> Vec<u8> {
        let mut e = RegularEncoder::<T>::new();
        let mut out = Vec::new();
        for x in v {
            e.encode(*x, &mut out).unwrap();
        }
        e.flush_block(&mut out);
        out
    }

    fn dec<T: JavaInt>(b: &[u8], n: usize) -> Vec<T> {
        let mut d = Vec::new();
        decode_into::<T>("s", b, n, &mut d).unwrap();
        d
    }

    #[test]
    fn spec_vectors() {
        let b = enc::<i64>(&[10, 20, 30, 40]);
        assert_eq!(hex(&b), "0000000004000000000000000a000000000000000a");
        assert_eq!(dec::<i64>(&b, 4), [10, 20, 30, 40]);
        let b = enc::<i64>(&[10, 20, 40, 50]);
        assert_eq!(
            hex(&b),
            "01000000011b00000005000000000000000a000000000000000a"
        );
        assert_eq!(dec::<i64>(&b, 4), [10, 20, 40, 50]);
        let b = enc::<i32>(&[7]);
        assert_eq!(hex(&b), "00000000017fffffff00000007");
        assert_eq!(dec::<i32>(&b, 1), [7]);
    }

    #[test]
    fn refusals_leave_the_state_unchanged() {
        let mut e = IntRegularEncoder::new();
        let mut out = Vec::new();
        for v in [0, 10, 30] {
            e.encode(v, &mut out).unwrap();
        }
        // 36 is not a whole number of steps (the steps would be 10, 20, 6).
        let err = e.encode(36, &mut out).unwrap_err();
        assert!(matches!(err, Error::InvalidInput(_)), "{err}");
        assert!(err.to_string().contains("REGULAR"), "{err}");
        e.encode(40, &mut out).unwrap();
        e.flush_block(&mut out);
        assert_eq!(out, enc::<i32>(&[0, 10, 30, 40]));
        // A gap in a descending series.
        let mut e = LongRegularEncoder::new();
        e.encode(100, &mut out).unwrap();
        e.encode(93, &mut out).unwrap();
        let err = e.encode(79, &mut out).unwrap_err();
        assert!(
            err.to_string().contains("minimum step -14 is not positive"),
            "{err}"
        );
        // A repeated value in a non-constant block (Java divides by zero).
        let mut e = LongRegularEncoder::new();
        e.encode(1, &mut out).unwrap();
        e.encode(1, &mut out).unwrap();
        let err = e.encode(2, &mut out).unwrap_err();
        assert!(err.to_string().contains("zero minimum step"), "{err}");
        let mut e = LongRegularEncoder::new();
        e.encode(1, &mut out).unwrap();
        e.encode(2, &mut out).unwrap();
        assert!(e.encode(2, &mut out).is_err());
        // Descending and wrapping progressions are fine.
        let v: Vec<i32> = (0..300).map(|i| 100000 - 7 * i).collect();
        let b = enc::<i32>(&v);
        assert_eq!(dec::<i32>(&b, v.len()), v);
        let v: Vec<i32> = (0..200)
            .map(|i: i32| i32::MAX.wrapping_add(i.wrapping_mul(1 << 30)))
            .collect();
        let b = enc::<i32>(&v);
        assert_eq!(dec::<i32>(&b, v.len()), v);
        // Too many positions.
        let mut e = LongRegularEncoder::new();
        e.encode(0, &mut out).unwrap();
        e.encode(1, &mut out).unwrap();
        assert!(e.encode(1 << 21, &mut out).is_err());
        // A span that overflows.
        let mut e = IntRegularEncoder::new();
        e.encode(i32::MIN, &mut out).unwrap();
        e.encode(i32::MIN + (1 << 29), &mut out).unwrap();
        // Steps 2^29 and 3 * 2^29: whole multiples, but the span 2^31 overflows an int.
        assert!(e.encode(0, &mut out).is_err());
        assert!(!java_carries(&[i32::MIN, i32::MIN + (1 << 29), 0]));
    }

    #[test]
    fn max_byte_size_follows_java() {
        let mut e = IntRegularEncoder::new();
        let mut out = Vec::new();
        assert_eq!(e.max_byte_size(), 16);
        for i in 0..10 {
            e.encode(i, &mut out).unwrap();
        }
        assert_eq!(e.max_byte_size(), 20 + 2 + 40);
        let mut l = LongRegularEncoder::new();
        assert_eq!(l.max_byte_size(), 20);
        for i in 0..128 {
            l.encode(i, &mut out).unwrap();
        }
        assert_eq!(l.max_byte_size(), 20);
        l.encode(5, &mut out).unwrap();
        assert_eq!(l.max_byte_size(), 28 + 8);
    }

    /// Hand-assembled blocks (spec §6.6): a block with a missing point followed by a
    /// second block, an empty bitmap, and the offset of a negative bitmap length.
    #[test]
    fn blocks_read_like_java() {
        // [10, 20, 40]: 4 positions of step 10, bits 0, 1, 3 = 0b1011; then [7].
        let two = "01 00000001 0b 00000004 0000000a 0000000a 00 00000001 7fffffff 00000007";
        let b: Vec<u8> = (0..two.replace(' ', "").len() / 2)
            .map(|i| u8::from_str_radix(&two.replace(' ', "")[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        assert_eq!(hex(&b[..18]), hex(&enc::<i32>(&[10, 20, 40])));
        assert_eq!(dec::<i32>(&b, 4), [10, 20, 40, 7]);
        // An empty bitmap: the first value needs no bit.
        let b = [1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 9];
        assert_eq!(dec::<i32>(&b, 1), [9]);
        // A set bit (3) past the block's 3 positions: Java's decoder fails there.
        let b = [1, 0, 0, 0, 1, 0x09, 0, 0, 0, 3, 0, 0, 0, 10, 0, 0, 0, 10];
        assert_eq!(java_decode::<i32>(&b, 2), None);
        assert!(decode_into::<i32>("s", &b, 2, &mut Vec::new()).is_err());
        assert_eq!(dec::<i32>(&b, 1), [10]);
        // A negative bitmap length is named where it is.
        let b = [
            1, 0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 9,
        ];
        let e = decode_into::<i32>("s", &b, 1, &mut Vec::new()).unwrap_err();
        assert!(matches!(e, Error::Decode { at: 1, .. }), "{e}");
    }

    /// Spec §6.8 through the [`Encoder`] trait (as the page writer calls it), 3 values
    /// buffered: `20 + 3*2/8 + 3*4` and `28 + 3*2/8 + 3*8`.
    #[test]
    fn max_byte_size_through_the_trait() {
        let mut out = Vec::new();
        let mut e: Box<dyn Encoder> = Box::new(IntRegularEncoder::new());
        let mut l: Box<dyn Encoder> = Box::new(LongRegularEncoder::new());
        for v in [1, 2, 3] {
            e.encode_i32(v, &mut out).unwrap();
            l.encode_i64(v as i64, &mut out).unwrap();
        }
        assert_eq!(e.max_byte_size(), 32);
        assert_eq!(l.max_byte_size(), 52);
    }

    #[test]
    fn malformed_streams_are_errors() {
        let good = enc::<i64>(&[10, 20, 40, 50]);
        for cut in 0..good.len() {
            assert!(decode_into::<i64>("s", &good[..cut], 4, &mut Vec::new()).is_err());
        }
        assert!(decode_into::<i64>("s", &good, 5, &mut Vec::new()).is_err());
        // Negative bitmap length.
        let mut b = good.clone();
        b[1] = 0x80;
        assert!(decode_into::<i64>("s", &b, 4, &mut Vec::new()).is_err());
        // Block count 0.
        let mut b = enc::<i32>(&[7]);
        b[4] = 0;
        let e = decode_into::<i32>("s", &b, 1, &mut Vec::new()).unwrap_err();
        assert!(matches!(e, Error::Decode { at: 1, .. }), "{e}");
        // Bitmap with no further set bit.
        let mut b = good.clone();
        b[5] = 0x01;
        assert!(decode_into::<i64>("s", &b, 4, &mut Vec::new()).is_err());
        // A huge claimed count without missing points decodes only what is asked.
        let mut b = enc::<i32>(&[7, 8]);
        b[1..5].copy_from_slice(&i32::MAX.to_be_bytes());
        assert_eq!(dec::<i32>(&b, 5), [7, 8, 9, 10, 11]);
    }

    // ---- A literal model of Java's RegularDataEncoder / RegularDataDecoder. ----

    #[derive(Debug, PartialEq)]
    enum Java {
        /// Java throws (division by zero, negative BitSet index or size).
        Throws,
        /// Beyond the policy limit [`MAX_POSITIONS`].
        TooLarge,
    }

    /// Java's flushBlockBuffer on one block (128 zero-padded slots), bytes or failure.
    fn java_block<T: JavaInt>(vals: &[T]) -> std::result::Result<Vec<u8>, Java> {
        let mut data = [T::default(); BLOCK_SIZE];
        data[..vals.len()].copy_from_slice(vals);
        let mut wi = vals.len() as i64;
        let mut min = T::MAX;
        let mut missing = false;
        if wi > 1 {
            let mut prev = data[0];
            min = data[1].wsub(data[0]);
            for x in data.iter().take(vals.len()).skip(1) {
                let d = x.wsub(prev);
                if d != min {
                    missing = true;
                }
                if d < min {
                    min = d;
                }
                prev = *x;
            }
        }
        let first = data[0];
        let mut out = Vec::new();
        let mut n_size = 0i64;
        if missing {
            if min == T::default() {
                return Err(Java::Throws);
            }
            n_size = data[vals.len() - 1]
                .wsub(data[0])
                .jdiv(min)
                .wadd(T::from_i64(1))
                .low_i32() as i64;
            wi = n_size;
        }
        out.push(missing as u8);
        if missing {
            if n_size < 0 {
                return Err(Java::Throws);
            }
            if n_size > MAX_POSITIONS {
                return Err(Java::TooLarge);
            }
            let n = n_size as usize;
            let mut bits = vec![true; n];
            let mut offset: i64 = 0;
            for i in 1..BLOCK_SIZE {
                let d = data[i].wsub(data[i - 1]);
                if d != min {
                    let k = d.jdiv(min).low_i32().wrapping_sub(1) as i64;
                    if k > 0 {
                        let start = i as i64 + offset;
                        if start + k - 1 > i32::MAX as i64 {
                            return Err(Java::Throws);
                        }
                        for idx in start..(start + k).min(n as i64) {
                            bits[idx as usize] = false;
                        }
                        offset += k;
                    }
                }
            }
            let last = bits.iter().rposition(|b| *b).map_or(0, |p| p + 1);
            let mut bytes = vec![0u8; last.div_ceil(8)];
            for (i, b) in bits.iter().enumerate() {
                if *b {
                    bytes[i / 8] |= 1 << (i % 8);
                }
            }
            put_i32(&mut out, bytes.len() as i32);
            out.extend(bytes);
        }
        put_i32(&mut out, wi as i32);
        min.put_be(&mut out);
        first.put_be(&mut out);
        Ok(out)
    }

    /// Java's decoder reading `count` values (None where it throws or never ends).
    fn java_decode<T: JavaInt>(b: &[u8], count: usize) -> Option<Vec<T>> {
        let mut p = 0usize;
        let mut get = |n: usize| -> Option<Vec<u8>> {
            let s = b.get(p..p + n)?.to_vec();
            p += n;
            Some(s)
        };
        let (mut total, mut next) = (0i64, 0i64);
        let (mut missing, mut bitmap, mut bidx) = (false, Vec::new(), 0i64);
        let (mut first, mut min, mut pack) = (T::default(), T::default(), 0i64);
        let mut out = Vec::new();
        for _ in 0..count {
            if next == total {
                missing = get(1)?[0] == 1;
                if missing {
                    let len = i32::from_be_bytes(get(4)?.try_into().ok()?);
                    if len < 0 {
                        return None;
                    }
                    bitmap = get(len as usize)?;
                    bidx = 0;
                }
                pack = i32::from_be_bytes(get(4)?.try_into().ok()?) as i64;
                min = T::from_be_slice(&get(T::BYTES)?);
                first = T::from_be_slice(&get(T::BYTES)?);
                if pack - 1 < 0 {
                    return None;
                }
                total = if missing { pack - 2 } else { pack - 1 };
                next = 0;
                out.push(first);
            } else if missing {
                bidx += 1;
                while (bitmap.get((bidx / 8) as usize)? >> (bidx % 8)) & 1 == 0 {
                    bidx += 1;
                }
                next = bidx - 1;
                if next >= pack - 1 {
                    return None;
                }
                out.push(first.wadd(min.wmul(T::from_i64(next + 1))));
            } else {
                next += 1;
                out.push(first.wadd(min.wmul(T::from_i64(next))));
            }
        }
        Some(out)
    }

    /// Whether Java carries `block` (as a flushed block) exactly.
    fn java_carries<T: JavaInt>(block: &[T]) -> bool {
        match java_block(block) {
            Ok(b) => java_decode::<T>(&b, block.len()).as_deref() == Some(block),
            Err(_) => false,
        }
    }

    fn check_series<T: JavaInt + std::fmt::Debug>(vals: &[T], cuts: &[usize]) {
        let mut e = RegularEncoder::<T>::new();
        let mut page = Vec::new();
        let mut page_vals: Vec<T> = Vec::new();
        let mut block: Vec<T> = Vec::new();
        let mut want = Vec::new();
        for (i, v) in vals.iter().enumerate() {
            let mut cand = block.clone();
            cand.push(*v);
            let java_ok = java_carries(&cand);
            let before = page.clone();
            let r = e.encode(*v, &mut page);
            assert_eq!(
                r.is_ok(),
                java_ok,
                "value {v:?} after block {block:?}: {r:?}"
            );
            if r.is_ok() {
                block = cand;
                page_vals.push(*v);
                if block.len() == BLOCK_SIZE {
                    want.extend(java_block(&block).unwrap());
                    block.clear();
                }
            } else {
                assert_eq!(page, before);
            }
            if cuts.contains(&i) {
                e.flush_block(&mut page);
                if !block.is_empty() {
                    want.extend(java_block(&block).unwrap());
                    block.clear();
                }
                assert_eq!(hex(&page), hex(&want));
                assert_eq!(dec::<T>(&page, page_vals.len()), page_vals);
                assert_eq!(java_decode::<T>(&page, page_vals.len()).unwrap(), page_vals);
                page.clear();
                want.clear();
                page_vals.clear();
            }
        }
    }

    fn series() -> impl Strategy<Value = Vec<i64>> {
        // Progressions (any step, sometimes with whole missing steps), plus noise.
        (
            any::<i64>().prop_map(|x| x >> 2),
            prop_oneof![
                Just(0i64),
                -20i64..20,
                any::<i64>().prop_map(|x| x >> 40),
                Just(1)
            ],
            proptest::collection::vec(
                prop_oneof![
                    10 => Just(1i64),
                    3 => 2i64..5,
                    1 => Just(0i64),
                    1 => any::<i64>().prop_map(|x| x % 1000),
                    1 => any::<i64>(),
                ],
                1..400,
            ),
        )
            .prop_map(|(start, step, mults)| {
                let mut v = start;
                let mut out = vec![v];
                for m in mults {
                    v = v.wrapping_add(step.wrapping_mul(m));
                    out.push(v);
                }
                out
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        #[test]
        fn int64_acceptance_and_bytes_match_java(v in series(), cuts in proptest::collection::vec(0usize..400, 0..4)) {
            let mut cuts = cuts;
            cuts.push(v.len() - 1);
            check_series::<i64>(&v, &cuts);
        }

        #[test]
        fn int32_acceptance_and_bytes_match_java(v in series(), cuts in proptest::collection::vec(0usize..400, 0..4)) {
            let v: Vec<i32> = v.into_iter().map(|x| (x >> 8) as i32).collect();
            let mut cuts = cuts;
            cuts.push(v.len() - 1);
            check_series::<i32>(&v, &cuts);
        }

        #[test]
        fn random_bytes_decode_like_java(data in proptest::collection::vec(any::<u8>(), 0..60), count in 0usize..40) {
            let mut a: Vec<i32> = Vec::new();
            let r = decode_into::<i32>("s", &data, count, &mut a);
            prop_assert_eq!(r.ok().map(|_| a), java_decode::<i32>(&data, count));
            let mut b: Vec<i64> = Vec::new();
            let r = decode_into::<i64>("s", &data, count, &mut b);
            prop_assert_eq!(r.ok().map(|_| b), java_decode::<i64>(&data, count));
        }
    }

    /// The limits of what is accepted, each at its boundary (hand-computed values,
    /// cross-checked with the Java model above).
    fn accepts<T: JavaInt>(block: &[T]) -> bool {
        let mut e = RegularEncoder::<T>::new();
        let mut out = Vec::new();
        let (init, last) = block.split_at(block.len() - 1);
        for v in init {
            e.encode(*v, &mut out).unwrap();
        }
        e.encode(last[0], &mut out).is_ok()
    }

    #[test]
    fn limits_at_their_boundaries() {
        // Span exactly Long.MAX_VALUE = 7m (steps m and 6m, 8 positions): carried.
        let m = i64::MAX / 7;
        assert_eq!(m * 7, i64::MAX);
        let block = [i64::MIN, i64::MIN + m, -1];
        assert!(java_carries(&block));
        assert!(accepts(&block));
        let b = enc::<i64>(&block);
        assert_eq!(dec::<i64>(&b, 3), block);
        // MAX_POSITIONS = 2^20 positions of step 1: accepted; one more: refused.
        assert!(accepts::<i64>(&[0, 1, (1 << 20) - 1]));
        assert!(!accepts::<i64>(&[0, 1, 1 << 20]));
        // A partial block whose last value v makes Java clear bits up to index
        // positions + k - 1, k = (int) (-v) - 1: with 6 positions and
        // (int) (-v) = Integer.MAX_VALUE - 4 the index is exactly Integer.MAX_VALUE.
        let f = i32::MIN as i64;
        let at_limit = [f, f + 1, f + 2, f + 5];
        assert!(java_carries(&at_limit));
        assert!(accepts(&at_limit));
        let past = [f - 1, f, f + 1, f + 4];
        assert!(!java_carries(&past));
        assert!(!accepts(&past));
    }

    #[test]
    fn partial_block_overflow_is_refused() {
        // INT64 step 1 with gaps, the last value chosen so that Java's `(int)` of
        // `(0 - last) / 1` is close to Integer.MAX_VALUE: its bitmap index overflows.
        let last = -((1i64 << 32) + (1i64 << 31) - 5);
        let first = last - 10;
        let block = [first, first + 1, first + 2, first + 5];
        assert!(java_carries(&block[..3]));
        assert!(!java_carries(&block));
        let mut e = LongRegularEncoder::new();
        let mut out = Vec::new();
        for v in &block[..3] {
            e.encode(*v, &mut out).unwrap();
        }
        assert!(e.encode(first + 5, &mut out).is_err());
        // The full block of 128 has no unused slot: the same values are accepted there.
        let mut full: Vec<i64> = (0..127).map(|i| first + i).collect();
        full.push(first + 200);
        assert!(java_carries(&full));
        let mut e = LongRegularEncoder::new();
        for v in &full {
            e.encode(*v, &mut out).unwrap();
        }
        assert_eq!(out.len(), 1 + 4 + 26 + 4 + 8 + 8); // 201 positions
                                                       // The same gaps far from the limit are fine.
        let block = [0i64, 1, 2, 5, 10];
        assert!(java_carries(&block));
        let b = enc::<i64>(&block);
        assert_eq!(dec::<i64>(&b, 5), block);
    }
}
