//! GORILLA, the 0.10 variant (spec §6.5).
//!
//! Per page: the first value's raw bits little-endian (4 or 8 bytes), then a bit stream
//! (MSB-first) with one code per following value, then the code of the end marker NaN,
//! then zero padding. `L`/`T` are the leading/trailing zeros of the previous **value**:
//!
//! | condition (`x = bits ^ prev`) | code |
//! |---|---|
//! | `x == 0` | `0` |
//! | `nlz(x) >= L && ntz(x) >= T` | `10`, bits `W-1-L ..= T` of `x` |
//! | otherwise | `11`, `nlz(x)` in 5/6 bits, `W-nlz-ntz` in 6/7 bits, bits `W-1-nlz ..= ntz` |
//!
//! Completed bytes reach the column stream as soon as they are complete (Java's
//! `writeBit` flushes every full byte), which the page-sealing estimate sees.
//!
//! **NaN.** NaN is the end marker, so a NaN value would end the page early for the Java
//! reader: [`GorillaEncoder`] refuses every NaN with [`Error::InvalidInput`] and leaves
//! its state unchanged.
//!
//! **Decoding past the end marker.** The Java reader is driven by the time column and
//! keeps calling `readFloat`/`readDouble` after it has decoded a NaN (the end marker, or
//! a NaN data value in a page written by the Java writer). It then returns the NaN and
//! goes on decoding codes from a bit source that no longer advances through the stream:
//! first the bits left in the byte it holds, then, because `numberLeftInBuffer` goes
//! negative and Java masks shift counts, a periodic pattern of 24 zero bits followed by
//! the 8 bits of that byte, forever. Usually that yields NaN again and again (`0` codes),
//! but the held byte's bits can also decode to other values. [`decode_f32`] and
//! [`decode_f64`] reproduce exactly what Java returns in that case; note also that the
//! end marker is only recognised after a `10`/`11` code (a NaN first value, or a `0`
//! code repeating a NaN, does not end the stream), as in Java.

use super::{BatchResult, Encoder};
use crate::errors::{Error, Result};
#[cfg(test)]
use crate::util::io::{java_double_bits, java_float_bits};

/// Parameters of the single (`W = 32`) and double (`W = 64`) precision variants.
trait Variant {
    const W: u32;
    /// Bits of the leading-zero field of a `11` code.
    const LEAD_BITS: u32;
    /// Bits of the length field of a `11` code.
    const LEN_BITS: u32;
    /// Java's canonical NaN bits.
    const NAN: u64;
    const NAME: &'static str;
    /// The data type's name.
    const TYPE: &'static str;
    fn is_nan(bits: u64) -> bool;
    fn lz(bits: u64) -> u32;
    fn tz(bits: u64) -> u32;
}

struct Single;
struct Double;

impl Variant for Single {
    const W: u32 = 32;
    const LEAD_BITS: u32 = 5;
    const LEN_BITS: u32 = 6;
    const NAN: u64 = 0x7fc0_0000;
    const NAME: &'static str = "GORILLA FLOAT column";
    const TYPE: &'static str = "FLOAT";
    #[inline]
    fn is_nan(bits: u64) -> bool {
        f32::from_bits(bits as u32).is_nan()
    }
    #[inline]
    fn lz(bits: u64) -> u32 {
        (bits as u32).leading_zeros()
    }
    #[inline]
    fn tz(bits: u64) -> u32 {
        (bits as u32).trailing_zeros()
    }
}

impl Variant for Double {
    const W: u32 = 64;
    const LEAD_BITS: u32 = 6;
    const LEN_BITS: u32 = 7;
    const NAN: u64 = 0x7ff8_0000_0000_0000;
    const NAME: &'static str = "GORILLA DOUBLE column";
    const TYPE: &'static str = "DOUBLE";
    #[inline]
    fn is_nan(bits: u64) -> bool {
        f64::from_bits(bits).is_nan()
    }
    #[inline]
    fn lz(bits: u64) -> u32 {
        bits.leading_zeros()
    }
    #[inline]
    fn tz(bits: u64) -> u32 {
        bits.trailing_zeros()
    }
}

/// Java `SinglePrecisionEncoder` / `DoublePrecisionEncoder`.
#[derive(Debug, Clone)]
pub struct GorillaEncoder {
    double: bool,
    st: State,
    /// Bytes of up to [`BLOCK`] values, gathered before they go to the stream.
    block: Vec<u8>,
}

/// Values a run encodes into [`GorillaEncoder::block`] before appending it to the stream.
const BLOCK: usize = 64;
/// Room for [`BLOCK`] values: a value adds at most 79 bits (the first one 8 bytes), so
/// fewer than 80 words complete in a block; 8 bytes more for the first value's copy.
const BLOCK_BYTES: usize = BLOCK * 10 + 16;

/// The encoder's state, copied into locals for a run of values.
#[derive(Debug, Clone, Copy, Default)]
struct State {
    started: bool,
    prev: u64,
    lead: u32,
    trail: u32,
    /// Pending bits, left-aligned (the bits below them are zero): fewer than 64 inside
    /// a run, fewer than 8 between runs.
    buf: u64,
    nbits: u32,
}

/// Where a run writes: a block of bytes and the write position.
struct Sink<'a> {
    b: &'a mut [u8],
    pos: usize,
}

impl Sink<'_> {
    /// Writes 8 bytes and advances by `n <= 8` of them.
    #[inline(always)]
    fn put8(&mut self, bytes: [u8; 8], n: usize) {
        self.b[self.pos..self.pos + 8].copy_from_slice(&bytes);
        self.pos += n;
    }
}

