//! SPRINTZ encoding (format v4 only; INT32, INT64, FLOAT, DOUBLE), with the FIRE
//! predictor TsFile 2.x uses by default.
//!
//! Values go in blocks of 9: one byte `w`, the block's first value (INT32 an unsigned
//! var-int of its bits, INT64 8 bytes, FLOAT 4 and DOUBLE 8 bytes of IEEE bits, all
//! big-endian), then the 8 following values as prediction errors mapped to unsigned
//! (`e <= 0 ? -2e : 2e - 1`) and bit-packed MSB-first in `w` bits each (`w` = the widest,
//! at least 1), `w` bytes. FLOAT/DOUBLE predict on their bit patterns. The predictor
//! (reset per block) guesses `prev + ((acc >> s) * delta) >> b` (s, b = 2, 8 for 32-bit
//! values and 3, 16 for 64-bit; `acc` is a 32-bit accumulator, `delta` the last
//! difference) and learns `acc -= err > 0 ? -delta : delta`. Blocks stream out as they
//! fill. At flush fewer than 9 pending values are written as one byte `0x80 | n` and a
//! frame of another encoding: INT32/INT64 RLE, FLOAT/DOUBLE GORILLA (v4); so the FLOAT
//! and DOUBLE encoders refuse NaN.

use super::gorilla_v2::{self, BitReader, Bits, GorillaV2Encoder};
use super::rle::{self, IntRleEncoder, LongRleEncoder};
use super::Encoder;
use crate::errors::{Error, Result};
use crate::util::io::{put_uvarint, ByteReader};

const BLOCK: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Int32,
    Int64,
    Float,
    Double,
}

impl Kind {
    fn wide(self) -> bool {
        matches!(self, Kind::Int64 | Kind::Double)
    }
}

/// The FIRE predictor over 32- or 64-bit patterns (held sign-extended in an i64).
#[derive(Debug, Clone, Default)]
struct Fire {
    wide: bool,
    acc: i32,
    delta: i64,
}

impl Fire {
    fn predict(&self, prev: i64) -> i64 {
        if self.wide {
            let alpha = (self.acc >> 3) as i128;
            let diff = ((alpha * self.delta as i128) >> 16) as i64;
            prev.wrapping_add(diff)
        } else {
            let alpha = (self.acc >> 2) as i64;
            let diff = (alpha.wrapping_mul(self.delta) as i32) >> 8;
            (prev as i32).wrapping_add(diff) as i64
        }
    }
    fn train(&mut self, pre: i64, val: i64, err: i64) {
        let g = if err > 0 {
            self.delta.wrapping_neg()
        } else {
            self.delta
        };
        if self.wide {
            self.acc = (self.acc as i64).wrapping_sub(g) as i32;
            self.delta = val.wrapping_sub(pre);
        } else {
            self.acc = self.acc.wrapping_sub(g as i32);
            self.delta = (val as i32).wrapping_sub(pre as i32) as i64;
        }
    }
}

/// SPRINTZ encoder.
#[derive(Debug, Clone)]
pub struct SprintzEncoder {
    kind: Kind,
    /// Pending values as sign-extended bit patterns.
    pending: Vec<i64>,
}

impl SprintzEncoder {
    fn new(kind: Kind) -> Self {
        SprintzEncoder {
            kind,
            pending: Vec::with_capacity(BLOCK + 1),
        }
    }
    /// INT32 encoder.
    pub fn int32() -> Self {
        Self::new(Kind::Int32)
    }
    /// INT64 encoder.
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
                "this SPRINTZ encoder takes {:?} values, not {k:?}",
                self.kind
            )))
        }
    }

    fn push(&mut self, v: i64, out: &mut Vec<u8>) {
        self.pending.push(v);
        if self.pending.len() < BLOCK + 1 {
            return;
        }
        let wide = self.kind.wide();
        let mut fire = Fire {
            wide,
            ..Default::default()
        };
        let mut mapped = [0u64; BLOCK];
        for i in 1..=BLOCK {
            let (prev, val) = (self.pending[i - 1], self.pending[i]);
            let pred = fire.predict(prev);
            let err = if wide {
                val.wrapping_sub(pred)
            } else {
                (val as i32).wrapping_sub(pred as i32) as i64
            };
            fire.train(prev, val, err);
            mapped[i - 1] = if wide {
                (if err <= 0 {
                    err.wrapping_mul(-2)
                } else {
                    err.wrapping_mul(2).wrapping_sub(1)
                }) as u64
            } else {
                let e = err as i32;
                (if e <= 0 {
                    e.wrapping_mul(-2)
                } else {
                    e.wrapping_mul(2).wrapping_sub(1)
                }) as u32 as u64
            };
        }
        let w = mapped
            .iter()
            .map(|m| 64 - m.leading_zeros())
            .max()
            .unwrap_or(0)
            .max(1);
        out.push(w as u8);
        let first = self.pending[0];
        match self.kind {
            Kind::Int32 => put_uvarint(out, first as u32),
            Kind::Float => out.extend_from_slice(&(first as u32).to_be_bytes()),
            _ => out.extend_from_slice(&first.to_be_bytes()),
        }
        let mut bits = Bits::default();
        for m in mapped {
            bits.put(m, w, out);
        }
        self.pending.clear();
    }
}

