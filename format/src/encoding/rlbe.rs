//! RLBE encoding (format v4 only; INT32, INT64, FLOAT, DOUBLE by their bit patterns):
//! run-length coded bit lengths of deltas.
//!
//! Values go in blocks of at most 10,000 (a full block is written as soon as it fills;
//! flush writes the rest). A block is an MSB-first bit string, closed to a byte: the
//! value count (32 bits), then segments. Entry 0 is the first value itself, entry i the
//! wrapping difference to value i-1; each entry's length is its significant bit count
//! (1 for zero, the full width for a negative). A segment covers a run of entries of
//! equal length: the length (6 bits for 32-bit values, 7 for 64-bit), the run length
//! as a Fibonacci code (Zeckendorf bits, lowest Fibonacci number first, ended by an
//! extra `1`), then each entry in `length` bits; a full-width entry is written with its
//! top bit cleared, and the decoder sets it again.

use super::gorilla_v2::{BitReader, Bits};
use super::Encoder;
use crate::errors::{Error, Result};

/// Values per block.
const BLOCK: usize = 10_000;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Int32,
    Int64,
    Float,
    Double,
}

impl Kind {
    fn width(self) -> u32 {
        match self {
            Kind::Int32 | Kind::Float => 32,
            _ => 64,
        }
    }
}

/// Significant bits of a `width`-bit pattern (1 for zero).
fn length(v: u64, width: u32) -> u32 {
    if v == 0 {
        1
    } else {
        debug_assert!(width == 64 || v >> width == 0);
        64 - v.leading_zeros()
    }
}

/// RLBE encoder.
#[derive(Debug, Clone)]
pub struct RlbeEncoder {
    kind: Kind,
    entries: Vec<u64>,
    prev: u64,
}

impl RlbeEncoder {
    fn new(kind: Kind) -> Self {
        RlbeEncoder {
            kind,
            entries: Vec::new(),
            prev: 0,
        }
    }
    /// INT32 (and DATE) encoder.
    pub fn int32() -> Self {
        Self::new(Kind::Int32)
    }
    /// INT64 (and TIMESTAMP) encoder.
    pub fn int64() -> Self {
        Self::new(Kind::Int64)
    }
    /// FLOAT encoder.
    pub fn float() -> Self {
        Self::new(Kind::Float)
    }
    /// DOUBLE encoder.
    pub fn double() -> Self {
        Self::new(Kind::Double)
    }

    fn check(&self, k: Kind) -> Result<()> {
        if self.kind == k {
            Ok(())
        } else {
            Err(Error::unsupported(format!(
                "this RLBE encoder takes {:?} values, not {k:?}",
                self.kind
            )))
        }
    }

    fn push(&mut self, v: u64, out: &mut Vec<u8>) {
        let mask = mask(self.kind.width());
        let e = if self.entries.is_empty() {
            v
        } else {
            v.wrapping_sub(self.prev) & mask
        };
        self.prev = v;
        self.entries.push(e);
        if self.entries.len() == BLOCK {
            self.write_block(out);
        }
    }

    fn write_block(&mut self, out: &mut Vec<u8>) {
        if self.entries.is_empty() {
            return;
        }
        let w = self.kind.width();
        let code_bits = if w == 32 { 6 } else { 7 };
        let mut bits = Bits::default();
        bits.put(self.entries.len() as u64, 32, out);
        let mut i = 0;
        while i < self.entries.len() {
            let len = length(self.entries[i], w);
            let mut j = i;
            while j < self.entries.len() && length(self.entries[j], w) == len {
                j += 1;
            }
            bits.put(len as u64, code_bits, out);
            for b in fibonacci(j - i) {
                bits.bit(b, out);
            }
            bits.bit(true, out);
            for &e in &self.entries[i..j] {
                let e = if len == w { e & !(1u64 << (w - 1)) } else { e };
                bits.put(e, len, out);
            }
            i = j;
        }
        if bits.pending() {
            bits.close_always(out);
        }
        self.entries.clear();
    }
}

