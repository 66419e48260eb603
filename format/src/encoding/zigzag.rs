//! ZIGZAG encoding (format v4 only; INT32 and INT64).
//!
//! A page's values are zigzag-mapped (`(v << 1) ^ (v >> 63)`) and written as unsigned
//! LEB128 var-ints. The encoder buffers them; [`Encoder::flush`] writes one group:
//! uvarint(byte length of the var-ints), uvarint(value count), then the var-ints. An
//! empty page writes nothing. The decoder reads groups until it has `count` values.

use super::Encoder;
use crate::errors::{Error, Result};
use crate::util::io::{put_uvarint, ByteReader};

/// ZIGZAG encoder for INT32 (`wide == false`) or INT64 values.
#[derive(Debug, Clone, Default)]
pub struct ZigzagEncoder {
    wide: bool,
    bytes: Vec<u8>,
    count: u32,
}

impl ZigzagEncoder {
    /// An INT32 encoder.
    pub fn int32() -> Self {
        ZigzagEncoder::default()
    }

    /// An INT64 encoder.
    pub fn int64() -> Self {
        ZigzagEncoder {
            wide: true,
            ..Default::default()
        }
    }

    fn push(&mut self, mut z: u64) {
        while z >= 0x80 {
            self.bytes.push((z as u8) | 0x80);
            z >>= 7;
        }
        self.bytes.push(z as u8);
        self.count += 1;
    }
}

impl Encoder for ZigzagEncoder {
    fn encode_i32(&mut self, v: i32, _out: &mut Vec<u8>) -> Result<()> {
        if self.wide {
            return Err(Error::unsupported("this ZIGZAG encoder takes INT64 values"));
        }
        self.push(((v << 1) ^ (v >> 31)) as u32 as u64);
        Ok(())
    }
    fn encode_i64(&mut self, v: i64, _out: &mut Vec<u8>) -> Result<()> {
        if !self.wide {
            return Err(Error::unsupported("this ZIGZAG encoder takes INT32 values"));
        }
        self.push(((v << 1) ^ (v >> 63)) as u64);
        Ok(())
    }
    fn flush(&mut self, out: &mut Vec<u8>) -> Result<()> {
        if self.count == 0 {
            return Ok(());
        }
        put_uvarint(out, self.bytes.len() as u32);
        put_uvarint(out, self.count);
        out.extend_from_slice(&self.bytes);
        self.bytes.clear();
        self.count = 0;
        Ok(())
    }
    fn max_byte_size(&self) -> usize {
        if self.count == 0 {
            0
        } else {
            8 + self.bytes.len()
        }
    }
}

/// Decodes `count` zigzag values (as u64 before un-mapping) from `data`.
fn decode_raw(
    stream: &'static str,
    data: &[u8],
    count: usize,
    max_bytes: usize,
    mut push: impl FnMut(u64),
) -> Result<()> {
    let mut r = ByteReader::new(data, 0);
    let mut done = 0usize;
    while done < count {
        let at = r.position();
        let err = |e: Error| Error::decode(stream, at, e);
        let len = r.read_uvarint("group byte length").map_err(err)? as usize;
        let n = r.read_uvarint("group value count").map_err(err)? as usize;
        let body = r.take(len, "group var-ints").map_err(err)?;
        let mut p = 0usize;
        for i in 0..n {
            let mut z: u64 = 0;
            let mut k = 0usize;
            loop {
                let Some(&b) = body.get(p) else {
                    return Err(Error::decode(
                        stream,
                        at,
                        format_args!("value {i} of a group of {n} runs past its {len} bytes"),
                    ));
                };
                p += 1;
                if k == max_bytes {
                    return Err(Error::decode(stream, at, "a var-int that is too long"));
                }
                z |= ((b & 0x7f) as u64) << (7 * k);
                k += 1;
                if b & 0x80 == 0 {
                    break;
                }
            }
            if done < count {
                push(z);
                done += 1;
            }
        }
        if n == 0 {
            return Err(Error::decode(stream, at, "an empty group"));
        }
    }
    Ok(())
}

