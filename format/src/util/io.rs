//! Checked big-endian reading and writing of the primitives of spec §1.
//!
//! [`ByteReader`] never panics and never allocates more than the bytes it actually has:
//! every length field is checked against what remains before anything is sized by it.
//! Its errors carry the absolute offset (`base + position`) and what was expected.

use crate::errors::{Error, Result};

/// A cursor over a byte slice whose errors name absolute offsets.
#[derive(Debug, Clone)]
pub struct ByteReader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: u64,
}

impl<'a> ByteReader<'a> {
    /// A reader over `buf`, whose first byte sits at absolute offset `base`.
    pub fn new(buf: &'a [u8], base: u64) -> Self {
        ByteReader { buf, pos: 0, base }
    }

    /// Absolute offset of the next byte.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Position relative to the start of the slice.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Whether every byte was read.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The unread bytes.
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    /// An error at the current offset.
    pub fn error(&self, expected: impl std::fmt::Display) -> Error {
        Error::format(self.offset(), expected)
    }

    /// Takes the next `n` bytes.
    pub fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.error(format_args!(
                "{what}: {n} bytes, but only {} remain",
                self.remaining()
            )));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let s = self.take(N, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    /// Reads one byte.
    pub fn read_u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }

    /// Reads a boolean byte (`1` is true, anything else false, as Java does).
    pub fn read_bool(&mut self, what: &str) -> Result<bool> {
        Ok(self.read_u8(what)? == 1)
    }

    /// Reads a big-endian i16.
    pub fn read_i16(&mut self, what: &str) -> Result<i16> {
        Ok(i16::from_be_bytes(self.array(what)?))
    }

    /// Reads a big-endian i32.
    pub fn read_i32(&mut self, what: &str) -> Result<i32> {
        Ok(i32::from_be_bytes(self.array(what)?))
    }

    /// Reads a big-endian i64.
    pub fn read_i64(&mut self, what: &str) -> Result<i64> {
        Ok(i64::from_be_bytes(self.array(what)?))
    }

    /// Reads a big-endian f32.
    pub fn read_f32(&mut self, what: &str) -> Result<f32> {
        Ok(f32::from_bits(u32::from_be_bytes(self.array(what)?)))
    }

    /// Reads a big-endian f64.
    pub fn read_f64(&mut self, what: &str) -> Result<f64> {
        Ok(f64::from_bits(u64::from_be_bytes(self.array(what)?)))
    }

    /// Reads a non-negative i32 length, checked against the remaining bytes.
    pub fn read_len(&mut self, what: &str) -> Result<usize> {
        let at = self.offset();
        let n = self.read_i32(what)?;
        if n < 0 {
            return Err(Error::format(
                at,
                format_args!("{what}: a length >= 0, found {n}"),
            ));
        }
        let n = n as usize;
        if n > self.remaining() {
            return Err(Error::format(
                at,
                format_args!(
                    "{what}: length {n} exceeds the {} bytes that remain",
                    self.remaining()
                ),
            ));
        }
        Ok(n)
    }

    /// Reads an i32-length-prefixed byte string (`Binary`).
    pub fn read_binary(&mut self, what: &str) -> Result<&'a [u8]> {
        let n = self.read_len(what)?;
        self.take(n, what)
    }

    /// Reads an i32-length-prefixed UTF-8 string.
    pub fn read_string(&mut self, what: &str) -> Result<String> {
        let at = self.offset();
        let b = self.read_binary(what)?;
        String::from_utf8(b.to_vec())
            .map_err(|_| Error::format(at, format_args!("{what}: valid UTF-8")))
    }

    /// Reads an unsigned LEB128 var-int of at most 5 bytes (a Java `int`).
    pub fn read_uvarint(&mut self, what: &str) -> Result<u32> {
        let at = self.offset();
        let mut value: u32 = 0;
        for i in 0..5 {
            let b = self.read_u8(what)?;
            value |= ((b & 0x7f) as u32) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(Error::format(
            at,
            format_args!("{what}: a var-int of at most 5 bytes"),
        ))
    }
}