/// NaN would end the GORILLA frame of a page's last values early.
fn refuse_nan(nan: bool) -> Result<()> {
    if nan {
        Err(Error::invalid(
            "SPRINTZ cannot store NaN (a page's last values go through GORILLA, whose end marker is NaN)",
        ))
    } else {
        Ok(())
    }
}

impl Encoder for SprintzEncoder {
    fn encode_i32(&mut self, v: i32, out: &mut Vec<u8>) -> Result<()> {
        self.check(Kind::Int32)?;
        self.push(v as i64, out);
        Ok(())
    }
    fn encode_i64(&mut self, v: i64, out: &mut Vec<u8>) -> Result<()> {
        self.check(Kind::Int64)?;
        self.push(v, out);
        Ok(())
    }
    fn encode_f32(&mut self, v: f32, out: &mut Vec<u8>) -> Result<()> {
        self.check(Kind::Float)?;
        refuse_nan(v.is_nan())?;
        self.push(v.to_bits() as i32 as i64, out);
        Ok(())
    }
    fn encode_f64(&mut self, v: f64, out: &mut Vec<u8>) -> Result<()> {
        self.check(Kind::Double)?;
        refuse_nan(v.is_nan())?;
        self.push(v.to_bits() as i64, out);
        Ok(())
    }
    fn flush(&mut self, out: &mut Vec<u8>) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        out.push(0x80 | self.pending.len() as u8);
        match self.kind {
            Kind::Int32 => {
                let mut e = IntRleEncoder::new();
                for v in &self.pending {
                    e.encode(*v as i32);
                }
                Encoder::flush(&mut e, out)?;
            }
            Kind::Int64 => {
                let mut e = LongRleEncoder::new();
                for v in &self.pending {
                    e.encode(*v);
                }
                Encoder::flush(&mut e, out)?;
            }
            Kind::Float => {
                let mut e = GorillaV2Encoder::float();
                for v in &self.pending {
                    e.encode_f32(f32::from_bits(*v as u32), out)?;
                }
                e.flush(out)?;
            }
            Kind::Double => {
                let mut e = GorillaV2Encoder::double();
                for v in &self.pending {
                    e.encode_f64(f64::from_bits(*v as u64), out)?;
                }
                e.flush(out)?;
            }
        }
        self.pending.clear();
        Ok(())
    }
    fn max_byte_size(&self) -> usize {
        let size = if self.kind.wide() { 8 } else { 4 };
        1 + (self.pending.len() + 1) * size
    }
}

fn decode_raw(
    stream: &'static str,
    kind: Kind,
    data: &[u8],
    count: usize,
    out: &mut Vec<i64>,
) -> Result<()> {
    let wide = kind.wide();
    let mut r = ByteReader::new(data, 0);
    let err = |at: usize, e: Error| Error::decode(stream, at, e);
    while out.len() < count {
        let at = r.position();
        let head = r.read_u8("block header").map_err(|e| err(at, e))?;
        if head & 0x80 != 0 {
            let n = (head & 0x7f) as usize;
            let rest = r.rest();
            let want = n.min(count - out.len());
            match kind {
                Kind::Int32 => {
                    let mut v = Vec::new();
                    rle::decode_into::<i32>(stream, rest, want, &mut v)?;
                    out.extend(v.into_iter().map(|x| x as i64));
                }
                Kind::Int64 => rle::decode_into::<i64>(stream, rest, want, out)?,
                Kind::Float => {
                    let mut v = Vec::new();
                    gorilla_v2::decode_f32(rest, want, &mut v)?;
                    out.extend(v.into_iter().map(|x| x.to_bits() as i32 as i64));
                }
                Kind::Double => {
                    let mut v = Vec::new();
                    gorilla_v2::decode_f64(rest, want, &mut v)?;
                    out.extend(v.into_iter().map(|x| x.to_bits() as i64));
                }
            }
            if out.len() < count {
                return Err(Error::decode(
                    stream,
                    at,
                    "values after the closing group of a page",
                ));
            }
            return Ok(());
        }
        let w = head as u32;
        if w == 0 || w > if wide { 64 } else { 32 } {
            return Err(Error::decode(stream, at, format_args!("bit width {w}")));
        }
        let first = match kind {
            Kind::Int32 => r.read_uvarint("first value").map_err(|e| err(at, e))? as i32 as i64,
            Kind::Float => r.read_i32("first value").map_err(|e| err(at, e))? as i64,
            _ => r.read_i64("first value").map_err(|e| err(at, e))?,
        };
        let packed = r
            .take(w as usize, "packed values")
            .map_err(|e| err(at, e))?;
        let mut bits = BitReader::new(stream, packed);
        let mut fire = Fire {
            wide,
            ..Default::default()
        };
        out.push(first);
        let mut prev = first;
        for _ in 0..BLOCK {
            let m = bits.get(w)?;
            let e = if m & 1 == 0 {
                ((m >> 1) as i64).wrapping_neg()
            } else {
                ((m >> 1) + 1) as i64
            };
            let pred = fire.predict(prev);
            let v = if wide {
                pred.wrapping_add(e)
            } else {
                (pred as i32).wrapping_add(e as i32) as i64
            };
            let e = if wide { e } else { e as i32 as i64 };
            fire.train(prev, v, e);
            if out.len() < count {
                out.push(v);
            }
            prev = v;
        }
    }
    out.truncate(count);
    Ok(())
}