/// Decodes exactly `count` INT32 ZIGZAG values, appending to `out`.
pub fn decode_i32(data: &[u8], count: usize, out: &mut Vec<i32>) -> Result<()> {
    out.reserve(count.min(data.len()));
    decode_raw("ZIGZAG INT32 column", data, count, 5, |z| {
        let z = z as u32;
        out.push(((z >> 1) as i32) ^ -((z & 1) as i32));
    })
}

/// Decodes exactly `count` INT64 ZIGZAG values, appending to `out`.
pub fn decode_i64(data: &[u8], count: usize, out: &mut Vec<i64>) -> Result<()> {
    out.reserve(count.min(data.len()));
    decode_raw("ZIGZAG INT64 column", data, count, 10, |z| {
        out.push(((z >> 1) as i64) ^ -((z & 1) as i64));
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_group() {
        // 0 -> 00, -1 -> 01, 1 -> 02, 64 -> zigzag 128 -> 80 01, -65 -> zigzag 129 -> 81 01.
        let mut e = ZigzagEncoder::int32();
        let mut out = Vec::new();
        for v in [0, -1, 1, 64, -65] {
            e.encode_i32(v, &mut out).unwrap();
        }
        assert!(out.is_empty(), "values are buffered until flush");
        e.flush(&mut out).unwrap();
        assert_eq!(out, [7, 5, 0x00, 0x01, 0x02, 0x80, 0x01, 0x81, 0x01]);
        let mut back = Vec::new();
        decode_i32(&out, 5, &mut back).unwrap();
        assert_eq!(back, [0, -1, 1, 64, -65]);
        // Exactly `count` values, also when the group holds more.
        let mut back = Vec::new();
        decode_i32(&out, 3, &mut back).unwrap();
        assert_eq!(back, [0, -1, 1]);
        let mut empty = Vec::new();
        e.flush(&mut empty).unwrap();
        assert!(empty.is_empty());
    }

    /// The page-sealing estimate of the writer of the v4 fixtures (Apache TsFile C++
    /// `ZigzagEncoder::get_max_byte_size`): 0 with nothing buffered, else 8 plus the
    /// buffered var-int bytes.
    #[test]
    fn max_byte_size_follows_the_library() {
        let mut e = ZigzagEncoder::int32();
        let mut out = Vec::new();
        assert_eq!(e.max_byte_size(), 0);
        e.encode_i32(-65, &mut out).unwrap(); // zigzag 129: 81 01
        assert_eq!(e.max_byte_size(), 8 + 2);
        for v in [0, -1, 1, 64] {
            e.encode_i32(v, &mut out).unwrap();
        }
        assert_eq!(e.max_byte_size(), 8 + 7);
        e.flush(&mut out).unwrap();
        assert_eq!(e.max_byte_size(), 0);
        let mut e = ZigzagEncoder::int64();
        e.encode_i64(i64::MIN, &mut out).unwrap(); // zigzag u64::MAX: 10 bytes
        assert_eq!(e.max_byte_size(), 8 + 10);
    }

    #[test]
    fn extremes_round_trip_and_truncation_errors() {
        let mut e = ZigzagEncoder::int64();
        let mut out = Vec::new();
        for v in [i64::MIN, i64::MAX, 0] {
            e.encode_i64(v, &mut out).unwrap();
        }
        e.flush(&mut out).unwrap();
        let mut back = Vec::new();
        decode_i64(&out, 3, &mut back).unwrap();
        assert_eq!(back, [i64::MIN, i64::MAX, 0]);
        for cut in 0..out.len() {
            assert!(
                decode_i64(&out[..cut], 3, &mut Vec::new()).is_err(),
                "{cut}"
            );
        }
    }
}
