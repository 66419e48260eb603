//! CHIMP encoding (format v4 only; INT32, INT64, FLOAT, DOUBLE by their bit patterns).
//!
//! Chimp128 over an MSB-first bit string: the first value in full (32 or 64 bits), then
//! per value a 2-bit case. The encoder keeps the last P values (P = 64 for 32-bit, 128
//! for 64-bit) and, per low-bits key (`v & (2^(T+1) - 1)`, T = 11 or 13), where it last
//! saw one. If that value is at most P values back and the XOR with it has more than T
//! trailing zeros, it is the reference; otherwise the previous value is.
//! - `00` + index (log2 P bits): equal to the referenced value.
//! - `01` + index, 3-bit rounded leading-zero code, significant bit count (5/6 bits, 0
//!   meaning all) + the significant bits: XOR with the referenced value.
//! - `10` + the XOR's bits below the stored leading zeros: XOR with the previous value
//!   when its rounded leading-zero count equals the stored one.
//! - `11` + 3-bit leading-zero code + the XOR's bits below it (new stored count).
//!
//! Cases `00`/`01` reset the stored count. Flush appends the end marker (`i32::MIN`,
//! `i64::MIN`, or NaN `0x7fc00000` / `0x7ff8000000000000`) as one more value, then
//! writes the current byte even when empty. The encoder refuses the marker value.

use super::gorilla_v2::{BitReader, Bits};
use super::Encoder;
use crate::errors::{Error, Result};

/// The stored leading-zero count when none is stored (after the first value and cases
/// `00` / `01`): equal to no rounded count, so the next XOR takes case `11`.
const NO_LEAD: u32 = u32::MAX;

/// Rounded leading-zero counts by code.
const LEADING_DECODE: [u32; 8] = [0, 8, 12, 16, 18, 20, 22, 24];

/// (code, rounded count) of a leading-zero count.
fn leading_round(lz: u32) -> (u64, u32) {
    let code = match lz {
        0..=7 => 0,
        8..=11 => 1,
        12..=15 => 2,
        16..=17 => 3,
        18..=19 => 4,
        20..=21 => 5,
        22..=23 => 6,
        _ => 7,
    };
    (code, LEADING_DECODE[code as usize])
}

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
    fn marker(self) -> u64 {
        match self {
            Kind::Int32 => i32::MIN as u32 as u64,
            Kind::Int64 => i64::MIN as u64,
            Kind::Float => 0x7fc0_0000,
            Kind::Double => 0x7ff8_0000_0000_0000,
        }
    }
}

/// Parameters by width: (P, log2 P, threshold T).
fn params(width: u32) -> (usize, u32, u32) {
    if width == 32 {
        (64, 6, 11)
    } else {
        (128, 7, 13)
    }
}

/// CHIMP encoder.
#[derive(Debug, Clone)]
pub struct ChimpEncoder {
    kind: Kind,
    bits: Bits,
    first: bool,
    stored_lead: u32,
    values: Vec<u64>,
    indices: Vec<i64>,
    index: i64,
    current: usize,
}

