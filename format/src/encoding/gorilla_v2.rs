//! GORILLA of format v4 (TsFile 2.x code 8, its "GorillaV2" family) for INT32, INT64,
//! FLOAT and DOUBLE. Not the 0.10 GORILLA of [`super::gorilla`] (2.x's GORILLA_V1).
//!
//! One MSB-first bit string per page over the values' 32- or 64-bit patterns (floats
//! by their IEEE bits): the first value in full; then per value the XOR with the
//! previous one: `0` if zero; `10` + the meaningful bits if its leading and trailing
//! zero counts are at least the stored ones; otherwise `11`, the leading zero count
//! (5 bits for 32-bit, 6 for 64-bit), the meaningful bit count minus one (5 or 6 bits)
//! and the meaningful bits, which become the stored counts. Flush appends an end marker
//! value (`i32::MIN`, `i64::MIN`, or NaN `0x7fc00000` / `0x7ff8000000000000`), then
//! closes the last byte, writing one zero byte if the bits ended on a byte boundary.
//! The marker value therefore cannot be stored: the encoder refuses it.

use super::Encoder;
use crate::errors::{Error, Result};

/// MSB-first bit writer into a byte vector.
#[derive(Debug, Clone, Default)]
pub(crate) struct Bits {
    acc: u8,
    used: u32,
}

impl Bits {
    /// Appends the low `n` bits of `v` (`n <= 64`).
    #[inline]
    pub(crate) fn put(&mut self, v: u64, mut n: u32, out: &mut Vec<u8>) {
        while n > 0 {
            let room = 8 - self.used;
            let take = room.min(n);
            let chunk = ((v >> (n - take)) & ((1u64 << take) - 1)) as u8;
            self.acc |= chunk << (room - take);
            self.used += take;
            n -= take;
            if self.used == 8 {
                out.push(self.acc);
                self.acc = 0;
                self.used = 0;
            }
        }
    }

    /// Appends one bit.
    #[inline]
    pub(crate) fn bit(&mut self, b: bool, out: &mut Vec<u8>) {
        self.put(b as u64, 1, out);
    }

    /// Whether a partial byte is pending.
    pub(crate) fn pending(&self) -> bool {
        self.used > 0
    }

    /// The end of a GORILLA or CHIMP page: always writes the current byte, even an
    /// empty one.
    pub(crate) fn close_always(&mut self, out: &mut Vec<u8>) {
        out.push(self.acc);
        self.acc = 0;
        self.used = 0;
    }
}

/// MSB-first bit reader.
pub(crate) struct BitReader<'a> {
    data: &'a [u8],
    pos: usize,
    stream: &'static str,
}

impl<'a> BitReader<'a> {
    pub(crate) fn new(stream: &'static str, data: &'a [u8]) -> Self {
        BitReader {
            data,
            pos: 0,
            stream,
        }
    }

    /// Reads `n <= 64` bits as an unsigned number.
    #[inline]
    pub(crate) fn get(&mut self, n: u32) -> Result<u64> {
        if self.pos + n as usize > self.data.len() * 8 {
            return Err(Error::decode(
                self.stream,
                self.pos / 8,
                format_args!("{n} more bits past the end of the stream"),
            ));
        }
        let mut v: u64 = 0;
        let mut n = n;
        while n > 0 {
            let byte = self.data[self.pos / 8];
            let off = (self.pos % 8) as u32;
            let take = (8 - off).min(n);
            let chunk = (byte >> (8 - off - take)) & (((1u16 << take) - 1) as u8);
            v = (v << take) | chunk as u64;
            self.pos += take as usize;
            n -= take;
        }
        Ok(v)
    }

    #[inline]
    pub(crate) fn bit(&mut self) -> Result<bool> {
        Ok(self.get(1)? == 1)
    }

    /// Skips to the next byte boundary.
    pub(crate) fn align(&mut self) {
        self.pos = self.pos.div_ceil(8) * 8;
    }

    /// Byte offset of the next bit.
    pub(crate) fn byte_pos(&self) -> usize {
        self.pos / 8
    }
}