/// Appends a big-endian i16.
#[inline]
pub fn put_i16(out: &mut Vec<u8>, v: i16) {
    out.extend_from_slice(&v.to_be_bytes());
}

/// Appends a big-endian i32.
#[inline]
pub fn put_i32(out: &mut Vec<u8>, v: i32) {
    out.extend_from_slice(&v.to_be_bytes());
}

/// Appends a big-endian i64.
#[inline]
pub fn put_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(&v.to_be_bytes());
}

/// Appends an f32 as Java's `floatToIntBits` (every NaN becomes `0x7fc00000`).
#[inline]
pub fn put_f32(out: &mut Vec<u8>, v: f32) {
    out.extend_from_slice(&java_float_bits(v).to_be_bytes());
}

/// Appends an f64 as Java's `doubleToLongBits` (every NaN becomes `0x7ff8000000000000`).
#[inline]
pub fn put_f64(out: &mut Vec<u8>, v: f64) {
    out.extend_from_slice(&java_double_bits(v).to_be_bytes());
}

/// Appends a boolean byte.
#[inline]
pub fn put_bool(out: &mut Vec<u8>, v: bool) {
    out.push(v as u8);
}

/// Appends an i32-length-prefixed byte string.
#[inline]
pub fn put_binary(out: &mut Vec<u8>, v: &[u8]) {
    put_i32(out, v.len() as i32);
    out.extend_from_slice(v);
}

/// Appends an unsigned LEB128 var-int (the value is taken as unsigned 32 bits).
#[inline]
pub fn put_uvarint(out: &mut Vec<u8>, v: u32) {
    let mut v = v;
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Number of bytes [`put_uvarint`] writes for `v`.
pub fn uvarint_len(v: u32) -> usize {
    match v {
        0..=0x7f => 1,
        0x80..=0x3fff => 2,
        0x4000..=0x1f_ffff => 3,
        0x20_0000..=0x0fff_ffff => 4,
        _ => 5,
    }
}

/// Java `Float.floatToIntBits`.
#[inline]
pub fn java_float_bits(v: f32) -> u32 {
    if v.is_nan() {
        0x7fc0_0000
    } else {
        v.to_bits()
    }
}

/// Java `Double.doubleToLongBits`.
#[inline]
pub fn java_double_bits(v: f64) -> u64 {
    if v.is_nan() {
        0x7ff8_0000_0000_0000
    } else {
        v.to_bits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uvarint_vectors() {
        let mut out = Vec::new();
        put_uvarint(&mut out, 300);
        put_uvarint(&mut out, -1i32 as u32);
        assert_eq!(out, [0xac, 0x02, 0xff, 0xff, 0xff, 0xff, 0x0f]);
        let mut r = ByteReader::new(&out, 0);
        assert_eq!(r.read_uvarint("x").unwrap(), 300);
        assert_eq!(r.read_uvarint("x").unwrap(), u32::MAX);
        assert!(r.is_empty());
        for v in [0u32, 127, 128, 16383, 16384, u32::MAX] {
            let mut o = Vec::new();
            put_uvarint(&mut o, v);
            assert_eq!(o.len(), uvarint_len(v));
        }
    }

    #[test]
    fn checked_lengths_name_offsets() {
        let buf = [0, 0, 0, 9, b'a'];
        let mut r = ByteReader::new(&buf, 100);
        let e = r.read_string("measurement name").unwrap_err().to_string();
        assert!(e.contains("byte 100"), "{e}");
        let mut r = ByteReader::new(&[0xff, 0xff, 0xff, 0xff], 7);
        assert!(r.read_len("len").unwrap_err().to_string().contains("-1"));
        let mut r = ByteReader::new(&[0x80, 0x80], 0);
        assert!(r.read_uvarint("v").is_err());
    }
}
