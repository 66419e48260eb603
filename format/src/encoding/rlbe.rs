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

fn decode_raw(
    stream: &'static str,
    kind: Kind,
    data: &[u8],
    count: usize,
    mut push: impl FnMut(u64),
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
                push(v);
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
    out.reserve(count.min(data.len() * 8));
    decode_raw("RLBE INT32 column", Kind::Int32, data, count, |b| {
        out.push(b as u32 as i32)
    })
}

/// Decodes exactly `count` INT64 values.
pub fn decode_i64(data: &[u8], count: usize, out: &mut Vec<i64>) -> Result<()> {
    out.reserve(count.min(data.len() * 8));
    decode_raw("RLBE INT64 column", Kind::Int64, data, count, |b| {
        out.push(b as i64)
    })
}

/// Decodes exactly `count` FLOAT values.
pub fn decode_f32(data: &[u8], count: usize, out: &mut Vec<f32>) -> Result<()> {
    out.reserve(count.min(data.len() * 8));
    decode_raw("RLBE FLOAT column", Kind::Float, data, count, |b| {
        out.push(f32::from_bits(b as u32))
    })
}

/// Decodes exactly `count` DOUBLE values.
pub fn decode_f64(data: &[u8], count: usize, out: &mut Vec<f64>) -> Result<()> {
    out.reserve(count.min(data.len() * 8));
    decode_raw("RLBE DOUBLE column", Kind::Double, data, count, |b| {
        out.push(f64::from_bits(b))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