/// GORILLA (v4) encoder over 32- or 64-bit patterns.
#[derive(Debug, Clone)]
pub struct GorillaV2Encoder {
    width: u32,
    kind: Kind,
    bits: Bits,
    first: bool,
    stored: u64,
    lead: u32,
    trail: u32,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Int32,
    Int64,
    Float,
    Double,
}

impl Kind {
    /// The values' bit width: 32 for INT32 and FLOAT, 64 for INT64 and DOUBLE.
    fn width(self) -> u32 {
        match self {
            Kind::Int32 | Kind::Float => 32,
            Kind::Int64 | Kind::Double => 64,
        }
    }

    fn marker(self) -> u64 {
        match self {
            Kind::Int32 => i32::MIN as u32 as u64,
            Kind::Int64 => i64::MIN as u64,
            Kind::Float => 0x7fc0_0000,
            Kind::Double => 0x7ff8_0000_0000_0000,
        }
    }
}

impl GorillaV2Encoder {
    fn new(kind: Kind) -> Self {
        GorillaV2Encoder {
            width: kind.width(),
            kind,
            bits: Bits::default(),
            first: true,
            stored: 0,
            lead: u32::MAX,
            trail: 0,
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

    /// Ends the frame (end marker, closing byte) and starts a new one; returns whether
    /// the marker ended on a byte boundary, so the closing byte is an added empty one.
    pub(crate) fn flush_frame(&mut self, out: &mut Vec<u8>) -> bool {
        let m = self.kind.marker();
        self.push(m, out);
        let aligned = !self.bits.pending();
        self.bits.close_always(out);
        let kind = self.kind;
        *self = Self::new(kind);
        aligned
    }

    fn kind_check(&self, k: Kind) -> Result<()> {
        if self.kind == k {
            Ok(())
        } else {
            Err(Error::unsupported(format!(
                "this GORILLA encoder takes {:?} values, not {k:?}",
                self.kind
            )))
        }
    }

    fn refuse_marker(&self, bits: u64, nan: bool) -> Result<()> {
        if nan || bits == self.kind.marker() {
            return Err(Error::invalid(format!(
                "GORILLA (v4) cannot store {}: it is the end-of-page marker",
                match self.kind {
                    Kind::Int32 => "i32::MIN".to_string(),
                    Kind::Int64 => "i64::MIN".to_string(),
                    _ => "NaN".to_string(),
                }
            )));
        }
        Ok(())
    }

    fn push(&mut self, v: u64, out: &mut Vec<u8>) {
        let w = self.width;
        if self.first {
            self.first = false;
            self.stored = v;
            self.bits.put(v, w, out);
            return;
        }
        let x = self.stored ^ v;
        self.stored = v;
        if x == 0 {
            self.bits.bit(false, out);
            return;
        }
        self.bits.bit(true, out);
        let lead = x.leading_zeros() - (64 - w);
        let trail = x.trailing_zeros();
        if lead >= self.lead && trail >= self.trail {
            self.bits.bit(false, out);
            let sig = w - self.lead - self.trail;
            self.bits.put(x >> self.trail, sig, out);
        } else {
            self.bits.bit(true, out);
            let sig = w - lead - trail;
            let field = if w == 32 { 5 } else { 6 };
            self.bits.put(lead as u64, field, out);
            self.bits.put((sig - 1) as u64, field, out);
            self.bits.put(x >> trail, sig, out);
            self.lead = lead;
            self.trail = trail;
        }
    }
}

impl Encoder for GorillaV2Encoder {
    fn encode_i32(&mut self, v: i32, out: &mut Vec<u8>) -> Result<()> {
        self.kind_check(Kind::Int32)?;
        let b = v as u32 as u64;
        self.refuse_marker(b, false)?;
        self.push(b, out);
        Ok(())
    }
    fn encode_i64(&mut self, v: i64, out: &mut Vec<u8>) -> Result<()> {
        self.kind_check(Kind::Int64)?;
        self.refuse_marker(v as u64, false)?;
        self.push(v as u64, out);
        Ok(())
    }
    fn encode_f32(&mut self, v: f32, out: &mut Vec<u8>) -> Result<()> {
        self.kind_check(Kind::Float)?;
        self.refuse_marker(v.to_bits() as u64, v.is_nan())?;
        self.push(v.to_bits() as u64, out);
        Ok(())
    }
    fn encode_f64(&mut self, v: f64, out: &mut Vec<u8>) -> Result<()> {
        self.kind_check(Kind::Double)?;
        self.refuse_marker(v.to_bits(), v.is_nan())?;
        self.push(v.to_bits(), out);
        Ok(())
    }
    fn flush(&mut self, out: &mut Vec<u8>) -> Result<()> {
        self.flush_frame(out);
        Ok(())
    }
    fn max_byte_size(&self) -> usize {
        // The C++ writer's `get_max_byte_size` (`INT32_ONE_ITEM_MAX_SIZE` or
        // `INT64_ONE_ITEM_MAX_SIZE`): a value's control bits, both counts and all its
        // bits, `(2 + 5 + 5 + 32) / 8 + 1` or `(2 + 6 + 6 + 64) / 8 + 1` bytes.
        if self.width == 32 {
            6
        } else {
            10
        }
    }
}

/// Decodes `count` values of `kind`; its end marker ends the page early (an error when
/// fewer than `count` values precede it).
///
/// With `frame`, the end marker must follow the values, and the frame's length in bytes
/// is returned: through the marker's last bit, plus one byte (the readers fetch the next
/// byte as soon as one is used up, which is why [`Bits::close_always`] writes one).
///
/// Each value goes into `out` through `conv`. Every value after the first takes at least
/// one bit, so from 9 bytes on `data` can hold at least `data.len()` values: `out`
/// reserves `count.min(data.len())` (no arithmetic), never more than the data can hold
/// nor the untrusted `count` alone; pages of values under 8 bits each grow past it.
fn decode_raw<T>(
    stream: &'static str,
    data: &[u8],
    count: usize,
    kind: Kind,
    frame: bool,
    out: &mut Vec<T>,
    conv: impl Fn(u64) -> T,
) -> Result<usize> {
    out.reserve(count.min(data.len()));
    let (width, marker) = (kind.width(), kind.marker());
    let mut r = BitReader::new(stream, data);
    let field = if width == 32 { 5 } else { 6 };
    let (mut lead, mut trail) = (0u32, 0u32);
    let mut stored = 0u64;
    for i in 0..count + frame as usize {
        if i == 0 {
            stored = r.get(width)?;
        } else if r.bit()? {
            if r.bit()? {
                lead = r.get(field)? as u32;
                let sig = r.get(field)? as u32 + 1;
                if lead + sig > width {
                    return Err(Error::decode(
                        stream,
                        r.byte_pos(),
                        format_args!(
                            "{lead} leading zeros and {sig} meaningful bits exceed {width}"
                        ),
                    ));
                }
                trail = width - lead - sig;
            } else if i == 1 {
                return Err(Error::decode(
                    stream,
                    r.byte_pos(),
                    "control bits 10 before any leading-zero count",
                ));
            }
            let sig = width - lead - trail;
            stored ^= r.get(sig)? << trail;
        }
        if i == count {
            if stored != marker {
                return Err(Error::decode(
                    stream,
                    r.byte_pos(),
                    format_args!("the end marker after {count} values, found another value"),
                ));
            }
            return Ok(r.byte_pos() + 1);
        }
        if stored == marker {
            return Err(Error::decode(
                stream,
                r.byte_pos(),
                format_args!("the end-of-page marker after {i} of {count} values"),
            ));
        }
        out.push(conv(stored));
    }
    Ok(0)
}

/// Decodes `count` FLOAT values and the end marker of one frame that other bytes may
/// follow (SPRINTZ's short blocks); returns the frame's length in bytes.
pub(crate) fn decode_frame_f32(data: &[u8], count: usize, out: &mut Vec<f32>) -> Result<usize> {
    decode_raw(
        "GORILLA FLOAT frame",
        data,
        count,
        Kind::Float,
        true,
        out,
        |b| f32::from_bits(b as u32),
    )
}

/// [`decode_frame_f32`] for DOUBLE values.
pub(crate) fn decode_frame_f64(data: &[u8], count: usize, out: &mut Vec<f64>) -> Result<usize> {
    decode_raw(
        "GORILLA DOUBLE frame",
        data,
        count,
        Kind::Double,
        true,
        out,
        f64::from_bits,
    )
}

/// Decodes exactly `count` INT32 values.
pub fn decode_i32(data: &[u8], count: usize, out: &mut Vec<i32>) -> Result<()> {
    decode_raw(
        "GORILLA INT32 column",
        data,
        count,
        Kind::Int32,
        false,
        out,
        |b| b as u32 as i32,
    )
    .map(|_| ())
}

/// Decodes exactly `count` INT64 values.
pub fn decode_i64(data: &[u8], count: usize, out: &mut Vec<i64>) -> Result<()> {
    decode_raw(
        "GORILLA INT64 column",
        data,
        count,
        Kind::Int64,
        false,
        out,
        |b| b as i64,
    )
    .map(|_| ())
}

/// Decodes exactly `count` FLOAT values.
pub fn decode_f32(data: &[u8], count: usize, out: &mut Vec<f32>) -> Result<()> {
    decode_raw(
        "GORILLA FLOAT column",
        data,
        count,
        Kind::Float,
        false,
        out,
        |b| f32::from_bits(b as u32),
    )
    .map(|_| ())
}

/// Decodes exactly `count` DOUBLE values.
pub fn decode_f64(data: &[u8], count: usize, out: &mut Vec<f64>) -> Result<()> {
    decode_raw(
        "GORILLA DOUBLE column",
        data,
        count,
        Kind::Double,
        false,
        out,
        f64::from_bits,
    )
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::test_bits::{bytes, decode_err_at};

    #[test]
    fn hand_computed_int32_page() {
        // 1: 32 bits 0..01. 1 again: '0'. 3: xor 2 = lead 30, trail 1, sig 1 ->
        // '11' 11110 00000 '1'. End marker 0x80000000: xor 0x80000003 = lead 0,
        // trail 0 -> '11' 00000 11111 then 32 bits.
        let mut e = GorillaV2Encoder::int32();
        let mut out = Vec::new();
        for v in [1, 1, 3] {
            e.encode_i32(v, &mut out).unwrap();
        }
        e.flush(&mut out).unwrap();
        let mut bits = String::from("00000000000000000000000000000001");
        bits += "0";
        bits += "11";
        bits += "11110";
        bits += "00000";
        bits += "1";
        bits += "11000001111110000000000000000000000000000011";
        while bits.len() % 8 != 0 {
            bits.push('0');
        }
        let want: Vec<u8> = bits
            .as_bytes()
            .chunks(8)
            .map(|c| u8::from_str_radix(std::str::from_utf8(c).unwrap(), 2).unwrap())
            .collect();
        assert_eq!(out, want);
        let mut back = Vec::new();
        decode_i32(&out, 3, &mut back).unwrap();
        assert_eq!(back, [1, 1, 3]);
        assert!(
            decode_i32(&out, 4, &mut Vec::new()).is_err(),
            "marker is not a value"
        );
        assert!(e.encode_i32(i32::MIN, &mut out).is_err());
    }

    #[test]
    fn doubles_round_trip() {
        let vals = [20.5, 20.5, 21.25, -3.5e7, 0.0, -0.0, f64::INFINITY, 1e-300];
        let mut e = GorillaV2Encoder::double();
        let mut out = Vec::new();
        for v in vals {
            e.encode_f64(v, &mut out).unwrap();
        }
        e.flush(&mut out).unwrap();
        let mut back = Vec::new();
        decode_f64(&out, vals.len(), &mut back).unwrap();
        assert_eq!(
            back.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            vals.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
        assert!(e.encode_f64(f64::NAN, &mut out).is_err());
    }

    /// Each encoder takes only its own type and refuses its end marker (C++
    /// `GORILLA_ENCODING_ENDING_*`: `INT32_MIN`, `INT64_MIN`, NaN) and, for
    /// FLOAT/DOUBLE, every NaN; a refused value writes nothing.
    #[test]
    fn refuses_other_types_and_the_end_marker() {
        let unsupported = |r: Result<()>| matches!(r, Err(Error::Unsupported(_)));
        let invalid = |r: Result<()>| matches!(r, Err(Error::InvalidInput(_)));
        let mut out = Vec::new();
        let mut i = GorillaV2Encoder::int32();
        assert!(unsupported(i.encode_i64(1, &mut out)));
        assert!(unsupported(i.encode_f32(1.0, &mut out)));
        assert!(unsupported(i.encode_f64(1.0, &mut out)));
        assert!(invalid(i.encode_i32(i32::MIN, &mut out)));
        let mut l = GorillaV2Encoder::int64();
        assert!(unsupported(l.encode_i32(1, &mut out)));
        assert!(unsupported(l.encode_f64(1.0, &mut out)));
        assert!(invalid(l.encode_i64(i64::MIN, &mut out)));
        let mut f = GorillaV2Encoder::float();
        assert!(unsupported(f.encode_i32(1, &mut out)));
        assert!(unsupported(f.encode_f64(1.0, &mut out)));
        assert!(invalid(f.encode_f32(f32::NAN, &mut out)));
        assert!(invalid(f.encode_f32(f32::from_bits(0xffc0_0001), &mut out)));
        let mut d = GorillaV2Encoder::double();
        assert!(unsupported(d.encode_i64(1, &mut out)));
        assert!(unsupported(d.encode_f32(1.0, &mut out)));
        assert!(invalid(d.encode_f64(f64::NAN, &mut out)));
        assert!(invalid(
            d.encode_f64(f64::from_bits(0xfff0_0000_0000_0001), &mut out)
        ));
        assert!(out.is_empty(), "refused values write nothing");
        // i64::MIN is an INT64 marker only: the INT32 encoder's marker is i32::MIN
        i.encode_i32(i32::MAX, &mut out).unwrap();
        l.encode_i64(i32::MIN as i64, &mut out).unwrap();
        assert_eq!(
            out,
            [0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x80, 0, 0, 0]
        );
    }

    /// The C++ writer's `get_max_byte_size`: `(2 + 5 + 5 + 32) / 8 + 1` for 32-bit
    /// values, `(2 + 6 + 6 + 64) / 8 + 1` for 64-bit ones.
    #[test]
    fn max_byte_size_is_the_cpp_writers() {
        assert_eq!(GorillaV2Encoder::int32().max_byte_size(), 6);
        assert_eq!(GorillaV2Encoder::float().max_byte_size(), 6);
        assert_eq!(GorillaV2Encoder::int64().max_byte_size(), 10);
        assert_eq!(GorillaV2Encoder::double().max_byte_size(), 10);
    }

    /// FLOAT 1.0, 2.0 by hand: 0x3f800000; xor 0x7f800000 (1 leading, 23 trailing
    /// zeros, 8 bits): `11 00001 00111 11111111`; the marker 0x7fc00000, xor 0x3fc00000
    /// (2 leading, 22 trailing: more trailing bits than stored): `11 00010 00111
    /// 11111111`. 72 bits end on a byte boundary, so the closing byte is an added zero.
    #[test]
    fn hand_computed_float_frame() {
        let want = bytes(&format!(
            "{:032b} 11 00001 00111 11111111 11 00010 00111 11111111 00000000",
            0x3f80_0000u32
        ));
        assert_eq!(want.len(), 10);
        let mut e = GorillaV2Encoder::float();
        let mut out = Vec::new();
        e.encode_f32(1.0, &mut out).unwrap();
        e.encode_f32(2.0, &mut out).unwrap();
        assert!(
            e.flush_frame(&mut out),
            "the marker ended on a byte boundary"
        );
        assert_eq!(out, want);
        // the frame is the 10 bytes, whatever follows
        let mut more = want.clone();
        more.extend_from_slice(&[0xff, 0xff]);
        let mut v = Vec::new();
        assert_eq!(decode_frame_f32(&more, 2, &mut v).unwrap(), 10);
        assert_eq!(v, [1.0, 2.0]);
        // in a frame the value after `count` must be the marker
        assert!(decode_frame_f32(&want, 1, &mut Vec::new()).is_err());
        // in a column the marker ends the page: 3 values are too many (error at the
        // marker's last byte)
        let mut v = Vec::new();
        assert_eq!(decode_err_at(decode_f32(&want, 3, &mut v)), 9);
        assert_eq!(v, [1.0, 2.0]);
        // 1.0 alone: marker xor 0x40400000 (1 leading, 22 trailing, 9 bits): 53 bits,
        // 7 bytes, the last one partial
        let mut e = GorillaV2Encoder::float();
        let mut out = Vec::new();
        e.encode_f32(1.0, &mut out).unwrap();
        assert!(!e.flush_frame(&mut out));
        assert_eq!(
            out,
            bytes(&format!("{:032b} 11 00001 01000 100000001", 0x3f80_0000u32))
        );
        assert_eq!(decode_frame_f32(&out, 1, &mut Vec::new()).unwrap(), 7);
        // the encoder starts afresh after a frame
        e.encode_f32(1.0, &mut out).unwrap();
        assert_eq!(out[7..], [0x3f, 0x80, 0, 0]);
    }

    /// The same for DOUBLE 1.0, 2.0: 0x3ff0000000000000; xor 0x7ff0000000000000 (1
    /// leading, 52 trailing, 11 bits); marker 0x7ff8000000000000, xor
    /// 0x3ff8000000000000 (2 leading, 51 trailing, 11 bits).
    #[test]
    fn hand_computed_double_frame() {
        let want = bytes(&format!(
            "{:064b} 11 000001 001010 11111111111 11 000010 001010 11111111111",
            0x3ff0_0000_0000_0000u64
        ));
        let mut e = GorillaV2Encoder::double();
        let mut out = Vec::new();
        e.encode_f64(1.0, &mut out).unwrap();
        e.encode_f64(2.0, &mut out).unwrap();
        assert!(!e.flush_frame(&mut out));
        assert_eq!(out, want);
        let mut v = Vec::new();
        assert_eq!(decode_frame_f64(&out, 2, &mut v).unwrap(), want.len());
        assert_eq!(v, [1.0, 2.0]);
        assert!(decode_frame_f64(&out, 1, &mut Vec::new()).is_err());
        let mut v = Vec::new();
        decode_f64(&out, 2, &mut v).unwrap();
        assert_eq!(v, [1.0, 2.0]);
    }

    /// Control bits read by hand: `11` with a leading-zero count and a meaningful bit
    /// count that fill the width exactly is valid, one bit more is an error; `10` needs
    /// counts stored before it.
    #[test]
    fn control_bit_errors() {
        let first = format!("{:032b}", 0);
        let mut v = Vec::new();
        // lead 30 + sig 2 = 32: value 0b11
        decode_i32(&bytes(&format!("{first} 11 11110 00001 11")), 2, &mut v).unwrap();
        assert_eq!(v, [0, 3]);
        // lead 31 + sig 2 > 32, found at bit 44 (byte 5)
        let bad = bytes(&format!("{first} 11 11111 00001 11"));
        assert_eq!(decode_err_at(decode_i32(&bad, 2, &mut Vec::new())), 5);
        // `10` as the second value: no counts yet (found at bit 34, byte 4)
        let bad = bytes(&format!("{first} 10 1"));
        assert_eq!(decode_err_at(decode_i32(&bad, 2, &mut Vec::new())), 4);
        // `10` later reuses the stored counts: 0, 1 (lead 31, sig 1), then xor 1 -> 0
        let mut v = Vec::new();
        decode_i32(&bytes(&format!("{first} 11 11111 00000 1 10 1")), 3, &mut v).unwrap();
        assert_eq!(v, [0, 1, 0]);
        // 64-bit: lead 62 + sig 2 = 64 is valid, 63 + 2 is not
        let first = format!("{:064b}", 0);
        let mut l = Vec::new();
        decode_i64(&bytes(&format!("{first} 11 111110 000001 10")), 2, &mut l).unwrap();
        assert_eq!(l, [0, 2]);
        let bad = bytes(&format!("{first} 11 111111 000001 10"));
        assert!(decode_i64(&bad, 2, &mut Vec::new()).is_err());
    }

    /// A hostile count allocates nothing ahead of the data: `usize::MAX` INT64 values
    /// claimed of 10 bytes (1; `11` lead 63, 1 meaningful bit `1`: 0; `0`: 0 again) read
    /// 3 values and fail at byte 10, with room reserved for no more than 10 values.
    #[test]
    fn hostile_count_reserves_no_more_than_the_data() {
        let data = bytes(&format!("{:064b} 11 111111 000000 1 0", 1));
        assert_eq!(data.len(), 10);
        let mut v = Vec::new();
        assert_eq!(decode_err_at(decode_i64(&data, usize::MAX, &mut v)), 10);
        assert_eq!(v, [1, 0, 0]);
        assert!(v.capacity() <= 10, "capacity {}", v.capacity());
    }

    /// A stream cut short: the error names the byte where the missing bits start.
    #[test]
    fn truncation_error_offset() {
        // the first value (32 bits) then nothing: the second value's control bit is
        // missing at bit 32, byte 4
        assert_eq!(
            decode_err_at(decode_i32(&[0, 0, 0, 1], 2, &mut Vec::new())),
            4
        );
        // 16 bits of a 32-bit first value: at byte 0
        assert_eq!(decode_err_at(decode_i32(&[0, 1], 1, &mut Vec::new())), 0);
        // after 0, 1 (32 + 13 bits) a `10` needs 1 more bit than the 6 bytes hold
        let b = bytes(&format!("{:032b} 11 11111 00000 1 10", 0));
        assert_eq!(b.len(), 6);
        let mut r = BitReader::new("test", &b);
        r.get(32).unwrap();
        r.get(13).unwrap();
        r.get(2).unwrap();
        r.get(1).unwrap();
        assert_eq!(r.byte_pos(), 6);
        assert_eq!(decode_err_at(r.get(1)), 6);
    }

    /// `BitReader`: fields across byte boundaries, alignment.
    #[test]
    fn bit_reader_fields() {
        let data = [0b1010_1100, 0b0101_0011, 0xff];
        let mut r = BitReader::new("test", &data);
        assert_eq!(r.get(3).unwrap(), 0b101);
        assert_eq!(r.get(7).unwrap(), 0b011_0001);
        assert_eq!(r.byte_pos(), 1);
        r.align();
        assert_eq!(r.byte_pos(), 2);
        r.align();
        assert_eq!(r.byte_pos(), 2, "aligned already");
        assert!(r.bit().unwrap());
        assert_eq!(r.get(7).unwrap(), 0x7f);
        assert!(r.get(1).is_err());
        let mut r = BitReader::new("test", &data);
        assert_eq!(r.get(24).unwrap(), 0xac53ff);
        // Bits: the reverse, and `pending` / `close_always`
        let mut b = Bits::default();
        let mut out = Vec::new();
        assert!(!b.pending());
        b.put(0b101, 3, &mut out);
        assert!(b.pending());
        b.put(0b0110001, 7, &mut out);
        b.bit(true, &mut out);
        assert_eq!(out, [0b1010_1100]);
        b.close_always(&mut out);
        assert!(!b.pending());
        assert_eq!(out, [0b1010_1100, 0b0110_0000]);
        b.close_always(&mut out);
        assert_eq!(out, [0b1010_1100, 0b0110_0000, 0]);
        b.put(u64::MAX, 64, &mut out);
        assert_eq!(out[3..], [0xff; 8]);
        assert!(!b.pending());
    }
}
