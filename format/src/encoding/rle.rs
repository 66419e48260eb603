//! RLE / bit-packing hybrid for BOOLEAN, INT32, INT64 (spec §6.2).
//!
//! One frame per page: `uvarint L, u8 bitWidth, runs…` where a run is either an RLE run
//! (`uvarint count<<1`, then the value in `ceil(bitWidth/8)` bytes, little-endian for
//! INT32/BOOLEAN and big-endian for INT64) or a bit-packed run (`(groups<<1)|1`, the
//! number of meaningful values in the last group, then `groups` groups of 8 values of
//! `bitWidth` bits, MSB-first).
//!
//! As in Java, values are only buffered by `encode` (nothing reaches the column stream
//! before flush); `bitWidth` is computed over the whole page at flush, then the exact
//! Java run-boundary state machine (spec §6.2.2) produces the frame.

use super::bitpack::{packed_len, unpack, BitWriter, JavaInt};
use super::Encoder;
use crate::errors::{Error, Result};
use crate::util::io::put_uvarint;

/// Minimum length of an RLE run (`RLE_MIN_REPEATED_NUM`), also the group size.
const MIN_REPEAT: u32 = 8;
/// Maximum length of an RLE run (`RLE_MAX_REPEATED_NUM`).
const MAX_REPEAT: u32 = 0x7fff;
/// Maximum groups per bit-packed run (`RLE_MAX_BIT_PACKED_NUM`).
const MAX_GROUPS: u32 = 63;

/// Java `IntRleEncoder` (INT32 and BOOLEAN, also inside FLOAT RLE).
pub type IntRleEncoder = RleEncoder<i32>;
/// Java `LongRleEncoder` (INT64, also inside DOUBLE RLE).
pub type LongRleEncoder = RleEncoder<i64>;

/// Java `RleEncoder` over `i32` or `i64`.
#[derive(Debug, Clone, Default)]
pub struct RleEncoder<T: JavaInt> {
    values: Vec<T>,
    cache: Vec<u8>,
    pending: Vec<u8>,
}

impl<T: JavaInt> RleEncoder<T> {
    /// A fresh encoder.
    pub fn new() -> Self {
        RleEncoder {
            values: Vec::new(),
            cache: Vec::new(),
            pending: Vec::new(),
        }
    }

    /// Buffers one value (Java writes nothing before flush).
    #[inline]
    pub fn encode(&mut self, v: T) {
        self.values.push(v);
    }

    /// Values buffered for the current page.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether no value is buffered.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Writes the page's frame to `out` and resets the state.
    pub fn flush_frame(&mut self, out: &mut Vec<u8>) {
        self.cache.clear();
        self.pending.clear();
        if !self.values.is_empty() {
            let bw = self
                .values
                .iter()
                .map(|v| v.width())
                .max()
                .unwrap_or(0)
                .max(1);
            self.cache.push(bw as u8);
            let mut st = RunState {
                bw,
                long: T::BITS == 64,
                cache: &mut self.cache,
                pending: &mut self.pending,
                buf: [0; 8],
                num_buf: 0,
                repeat: 0,
                pre: 0,
                groups: 0,
                in_bp: false,
            };
            for v in &self.values {
                st.encode_value(v.bits());
            }
            st.finish();
        }
        put_uvarint(out, self.cache.len() as u32);
        out.extend_from_slice(&self.cache);
        self.values.clear();
    }

    /// Java `getMaxByteSize`: `8 + groupNum*5 + n*(4|8)`, `groupNum = (n/8 + 1)/63 + 1`.
    pub fn max_byte_size(&self) -> usize {
        let n = self.values.len();
        let group_num = (n / 8 + 1) / 63 + 1;
        8 + group_num * 5 + n * T::BYTES
    }
}

/// The Java encoder's run state while a page is flushed.
struct RunState<'a> {
    bw: u32,
    long: bool,
    cache: &'a mut Vec<u8>,
    pending: &'a mut Vec<u8>,
    buf: [u64; 8],
    num_buf: usize,
    repeat: u32,
    pre: u64,
    groups: u32,
    in_bp: bool,
}