impl State {
    /// Appends the low `n <= 64` bits of `code` (the bits above must be zero), writing
    /// a word whenever 64 bits are complete.
    #[inline(always)]
    fn put(&mut self, code: u64, n: u32, sink: &mut Sink) {
        let free = 64 - self.nbits;
        if n < free {
            self.buf |= code << (free - n);
            self.nbits += n;
        } else {
            let over = n - free;
            sink.put8((self.buf | (code >> over)).to_be_bytes(), 8);
            // The low `over` bits of the code, left-aligned (none when `over` is 0:
            // `over < 64`, so both shifts are in range and the second drops the last bit).
            self.buf = (code << (63 - over)) << 1;
            self.nbits = over;
        }
    }

    /// Writes every completed byte, keeping fewer than 8 pending bits (Java's
    /// `writeBit` writes each byte as soon as it is full).
    #[inline]
    fn settle(&mut self, out: &mut Vec<u8>) {
        let full = self.nbits / 8;
        if full > 0 {
            let len = out.len();
            // Fixed-size copy, then cut back to the completed bytes.
            out.extend_from_slice(&self.buf.to_be_bytes());
            out.truncate(len + full as usize);
            self.buf <<= 8 * full;
            self.nbits -= 8 * full;
        }
    }

    /// Encodes one value's bits (no NaN check).
    #[inline(always)]
    fn value<V: Variant>(&mut self, bits: u64, sink: &mut Sink) {
        if !self.started {
            self.started = true;
            self.set_prev::<V>(bits);
            sink.put8(bits.to_le_bytes(), (V::W / 8) as usize);
            return;
        }
        let x = bits ^ self.prev;
        if x == 0 {
            self.put(0, 1, sink);
        } else {
            let l = V::lz(x);
            let t = V::tz(x);
            if l >= self.lead && t >= self.trail {
                // `10`, then bits W-1-lead ..= trail of x (at least one bit: x != 0).
                let m = V::W - self.lead - self.trail;
                let body = x >> self.trail;
                if m <= 62 {
                    self.put((0b10 << m) | body, 2 + m, sink);
                } else {
                    self.put(0b10, 2, sink);
                    self.put(body, m, sink);
                }
            } else {
                // `11`, nlz(x), the length, then the meaningful bits of x.
                let m = V::W - l - t;
                let head_bits = 2 + V::LEAD_BITS + V::LEN_BITS;
                let head =
                    (0b11 << (V::LEAD_BITS + V::LEN_BITS)) | ((l as u64) << V::LEN_BITS) | m as u64;
                let body = x >> t;
                if head_bits + m <= 64 {
                    self.put((head << m) | body, head_bits + m, sink);
                } else {
                    self.put(head, head_bits, sink);
                    self.put(body, m, sink);
                }
            }
        }
        self.set_prev::<V>(bits);
    }

    #[inline(always)]
    fn set_prev<V: Variant>(&mut self, bits: u64) {
        self.prev = bits;
        self.lead = V::lz(bits);
        self.trail = V::tz(bits);
    }
}

impl GorillaEncoder {
    /// The FLOAT encoder (`SinglePrecisionEncoder`).
    pub fn single() -> Self {
        Self::new(false)
    }

    /// The DOUBLE encoder (`DoublePrecisionEncoder`).
    pub fn double() -> Self {
        Self::new(true)
    }

    fn new(double: bool) -> Self {
        GorillaEncoder {
            double,
            st: State::default(),
            block: vec![0; BLOCK_BYTES],
        }
    }

    /// Encodes `vals` (their raw bits by `bits`), refusing the first NaN: the values
    /// before it stay encoded, the state is that after them.
    #[inline]
    fn run<V: Variant, T: Copy>(
        &mut self,
        vals: &[T],
        bits: impl Fn(T) -> u64,
        out: &mut Vec<u8>,
    ) -> BatchResult {
        let mut st = self.st;
        let mut res = Ok(());
        let mut done = 0;
        for chunk in vals.chunks(BLOCK) {
            let mut sink = Sink {
                b: &mut self.block,
                pos: 0,
            };
            for v in chunk {
                let b = bits(*v);
                if V::is_nan(b) {
                    res = Err((done, nan_refused(V::TYPE)));
                    break;
                }
                st.value::<V>(b, &mut sink);
                done += 1;
            }
            out.extend_from_slice(&sink.b[..sink.pos]);
            if res.is_err() {
                break;
            }
        }
        st.settle(out);
        self.st = st;
        res
    }

    /// Runs `f` on the state with a sink, then appends what it wrote and settles.
    fn with_sink(&mut self, out: &mut Vec<u8>, f: impl FnOnce(&mut State, &mut Sink)) {
        let mut sink = Sink {
            b: &mut self.block,
            pos: 0,
        };
        f(&mut self.st, &mut sink);
        out.extend_from_slice(&sink.b[..sink.pos]);
        self.st.settle(out);
    }

    /// Encodes raw bits as Java does, NaN included (test helper).
    #[cfg(test)]
    fn encode_bits<V: Variant>(&mut self, bits: u64, out: &mut Vec<u8>) {
        self.with_sink(out, |st, sink| st.value::<V>(bits, sink));
    }

    /// Ends the page: the end marker, then the last byte zero-padded.
    fn finish<V: Variant>(&mut self, out: &mut Vec<u8>) {
        self.with_sink(out, |st, sink| st.value::<V>(V::NAN, sink));
        if self.st.nbits > 0 {
            out.push((self.st.buf >> 56) as u8);
        }
        self.st = State::default();
    }