impl ChimpEncoder {
    fn new(kind: Kind) -> Self {
        let (p, _, t) = params(kind.width());
        ChimpEncoder {
            kind,
            bits: Bits::default(),
            first: true,
            stored_lead: NO_LEAD,
            values: vec![0; p],
            indices: vec![0; 1 << (t + 1)],
            index: 0,
            current: 0,
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

    fn check(&self, k: Kind, bits: u64, nan: bool) -> Result<()> {
        if self.kind != k {
            return Err(Error::unsupported(format!(
                "this CHIMP encoder takes {:?} values, not {k:?}",
                self.kind
            )));
        }
        if nan || bits == k.marker() {
            return Err(Error::invalid(
                "CHIMP cannot store its end-of-page marker (i32::MIN, i64::MIN or NaN)",
            ));
        }
        Ok(())
    }

    fn push(&mut self, v: u64, out: &mut Vec<u8>) {
        let w = self.kind.width();
        let (p, log2p, t) = params(w);
        let key = (v as u32 & ((1u32 << (t + 1)) - 1)) as usize;
        if self.first {
            self.first = false;
            self.values[self.current] = v;
            self.indices[key] = self.index;
            self.bits.put(v, w, out);
            return;
        }
        let curr_index = self.indices[key];
        let mut trailing = 0u32;
        let (prev_index, x) = if self.index - curr_index < p as i64 {
            let slot = (curr_index % p as i64) as usize;
            let tx = v ^ self.values[slot];
            trailing = if tx == 0 {
                w
            } else {
                tx.trailing_zeros().min(w)
            };
            if trailing > t {
                (slot, tx)
            } else {
                let slot = (self.index % p as i64) as usize;
                (slot, self.values[slot] ^ v)
            }
        } else {
            let slot = (self.index % p as i64) as usize;
            (slot, self.values[slot] ^ v)
        };
        if x == 0 {
            self.bits.put(prev_index as u64, log2p + 2, out);
            self.stored_lead = NO_LEAD;
        } else {
            let lz = x.leading_zeros() - (64 - w);
            let (code, lead) = leading_round(lz);
            if trailing > t {
                let sig = w - lead - trailing;
                let sig_bits = if w == 32 { 5 } else { 6 };
                // `01`, the index, the code, the count: as the C++ writer, the sum
                // `2^(3 + sig_bits) * (P + index) + 2^sig_bits * code + count`
                let meta =
                    (((p + prev_index) as u64) << (3 + sig_bits)) + (code << sig_bits) + sig as u64;
                self.bits.put(meta, log2p + 2 + 3 + sig_bits, out);
                self.bits.put(x >> trailing, sig, out);
                self.stored_lead = NO_LEAD;
            } else if lead == self.stored_lead {
                self.bits.put(0b10, 2, out);
                self.bits.put(x, w - lead, out);
            } else {
                self.stored_lead = lead;
                self.bits.put(24 + code, 5, out);
                self.bits.put(x, w - lead, out);
            }
        }
        self.current = (self.current + 1) % p;
        self.values[self.current] = v;
        self.index += 1;
        self.indices[key] = self.index;
    }
}

impl Encoder for ChimpEncoder {
    fn encode_i32(&mut self, v: i32, out: &mut Vec<u8>) -> Result<()> {
        let b = v as u32 as u64;
        self.check(Kind::Int32, b, false)?;
        self.push(b, out);
        Ok(())
    }
    fn encode_i64(&mut self, v: i64, out: &mut Vec<u8>) -> Result<()> {
        self.check(Kind::Int64, v as u64, false)?;
        self.push(v as u64, out);
        Ok(())
    }
    fn encode_f32(&mut self, v: f32, out: &mut Vec<u8>) -> Result<()> {
        let b = v.to_bits() as u64;
        self.check(Kind::Float, b, v.is_nan())?;
        self.push(b, out);
        Ok(())
    }
    fn encode_f64(&mut self, v: f64, out: &mut Vec<u8>) -> Result<()> {
        self.check(Kind::Double, v.to_bits(), v.is_nan())?;
        self.push(v.to_bits(), out);
        Ok(())
    }
    fn flush(&mut self, out: &mut Vec<u8>) -> Result<()> {
        let m = self.kind.marker();
        self.push(m, out);
        self.bits.close_always(out);
        *self = Self::new(self.kind);
        Ok(())
    }
    fn max_byte_size(&self) -> usize {
        let w = self.kind.width() as usize;
        let f = if w == 32 { 5 } else { 6 };
        (2 + f + f + w) / 8 + 1
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
    let (p, log2p, _) = params(w);
    let sig_bits = if w == 32 { 5 } else { 6 };
    let mask = if w == 32 { u32::MAX as u64 } else { u64::MAX };
    let mut r = BitReader::new(stream, data);
    let mut values = vec![0u64; p];
    let mut current = 0usize;
    let mut stored = 0u64;
    let mut lead = 0u32;
    for i in 0..count {
        if i == 0 {
            stored = r.get(w)?;
            values[0] = stored;
        } else {
            match r.get(2)? {
                0b11 => {
                    lead = LEADING_DECODE[r.get(3)? as usize];
                    stored ^= r.get(w - lead)?;
                }
                0b10 => {
                    stored ^= r.get(w - lead)?;
                }
                0b01 => {
                    let index = r.get(log2p)? as usize;
                    lead = LEADING_DECODE[r.get(3)? as usize];
                    let mut sig = r.get(sig_bits)? as u32;
                    if sig == 0 {
                        sig = w;
                    }
                    if lead + sig > w {
                        return Err(Error::decode(
                            stream,
                            r.byte_pos(),
                            format_args!("{lead} leading zeros and {sig} significant bits"),
                        ));
                    }
                    let trailing = w - sig - lead;
                    stored = values[index] ^ ((r.get(sig)? << trailing) & mask);
                }
                _ => {
                    stored = values[r.get(log2p)? as usize];
                }
            }
            current = (current + 1) % p;
            values[current] = stored;
        }
        if stored == kind.marker() {
            return Err(Error::decode(
                stream,
                r.byte_pos(),
                format_args!("the end-of-page marker after {i} of {count} values"),
            ));
        }
        push(stored);
    }
    Ok(())
}

// The `reserve` below: every value after the first takes at least 8 bits (case `00`
// with its index), so a column holds at most one value per byte.

/// Decodes exactly `count` INT32 values.
pub fn decode_i32(data: &[u8], count: usize, out: &mut Vec<i32>) -> Result<()> {
    out.reserve(count.min(data.len()));
    decode_raw("CHIMP INT32 column", Kind::Int32, data, count, |b| {
        out.push(b as u32 as i32)
    })
}

/// Decodes exactly `count` INT64 values.
pub fn decode_i64(data: &[u8], count: usize, out: &mut Vec<i64>) -> Result<()> {
    out.reserve(count.min(data.len()));
    decode_raw("CHIMP INT64 column", Kind::Int64, data, count, |b| {
        out.push(b as i64)
    })
}

/// Decodes exactly `count` FLOAT values.
pub fn decode_f32(data: &[u8], count: usize, out: &mut Vec<f32>) -> Result<()> {
    out.reserve(count.min(data.len()));
    decode_raw("CHIMP FLOAT column", Kind::Float, data, count, |b| {
        out.push(f32::from_bits(b as u32))
    })
}

/// Decodes exactly `count` DOUBLE values.
pub fn decode_f64(data: &[u8], count: usize, out: &mut Vec<f64>) -> Result<()> {
    out.reserve(count.min(data.len()));
    decode_raw("CHIMP DOUBLE column", Kind::Double, data, count, |b| {
        out.push(f64::from_bits(b))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::test_bits::{bytes, decode_err_at};

    #[test]
    fn repeated_value_is_case_00_with_its_index() {
        // 7, 7: first 32 bits, then '00' + index 0 (6 bits); marker: xor with 7 =
        // 0x80000007, lead 0 -> '11' 000 + 32 bits; then the forced last byte.
        let mut e = ChimpEncoder::int32();
        let mut out = Vec::new();
        e.encode_i32(7, &mut out).unwrap();
        e.encode_i32(7, &mut out).unwrap();
        e.flush(&mut out).unwrap();
        let mut bits = format!("{:032b}", 7u32);
        bits += "00000000";
        bits += "11000";
        bits += &format!("{:032b}", 0x8000_0007u32);
        while bits.len() % 8 != 0 {
            bits.push('0');
        }
        let want: Vec<u8> = (0..bits.len() / 8)
            .map(|i| u8::from_str_radix(&bits[8 * i..8 * i + 8], 2).unwrap())
            .collect();
        assert_eq!(out, want);
        let mut back = Vec::new();
        decode_i32(&out, 2, &mut back).unwrap();
        assert_eq!(back, [7, 7]);
    }

    #[test]
    fn round_trips() {
        let vals: Vec<i64> = (0..500)
            .map(|i: i64| match i % 7 {
                0 => i * 1_000_003,
                1 => -i,
                2 => i64::MAX - i,
                3 => 42,
                _ => i << 20,
            })
            .collect();
        let mut e = ChimpEncoder::int64();
        let mut out = Vec::new();
        for v in &vals {
            e.encode_i64(*v, &mut out).unwrap();
        }
        e.flush(&mut out).unwrap();
        let mut back = Vec::new();
        decode_i64(&out, vals.len(), &mut back).unwrap();
        assert_eq!(back, vals);
        let f: Vec<f32> = (0..300).map(|i| (i % 17) as f32 * 0.25 - 2.0).collect();
        let mut e = ChimpEncoder::float();
        let mut out = Vec::new();
        for v in &f {
            e.encode_f32(*v, &mut out).unwrap();
        }
        e.flush(&mut out).unwrap();
        let mut back = Vec::new();
        decode_f32(&out, f.len(), &mut back).unwrap();
        assert_eq!(back, f);
    }

    /// Each encoder takes only its own type, and refuses its end marker (the C++
    /// writer's `CHIMP_ENCODING_ENDING_*`: `INT32_MIN`, `INT64_MIN`, NaN) and, for
    /// FLOAT/DOUBLE, every NaN; a refused value writes nothing.
    #[test]
    fn refuses_other_types_and_the_end_marker() {
        let unsupported = |r: Result<()>| matches!(r, Err(Error::Unsupported(_)));
        let invalid = |r: Result<()>| matches!(r, Err(Error::InvalidInput(_)));
        let mut out = Vec::new();
        let mut i = ChimpEncoder::int32();
        assert!(unsupported(i.encode_i64(1, &mut out)));
        assert!(unsupported(i.encode_f32(1.0, &mut out)));
        assert!(unsupported(i.encode_f64(1.0, &mut out)));
        assert!(invalid(i.encode_i32(i32::MIN, &mut out)));
        let mut l = ChimpEncoder::int64();
        assert!(unsupported(l.encode_i32(1, &mut out)));
        assert!(unsupported(l.encode_f64(1.0, &mut out)));
        assert!(invalid(l.encode_i64(i64::MIN, &mut out)));
        let mut f = ChimpEncoder::float();
        assert!(unsupported(f.encode_i32(1, &mut out)));
        assert!(unsupported(f.encode_f64(1.0, &mut out)));
        assert!(invalid(f.encode_f32(f32::NAN, &mut out)));
        assert!(invalid(f.encode_f32(f32::from_bits(0xffc0_0001), &mut out)));
        let mut d = ChimpEncoder::double();
        assert!(unsupported(d.encode_i64(1, &mut out)));
        assert!(unsupported(d.encode_f32(1.0, &mut out)));
        assert!(invalid(d.encode_f64(f64::NAN, &mut out)));
        assert!(invalid(
            d.encode_f64(f64::from_bits(0xfff0_0000_0000_0001), &mut out)
        ));
        assert!(out.is_empty(), "refused values write nothing");
        // The refused values left the encoders fresh: 7, 7 gives the bytes of
        // `repeated_value_is_case_00_with_its_index`.
        i.encode_i32(7, &mut out).unwrap();
        i.encode_i32(7, &mut out).unwrap();
        i.flush(&mut out).unwrap();
        assert_eq!(
            out,
            bytes(&format!(
                "{:032b} 00 000000 11 000 {:032b}",
                7, 0x8000_0007u32
            ))
        );
    }

    /// The C++ writer's `get_max_byte_size`: `(2 + 5 + 5 + 32) / 8 + 1` for 32-bit
    /// values, `(2 + 6 + 6 + 64) / 8 + 1` for 64-bit ones.
    #[test]
    fn max_byte_size_is_the_cpp_writers() {
        assert_eq!(ChimpEncoder::int32().max_byte_size(), 6);
        assert_eq!(ChimpEncoder::float().max_byte_size(), 6);
        assert_eq!(ChimpEncoder::int64().max_byte_size(), 10);
        assert_eq!(ChimpEncoder::double().max_byte_size(), 10);
    }

    /// Case `01` read by hand: index, 3-bit leading-zero code (7 = 24), significant
    /// bit count (0 = all 32); 24 + 8 fills the 32 bits exactly, 24 + 9 is too many.
    #[test]
    fn case_01_fields() {
        let mut v = Vec::new();
        let first = format!("{:032b}", 0);
        decode_i32(
            &bytes(&format!("{first} 01 000000 111 01000 10101011")),
            2,
            &mut v,
        )
        .unwrap();
        assert_eq!(v, [0, 0xab]);
        // trailing zeros: 32 - 24 - 4 = 4
        v.clear();
        decode_i32(
            &bytes(&format!("{first} 01 000000 111 00100 1011")),
            2,
            &mut v,
        )
        .unwrap();
        assert_eq!(v, [0, 0xb0]);
        v.clear();
        decode_i32(
            &bytes(&format!(
                "{first} 01 000000 000 00000 {:032b}",
                0xdead_beefu32
            )),
            2,
            &mut v,
        )
        .unwrap();
        assert_eq!(v, [0, 0xdead_beefu32 as i32]);
        // against an older value of the window: index 1 holds 0x100
        v.clear();
        let s = format!("{first} 11 000 {:032b} 01 000001 110 00010 11", 0x100u32);
        decode_i32(&bytes(&s), 3, &mut v).unwrap();
        assert_eq!(v, [0, 0x100, 0x100 ^ (0b11 << 8)]);
        // 24 + 9 > 32: the error is at the byte after the count field (bit 48)
        let bad = bytes(&format!("{first} 01 000000 111 01001 101010111"));
        assert_eq!(decode_err_at(decode_i32(&bad, 2, &mut Vec::new())), 6);
    }

    /// Cases `11` (new leading-zero code, then the bits below it) and `10` (the stored
    /// count again), by hand.
    #[test]
    fn cases_11_and_10() {
        let first = format!("{:032b}", 0);
        let mut v = Vec::new();
        // 11 + code 7 (24 zeros) + 8 bits 0x01 -> 1; 10 + 8 bits 0x03 -> 1 ^ 3 = 2
        decode_i32(
            &bytes(&format!("{first} 11 111 00000001 10 00000011")),
            3,
            &mut v,
        )
        .unwrap();
        assert_eq!(v, [0, 1, 2]);
        // code 3 is 16 zeros: 16 bits follow
        v.clear();
        decode_i32(
            &bytes(&format!("{first} 11 011 1000000000000001")),
            2,
            &mut v,
        )
        .unwrap();
        assert_eq!(v, [0, 0x8001]);
        // the same in 64 bits: code 7 (24 zeros) + 40 bits
        let mut l = Vec::new();
        let s = format!("{:064b} 11 111 {:040b}", 0, 0x80_0000_0001u64);
        decode_i64(&bytes(&s), 2, &mut l).unwrap();
        assert_eq!(l, [0, 0x80_0000_0001]);
    }

    /// Case `01` written against a value other than the first: the C++ writer's
    /// metadata `256 * (64 + index) + 32 * code + count` in 16 bits (`512 * (128 +
    /// index) + 64 * code + count` in 18 bits for 64-bit values), worked out by hand.
    #[test]
    fn hand_computed_case_01_with_an_older_index() {
        // 1; 0x1000 (key 0, first seen): xor 0x1001 with the previous value, 19
        // leading zeros -> code 4 (18) -> `11 100` + 14 bits; 0x3000 (key 0, last
        // seen at index 1): xor 0x2000 has 13 > 11 trailing zeros -> `01` index 1,
        // code 4 (18 leading), 1 significant bit; the marker 0x80000000 (key 0, index
        // 2): xor 0x80003000, 12 trailing zeros -> `01` index 2, code 0, 20 bits. 104
        // bits, so the closing byte is an added zero.
        let want = bytes(&format!(
            "{:032b} 11 100 01000000000001 01 000001 100 00001 1 \
             01 000010 000 10100 {:020b} 00000000",
            1, 0x80003
        ));
        let mut e = ChimpEncoder::int32();
        let mut out = Vec::new();
        for v in [1, 0x1000, 0x3000] {
            e.encode_i32(v, &mut out).unwrap();
        }
        e.flush(&mut out).unwrap();
        assert_eq!(out, want);
        let mut back = Vec::new();
        decode_i32(&out, 3, &mut back).unwrap();
        assert_eq!(back, [1, 0x1000, 0x3000]);
        // 64-bit: 1; 0x4000 (key 0 of 14 bits): xor 0x4001, 49 leading zeros -> code
        // 7 (24) -> `11 111` + 40 bits; 0xc000: xor 0x8000 with index 1 has 15 > 13
        // trailing zeros -> `01` index 1 (7 bits), code 7, 64 - 24 - 15 = 25 bits;
        // the marker i64::MIN: xor 0x800000000000c000 with index 2, 14 trailing
        // zeros -> `01` index 2, code 0, 50 bits. 220 bits.
        let want = bytes(&format!(
            "{:064b} 11 111 {:040b} 01 0000001 111 011001 {:025b} \
             01 0000010 000 110010 {:050b}",
            1,
            0x4001,
            1,
            (1u64 << 49) | 3
        ));
        let mut e = ChimpEncoder::int64();
        let mut out = Vec::new();
        for v in [1, 0x4000, 0xc000] {
            e.encode_i64(v, &mut out).unwrap();
        }
        e.flush(&mut out).unwrap();
        assert_eq!(out, want);
        let mut back = Vec::new();
        decode_i64(&out, 3, &mut back).unwrap();
        assert_eq!(back, [1, 0x4000, 0xc000]);
    }

    /// The end marker is not a value: a page read for more values than it holds fails
    /// where the marker is; so does a stream cut short.
    #[test]
    fn marker_and_truncation_are_errors() {
        let page = bytes(&format!(
            "{:032b} 00 000000 11 000 {:032b}",
            7, 0x8000_0007u32
        ));
        let mut v = Vec::new();
        // 32 + 8 + 5 + 32 = 77 bits read: byte 9
        assert_eq!(decode_err_at(decode_i32(&page, 3, &mut v)), 9);
        assert_eq!(v, [7, 7]);
        assert!(decode_i32(&[0, 0, 0], 1, &mut Vec::new()).is_err());
        // a float page's marker is NaN 0x7fc00000
        let f = bytes(&format!(
            "{:032b} 11 000 {:032b}",
            0x3f80_0000u32, 0x4040_0000u32
        ));
        let mut fv = Vec::new();
        decode_f32(&f, 1, &mut fv).unwrap();
        assert_eq!(fv, [1.0]);
        assert!(decode_f32(&f, 2, &mut Vec::new()).is_err());
        // a double page's marker is 0x7ff8000000000000
        let d = bytes(&format!(
            "{:064b} 11 000 {:064b}",
            0x3ff0_0000_0000_0000u64, 0x4008_0000_0000_0000u64
        ));
        let mut dv = Vec::new();
        decode_f64(&d, 1, &mut dv).unwrap();
        assert_eq!(dv, [1.0]);
        assert!(decode_f64(&d, 2, &mut Vec::new()).is_err());
        // and an INT64 page's is i64::MIN
        let l = bytes(&format!(
            "{:064b} 11 000 {:064b}",
            1u64, 0x8000_0000_0000_0001u64
        ));
        let mut lv = Vec::new();
        decode_i64(&l, 1, &mut lv).unwrap();
        assert_eq!(lv, [1]);
        assert!(decode_i64(&l, 2, &mut Vec::new()).is_err());
    }
}