impl RunState<'_> {
    #[inline]
    fn encode_value(&mut self, v: u64) {
        if v == self.pre {
            self.repeat += 1;
            if (MIN_REPEAT..=MAX_REPEAT).contains(&self.repeat) {
                return;
            }
            if self.repeat == MAX_REPEAT + 1 {
                self.repeat = MAX_REPEAT;
                self.write_rle_run();
                self.repeat = 1;
                self.pre = v;
            }
        } else {
            if self.repeat >= MIN_REPEAT {
                self.write_rle_run();
            }
            self.repeat = 1;
            self.pre = v;
        }
        self.buf[self.num_buf] = v;
        self.num_buf += 1;
        if self.num_buf == MIN_REPEAT as usize {
            self.write_or_append_bit_packed_run();
        }
    }

    fn write_or_append_bit_packed_run(&mut self) {
        if self.groups >= MAX_GROUPS {
            self.end_bit_packed_run(MIN_REPEAT as u8);
        }
        self.in_bp = true;
        let mut bw = BitWriter::new();
        for v in self.buf {
            bw.push(v, self.bw, self.pending);
        }
        bw.finish(self.pending);
        self.num_buf = 0;
        self.repeat = 0;
        self.groups += 1;
    }

    fn end_bit_packed_run(&mut self, last: u8) {
        if !self.in_bp {
            return;
        }
        self.cache.push(((self.groups << 1) | 1) as u8);
        self.cache.push(last);
        self.cache.extend_from_slice(self.pending);
        self.pending.clear();
        self.in_bp = false;
        self.groups = 0;
    }

    fn write_rle_run(&mut self) {
        self.end_bit_packed_run(MIN_REPEAT as u8);
        put_uvarint(self.cache, self.repeat << 1);
        let n = self.bw.div_ceil(8) as usize;
        if self.long {
            // Java `longToBytes(v, n)`: the low n bytes, most significant first.
            self.cache
                .extend_from_slice(&self.pre.to_be_bytes()[8 - n..]);
        } else {
            self.cache.extend_from_slice(&self.pre.to_le_bytes()[..n]);
        }
        self.repeat = 0;
        self.num_buf = 0;
    }

    fn finish(&mut self) {
        let last = self.num_buf as u8;
        if self.repeat >= MIN_REPEAT {
            self.write_rle_run();
        } else if self.num_buf > 0 {
            self.buf[self.num_buf..].fill(0);
            self.write_or_append_bit_packed_run();
            self.end_bit_packed_run(last);
        } else {
            self.end_bit_packed_run(MIN_REPEAT as u8);
        }
    }
}

impl Encoder for RleEncoder<i32> {
    fn encode_bool(&mut self, v: bool, _out: &mut Vec<u8>) -> Result<()> {
        self.encode(v as i32);
        Ok(())
    }
    fn encode_i32(&mut self, v: i32, _out: &mut Vec<u8>) -> Result<()> {
        self.encode(v);
        Ok(())
    }
    fn flush(&mut self, out: &mut Vec<u8>) -> Result<()> {
        self.flush_frame(out);
        Ok(())
    }
    fn max_byte_size(&self) -> usize {
        RleEncoder::max_byte_size(self)
    }
}

impl Encoder for RleEncoder<i64> {
    fn encode_i64(&mut self, v: i64, _out: &mut Vec<u8>) -> Result<()> {
        self.encode(v);
        Ok(())
    }
    fn flush(&mut self, out: &mut Vec<u8>) -> Result<()> {
        self.flush_frame(out);
        Ok(())
    }
    fn max_byte_size(&self) -> usize {
        RleEncoder::max_byte_size(self)
    }
}