    fn wrong_width(&self) -> Error {
        Error::unsupported(if self.double {
            "this GORILLA encoder takes DOUBLE values, not FLOAT"
        } else {
            "this GORILLA encoder takes FLOAT values, not DOUBLE"
        })
    }
}

fn nan_refused(t: &str) -> Error {
    Error::invalid(format!(
        "NaN cannot be stored with GORILLA ({t}): NaN is the encoding's end-of-page marker \
         and would truncate the page for readers; use PLAIN for series with NaN"
    ))
}

impl Encoder for GorillaEncoder {
    fn encode_f32(&mut self, v: f32, out: &mut Vec<u8>) -> Result<()> {
        self.encode_f32s(&[v], out).map_err(|(_, e)| e)
    }

    fn encode_f64(&mut self, v: f64, out: &mut Vec<u8>) -> Result<()> {
        self.encode_f64s(&[v], out).map_err(|(_, e)| e)
    }

    fn encode_f32s(&mut self, v: &[f32], out: &mut Vec<u8>) -> BatchResult {
        if self.double {
            return match v.is_empty() {
                true => Ok(()),
                false => Err((0, self.wrong_width())),
            };
        }
        self.run::<Single, f32>(v, |x| x.to_bits() as u64, out)
    }

    fn encode_f64s(&mut self, v: &[f64], out: &mut Vec<u8>) -> BatchResult {
        if !self.double {
            return match v.is_empty() {
                true => Ok(()),
                false => Err((0, self.wrong_width())),
            };
        }
        self.run::<Double, f64>(v, f64::to_bits, out)
    }

    fn flush(&mut self, out: &mut Vec<u8>) -> Result<()> {
        if self.double {
            self.finish::<Double>(out);
        } else {
            self.finish::<Single>(out);
        }
        Ok(())
    }

    /// Java: 12 (FLOAT) / 20 (DOUBLE), whatever the state.
    fn max_byte_size(&self) -> usize {
        if self.double {
            20
        } else {
            12
        }
    }
}

/// Java's look-ahead decoder state machine.
struct Dec<'a> {
    /// The bit stream after the first value.
    bits: &'a [u8],
    /// Bits consumed from `bits`.
    pos: usize,
    prev: u64,
    lead: u32,
    trail: u32,
    /// Java's `isEnd`: a NaN was decoded through a `10`/`11` code.
    end: bool,
    /// After `end`: Java's held byte and `numberLeftInBuffer` (goes negative).
    held: u32,
    left: i32,
}

