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
//! fill. At flush fewer than 9 pending values are written as a short block: one byte
//! `0x80 | n` and a frame of another encoding, INT32/INT64 RLE, FLOAT/DOUBLE GORILLA
//! (v4); so the FLOAT and DOUBLE encoders refuse NaN.
//!
//! The Java and C++ readers undo the mapping in the value width's signed arithmetic,
//! which is wrong for errors of magnitude about 2^30 (2^62) and more, and for 64-bit
//! values Java's prediction wraps where C++'s does not. A block either reader would
//! read wrong is written as a short block of its 9 values instead, which both read
//! exactly (and so does [`decode_i32`] and the others: short blocks may be anywhere).

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
    /// The prediction as the C++ reader makes it (64-bit: the product of the learning
    /// factor and the last difference taken exactly, in 128 bits).
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
    /// The prediction as the Java reader makes it: for 64-bit values the product wraps
    /// at 64 bits (for 32-bit values Java and C++ agree).
    fn predict_java(&self, prev: i64) -> i64 {
        if self.wide {
            let alpha = (self.acc >> 3) as i64;
            prev.wrapping_add(alpha.wrapping_mul(self.delta) >> 16)
        } else {
            self.predict(prev)
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

/// Maps a prediction error to the packed unsigned form (`e <= 0 ? -2e : 2e - 1`,
/// in the value width's wrapping arithmetic, as the Java and C++ writers do).
fn map_error(e: i64, wide: bool) -> u64 {
    if wide {
        (if e <= 0 {
            e.wrapping_mul(-2)
        } else {
            e.wrapping_mul(2).wrapping_sub(1)
        }) as u64
    } else {
        let e = e as i32;
        (if e <= 0 {
            e.wrapping_mul(-2)
        } else {
            e.wrapping_mul(2).wrapping_sub(1)
        }) as u32 as u64
    }
}

/// The error the Java and C++ readers take a packed form `m` for: they read it as a
/// signed number of the value width and compute `m % 2 == 0 ? -m / 2 : (m + 1) / 2`
/// in that width, so a form of the top bit set (an error of magnitude 2^30 or 2^62 and
/// more) comes back wrong.
fn readers_unmap(m: u64, wide: bool) -> i64 {
    if wide {
        let m = m as i64;
        if m % 2 == 0 {
            m.wrapping_neg() / 2
        } else {
            m.wrapping_add(1) / 2
        }
    } else {
        let m = m as u32 as i32;
        (if m % 2 == 0 {
            m.wrapping_neg() / 2
        } else {
            m.wrapping_add(1) / 2
        }) as i64
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

    fn push(&mut self, v: i64, out: &mut Vec<u8>) -> Result<()> {
        self.pending.push(v);
        if self.pending.len() < BLOCK + 1 {
            return Ok(());
        }
        let wide = self.kind.wide();
        let mut fire = Fire {
            wide,
            ..Default::default()
        };
        let mut mapped = [0u64; BLOCK];
        let mut readable = true;
        for i in 1..=BLOCK {
            let (prev, val) = (self.pending[i - 1], self.pending[i]);
            let pred = fire.predict(prev);
            readable &= pred == fire.predict_java(prev);
            let err = if wide {
                val.wrapping_sub(pred)
            } else {
                (val as i32).wrapping_sub(pred as i32) as i64
            };
            fire.train(prev, val, err);
            mapped[i - 1] = map_error(err, wide);
            readable &= readers_unmap(mapped[i - 1], wide) == err;
        }
        if !readable {
            // Bit-packed, this block would read back wrong in Java or C++: write it as a
            // short block instead, which both read exactly.
            // (on an error nothing is written and the value is not kept)
            return self.write_short_block(out, false).inspect_err(|_| {
                self.pending.pop();
            });
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
        Ok(())
    }

    /// Writes the pending values (at most 9) as short blocks: `0x80 | n`, then one frame
    /// of RLE (INT32/INT64) or GORILLA (FLOAT/DOUBLE) holding them. `last`: nothing
    /// follows in the page.
    fn write_short_block(&mut self, out: &mut Vec<u8>, last: bool) -> Result<()> {
        match self.kind {
            Kind::Int32 => {
                out.push(short_header(self.pending.len()));
                let mut e = IntRleEncoder::new();
                for v in &self.pending {
                    e.encode(*v as i32);
                }
                Encoder::flush(&mut e, out)?;
            }
            Kind::Int64 => {
                out.push(short_header(self.pending.len()));
                let mut e = LongRleEncoder::new();
                for v in &self.pending {
                    e.encode(*v);
                }
                Encoder::flush(&mut e, out)?;
            }
            Kind::Float | Kind::Double if last => {
                // nothing follows: the frame may end anywhere
                let (f, _) = gorilla_frame(self.kind, &self.pending)?;
                out.push(short_header(self.pending.len()));
                out.extend_from_slice(&f);
            }
            Kind::Float | Kind::Double => {
                let frames = gorilla_frames(self.kind, &self.pending)?.ok_or_else(|| {
                    Error::invalid(
                        "SPRINTZ: these 9 values cannot be split into GORILLA frames that \
                         the Java and C++ readers both read (every split ends a frame on a \
                         byte boundary)",
                    )
                })?;
                for (n, f) in frames {
                    out.push(short_header(n));
                    out.extend_from_slice(&f);
                }
            }
        }
        self.pending.clear();
        Ok(())
    }
}

/// The header byte of a short block of `n` (1 to 9) values: `0x80 | n`.
fn short_header(n: usize) -> u8 {
    0x80 | n as u8
}

/// One GORILLA frame of `vals` (bit patterns) and whether its end marker ended on a byte
/// boundary.
fn gorilla_frame(kind: Kind, vals: &[i64]) -> Result<(Vec<u8>, bool)> {
    let mut out = Vec::new();
    let mut e = if kind == Kind::Float {
        GorillaV2Encoder::float()
    } else {
        GorillaV2Encoder::double()
    };
    for v in vals {
        if kind == Kind::Float {
            e.encode_f32(f32::from_bits(*v as u32), &mut out)?;
        } else {
            e.encode_f64(f64::from_bits(*v as u64), &mut out)?;
        }
    }
    let aligned = e.flush_frame(&mut out);
    Ok((out, aligned))
}

/// Splits `vals` into GORILLA frames (as few as possible, first ones longest) none of
/// which ends on a byte boundary; `None` if no split does.
///
/// After a frame's end marker both writers add a closing byte, which the Java reader
/// always consumes (it fetches the next byte as soon as one is used up) but the C++
/// reader of TsFile 2.5 only when the marker did not end on a byte boundary; so a
/// frame that others follow must not end on one.
#[allow(clippy::type_complexity)]
fn gorilla_frames(kind: Kind, vals: &[i64]) -> Result<Option<Vec<(usize, Vec<u8>)>>> {
    if vals.is_empty() {
        return Ok(Some(Vec::new()));
    }
    for n in (1..=vals.len()).rev() {
        let (f, aligned) = gorilla_frame(kind, &vals[..n])?;
        if aligned {
            continue;
        }
        if let Some(mut rest) = gorilla_frames(kind, &vals[n..])? {
            rest.insert(0, (n, f));
            return Ok(Some(rest));
        }
    }
    Ok(None)
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
        self.push(v as i64, out)
    }
    fn encode_i64(&mut self, v: i64, out: &mut Vec<u8>) -> Result<()> {
        self.check(Kind::Int64)?;
        self.push(v, out)
    }
    fn encode_f32(&mut self, v: f32, out: &mut Vec<u8>) -> Result<()> {
        self.check(Kind::Float)?;
        refuse_nan(v.is_nan())?;
        self.push(v.to_bits() as i32 as i64, out)
    }
    fn encode_f64(&mut self, v: f64, out: &mut Vec<u8>) -> Result<()> {
        self.check(Kind::Double)?;
        refuse_nan(v.is_nan())?;
        self.push(v.to_bits() as i64, out)
    }
    fn flush(&mut self, out: &mut Vec<u8>) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        self.write_short_block(out, true)
    }
    fn max_byte_size(&self) -> usize {
        let size = if self.kind.wide() { 8 } else { 4 };
        1 + (self.pending.len() + 1) * size
    }
}

/// Decodes `count` values as the C++ reader does; `java_misread` counts the blocks
/// whose 64-bit predictions Java makes differently (so reads wrong).
fn decode_raw(
    stream: &'static str,
    kind: Kind,
    data: &[u8],
    count: usize,
    out: &mut Vec<i64>,
    java_misread: &mut usize,
) -> Result<()> {
    let wide = kind.wide();
    let mut r = ByteReader::new(data, 0);
    let err = |at: usize, e: Error| Error::decode(stream, at, e);
    while out.len() < count {
        let at = r.position();
        let head = r.read_u8("block header").map_err(|e| err(at, e))?;
        if head & 0x80 != 0 {
            // A short block: n values in one RLE or GORILLA frame; more blocks may follow.
            let n = (head & 0x7f) as usize;
            if n == 0 || n > BLOCK + 1 {
                return Err(Error::decode(
                    stream,
                    at,
                    format_args!("a short block of 1..=9 values, found {n}"),
                ));
            }
            let rest = r.rest();
            let used = match kind {
                Kind::Int32 | Kind::Int64 => {
                    let mut lr = ByteReader::new(rest, 0);
                    let len = lr
                        .read_uvarint("RLE frame length")
                        .map_err(|e| err(at, e))?;
                    let used = lr.position() + len as usize;
                    if used > rest.len() {
                        return Err(Error::decode(
                            stream,
                            at,
                            format_args!("an RLE frame of {len} bytes past the end"),
                        ));
                    }
                    if kind == Kind::Int32 {
                        let mut v = Vec::new();
                        rle::decode_into::<i32>(stream, &rest[..used], n, &mut v)?;
                        out.extend(v.into_iter().map(|x| x as i64));
                    } else {
                        rle::decode_into::<i64>(stream, &rest[..used], n, out)?;
                    }
                    used
                }
                Kind::Float => {
                    let mut v = Vec::new();
                    let used = gorilla_v2::decode_frame_f32(rest, n, &mut v)?;
                    out.extend(v.into_iter().map(|x| x.to_bits() as i32 as i64));
                    used
                }
                Kind::Double => {
                    let mut v = Vec::new();
                    let used = gorilla_v2::decode_frame_f64(rest, n, &mut v)?;
                    out.extend(v.into_iter().map(|x| x.to_bits() as i64));
                    used
                }
            };
            // (a frame's closing byte may be missing at the very end of a page)
            r.take(used.min(rest.len()), "short block")
                .map_err(|e| err(at, e))?;
            continue;
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
        let mut agree = true;
        for _ in 0..BLOCK {
            let m = bits.get(w)?;
            let e = if m & 1 == 0 {
                ((m >> 1) as i64).wrapping_neg()
            } else {
                ((m >> 1) + 1) as i64
            };
            let pred = fire.predict(prev);
            agree &= pred == fire.predict_java(prev);
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
        *java_misread += !agree as usize;
    }
    out.truncate(count);
    Ok(())
}

/// How many full blocks of a 64-bit (INT64 or DOUBLE) SPRINTZ column the Java reader
/// predicts differently from the C++ reader, which wrote them.
#[cfg(test)]
pub(crate) fn java_misread_blocks(double: bool, data: &[u8], count: usize) -> Result<usize> {
    let mut n = 0;
    let kind = if double { Kind::Double } else { Kind::Int64 };
    decode_raw("SPRINTZ column", kind, data, count, &mut Vec::new(), &mut n)?;
    Ok(n)
}

/// Decodes exactly `count` INT32 values.
pub fn decode_i32(data: &[u8], count: usize, out: &mut Vec<i32>) -> Result<()> {
    let mut v = Vec::with_capacity(count.min(data.len() * 8));
    decode_raw(
        "SPRINTZ INT32 column",
        Kind::Int32,
        data,
        count,
        &mut v,
        &mut 0,
    )?;
    out.extend(v.into_iter().map(|x| x as i32));
    Ok(())
}

/// Decodes exactly `count` INT64 values.
pub fn decode_i64(data: &[u8], count: usize, out: &mut Vec<i64>) -> Result<()> {
    let mut v = Vec::with_capacity(count.min(data.len() * 8));
    decode_raw(
        "SPRINTZ INT64 column",
        Kind::Int64,
        data,
        count,
        &mut v,
        &mut 0,
    )?;
    out.extend(v);
    Ok(())
}

/// Decodes exactly `count` FLOAT values.
pub fn decode_f32(data: &[u8], count: usize, out: &mut Vec<f32>) -> Result<()> {
    let mut v = Vec::with_capacity(count.min(data.len() * 8));
    decode_raw(
        "SPRINTZ FLOAT column",
        Kind::Float,
        data,
        count,
        &mut v,
        &mut 0,
    )?;
    out.extend(v.into_iter().map(|x| f32::from_bits(x as u32)));
    Ok(())
}

/// Decodes exactly `count` DOUBLE values.
pub fn decode_f64(data: &[u8], count: usize, out: &mut Vec<f64>) -> Result<()> {
    let mut v = Vec::with_capacity(count.min(data.len() * 8));
    decode_raw(
        "SPRINTZ DOUBLE column",
        Kind::Double,
        data,
        count,
        &mut v,
        &mut 0,
    )?;
    out.extend(v.into_iter().map(|x| f64::from_bits(x as u64)));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::test_bits::decode_err_at;

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

    /// Each encoder takes only its own type (the C++ encoders answer
    /// `E_TYPE_NOT_MATCH`), FLOAT/DOUBLE refuse NaN; a refused value is not kept.
    #[test]
    fn refuses_other_types_and_nan() {
        let unsupported = |r: Result<()>| matches!(r, Err(Error::Unsupported(_)));
        let invalid = |r: Result<()>| matches!(r, Err(Error::InvalidInput(_)));
        let mut out = Vec::new();
        let mut i = SprintzEncoder::int32();
        assert!(unsupported(i.encode_i64(1, &mut out)));
        assert!(unsupported(i.encode_f32(1.0, &mut out)));
        assert!(unsupported(i.encode_f64(1.0, &mut out)));
        let mut l = SprintzEncoder::int64();
        assert!(unsupported(l.encode_i32(1, &mut out)));
        assert!(unsupported(l.encode_f64(1.0, &mut out)));
        let mut f = SprintzEncoder::float();
        assert!(unsupported(f.encode_i32(1, &mut out)));
        assert!(unsupported(f.encode_f64(1.0, &mut out)));
        assert!(invalid(f.encode_f32(f32::NAN, &mut out)));
        let mut d = SprintzEncoder::double();
        assert!(unsupported(d.encode_i64(1, &mut out)));
        assert!(unsupported(d.encode_f32(1.0, &mut out)));
        assert!(invalid(d.encode_f64(f64::NAN, &mut out)));
        for e in [&mut i, &mut l, &mut f, &mut d] {
            e.flush(&mut out).unwrap();
            assert_eq!(e.max_byte_size() % 4, 1, "nothing pending");
        }
        assert!(out.is_empty(), "nothing written");
    }

    /// The C++ writer's `get_max_byte_size`: `1 + (pending + 1) * sizeof(value)`,
    /// the pending values counting the block's first one.
    #[test]
    fn max_byte_size_is_the_cpp_writers() {
        let mut out = Vec::new();
        let mut i = SprintzEncoder::int32();
        assert_eq!(i.max_byte_size(), 5);
        for v in 0..3 {
            i.encode_i32(v, &mut out).unwrap();
        }
        assert_eq!(i.max_byte_size(), 1 + 4 * 4);
        for v in 3..9 {
            i.encode_i32(v, &mut out).unwrap();
        }
        assert_eq!(i.max_byte_size(), 5, "the block of 9 is written");
        let mut l = SprintzEncoder::int64();
        assert_eq!(l.max_byte_size(), 9);
        for v in 0..3 {
            l.encode_i64(v, &mut out).unwrap();
        }
        assert_eq!(l.max_byte_size(), 1 + 4 * 8);
        assert_eq!(SprintzEncoder::float().max_byte_size(), 5);
        assert_eq!(SprintzEncoder::double().max_byte_size(), 9);
    }

    /// Short blocks by hand: `0x80 | n` and an RLE frame (uvarint length, bit width,
    /// runs: `9 << 1` then the value in one byte) holds 1 to 9 values; 0 and 10 are
    /// errors at the header, so is a frame longer than what is left.
    #[test]
    fn short_blocks_by_hand() {
        let mut v = Vec::new();
        decode_i32(&[0x89, 3, 3, 0x12, 5], 9, &mut v).unwrap();
        assert_eq!(v, [5; 9]);
        let mut v = Vec::new();
        decode_i32(&[0x81, 3, 3, 0x02, 5, 0x81, 3, 3, 0x02, 6], 2, &mut v).unwrap();
        assert_eq!(v, [5, 6]);
        let d = |b: &[u8], n| decode_i32(b, n, &mut Vec::new());
        assert_eq!(decode_err_at(d(&[0x80, 3, 3, 0x02, 5], 1)), 0);
        assert_eq!(decode_err_at(d(&[0x8a, 3, 3, 0x14, 5], 10)), 0);
        assert_eq!(decode_err_at(d(&[0x81, 5, 3, 0x02, 5], 1)), 0);
        // the second block's header is at byte 5
        assert_eq!(decode_err_at(d(&[0x81, 3, 3, 0x02, 5, 0x80], 2)), 5);
        // FLOAT: GORILLA frames, each ended by the NaN marker and a closing byte; 1.0
        // alone is 53 bits (7 bytes), 2.0 alone too (0x40000000, marker xor 0x3fc00000:
        // `11 00010 00111 11111111`)
        let one = [0x3f, 0x80, 0, 0, 0xc2, 0x88, 0x08];
        let two = [0x40, 0, 0, 0, 0xc4, 0x7f, 0xf0];
        let mut page = vec![0x81];
        page.extend_from_slice(&one);
        page.push(0x81);
        page.extend_from_slice(&two);
        let mut f = Vec::new();
        decode_f32(&page, 2, &mut f).unwrap();
        assert_eq!(f, [1.0, 2.0]);
        // a page's last frame may lack its closing byte: 1.0, 2.0 end on a byte
        // boundary (72 bits, the closing byte is an added zero)
        let mut last = vec![0x82, 0x3f, 0x80, 0, 0];
        last.extend_from_slice(&[0xc2, 0x7f, 0xfc, 0x47, 0xff]);
        let mut f = Vec::new();
        decode_f32(&last, 2, &mut f).unwrap();
        assert_eq!(f, [1.0, 2.0]);
        last.push(0);
        let mut f = Vec::new();
        decode_f32(&last, 2, &mut f).unwrap();
        assert_eq!(f, [1.0, 2.0]);
        // a short block read for fewer values gives only those: the first 3 values of
        // blocks of 1 and 9
        let mut v = Vec::new();
        decode_i32(&[0x81, 3, 3, 0x02, 5, 0x89, 3, 3, 0x12, 6], 3, &mut v).unwrap();
        assert_eq!(v, [5, 6, 6]);
        let mut l = Vec::new();
        decode_i64(&[0x89, 3, 3, 0x12, 6], 4, &mut l).unwrap();
        assert_eq!(l, [6; 4]);
    }

    /// A FLOAT block that neither reader would read bit-packed (1.0 then -1.0: an error
    /// of -2^31, packed as 0) in the middle of a page, whose 9 values in one GORILLA frame
    /// would end on a byte boundary (format/docs/tsfile-v4.md, section 8: the C++ 2.5 reader would
    /// then not consume the closing byte): written as a frame of the first 8 values and
    /// one of the last. By hand, from the module docs of GORILLA: 1.0 `3f800000`; -1.0,
    /// xor `80000000`: `11 00000 00000 1`; 1.5, xor `80400000`: `11 00000 01001
    /// 1000000001`; 1.0, xor `00400000` in the stored window: `10 0000000001`; equal
    /// values `0`; the NaN marker after 1.0, xor `40400000` in the window: `10
    /// 0100000001`. Nine values: 32 + 13 + 22 + 12 + 5 + 12 = 96 bits, on a byte
    /// boundary; the first eight: 95 bits, 12 bytes; 1.0 alone: 53 bits, 7 bytes.
    #[test]
    fn unreadable_float_block_never_ends_a_frame_on_a_byte_boundary() {
        let vals = [1.0f32, -1.0, 1.5, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
        let mut e = SprintzEncoder::float();
        let mut out = Vec::new();
        for v in vals {
            e.encode_f32(v, &mut out).unwrap();
        }
        let mut want = vec![
            0x88, 0x3f, 0x80, 0, 0, 0xc0, 0x0e, 0x04, 0xc0, 0x30, 0x02, 0x12,
        ];
        want.extend_from_slice(&[0x02, 0x81, 0x3f, 0x80, 0, 0, 0xc2, 0x88, 0x08]);
        assert_eq!(out, want);
        e.flush(&mut out).unwrap();
        assert_eq!(out.len(), want.len(), "nothing pending");
        let mut back = Vec::new();
        decode_f32(&out, 9, &mut back).unwrap();
        assert_eq!(back, vals);
    }

    /// Bit widths: 1 to 32 for 32-bit values, to 64 for 64-bit ones; 0 and more are
    /// errors at the block's header.
    #[test]
    fn bit_widths() {
        // w = 32, first value 0 (varint), 8 errors of 0 in 32 bytes: nine zeros
        let mut b = vec![32, 0];
        b.extend_from_slice(&[0; 32]);
        let mut v = Vec::new();
        decode_i32(&b, 9, &mut v).unwrap();
        assert_eq!(v, [0; 9]);
        b[0] = 33;
        assert_eq!(decode_err_at(decode_i32(&b, 9, &mut Vec::new())), 0);
        b[0] = 0;
        assert_eq!(decode_err_at(decode_i32(&b, 9, &mut Vec::new())), 0);
        // after the ramp block of `hand_computed_block_of_a_ramp`, at byte 3
        assert_eq!(
            decode_err_at(decode_i32(&[1, 10, 0xff, 0], 10, &mut Vec::new())),
            3
        );
        // INT64: w = 64, the first value in 8 bytes, then 64 bytes
        let mut b = vec![64, 0, 0, 0, 0, 0, 0, 0, 7];
        b.extend_from_slice(&[0; 64]);
        let mut v = Vec::new();
        decode_i64(&b, 9, &mut v).unwrap();
        assert_eq!(v, [7; 9]);
        b[0] = 65;
        assert_eq!(decode_err_at(decode_i64(&b, 9, &mut Vec::new())), 0);
        // a block read for fewer values gives only those
        let mut v = Vec::new();
        decode_i32(&[1, 10, 0xff], 4, &mut v).unwrap();
        assert_eq!(v, [10, 11, 12, 13]);
    }

    /// INT64 steps of 2^20: the predictions (`acc >> 3` times the last difference,
    /// `>> 16`) stay far below 2^63, so Java's 64-bit product equals the C++ reader's
    /// exact one and the block is bit-packed, not written as a short block.
    #[test]
    fn int64_block_both_readers_predict_alike_is_bit_packed() {
        let vals: Vec<i64> = (0..9).map(|i| i << 20).collect();
        let mut e = SprintzEncoder::int64();
        let mut out = Vec::new();
        for v in &vals {
            e.encode_i64(*v, &mut out).unwrap();
        }
        let w = out[0] as usize;
        assert!(
            (1..=64).contains(&w),
            "a bit width, not a short block: {:#x}",
            out[0]
        );
        assert_eq!(out[1..9], [0; 8], "the first value, 0, in 8 bytes");
        assert_eq!(out.len(), 1 + 8 + w);
        assert_eq!(java_misread_blocks(false, &out, 9).unwrap(), 0);
        let mut back = Vec::new();
        decode_i64(&out, 9, &mut back).unwrap();
        assert_eq!(back, vals);
    }

    /// Bit-packed, an error of 2^30 would read back wrong in Java and C++ (they undo
    /// the mapping in 32-bit signed arithmetic: `(2^31 - 1 + 1) / 2` overflows), so
    /// such a block is written as a short block of its 9 values.
    #[test]
    fn unreadable_block_becomes_a_short_block() {
        let vals = [0, 1 << 30, 0, 0, 0, 0, 0, 0, 0];
        let mut e = SprintzEncoder::int32();
        let mut out = Vec::new();
        for v in vals {
            e.encode_i32(v, &mut out).unwrap();
        }
        assert_eq!(out[0], 0x89);
        let mut back = Vec::new();
        rle::decode_into::<i32>("test", &out[1..], 9, &mut back).unwrap();
        assert_eq!(back, vals);
        let mut back = Vec::new();
        decode_i32(&out, 9, &mut back).unwrap();
        assert_eq!(back, vals);
        // an error of 2^30 - 1 maps to 2^31 - 2, which they read right: bit-packed
        let vals = [0, (1 << 30) - 1, 0, 0, 0, 0, 0, 0, 0];
        let mut out = Vec::new();
        for v in vals {
            e.encode_i32(v, &mut out).unwrap();
        }
        assert_eq!(out[0], 31, "w = 31");
        let mut back = Vec::new();
        decode_i32(&out, 9, &mut back).unwrap();
        assert_eq!(back, vals);
    }
}