/// Reads a uvarint of at most 5 bytes from `data[*pos..end]`.
fn read_uvarint(
    stream: &'static str,
    data: &[u8],
    pos: &mut usize,
    end: usize,
    what: &str,
) -> Result<u32> {
    let start = *pos;
    let mut v: u32 = 0;
    for i in 0..5 {
        let Some(&b) = data.get(*pos).filter(|_| *pos < end) else {
            return Err(Error::decode(
                stream,
                start,
                format_args!("{what}: a var-int, but the data ended"),
            ));
        };
        *pos += 1;
        v |= ((b & 0x7f) as u32) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(Error::decode(
        stream,
        start,
        format_args!("{what}: a var-int of at most 5 bytes"),
    ))
}

/// Decodes exactly `count` values from RLE frames in `data`, appending to `out`.
///
/// Frames are read one after another while values are still needed (the Java decoder
/// accepts several; the writer produces one per page). A run longer than the values
/// still needed is read only partly, as the Java reader does. Bytes after the
/// `count`-th value are ignored.
pub fn decode_into<T: JavaInt>(
    stream: &'static str,
    data: &[u8],
    count: usize,
    out: &mut Vec<T>,
) -> Result<()> {
    let mut pos = 0usize;
    let mut left = count;
    while left > 0 {
        if pos >= data.len() {
            return Err(Error::decode(
                stream,
                pos,
                format_args!("an RLE frame for {left} more values, but the stream ended"),
            ));
        }
        let frame_at = pos;
        let len = read_uvarint(stream, data, &mut pos, data.len(), "RLE frame length")? as usize;
        if len > data.len() - pos {
            return Err(Error::decode(
                stream,
                frame_at,
                format_args!(
                    "an RLE frame length of at most {}, found {len}",
                    data.len() - pos
                ),
            ));
        }
        let end = pos + len;
        if len == 0 {
            return Err(Error::decode(
                stream,
                frame_at,
                format_args!("an RLE frame holding {left} more values, found an empty frame"),
            ));
        }
        let bw = data[pos] as u32;
        if bw > T::BITS {
            return Err(Error::decode(
                stream,
                pos,
                format_args!("an RLE bit width in 0..={}, found {bw}", T::BITS),
            ));
        }
        pos += 1;
        let value_bytes = bw.div_ceil(8) as usize;
        while left > 0 && pos < end {
            let run_at = pos;
            let header = read_uvarint(stream, data, &mut pos, end, "RLE run header")?;
            if header & 1 == 0 {
                let n = (header >> 1) as usize;
                if n == 0 {
                    return Err(Error::decode(
                        stream,
                        run_at,
                        "an RLE run count >= 1, found 0",
                    ));
                }
                if value_bytes > end - pos {
                    return Err(Error::decode(
                        stream,
                        pos,
                        format_args!(
                            "an RLE run value of {value_bytes} bytes, but the frame ended"
                        ),
                    ));
                }
                let b = &data[pos..pos + value_bytes];
                let mut bits = 0u64;
                if T::BITS == 64 {
                    for x in b {
                        bits = (bits << 8) | *x as u64;
                    }
                } else {
                    for (i, x) in b.iter().enumerate() {
                        bits |= (*x as u64) << (8 * i);
                    }
                }
                pos += value_bytes;
                let take = n.min(left);
                out.extend(std::iter::repeat_n(T::from_bits(bits), take));
                left -= take;
            } else {
                let groups = (header >> 1) as usize;
                if groups == 0 {
                    return Err(Error::decode(
                        stream,
                        run_at,
                        "a bit-packed run of at least one group, found 0",
                    ));
                }
                let Some(&last) = data.get(pos).filter(|_| pos < end) else {
                    return Err(Error::decode(
                        stream,
                        pos,
                        "the last-group value count of a bit-packed run, but the frame ended",
                    ));
                };
                if last > 8 || (groups == 1 && last == 0) {
                    return Err(Error::decode(
                        stream,
                        pos,
                        format_args!(
                            "a last-group value count in {}..=8, found {last}",
                            if groups == 1 { 1 } else { 0 }
                        ),
                    ));
                }
                pos += 1;
                let nbytes = groups * bw as usize;
                if nbytes > end - pos {
                    return Err(Error::decode(
                        stream,
                        pos,
                        format_args!(
                            "{groups} bit-packed groups of {bw} bytes, but only {} bytes remain in the frame",
                            end - pos
                        ),
                    ));
                }
                let n = (groups - 1) * 8 + last as usize;
                let take = n.min(left);
                out.reserve(take);
                if bw == 0 {
                    out.extend(std::iter::repeat_n(T::default(), take));
                } else {
                    debug_assert!(packed_len(take, bw) <= nbytes);
                    unpack(&data[pos..pos + nbytes], take, bw, |v| {
                        out.push(T::from_bits(v))
                    });
                }
                pos += nbytes;
                left -= take;
            }
        }
        // Every run is bounded by `end`: values still needed here means `pos == end`.
    }
    Ok(())
}

/// Decodes `count` BOOLEAN values (`IntRleDecoder`, `readBoolean = readInt != 0`).
pub fn decode_bools(
    stream: &'static str,
    data: &[u8],
    count: usize,
    out: &mut Vec<bool>,
) -> Result<()> {
    let mut ints: Vec<i32> = Vec::new();
    decode_into::<i32>(stream, data, count, &mut ints)?;
    out.reserve(ints.len());
    out.extend(ints.into_iter().map(|v| v != 0));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    fn enc32(v: &[i32]) -> Vec<u8> {
        let mut e = IntRleEncoder::new();
        for x in v {
            e.encode(*x);
        }
        let mut out = Vec::new();
        e.flush_frame(&mut out);
        out
    }

    fn enc64(v: &[i64]) -> Vec<u8> {
        let mut e = LongRleEncoder::new();
        for x in v {
            e.encode(*x);
        }
        let mut out = Vec::new();
        e.flush_frame(&mut out);
        out
    }

    fn check32(v: &[i32], want: &str) {
        let b = enc32(v);
        assert_eq!(hex(&b), want.replace(' ', ""), "{v:?}");
        let mut d = Vec::new();
        decode_into::<i32>("s", &b, v.len(), &mut d).unwrap();
        assert_eq!(d, v);
    }

    fn check64(v: &[i64], want: &str) {
        let b = enc64(v);
        assert_eq!(hex(&b), want.replace(' ', ""), "{v:?}");
        let mut d = Vec::new();
        decode_into::<i64>("s", &b, v.len(), &mut d).unwrap();
        assert_eq!(d, v);
    }

    #[test]
    fn spec_vectors_int32() {
        let v: Vec<i32> = (1..=10).collect();
        check32(&v, "0b 04 05 02 12345678 9a000000");
        check32(&[7; 20], "03 03 28 07");
        check32(&[0, 0, 0], "04 01 03 03 00");
        check32(
            &[-1, 1],
            &format!("23 20 03 02 ffffffff 00000001{}", "00".repeat(24)),
        );
        let mut v = vec![1, 2, 3, 4, 5, 6];
        v.extend([7; 11]);
        check32(&v, "08 03 03 08 29cbbf 12 07");
        let mut v = vec![5; 8];
        v.extend([6; 8]);
        v.push(1);
        check32(&v, "0a 03 10 05 10 06 03 01 200000");
        let mut v = vec![3; 10];
        v.extend([1, 2]);
        check32(&v, "07 02 14 03 03 02 6000");
        let mut v: Vec<i32> = (0..8).collect();
        v.push(5);
        check32(&v, "09 03 05 01 053977 a00000");
        check32(&[300; 10], "04 09 14 2c01");
        check32(&[9; 40000], "08 04 feff03 09 8271 09");
        let alt: Vec<i32> = (0..600).map(|i| i % 2).collect();
        let want = format!("50 01 7f 08 {} 19 08 {}", "55".repeat(63), "55".repeat(12));
        check32(&alt, &want);
        assert_eq!(enc32(&alt).len(), 81);
    }

    #[test]
    fn spec_vectors_bool_and_int64() {
        let mut e = IntRleEncoder::new();
        let mut out = Vec::new();
        for b in [true, false, true, true] {
            e.encode_bool(b, &mut out).unwrap();
        }
        assert!(out.is_empty());
        e.flush(&mut out).unwrap();
        assert_eq!(hex(&out), "04010304b0");
        let mut d = Vec::new();
        decode_bools("s", &out, 4, &mut d).unwrap();
        assert_eq!(d, [true, false, true, true]);

        let v: Vec<i64> = (1..=10).collect();
        check64(&v, "0b 04 05 02 12345678 9a000000");
        check64(&[300; 10], "04 09 14 012c");
        check64(
            &[-1, 1],
            &format!(
                "43 40 03 02 ffffffffffffffff 0000000000000001{}",
                "00".repeat(48)
            ),
        );
    }

    #[test]
    fn buffered_values_are_counted_until_flush() {
        let mut e = IntRleEncoder::new();
        assert_eq!((e.len(), e.is_empty()), (0, true));
        for v in [4, 4, 9] {
            e.encode(v);
        }
        assert_eq!((e.len(), e.is_empty()), (3, false));
        e.flush_frame(&mut Vec::new());
        assert_eq!((e.len(), e.is_empty()), (0, true));
    }

    /// Spec §6.8 through the [`Encoder`] trait (as the page writer calls it): 3 values
    /// buffered, groupNum = (3/8 + 1)/63 + 1 = 1.
    #[test]
    fn max_byte_size_through_the_trait() {
        let mut out = Vec::new();
        let mut e: Box<dyn Encoder> = Box::new(IntRleEncoder::new());
        let mut l: Box<dyn Encoder> = Box::new(LongRleEncoder::new());
        for v in [1, 2, 3] {
            e.encode_i32(v, &mut out).unwrap();
            l.encode_i64(v as i64, &mut out).unwrap();
        }
        assert_eq!(e.max_byte_size(), 8 + 5 + 3 * 4);
        assert_eq!(l.max_byte_size(), 8 + 5 + 3 * 8);
    }

    /// A run header, run value, last-group count or group cut by the frame's end is an
    /// error, even when bytes follow the frame.
    #[test]
    fn runs_cut_by_the_frame_end() {
        // frame of 2 bytes: bit width 1, then 0x80 (a var-int that needs another byte)
        let e = decode_into::<i32>("s", &[0x02, 0x01, 0x80, 0x02, 0x05], 1, &mut Vec::new())
            .unwrap_err();
        assert!(matches!(e, Error::Decode { at: 2, .. }), "{e}");
        // An RLE run value (2 bytes at bit width 9) cut by the frame end.
        let e = decode_into::<i32>("s", &[0x02, 0x09, 0x10, 0x2c, 0x01], 8, &mut Vec::new())
            .unwrap_err();
        assert!(matches!(e, Error::Decode { at: 3, .. }), "{e}");
        // The last-group count of a bit-packed run cut by the frame end.
        let e = decode_into::<i32>("s", &[0x02, 0x01, 0x03, 0x08, 0xff], 1, &mut Vec::new())
            .unwrap_err();
        assert!(matches!(e, Error::Decode { at: 3, .. }), "{e}");
        // The group bytes of a bit-packed run cut by the frame end.
        let e = decode_into::<i32>("s", &[0x03, 0x01, 0x03, 0x08, 0xff], 1, &mut Vec::new())
            .unwrap_err();
        assert!(matches!(e, Error::Decode { at: 4, .. }), "{e}");
    }

    /// Hand-assembled frames the writer never produces but the Java decoder reads.
    #[test]
    fn frames_read_like_java() {
        // Two groups with a last-group count of 0: (2-1)*8 + 0 = 8 values, bit width 1,
        // group bytes aa (10101010) and ff.
        let mut d = Vec::new();
        decode_into::<i32>("s", &[0x05, 0x01, 0x05, 0x00, 0xaa, 0xff], 8, &mut d).unwrap();
        assert_eq!(d, [1, 0, 1, 0, 1, 0, 1, 0]);
        // One group with a count of 0 holds no value: refused.
        let e = decode_into::<i32>("s", &[0x04, 0x01, 0x03, 0x00, 0xff], 1, &mut Vec::new())
            .unwrap_err();
        assert!(matches!(e, Error::Decode { at: 3, .. }), "{e}");
        // The decoder stops once it has its values: the zero-count run after the run of
        // eight 5s (header 0x10, value 05) is never read.
        let mut d = Vec::new();
        decode_into::<i32>("s", &[0x04, 0x03, 0x10, 0x05, 0x00], 8, &mut d).unwrap();
        assert_eq!(d, [5; 8]);
        // INT64 run values are big-endian: bit width 9, value 01 2c = 300.
        let mut d = Vec::new();
        decode_into::<i64>("s", &[0x04, 0x09, 0x06, 0x01, 0x2c], 3, &mut d).unwrap();
        assert_eq!(d, [300; 3]);
    }

    #[test]
    fn empty_page_is_an_empty_frame() {
        assert_eq!(enc32(&[]), [0]);
    }

    #[test]
    fn max_byte_size_follows_java() {
        let mut e = IntRleEncoder::new();
        assert_eq!(e.max_byte_size(), 13);
        for i in 0..1000 {
            e.encode(i);
        }
        // groupNum = (125 + 1) / 63 + 1 = 3
        assert_eq!(e.max_byte_size(), 8 + 15 + 4000);
        let mut l = LongRleEncoder::new();
        for i in 0..10 {
            l.encode(i);
        }
        assert_eq!(l.max_byte_size(), 8 + 5 + 80);
        let mut out = Vec::new();
        l.flush_frame(&mut out);
        assert_eq!(l.max_byte_size(), 13);
    }

    /// A literal transcription of Java's algorithm on i64 values, kept independent of the
    /// encoder (own packing, own buffers), as the reference for the property tests.
    #[allow(unused_assignments)]
    fn model(vals: &[i64], bits: u32) -> Vec<u8> {
        let width = |v: i64| -> u32 {
            let u = if bits == 32 {
                v as u32 as u64
            } else {
                v as u64
            };
            64 - u.leading_zeros()
        };
        let bw = vals.iter().map(|v| width(*v)).max().unwrap_or(0).max(1);
        let mut cache: Vec<u8> = Vec::new();
        if !vals.is_empty() {
            cache.push(bw as u8);
        }
        let mut groups_bytes: Vec<Vec<u8>> = Vec::new();
        let (mut num, mut rep, mut pre, mut gc, mut inbp) = (0usize, 0u32, 0i64, 0u32, false);
        let mut buf = [0i64; 8];
        let pack = |b: &[i64; 8]| -> Vec<u8> {
            let mut bitsv = Vec::new();
            for v in b {
                for k in (0..bw).rev() {
                    bitsv.push(((*v as u64) >> k) & 1);
                }
            }
            bitsv
                .chunks(8)
                .map(|c| c.iter().fold(0u8, |a, b| (a << 1) | *b as u8))
                .collect()
        };
        macro_rules! end_bp {
            ($last:expr) => {
                if inbp {
                    cache.push(((gc << 1) | 1) as u8);
                    cache.push($last);
                    for g in groups_bytes.drain(..) {
                        cache.extend(g);
                    }
                    inbp = false;
                    gc = 0;
                }
            };
        }
        macro_rules! rle {
            () => {
                end_bp!(8);
                put_uvarint(&mut cache, rep << 1);
                let n = bw.div_ceil(8) as usize;
                if bits == 64 {
                    cache.extend(&pre.to_be_bytes()[8 - n..]);
                } else {
                    cache.extend(&(pre as i32).to_le_bytes()[..n]);
                }
                rep = 0;
                num = 0;
            };
        }
        macro_rules! bp {
            () => {
                if gc >= 63 {
                    end_bp!(8);
                }
                inbp = true;
                groups_bytes.push(pack(&buf));
                num = 0;
                rep = 0;
                gc += 1;
            };
        }
        for &v in vals {
            if v == pre {
                rep += 1;
                if (8..=32767).contains(&rep) {
                    continue;
                } else if rep == 32768 {
                    rep = 32767;
                    rle!();
                    rep = 1;
                    pre = v;
                }
            } else {
                if rep >= 8 {
                    rle!();
                }
                rep = 1;
                pre = v;
            }
            buf[num] = v;
            num += 1;
            if num == 8 {
                bp!();
            }
        }
        let last = num as u8;
        if rep >= 8 {
            rle!();
        } else if num > 0 {
            for x in buf.iter_mut().skip(num) {
                *x = 0;
            }
            bp!();
            end_bp!(last);
        } else {
            end_bp!(8);
        }
        let mut out = Vec::new();
        put_uvarint(&mut out, cache.len() as u32);
        out.extend(cache);
        out
    }

    fn runs() -> impl Strategy<Value = Vec<i64>> {
        proptest::collection::vec(
            (
                prop_oneof![
                    Just(0i64),
                    -3i64..20,
                    any::<i64>(),
                    any::<i32>().prop_map(|x| x as i64)
                ],
                prop_oneof![
                    1usize..4,
                    1usize..20,
                    Just(7usize),
                    Just(8),
                    Just(9),
                    30usize..80
                ],
            ),
            0..60,
        )
        .prop_map(|rs| {
            rs.into_iter()
                .flat_map(|(v, n)| std::iter::repeat_n(v, n))
                .collect()
        })
    }

    fn split<T: Clone>(v: &[T], cuts: &[usize]) -> Vec<Vec<T>> {
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (v.len() + 1)).collect();
        cuts.push(0);
        cuts.push(v.len());
        cuts.sort();
        cuts.dedup();
        cuts.windows(2).map(|w| v[w[0]..w[1]].to_vec()).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]
        #[test]
        fn int64_matches_model_and_round_trips(v in runs(), cuts in proptest::collection::vec(any::<usize>(), 0..3)) {
            let mut e = LongRleEncoder::new();
            for page in split(&v, &cuts) {
                let mut out = Vec::new();
                for x in &page {
                    e.encode_i64(*x, &mut out).unwrap();
                }
                prop_assert!(out.is_empty());
                e.flush(&mut out).unwrap();
                prop_assert_eq!(&out, &model(&page, 64));
                let mut d = Vec::new();
                decode_into::<i64>("s", &out, page.len(), &mut d).unwrap();
                prop_assert_eq!(d, page);
            }
        }

        #[test]
        fn int32_matches_model_and_round_trips(v in runs(), cuts in proptest::collection::vec(any::<usize>(), 0..3)) {
            let v: Vec<i32> = v.into_iter().map(|x| x as i32).collect();
            let mut e = IntRleEncoder::new();
            for page in split(&v, &cuts) {
                let mut out = Vec::new();
                for x in &page {
                    e.encode_i32(*x, &mut out).unwrap();
                }
                e.flush(&mut out).unwrap();
                let wide: Vec<i64> = page.iter().map(|x| *x as i64).collect();
                prop_assert_eq!(&out, &model(&wide, 32));
                let mut d = Vec::new();
                decode_into::<i32>("s", &out, page.len(), &mut d).unwrap();
                prop_assert_eq!(d, page);
            }
        }

        #[test]
        fn bool_round_trips(v in proptest::collection::vec(any::<bool>(), 1..500)) {
            let mut e = IntRleEncoder::new();
            let mut out = Vec::new();
            for b in &v {
                e.encode_bool(*b, &mut out).unwrap();
            }
            e.flush(&mut out).unwrap();
            let mut d = Vec::new();
            decode_bools("s", &out, v.len(), &mut d).unwrap();
            prop_assert_eq!(d, v);
        }

        #[test]
        fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..100), count in 0usize..2000) {
            let _ = decode_into::<i32>("s", &data, count, &mut Vec::new());
            let _ = decode_into::<i64>("s", &data, count, &mut Vec::new());
            let _ = decode_bools("s", &data, count, &mut Vec::new());
        }
    }

    #[test]
    fn long_runs_split_at_32767() {
        let v = vec![4i64; 70000];
        let b = enc64(&v);
        let mut d = Vec::new();
        decode_into::<i64>("s", &b, v.len(), &mut d).unwrap();
        assert_eq!(d, v);
        assert_eq!(b, model(&v, 64));
    }

    #[test]
    fn malformed_frames_are_errors() {
        let good = enc32(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        // Truncated frame.
        let e = decode_into::<i32>("s", &good[..good.len() - 1], 10, &mut Vec::new()).unwrap_err();
        assert!(matches!(e, Error::Decode { at: 0, .. }), "{e}");
        // More values than the frame holds.
        assert!(decode_into::<i32>("s", &good, 11, &mut Vec::new()).is_err());
        // Bit width too large.
        let mut b = good.clone();
        b[1] = 33;
        assert!(decode_into::<i32>("s", &b, 10, &mut Vec::new()).is_err());
        // Last-group count > 8.
        let mut b = good.clone();
        b[3] = 9;
        assert!(decode_into::<i32>("s", &b, 10, &mut Vec::new()).is_err());
        // Zero-length RLE run.
        assert!(decode_into::<i32>("s", &[3, 3, 0, 7], 1, &mut Vec::new()).is_err());
        // Bit-packed run with 0 groups.
        assert!(decode_into::<i32>("s", &[3, 3, 1, 8], 1, &mut Vec::new()).is_err());
        // Huge RLE run count is bounded by the requested count.
        let mut d = Vec::new();
        decode_into::<i32>("s", &[7, 3, 0xfe, 0xff, 0xff, 0xff, 0x07, 5], 3, &mut d).unwrap();
        assert_eq!(d, [5, 5, 5]);
        // Fewer values requested than the frame holds.
        let mut d = Vec::new();
        decode_into::<i32>("s", &good, 3, &mut d).unwrap();
        assert_eq!(d, [1, 2, 3]);
        // Two frames in a row are accepted, as by Java.
        let mut two = enc32(&[1, 2]);
        two.extend(enc32(&[3; 9]));
        let mut d = Vec::new();
        decode_into::<i32>("s", &two, 11, &mut d).unwrap();
        assert_eq!(d, [1, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3]);
    }
}