impl Dec<'_> {
    /// The next 64 bits from `pos`, zero-padded past the end of the stream.
    #[inline]
    fn peek(&self) -> u64 {
        let byte = self.pos / 8;
        let shift = (self.pos % 8) as u32;
        let word = match self.bits.get(byte..byte + 9) {
            Some(s) => {
                let mut a = [0u8; 16];
                a[..9].copy_from_slice(s);
                u128::from_be_bytes(a)
            }
            None => {
                let mut a = [0u8; 16];
                let rest = self.bits.get(byte..).unwrap_or(&[]);
                a[..rest.len()].copy_from_slice(rest);
                u128::from_be_bytes(a)
            }
        };
        ((word << shift) >> 64) as u64
    }

    /// Consumes `n` bits, or `None` if the stream holds fewer.
    #[inline]
    fn skip(&mut self, n: usize) -> Option<()> {
        if self.pos + n > self.bits.len() * 8 {
            return None;
        }
        self.pos += n;
        Some(())
    }

    /// Reads `n <= 64` bits MSB-first; `None` if the stream ends first.
    #[inline]
    fn read(&mut self, n: u32) -> Option<u64> {
        if n == 0 {
            return Some(0);
        }
        let v = self.peek() >> (64 - n);
        self.skip(n as usize)?;
        Some(v)
    }

    /// Java `readBit` once `isEnd` is set: no refill, shift counts masked by 31.
    #[inline]
    fn end_bit(&mut self) -> u64 {
        self.left = self.left.wrapping_sub(1);
        ((self.held >> (self.left as u32 & 31)) & 1) as u64
    }

    /// Java `readIntFromStream` / `readLongFromStream` on the ended source. Java masks
    /// the shift count to the width, so an int field stays below 2^32.
    fn end_field(&mut self, len: u32, width: u32) -> u64 {
        let mut num = 0u64;
        for i in 0..len {
            let bit = self.end_bit();
            let s = (len.wrapping_sub(1).wrapping_sub(i)) & (width - 1);
            num |= bit << s;
        }
        num
    }

    fn set_prev<V: Variant>(&mut self, bits: u64) {
        self.prev = bits;
        self.lead = V::lz(bits);
        self.trail = V::tz(bits);
    }

    /// Java `getNextValue` before the end: reads the next code.
    #[inline]
    fn next<V: Variant>(&mut self) -> Result<()> {
        let code_at = self.pos;
        let eof = || {
            Error::decode(
                V::NAME,
                (V::W / 8) as usize + code_at / 8,
                "another GORILLA code (the end-of-page NaN marker is missing)",
            )
        };
        let p = self.peek();
        if p >> 63 == 0 {
            return self.skip(1).ok_or_else(eof);
        }
        let x = if p >> 62 == 0b10 {
            let n = V::W.saturating_sub(self.lead + self.trail);
            let v = if n == 0 {
                self.skip(2).ok_or_else(eof)?;
                0
            } else if n <= 62 {
                self.skip(2 + n as usize).ok_or_else(eof)?;
                (p << 2) >> (64 - n)
            } else {
                self.skip(2).ok_or_else(eof)?;
                self.read(n).ok_or_else(eof)?
            };
            if n == 0 {
                0
            } else {
                v << self.trail
            }
        } else {
            let head = 2 + V::LEAD_BITS + V::LEN_BITS;
            let l = ((p << 2) >> (64 - V::LEAD_BITS)) as u32;
            let len = ((p << (2 + V::LEAD_BITS)) >> (64 - V::LEN_BITS)) as u32;
            if l + len > V::W {
                self.skip(head as usize).ok_or_else(eof)?;
                return Err(Error::decode(
                    V::NAME,
                    (V::W / 8) as usize + code_at / 8,
                    format_args!(
                        "a GORILLA code with leading zeros + length <= {}, found {l} + {len}",
                        V::W
                    ),
                ));
            }
            let v = if len == 0 {
                self.skip(head as usize).ok_or_else(eof)?;
                0
            } else if head + len <= 64 {
                self.skip((head + len) as usize).ok_or_else(eof)?;
                (p << head) >> (64 - len)
            } else {
                self.skip(head as usize).ok_or_else(eof)?;
                self.read(len).ok_or_else(eof)?
            };
            if len == 0 {
                0
            } else {
                v << (V::W - l - len)
            }
        };
        self.set_prev::<V>(self.prev ^ x);
        if V::is_nan(self.prev) {
            self.end = true;
            // Java holds the byte of the last bit read, with its unread bits left.
            let last = (self.pos - 1) / 8;
            self.held = self.bits.get(last).copied().unwrap_or(0) as u32;
            self.left = ((last + 1) * 8 - self.pos) as i32;
        }
        Ok(())
    }

    /// Java `getNextValue` after the end marker, bit by bit with Java's int/long rules.
    fn next_ended<V: Variant>(&mut self) {
        let w = V::W;
        let mask = if w == 32 { 0xffff_ffffu64 } else { u64::MAX };
        if self.end_bit() == 0 {
            return;
        }
        let tmp = if self.end_bit() == 0 {
            let n = w as i32 - self.lead as i32 - self.trail as i32;
            let mut tmp = 0u64;
            for i in 0..n.max(0) {
                let bit = self.end_bit();
                let s = (w as i32 - 1 - self.lead as i32 - i) as u32 & (w - 1);
                tmp |= bit << s;
            }
            tmp
        } else {
            let l = self.end_field(V::LEAD_BITS, 32) as u32;
            let len = self.end_field(V::LEN_BITS, 32) as u32;
            let v = self.end_field(len, w);
            let s = (w.wrapping_sub(l).wrapping_sub(len)) & (w - 1);
            (v << s) & mask
        };
        self.set_prev::<V>((tmp ^ self.prev) & mask);
    }
}

fn decode<V: Variant>(data: &[u8], count: usize, mut push: impl FnMut(u64)) -> Result<()> {
    if count == 0 {
        return Ok(());
    }
    let nb = (V::W / 8) as usize;
    let Some(first) = data.get(..nb) else {
        return Err(Error::decode(
            V::NAME,
            0,
            format_args!(
                "a {nb}-byte first value, but the stream holds {} bytes",
                data.len()
            ),
        ));
    };
    let mut raw = [0u8; 8];
    raw[..nb].copy_from_slice(first);
    let mut d = Dec {
        bits: &data[nb..],
        pos: 0,
        prev: 0,
        lead: 0,
        trail: 0,
        end: false,
        held: 0,
        left: 0,
    };
    d.set_prev::<V>(u64::from_le_bytes(raw));
    for _ in 0..count {
        let v = d.prev;
        if d.end {
            d.next_ended::<V>();
        } else {
            d.next::<V>()?;
        }
        push(v);
    }
    Ok(())
}

/// Decodes exactly `count` FLOAT values, returning what the Java reader returns (also
/// past the end marker, see the module docs). A stream that ends before the end marker,
/// or holds an impossible `11` code, is an error.
pub fn decode_f32(data: &[u8], count: usize, out: &mut Vec<f32>) -> Result<()> {
    // At least one bit per value beyond the first, unless the end marker was hit; the
    // reservation is bounded by the stream size.
    out.reserve(count.min(data.len().saturating_mul(8)));
    decode::<Single>(data, count, |b| out.push(f32::from_bits(b as u32)))
}