fn mask(width: u32) -> u64 {
    if width == 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// Zeckendorf bits of `n >= 1`, for Fibonacci numbers 1, 2, 3, 5, ... in that order,
/// up to and including the highest one used.
fn fibonacci(n: usize) -> Vec<bool> {
    let mut fib = vec![1u64, 2];
    while *fib.last().unwrap() <= n as u64 {
        let k = fib.len();
        fib.push(fib[k - 1] + fib[k - 2]);
    }
    let mut rest = n as u64;
    let mut out = vec![false; fib.len()];
    for k in (0..fib.len()).rev() {
        if fib[k] <= rest {
            out[k] = true;
            rest -= fib[k];
        }
    }
    while out.last() == Some(&false) {
        out.pop();
    }
    out
}

impl Encoder for RlbeEncoder {
    fn encode_i32(&mut self, v: i32, out: &mut Vec<u8>) -> Result<()> {
        self.check(Kind::Int32)?;
        self.push(v as u32 as u64, out);
        Ok(())
    }
    fn encode_i64(&mut self, v: i64, out: &mut Vec<u8>) -> Result<()> {
        self.check(Kind::Int64)?;
        self.push(v as u64, out);
        Ok(())
    }
    fn encode_f32(&mut self, v: f32, out: &mut Vec<u8>) -> Result<()> {
        self.check(Kind::Float)?;
        self.push(v.to_bits() as u64, out);
        Ok(())
    }
    fn encode_f64(&mut self, v: f64, out: &mut Vec<u8>) -> Result<()> {
        self.check(Kind::Double)?;
        self.push(v.to_bits(), out);
        Ok(())
    }
    fn flush(&mut self, out: &mut Vec<u8>) -> Result<()> {
        self.write_block(out);
        self.prev = 0;
        Ok(())
    }
    fn max_byte_size(&self) -> usize {
        // Java/C++ `getMaxByteSize`: a fixed bound for one block.
        5 * 4 * BLOCK * if self.kind.width() == 64 { 2 } else { 1 }
    }
}

/// Decodes `count` values into `out`, each bit pattern through `conv`; each block's
/// values are reserved when its count has been read (at most [`BLOCK`]), so a page's
/// claimed count allocates nothing ahead of the data.
fn decode_raw<T>(
    stream: &'static str,
    kind: Kind,
    data: &[u8],
    count: usize,
    out: &mut Vec<T>,
    conv: impl Fn(u64) -> T,
) -> Result<()> {
    let w = kind.width();
    let code_bits = if w == 32 { 6 } else { 7 };
    let m = mask(w);
    let mut r = BitReader::new(stream, data);
    let mut done = 0usize;
    while done < count {
        r.align();
        let at = r.byte_pos();
        let n = r.get(32)? as usize;
        if n == 0 || n > BLOCK {
            return Err(Error::decode(
                stream,
                at,
                format_args!("a block of {n} values"),
            ));
        }
        out.reserve(n);
        let mut got = 0usize;
        let mut prev = 0u64;
        while got < n {
            let len = r.get(code_bits)? as u32;
            if len < 1 || len > w {
                return Err(Error::decode(
                    stream,
                    r.byte_pos(),
                    format_args!("bit length {len}"),
                ));
            }
            // Fibonacci code: Fibonacci numbers 1, 2, 3, 5, ... until two 1 bits in a row.
            let (mut f1, mut f2) = (1u64, 1u64);
            let mut run = 0u64;
            let mut last = false;
            loop {
                let b = r.bit()?;
                if b && last {
                    break;
                }
                if b {
                    run += f2;
                }
                last = b;
                let f3 = f1 + f2;
                f1 = f2;
                f2 = f3;
                if run > (n - got) as u64 {
                    return Err(Error::decode(
                        stream,
                        r.byte_pos(),
                        "a run longer than its block",
                    ));
                }
            }
            if run == 0 {
                return Err(Error::decode(stream, r.byte_pos(), "an empty run"));
            }
            for _ in 0..run {
                let mut e = r.get(len)?;
                if len == w {
                    e |= 1u64 << (w - 1);
                }
                let v = if got == 0 {
                    e
                } else {
                    prev.wrapping_add(e) & m
                };
                prev = v;
                got += 1;
                out.push(conv(v));
                done += 1;
                if done == count {
                    return Ok(());
                }
            }
        }
    }
    Ok(())
}

/// Decodes exactly `count` INT32 values.
pub fn decode_i32(data: &[u8], count: usize, out: &mut Vec<i32>) -> Result<()> {
    decode_raw("RLBE INT32 column", Kind::Int32, data, count, out, |b| {
        b as u32 as i32
    })
}

/// Decodes exactly `count` INT64 values.
pub fn decode_i64(data: &[u8], count: usize, out: &mut Vec<i64>) -> Result<()> {
    decode_raw("RLBE INT64 column", Kind::Int64, data, count, out, |b| {
        b as i64
    })
}

/// Decodes exactly `count` FLOAT values.
pub fn decode_f32(data: &[u8], count: usize, out: &mut Vec<f32>) -> Result<()> {
    decode_raw("RLBE FLOAT column", Kind::Float, data, count, out, |b| {
        f32::from_bits(b as u32)
    })
}

/// Decodes exactly `count` DOUBLE values.
pub fn decode_f64(data: &[u8], count: usize, out: &mut Vec<f64>) -> Result<()> {
    decode_raw(
        "RLBE DOUBLE column",
        Kind::Double,
        data,
        count,
        out,
        f64::from_bits,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::test_bits::{bytes, decode_err_at};

    #[test]
    fn fibonacci_codes() {
        // 1 = F(1); 4 = 3 + 1; 12 = 8 + 3 + 1.
        assert_eq!(fibonacci(1), [true]);
        assert_eq!(fibonacci(4), [true, false, true]);
        assert_eq!(fibonacci(12), [true, false, true, false, true]);
    }

    #[test]
    fn hand_computed_block() {
        // 5, 6, 7: entries 5 (3 bits), 1, 1 (1 bit each).
        // 32-bit count 3; '000011' + fib(1) '1' + '1' + '101';
        // '000001' + fib(2) '01' + '1' + '1' '1'.
        let mut e = RlbeEncoder::int32();
        let mut out = Vec::new();
        for v in [5, 6, 7] {
            e.encode_i32(v, &mut out).unwrap();
        }
        e.flush(&mut out).unwrap();
        let mut bits = format!("{:032b}", 3);
        bits += "000011";
        bits += "11";
        bits += "101";
        bits += "000001";
        bits += "011";
        bits += "11";
        while bits.len() % 8 != 0 {
            bits.push('0');
        }
        let want: Vec<u8> = (0..bits.len() / 8)
            .map(|i| u8::from_str_radix(&bits[8 * i..8 * i + 8], 2).unwrap())
            .collect();
        assert_eq!(out, want);
        let mut back = Vec::new();
        decode_i32(&out, 3, &mut back).unwrap();
        assert_eq!(back, [5, 6, 7]);
    }

    #[test]
    fn negatives_and_several_blocks_round_trip() {
        let vals: Vec<i64> = (0..25_000i64)
            .map(|i| if i % 3 == 0 { -i * 7919 } else { i64::MAX - i })
            .collect();
        let mut e = RlbeEncoder::int64();
        let mut out = Vec::new();
        for v in &vals {
            e.encode_i64(*v, &mut out).unwrap();
        }
        e.flush(&mut out).unwrap();
        let mut back = Vec::new();
        decode_i64(&out, vals.len(), &mut back).unwrap();
        assert_eq!(back, vals);
    }

    /// Each encoder takes only its own type (the C++ encoders answer
    /// `E_TYPE_NOT_MATCH`) and writes nothing for the others.
    #[test]
    fn refuses_other_types() {
        let unsupported = |r: Result<()>| matches!(r, Err(Error::Unsupported(_)));
        let mut out = Vec::new();
        let mut i = RlbeEncoder::int32();
        assert!(unsupported(i.encode_i64(1, &mut out)));
        assert!(unsupported(i.encode_f32(1.0, &mut out)));
        assert!(unsupported(i.encode_f64(1.0, &mut out)));
        let mut l = RlbeEncoder::int64();
        assert!(unsupported(l.encode_i32(1, &mut out)));
        assert!(unsupported(l.encode_f64(1.0, &mut out)));
        let mut f = RlbeEncoder::float();
        assert!(unsupported(f.encode_i32(1, &mut out)));
        assert!(unsupported(f.encode_f64(1.0, &mut out)));
        let mut d = RlbeEncoder::double();
        assert!(unsupported(d.encode_i64(1, &mut out)));
        assert!(unsupported(d.encode_f32(1.0, &mut out)));
        i.flush(&mut out).unwrap();
        assert!(out.is_empty(), "nothing written, nothing pending");
    }

    /// The C++ writer's `get_max_byte_size`: `5 * 4 * 10000`, doubled for 64-bit values.
    #[test]
    fn max_byte_size_is_the_cpp_writers() {
        assert_eq!(RlbeEncoder::int32().max_byte_size(), 200_000);
        assert_eq!(RlbeEncoder::float().max_byte_size(), 200_000);
        assert_eq!(RlbeEncoder::int64().max_byte_size(), 400_000);
        assert_eq!(RlbeEncoder::double().max_byte_size(), 400_000);
    }

    /// A flush ends the block: the next value starts a new one, as its first entry.
    #[test]
    fn flush_starts_a_new_block() {
        let mut e = RlbeEncoder::int32();
        let mut out = Vec::new();
        e.encode_i32(5, &mut out).unwrap();
        e.flush(&mut out).unwrap();
        e.encode_i32(7, &mut out).unwrap();
        e.flush(&mut out).unwrap();
        // count 1, length 3, run 1 (`1` + `1`), 5 in 3 bits: 43 bits, 6 bytes; then
        // the same for 7
        let mut want = bytes(&format!("{:032b} 000011 11 101", 1));
        want.extend(bytes(&format!("{:032b} 000011 11 111", 1)));
        assert_eq!(out, want);
        let mut back = Vec::new();
        decode_i32(&out, 2, &mut back).unwrap();
        assert_eq!(back, [5, 7]);
        // 64-bit lengths take 7 bits
        let mut e = RlbeEncoder::int64();
        let mut out = Vec::new();
        e.encode_i64(5, &mut out).unwrap();
        e.flush(&mut out).unwrap();
        assert_eq!(out, bytes(&format!("{:032b} 0000011 11 101", 1)));
    }

    /// Fibonacci run lengths by hand (Zeckendorf bits, lowest first, then `1`): 2 =
    /// `01`, 3 = `001`, 4 = `101`, 5 = `0001`.
    #[test]
    fn fibonacci_run_lengths() {
        assert_eq!(fibonacci(2), [false, true]);
        assert_eq!(fibonacci(3), [false, false, true]);
        assert_eq!(fibonacci(5), [false, false, false, true]);
        assert_eq!(fibonacci(7), [false, true, false, true]);
        // 10000 = 6765 + 2584 + 610 + 34 + 5 + 2, 6765 the 19th number
        let z = fibonacci(10_000);
        assert_eq!((z.len(), z.iter().filter(|b| **b).count()), (19, 6));
        // 5 equal values: entry 1 (1 bit), then four zeros (1 bit each): one segment
        // of length 1 and run 5
        let mut e = RlbeEncoder::int32();
        let mut out = Vec::new();
        for _ in 0..5 {
            e.encode_i32(1, &mut out).unwrap();
        }
        e.flush(&mut out).unwrap();
        assert_eq!(out, bytes(&format!("{:032b} 000001 0001 1 1 0 0 0 0", 5)));
        let mut back = Vec::new();
        decode_i32(&out, 5, &mut back).unwrap();
        assert_eq!(back, [1; 5]);
        // a run of 4 read back: 4 = 3 + 1
        let b = bytes(&format!("{:032b} 000010 101 1 10 11 10 01", 4));
        let mut back = Vec::new();
        decode_i32(&b, 4, &mut back).unwrap();
        assert_eq!(back, [2, 5, 7, 8]);
    }

    /// Bad blocks are errors naming where: an empty or oversized block (at its count),
    /// a bit length of 0 or above the width, a run longer than the block, a stream cut
    /// short.
    #[test]
    fn bad_blocks_are_errors() {
        let d = |b: &[u8], n| decode_i32(b, n, &mut Vec::new());
        assert_eq!(decode_err_at(d(&bytes(&format!("{:032b}", 0)), 1)), 0);
        assert_eq!(decode_err_at(d(&bytes(&format!("{:032b}", 10_001)), 1)), 0);
        // 10,000 is a full block: its first entry reads
        let full = bytes(&format!("{:032b} 000011 11 101", 10_000));
        let mut v = Vec::new();
        decode_i32(&full, 1, &mut v).unwrap();
        assert_eq!(v, [5]);
        // the second block's count is at byte 6
        let mut two = bytes(&format!("{:032b} 000011 11 101", 1));
        two.extend(bytes(&format!("{:032b}", 0)));
        assert_eq!(decode_err_at(d(&two, 2)), 6);
        // bit length 0; 33 for 32-bit values (after the 38 bits read: byte 4)
        assert_eq!(
            decode_err_at(d(&bytes(&format!("{:032b} 000000 11 1", 1)), 1)),
            4
        );
        assert_eq!(
            decode_err_at(d(&bytes(&format!("{:032b} 100001 11 1", 1)), 1)),
            4
        );
        // 32 is the full width: the entry's top bit, written clear, is set again
        let mut v = Vec::new();
        decode_i32(
            &bytes(&format!("{:032b} 100000 11 {:032b}", 1, 5)),
            1,
            &mut v,
        )
        .unwrap();
        assert_eq!(v, [i32::MIN + 5]);
        // for 64-bit values 64 is valid and 65 is not
        let mut l = Vec::new();
        decode_i64(
            &bytes(&format!("{:032b} 1000000 11 {:064b}", 1, 5)),
            1,
            &mut l,
        )
        .unwrap();
        assert_eq!(l, [i64::MIN + 5]);
        let bad = bytes(&format!("{:032b} 1000001 11 {:064b}", 1, 5));
        assert!(decode_i64(&bad, 1, &mut Vec::new()).is_err());
        // a run of 2 in a block of 1 (found after `01`, bit 40: byte 5)
        assert_eq!(
            decode_err_at(d(&bytes(&format!("{:032b} 000001 011 1 1", 1)), 1)),
            5
        );
        // a run of 2 in a block of 2 is the block
        let mut v = Vec::new();
        decode_i32(&bytes(&format!("{:032b} 000001 011 1 1", 2)), 2, &mut v).unwrap();
        assert_eq!(v, [1, 2]);
        // cut short: the count, the length, the run, the entries
        for cut in [
            bytes(&format!("{:024b}", 1)),
            bytes(&format!("{:032b}", 1)),
            bytes(&format!("{:032b} 000011", 1)),
        ] {
            assert!(d(&cut, 1).is_err());
        }
        assert!(d(&bytes(&format!("{:032b} 100000 11", 1))[..5], 1).is_err());
        // a run longer than what is left of its block after an earlier segment: block
        // of 2, 5 in a run of 1, then a run of 2 (`01`), found after bit 51: byte 6
        let over = bytes(&format!("{:032b} 000011 11 101 000001 011 1 1", 2));
        assert_eq!(decode_err_at(d(&over, 2)), 6);
        assert_eq!(decode_err_at(d(&over, 3)), 6);
        // the same with a run of 1 (`11`) is the block: 5, 5 + 1
        let mut v = Vec::new();
        decode_i32(
            &bytes(&format!("{:032b} 000011 11 101 000001 11 1", 2)),
            2,
            &mut v,
        )
        .unwrap();
        assert_eq!(v, [5, 6]);
    }

    /// Zero values read nothing: no block header is read, of an empty or a full stream.
    #[test]
    fn zero_values_read_nothing() {
        let mut v = vec![9];
        decode_i32(&[], 0, &mut v).unwrap();
        let block = bytes(&format!("{:032b} 000011 11 101", 1));
        decode_i32(&block, 0, &mut v).unwrap();
        let mut l = Vec::new();
        decode_i64(&bytes(&format!("{:032b} 0000011 11 101", 1)), 0, &mut l).unwrap();
        let (mut f, mut g) = (Vec::new(), Vec::new());
        decode_f32(&block, 0, &mut f).unwrap();
        decode_f64(&[], 0, &mut g).unwrap();
        assert_eq!((v, l.len(), f.len(), g.len()), (vec![9], 0, 0, 0));
    }

    /// FLOAT and DOUBLE go by their bit patterns: 1.0 (`0x3f800000`), then 1.5
    /// (`0x3fc00000`, a difference of `0x400000`, 23 bits); DOUBLE 2.0
    /// (`0x4000000000000000`, 63 bits) alone.
    #[test]
    fn floats_by_their_bit_patterns() {
        let mut e = RlbeEncoder::float();
        let mut out = Vec::new();
        e.encode_f32(1.0, &mut out).unwrap();
        e.encode_f32(1.5, &mut out).unwrap();
        e.flush(&mut out).unwrap();
        let want = bytes(&format!(
            "{:032b} 011110 11 {:030b} 010111 11 {:023b}",
            2, 0x3f80_0000, 0x40_0000
        ));
        assert_eq!(out, want);
        let mut back = Vec::new();
        decode_f32(&out, 2, &mut back).unwrap();
        assert_eq!(back, [1.0, 1.5]);
        let mut e = RlbeEncoder::double();
        let mut out = Vec::new();
        e.encode_f64(2.0, &mut out).unwrap();
        e.flush(&mut out).unwrap();
        let want = bytes(&format!("{:032b} 0111111 11 {:063b}", 1, 1u64 << 62));
        assert_eq!(out, want);
        let mut back = Vec::new();
        decode_f64(&out, 1, &mut back).unwrap();
        assert_eq!(back, [2.0]);
    }
}