/// Decodes exactly `count` INT32 values.
pub fn decode_i32(data: &[u8], count: usize, out: &mut Vec<i32>) -> Result<()> {
    let mut v = Vec::with_capacity(count.min(data.len() * 8));
    decode_raw("SPRINTZ INT32 column", Kind::Int32, data, count, &mut v)?;
    out.extend(v.into_iter().map(|x| x as i32));
    Ok(())
}

/// Decodes exactly `count` INT64 values.
pub fn decode_i64(data: &[u8], count: usize, out: &mut Vec<i64>) -> Result<()> {
    let mut v = Vec::with_capacity(count.min(data.len() * 8));
    decode_raw("SPRINTZ INT64 column", Kind::Int64, data, count, &mut v)?;
    out.extend(v);
    Ok(())
}

/// Decodes exactly `count` FLOAT values.
pub fn decode_f32(data: &[u8], count: usize, out: &mut Vec<f32>) -> Result<()> {
    let mut v = Vec::with_capacity(count.min(data.len() * 8));
    decode_raw("SPRINTZ FLOAT column", Kind::Float, data, count, &mut v)?;
    out.extend(v.into_iter().map(|x| f32::from_bits(x as u32)));
    Ok(())
}

/// Decodes exactly `count` DOUBLE values.
pub fn decode_f64(data: &[u8], count: usize, out: &mut Vec<f64>) -> Result<()> {
    let mut v = Vec::with_capacity(count.min(data.len() * 8));
    decode_raw("SPRINTZ DOUBLE column", Kind::Double, data, count, &mut v)?;
    out.extend(v.into_iter().map(|x| f64::from_bits(x as u64)));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_block_of_a_ramp() {
        // 10, 11, ..., 18: errors with a fresh predictor: predict(10) = 10 -> err 1 ->
        // mapped 1; then delta 1, acc -= -1 -> acc 1, alpha 0 -> predictions prev,
        // err 1 each -> all mapped 1. w = 1: 0x01, varint 10, one byte 0xff.
        let mut e = SprintzEncoder::int32();
        let mut out = Vec::new();
        for v in 10..19 {
            e.encode_i32(v, &mut out).unwrap();
        }
        assert_eq!(out, [1, 10, 0xff]);
        e.flush(&mut out).unwrap();
        assert_eq!(out.len(), 3, "nothing pending");
        let mut back = Vec::new();
        decode_i32(&out, 9, &mut back).unwrap();
        assert_eq!(back, (10..19).collect::<Vec<_>>());
    }

    #[test]
    fn round_trips_with_a_tail() {
        let vals: Vec<i64> = (0..1003i64)
            .map(|i| match i % 5 {
                0 => i * i * 1000,
                1 => -i,
                2 => i64::MAX - i,
                _ => 7,
            })
            .collect();
        let mut e = SprintzEncoder::int64();
        let mut out = Vec::new();
        for v in &vals {
            e.encode_i64(*v, &mut out).unwrap();
        }
        e.flush(&mut out).unwrap();
        let mut back = Vec::new();
        decode_i64(&out, vals.len(), &mut back).unwrap();
        assert_eq!(back, vals);
        let f: Vec<f64> = (0..50).map(|i| 20.0 + i as f64 * 0.25).collect();
        let mut e = SprintzEncoder::double();
        let mut out = Vec::new();
        for v in &f {
            e.encode_f64(*v, &mut out).unwrap();
        }
        e.flush(&mut out).unwrap();
        let mut back = Vec::new();
        decode_f64(&out, f.len(), &mut back).unwrap();
        assert_eq!(back, f);
    }
}