/// Decodes exactly `count` DOUBLE values (see [`decode_f32`]).
pub fn decode_f64(data: &[u8], count: usize, out: &mut Vec<f64>) -> Result<()> {
    out.reserve(count.min(data.len().saturating_mul(8)));
    decode::<Double>(data, count, |b| out.push(f64::from_bits(b)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    fn enc_f32(v: &[f32]) -> Vec<u8> {
        let mut e = GorillaEncoder::single();
        let mut out = Vec::new();
        for x in v {
            e.encode_f32(*x, &mut out).unwrap();
        }
        e.flush(&mut out).unwrap();
        out
    }

    fn enc_f64(v: &[f64]) -> Vec<u8> {
        let mut e = GorillaEncoder::double();
        let mut out = Vec::new();
        for x in v {
            e.encode_f64(*x, &mut out).unwrap();
        }
        e.flush(&mut out).unwrap();
        out
    }

    #[test]
    fn spec_vectors() {
        let v = [1.0f32, 1.0, 1.5, 2.0, 3.25];
        let b = enc_f32(&v);
        assert_eq!(hex(&b), "0000803f6907849ffe90ecfe40");
        let mut d = Vec::new();
        decode_f32(&b, 5, &mut d).unwrap();
        assert_eq!(d, v);

        let v = [1.0f64, 1.0, 1.5, 2.0, 3.25];
        let b = enc_f64(&v);
        assert_eq!(hex(&b), "000000000000f03f6601e08cfffcc0767fe4");
        let mut d = Vec::new();
        decode_f64(&b, 5, &mut d).unwrap();
        assert_eq!(d, v);

        assert_eq!(hex(&enc_f32(&[0.0])), "00000000c24ffc");
        assert_eq!(hex(&enc_f64(&[1.5, 3.0])), "000000000000f83fc117ffe7fe");
    }

    /// A run stops at the first NaN: the values before it are encoded, the count comes
    /// with the error, and the encoder goes on from the last value encoded.
    #[test]
    fn run_refuses_nan_after_the_values_before_it() {
        let mut e = GorillaEncoder::single();
        let mut out = Vec::new();
        match e.encode_f32s(&[1.0, 1.0, f32::NAN, 9.0], &mut out) {
            Err((2, Error::InvalidInput(m))) => assert!(m.contains("NaN"), "{m}"),
            other => panic!("expected a refusal at 2, got {other:?}"),
        }
        e.encode_f32s(&[1.5, 2.0], &mut out).unwrap();
        e.encode_f32s(&[], &mut out).unwrap();
        e.encode_f32s(&[3.25], &mut out).unwrap();
        e.flush(&mut out).unwrap();
        // The spec §6.5 vector of [1.0, 1.0, 1.5, 2.0, 3.25].
        assert_eq!(hex(&out), "0000803f6907849ffe90ecfe40");

        let mut e = GorillaEncoder::double();
        let mut out = Vec::new();
        assert!(matches!(
            e.encode_f64s(&[f64::NAN], &mut out),
            Err((0, Error::InvalidInput(_)))
        ));
        assert!(out.is_empty());
        e.encode_f64s(&[1.0, 1.0, 1.5, 2.0, 3.25], &mut out)
            .unwrap();
        e.flush(&mut out).unwrap();
        assert_eq!(hex(&out), "000000000000f03f6601e08cfffcc0767fe4");
        // The other width is refused, an empty run of it is not.
        assert!(matches!(
            e.encode_f32s(&[1.0], &mut out),
            Err((0, Error::Unsupported(_)))
        ));
        assert!(e.encode_f32s(&[], &mut out).is_ok());
        assert!(matches!(
            GorillaEncoder::single().encode_f64s(&[1.0], &mut out),
            Err((0, Error::Unsupported(_)))
        ));
        assert!(GorillaEncoder::single().encode_f64s(&[], &mut out).is_ok());
    }

    /// A page whose end marker ends on a byte boundary gets no pad byte. [1.0, 1.0, 1.0]
    /// (FLOAT, spec §6.5): `0`, `0`, then the end marker `11 00001 001001 100000001`
    /// (x = 0x7fc00000 ^ 0x3f800000 = 0x40400000: 1 leading zero below the value's 2, 22
    /// trailing, 9 bits), 24 bits in all.
    #[test]
    fn byte_aligned_end_has_no_pad_byte() {
        assert_eq!(hex(&enc_f32(&[1.0, 1.0, 1.0])), "0000803f309301");
        let mut d = Vec::new();
        decode_f32(&[0, 0, 0x80, 0x3f, 0x30, 0x93, 0x01], 3, &mut d).unwrap();
        assert_eq!(d, [1.0, 1.0, 1.0]);
    }

    /// The longest codes: alternating positive odd and negative even bit patterns make
    /// every code `11` + 6 + 7 + 64 bits (79 bits), more than 64 values of them in one
    /// run. Checked against the bit-by-bit model of Java's reader.
    #[test]
    fn longest_codes_in_long_runs() {
        let bits: Vec<u64> = (0..300u64)
            .map(|i| {
                if i % 2 == 0 {
                    0x4000_0000_0000_0001 | (i << 8)
                } else {
                    0xc000_0000_0000_0000 | (i << 9)
                }
            })
            .collect();
        let vals: Vec<f64> = bits.iter().map(|b| f64::from_bits(*b)).collect();
        let mut e = GorillaEncoder::double();
        let mut out = Vec::new();
        e.encode_f64s(&vals, &mut out).unwrap();
        e.flush(&mut out).unwrap();
        // 8 bytes, 299 codes of 79 bits, the end marker (a `10` code: x = NaN ^ the
        // last value has no leading and 9 trailing zeros, as that value: 2 + 55 bits),
        // the pad.
        assert_eq!(out.len(), 8 + (299 * 79 + 57usize).div_ceil(8));
        assert_eq!(java_model::<Double>(&out, bits.len()), Some(bits.clone()));
        // Single precision: 2 + 5 + 6 + 32 bits each.
        let sbits: Vec<u64> = (0..300u64)
            .map(|i| {
                if i % 2 == 0 {
                    0x4000_0001 | (i << 4)
                } else {
                    0xc000_0000 | (i << 5)
                }
            })
            .collect();
        let svals: Vec<f32> = sbits.iter().map(|b| f32::from_bits(*b as u32)).collect();
        let mut e = GorillaEncoder::single();
        let mut out = Vec::new();
        e.encode_f32s(&svals, &mut out).unwrap();
        e.flush(&mut out).unwrap();
        assert_eq!(java_model::<Single>(&out, sbits.len()), Some(sbits));
    }

    #[test]
    fn nan_is_refused_and_state_kept() {
        let mut e = GorillaEncoder::single();
        let mut out = Vec::new();
        e.encode_f32(1.0, &mut out).unwrap();
        e.encode_f32(1.5, &mut out).unwrap();
        let before = out.clone();
        let err = e.encode_f32(f32::NAN, &mut out).unwrap_err();
        assert!(matches!(err, Error::InvalidInput(_)), "{err}");
        assert!(err.to_string().contains("NaN"), "{err}");
        assert_eq!(out, before);
        e.encode_f32(2.0, &mut out).unwrap();
        e.encode_f32(3.25, &mut out).unwrap();
        e.flush(&mut out).unwrap();
        let mut ref_out = Vec::new();
        let mut r = GorillaEncoder::single();
        for x in [1.0f32, 1.5, 2.0, 3.25] {
            r.encode_f32(x, &mut ref_out).unwrap();
        }
        r.flush(&mut ref_out).unwrap();
        assert_eq!(out, ref_out);

        let mut e = GorillaEncoder::double();
        assert!(matches!(
            e.encode_f64(f64::from_bits(0x7ff0_0000_0000_0001), &mut out),
            Err(Error::InvalidInput(_))
        ));
        assert!(e.encode_f32(1.0, &mut out).is_err());
        // The first value of a page is refused too, and infinities are fine.
        let mut e = GorillaEncoder::double();
        let mut out = Vec::new();
        assert!(e.encode_f64(f64::NAN, &mut out).is_err());
        assert!(out.is_empty());
        e.encode_f64(f64::INFINITY, &mut out).unwrap();
        e.encode_f64(f64::NEG_INFINITY, &mut out).unwrap();
        e.flush(&mut out).unwrap();
        let mut d = Vec::new();
        decode_f64(&out, 2, &mut d).unwrap();
        assert_eq!(d, [f64::INFINITY, f64::NEG_INFINITY]);
    }

    #[test]
    fn completed_bytes_are_emitted_immediately() {
        let mut e = GorillaEncoder::double();
        let mut out = Vec::new();
        e.encode_f64(1.0, &mut out).unwrap();
        assert_eq!(out.len(), 8);
        e.encode_f64(1.0, &mut out).unwrap(); // 1 bit pending
        assert_eq!(out.len(), 8);
        e.encode_f64(1.5, &mut out).unwrap(); // '11' + 6 + 7 + 1 bits = 16, total 17
        assert_eq!(out.len(), 10);
        assert_eq!(e.max_byte_size(), 20);
        assert_eq!(GorillaEncoder::single().max_byte_size(), 12);
    }

    /// After the end marker the Java reader keeps returning NaN while the bits left in
    /// its held byte and the 24 masked zero bits decode as `0` codes.
    #[test]
    fn reading_past_the_end_marker_follows_java() {
        let b = enc_f32(&[1.0, 1.5]);
        let mut d = Vec::new();
        decode_f32(&b, 10, &mut d).unwrap();
        assert_eq!(&d[..2], &[1.0, 1.5]);
        for x in &d[2..] {
            assert_eq!(x.to_bits(), 0x7fc0_0000);
        }
        check_against_model::<Single>(&b, 200);
        let b = enc_f64(&[1.0, 1.5, -3.0]);
        check_against_model::<Double>(&b, 200);
        // DOUBLE too: spec §6.5, the end marker is the canonical NaN, after which the
        // reader returns NaN (the `0` codes of the padding and the masked zero bits).
        let mut d = Vec::new();
        decode_f64(&b, 12, &mut d).unwrap();
        assert_eq!(&d[..3], &[1.0, 1.5, -3.0]);
        for x in &d[3..] {
            assert_eq!(x.to_bits(), 0x7ff8_0000_0000_0000);
        }
    }

    /// A literal transcription of Java's `GorillaDecoder` + `Single/DoublePrecisionDecoder`
    /// (bit by bit, Java shift masking, EOF handling). `None` where Java would throw or
    /// read a missing first value, or where the fast decoder rejects an impossible code.
    fn java_model<V: Variant>(data: &[u8], count: usize) -> Option<Vec<u64>> {
        let w = V::W;
        let mask = if w == 32 { 0xffff_ffffu64 } else { u64::MAX };
        let nb = (w / 8) as usize;
        if count == 0 {
            return Some(Vec::new());
        }
        if data.len() < nb {
            return None;
        }
        let mut p = 0usize;
        let mut raw = 0u64;
        for i in 0..nb {
            raw |= (data[p] as u64) << (8 * i);
            p += 1;
        }
        struct S<'a> {
            data: &'a [u8],
            p: usize,
            buffer: i32,
            left: i32,
            is_end: bool,
        }
        impl S<'_> {
            fn fill(&mut self) {
                if self.p < self.data.len() {
                    self.buffer = self.data[self.p] as i32;
                    self.p += 1;
                    self.left = 8;
                } else {
                    self.buffer = -1;
                    self.left = -1;
                }
            }
            fn bit(&mut self) -> Option<u64> {
                if self.left == 0 && !self.is_end {
                    self.fill();
                }
                if self.buffer == -1 {
                    return None;
                }
                self.left -= 1;
                Some(((self.buffer >> (self.left as u32 & 31)) & 1) as u64)
            }
            fn field(&mut self, len: u32, width: u32) -> Option<u64> {
                let mut num = 0u64;
                for i in 0..len {
                    let b = self.bit()?;
                    num |= b << (len.wrapping_sub(1).wrapping_sub(i) & (width - 1));
                }
                Some(if width == 32 { num & 0xffff_ffff } else { num })
            }
        }
        let mut s = S {
            data,
            p,
            buffer: 0,
            left: 0,
            is_end: false,
        };
        let mut prev = raw;
        let (mut lead, mut trail) = (V::lz(prev), V::tz(prev));
        s.fill();
        let mut out = Vec::new();
        for _ in 0..count {
            let v = prev;
            // getNextValue
            let f1 = s.bit()?;
            if f1 == 1 {
                let f2 = s.bit()?;
                let tmp = if f2 == 0 {
                    let n = w as i32 - lead as i32 - trail as i32;
                    let mut tmp = 0u64;
                    for i in 0..n.max(0) {
                        let b = s.bit()?;
                        tmp |= b << ((w as i32 - 1 - lead as i32 - i) as u32 & (w - 1));
                    }
                    tmp
                } else {
                    let l = s.field(V::LEAD_BITS, 32)? as u32;
                    let len = s.field(V::LEN_BITS, 32)? as u32;
                    if !s.is_end && l + len > w {
                        return None;
                    }
                    let x = s.field(len, w)?;
                    (x << (w.wrapping_sub(l).wrapping_sub(len) & (w - 1))) & mask
                };
                prev = (tmp ^ prev) & mask;
                lead = V::lz(prev);
                trail = V::tz(prev);
                if V::is_nan(prev) {
                    s.is_end = true;
                }
            }
            out.push(v);
        }
        Some(out)
    }

    fn check_against_model<V: Variant>(data: &[u8], count: usize) {
        let model = java_model::<V>(data, count);
        let mut got: Vec<u64> = Vec::new();
        let r = decode::<V>(data, count, |b| got.push(b));
        match model {
            Some(m) => {
                assert!(r.is_ok(), "{r:?} on {}", hex(data));
                assert_eq!(got, m, "on {}", hex(data));
            }
            None => assert!(r.is_err(), "expected an error on {}", hex(data)),
        }
    }

    /// Encodes raw bit patterns without the NaN check (what the Java writer does).
    fn java_writer<V: Variant>(bits: &[u64]) -> Vec<u8> {
        let mut e = GorillaEncoder::new(V::W == 64);
        let mut out = Vec::new();
        for b in bits {
            e.encode_bits::<V>(*b, &mut out);
        }
        e.finish::<V>(&mut out);
        out
    }

    #[test]
    fn data_nan_written_by_java_decodes_like_java() {
        // NaN in the middle of a page (Java writer, quirk 2).
        let bits: Vec<u64> = [1.0f32, 2.5, f32::NAN, 1.0, 7.0, 7.0, 100.0]
            .iter()
            .map(|x| java_float_bits(*x) as u64)
            .collect();
        let b = java_writer::<Single>(&bits);
        check_against_model::<Single>(&b, bits.len());
        check_against_model::<Single>(&b, 300);
        let mut d = Vec::new();
        decode_f32(&b, bits.len(), &mut d).unwrap();
        assert_eq!(&d[..2], &[1.0, 2.5]);
        assert!(d[2].is_nan());
        // A NaN first value does not end the stream (Java checks only after 10/11 codes).
        let bits: Vec<u64> = [f64::NAN, f64::NAN, 3.0, 4.0]
            .iter()
            .map(|x| java_double_bits(*x))
            .collect();
        let b = java_writer::<Double>(&bits);
        let mut d = Vec::new();
        decode_f64(&b, 4, &mut d).unwrap();
        assert!(d[0].is_nan() && d[1].is_nan());
        assert_eq!(&d[2..], &[3.0, 4.0]);
        check_against_model::<Double>(&b, 40);
    }

    #[test]
    fn malformed_streams_are_errors() {
        assert!(decode_f32(&[0, 0, 0], 1, &mut Vec::new()).is_err());
        // First value only, no end marker.
        assert!(decode_f32(&[0, 0, 0x80, 0x3f], 1, &mut Vec::new()).is_err());
        // Truncated in the middle.
        let b = enc_f64(&[1.0, 1.5, 2.0, 3.25]);
        let e = decode_f64(&b[..b.len() - 2], 4, &mut Vec::new()).unwrap_err();
        assert!(matches!(e, Error::Decode { .. }), "{e}");
        // An impossible '11' code: leading zeros 31 + length 63.
        let bad = [0, 0, 0x80, 0x3f, 0b1111_1111, 0b1111_1100, 0, 0, 0, 0, 0, 0];
        assert!(decode_f32(&bad, 2, &mut Vec::new()).is_err());
        assert!(decode_f32(&[], 0, &mut Vec::new()).is_ok());
    }

    fn decode_error_at(r: Result<()>) -> usize {
        match r {
            Err(Error::Decode { at, .. }) => at,
            other => panic!("expected a decode error, got {other:?}"),
        }
    }

    /// Errors name the byte of the stream where the failing code starts. The codes of
    /// the spec §6.5 FLOAT vector `0000803f 6907849ffe90ecfe40` ([1.0, 1.0, 1.5, 2.0,
    /// 3.25]) start at bits 0 (`0`), 1 (1.5: `11 01001 000001 1`), 15 (2.0: `11 00001
    /// 001001` + 9 bits), 37 (3.25: `11 01001 000011 101`) and 53 (the end marker: `10`
    /// + 11 bits) of the bit stream after the 4-byte first value.
    #[test]
    fn errors_name_the_code_offset() {
        let page = [
            0x00, 0x00, 0x80, 0x3f, 0x69, 0x07, 0x84, 0x9f, 0xfe, 0x90, 0xec, 0xfe, 0x40,
        ];
        let mut d = Vec::new();
        decode_f32(&page, 5, &mut d).unwrap();
        assert_eq!(d, [1.0, 1.0, 1.5, 2.0, 3.25]);
        // Cut after 32 bits: the code of 2.0 (bits 15..37) is incomplete: byte 4 + 15/8.
        assert_eq!(
            decode_error_at(decode_f32(&page[..8], 5, &mut Vec::new())),
            5
        );
        // Cut after 40 bits: the code of 3.25 (bits 37..53): byte 4 + 37/8.
        assert_eq!(
            decode_error_at(decode_f32(&page[..9], 5, &mut Vec::new())),
            8
        );
        // Cut after 56 bits: the end marker's code (bits 53..66): byte 4 + 53/8.
        assert_eq!(
            decode_error_at(decode_f32(&page[..11], 5, &mut Vec::new())),
            10
        );
        // Eight `0` codes, then an impossible `11` code (31 leading zeros + length 63) at
        // bit 8, read with the 9th value (each value reads the code after it): byte 4 + 1.
        let bad = [0, 0, 0x80, 0x3f, 0x00, 0xff, 0xfc, 0, 0, 0, 0, 0, 0];
        decode_f32(&bad, 8, &mut Vec::new()).unwrap();
        assert_eq!(decode_error_at(decode_f32(&bad, 9, &mut Vec::new())), 5);
        // DOUBLE: the spec §6.5 vector [1.5, 3.0] `000000000000f83f c117ffe7fe` cut after
        // its first code (`11 000001 0001011` + 11 bits, 26 bits): byte 8 + 0.
        let page = [0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 0xc1, 0x17, 0xff, 0xe7, 0xfe];
        let mut d = Vec::new();
        decode_f64(&page, 2, &mut d).unwrap();
        assert_eq!(d, [1.5, 3.0]);
        assert_eq!(
            decode_error_at(decode_f64(&page[..10], 2, &mut Vec::new())),
            8
        );
    }

    fn split<T: Clone>(v: &[T], cuts: &[usize]) -> Vec<Vec<T>> {
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (v.len() + 1)).collect();
        cuts.push(0);
        cuts.push(v.len());
        cuts.sort();
        cuts.dedup();
        cuts.windows(2).map(|w| v[w[0]..w[1]].to_vec()).collect()
    }

    fn f64s() -> impl Strategy<Value = f64> {
        prop_oneof![
            any::<u64>().prop_map(f64::from_bits),
            (-2000i32..2000).prop_map(|x| x as f64 / 100.0),
            Just(0.0),
            Just(-0.0),
            Just(f64::INFINITY),
        ]
        .prop_filter("no NaN", |x| !x.is_nan())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]
        #[test]
        fn f64_round_trip(v in proptest::collection::vec(f64s(), 1..300), cuts in proptest::collection::vec(any::<usize>(), 0..3)) {
            let mut e = GorillaEncoder::double();
            for page in split(&v, &cuts) {
                if page.is_empty() { continue; }
                let mut out = Vec::new();
                for x in &page {
                    e.encode_f64(*x, &mut out).unwrap();
                }
                e.flush(&mut out).unwrap();
                let mut d = Vec::new();
                decode_f64(&out, page.len(), &mut d).unwrap();
                prop_assert_eq!(d.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                                page.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
                let bits: Vec<u64> = page.iter().map(|x| x.to_bits()).collect();
                prop_assert_eq!(java_model::<Double>(&out, page.len()), Some(bits));
            }
        }

        #[test]
        fn f32_round_trip(v in proptest::collection::vec(f64s().prop_map(|x| x as f32).prop_filter("no NaN", |x| !x.is_nan()), 1..300),
                          cuts in proptest::collection::vec(any::<usize>(), 0..3)) {
            let mut e = GorillaEncoder::single();
            for page in split(&v, &cuts) {
                if page.is_empty() { continue; }
                let mut out = Vec::new();
                for x in &page {
                    e.encode_f32(*x, &mut out).unwrap();
                }
                e.flush(&mut out).unwrap();
                let mut d = Vec::new();
                decode_f32(&out, page.len(), &mut d).unwrap();
                prop_assert_eq!(d.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                                page.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
            }
        }

        #[test]
        fn java_written_nan_pages_match_model(v in proptest::collection::vec(prop_oneof![4 => any::<u32>(), 1 => Just(0x7fc0_0000u32)], 1..40),
                                               extra in 0usize..80) {
            let bits: Vec<u64> = v.iter().map(|b| java_float_bits(f32::from_bits(*b)) as u64).collect();
            let b = java_writer::<Single>(&bits);
            check_against_model::<Single>(&b, bits.len() + extra);
            let dbits: Vec<u64> = v.iter().map(|b| java_double_bits(f32::from_bits(*b) as f64)).collect();
            let b = java_writer::<Double>(&dbits);
            check_against_model::<Double>(&b, dbits.len() + extra);
        }

        #[test]
        fn random_bytes_match_model(data in proptest::collection::vec(any::<u8>(), 0..40), count in 0usize..120) {
            check_against_model::<Single>(&data, count);
            check_against_model::<Double>(&data, count);
        }
    }
}
