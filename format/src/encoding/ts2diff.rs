//! TS_2DIFF delta-of-delta blocks for INT32/INT64 and the time column (spec §6.3).
//!
//! A block is `i32 n, i32 w, minDelta, firstValue, packed`: the first value and `n <= 128`
//! deltas, each stored as `delta - minDelta` in a `w`-bit MSB-first field. Full blocks
//! (129 values) are written as soon as they fill; the last partial block on flush.
//!
//! Byte identity (spec §6.3.4): Java packs into a persistent `128 * 4|8`-byte buffer of
//! which only the first 128 bytes are zeroed between blocks, so the pad bits of a block's
//! last packed byte can be stale bits of an earlier block when that byte's index is
//! ≥ 128. [`DeltaEncoder`] keeps those bytes (indices 128.. of the last block that reached
//! them) and merges them into the pad bits exactly as Java does.

use super::bitpack::{pack, packed_len, unpack, JavaInt};
use super::Encoder;
use crate::errors::{Error, Result};
use crate::util::io::put_i32;

/// Values per block after the first (Java's constant `BLOCK_DEFAULT_SIZE`).
pub const BLOCK_SIZE: usize = 128;

/// Bytes of Java's packing buffer that are zeroed on every block reset.
const ZEROED: usize = 128;

/// Java `IntDeltaEncoder` (INT32, also inside FLOAT TS_2DIFF).
pub type IntDeltaEncoder = DeltaEncoder<i32>;
/// Java `LongDeltaEncoder` (INT64 and the time column, also inside DOUBLE TS_2DIFF).
pub type LongDeltaEncoder = DeltaEncoder<i64>;

/// Java `DeltaBinaryEncoder` over `i32` or `i64`, byte-identical including stale pad bits.
#[derive(Debug, Clone)]
pub struct DeltaEncoder<T: JavaInt> {
    /// Deltas in the current block, −1 when the block has no first value yet.
    write_index: i32,
    first: T,
    prev: T,
    min_delta: T,
    deltas: Vec<T>,
    /// Java's packing buffer; only indices ≥ 128 are ever read (the rest is zeroed).
    stale: Vec<u8>,
}

impl<T: JavaInt> Default for DeltaEncoder<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: JavaInt> DeltaEncoder<T> {
    /// A fresh encoder (Java's buffer starts all zero).
    pub fn new() -> Self {
        DeltaEncoder {
            write_index: -1,
            first: T::default(),
            prev: T::default(),
            min_delta: T::MAX,
            deltas: vec![T::default(); BLOCK_SIZE],
            stale: vec![0; BLOCK_SIZE * T::BYTES],
        }
    }

    /// Encodes one value; a block that fills is written to `out` at once.
    #[inline]
    pub fn encode(&mut self, v: T, out: &mut Vec<u8>) {
        if self.write_index < 0 {
            self.write_index = 0;
            self.first = v;
            self.prev = v;
            return;
        }
        let delta = v.wsub(self.prev);
        if delta < self.min_delta {
            self.min_delta = delta;
        }
        // write_index < 128 here: a block is flushed as soon as it reaches 128.
        let i = self.write_index as usize;
        if let Some(slot) = self.deltas.get_mut(i) {
            *slot = delta;
        }
        self.write_index += 1;
        self.prev = v;
        if self.write_index as usize == BLOCK_SIZE {
            self.flush_block(out);
        }
    }

    /// Encodes values in order, as one [`encode`](Self::encode) call each would: the
    /// deltas of a block are taken in one loop, the block state in locals.
    pub fn encode_run(&mut self, mut vs: &[T], out: &mut Vec<u8>) {
        while let Some((&v, rest)) = vs.split_first() {
            if self.write_index < 0 {
                self.encode(v, out);
                vs = rest;
                continue;
            }
            let i = self.write_index as usize;
            let k = (BLOCK_SIZE - i).min(vs.len());
            let (run, rest) = vs.split_at(k);
            let (mut prev, mut min) = (self.prev, self.min_delta);
            for (slot, &v) in self.deltas[i..i + k].iter_mut().zip(run) {
                let delta = v.wsub(prev);
                if delta < min {
                    min = delta;
                }
                *slot = delta;
                prev = v;
            }
            self.prev = prev;
            self.min_delta = min;
            self.write_index += k as i32;
            if self.write_index as usize == BLOCK_SIZE {
                self.flush_block(out);
            }
            vs = rest;
        }
    }

    /// Writes the current block (if it holds a value) and starts a new one.
    pub fn flush_block(&mut self, out: &mut Vec<u8>) {
        if self.write_index < 0 {
            return;
        }
        let n = self.write_index as usize;
        let min = self.min_delta;
        let deltas = &self.deltas[..n];
        // The widest field is as wide as the OR of all fields.
        let w = 64
            - deltas
                .iter()
                .fold(0u64, |acc, d| acc | d.wsub(min).bits())
                .leading_zeros();
        put_i32(out, n as i32);
        put_i32(out, w as i32);
        min.put_be(out);
        self.first.put_be(out);
        let start = out.len();
        pack(deltas, w, |d| d.wsub(min).bits(), out);
        let nbits = n * w as usize;
        let nbytes = nbits.div_ceil(8);
        if nbytes > ZEROED {
            // Pad bits of the last byte keep what an earlier block left there.
            let used = (nbits % 8) as u32;
            if used != 0 {
                let mask = 0xffu8 >> used;
                out[start + nbytes - 1] |= self.stale[nbytes - 1] & mask;
            }
            self.stale[ZEROED..nbytes].copy_from_slice(&out[start + ZEROED..start + nbytes]);
        }
        self.write_index = -1;
        self.first = T::default();
        self.prev = T::default();
        self.min_delta = T::MAX;
    }

    /// Java `getMaxByteSize`: `24 + writeIndex * (4|8)`.
    pub fn max_byte_size(&self) -> usize {
        (24 + self.write_index as i64 * T::BYTES as i64) as usize
    }
}

impl Encoder for DeltaEncoder<i32> {
    fn encode_i32(&mut self, v: i32, out: &mut Vec<u8>) -> Result<()> {
        self.encode(v, out);
        Ok(())
    }
    fn flush(&mut self, out: &mut Vec<u8>) -> Result<()> {
        self.flush_block(out);
        Ok(())
    }
    fn max_byte_size(&self) -> usize {
        DeltaEncoder::max_byte_size(self)
    }
}

impl Encoder for DeltaEncoder<i64> {
    fn encode_i64(&mut self, v: i64, out: &mut Vec<u8>) -> Result<()> {
        self.encode(v, out);
        Ok(())
    }
    fn flush(&mut self, out: &mut Vec<u8>) -> Result<()> {
        self.flush_block(out);
        Ok(())
    }
    fn max_byte_size(&self) -> usize {
        DeltaEncoder::max_byte_size(self)
    }
}

/// Decodes TS_2DIFF blocks from `data` into `out`.
///
/// With `limit = Some(c)` exactly `c` values are decoded (trailing bytes are ignored, as
/// the Java reader, driven by the time column, never looks at them); with `None` blocks
/// are read until `data` is exhausted. `n` must be in `0..=128` (the only block size any
/// 0.10 writer uses; Java's reader would accept larger ones) and `w` in `0..=32|64`.
pub fn decode_into<T: JavaInt>(
    stream: &'static str,
    data: &[u8],
    limit: Option<usize>,
    out: &mut Vec<T>,
) -> Result<()> {
    let header = 8 + 2 * T::BYTES;
    let mut pos = 0usize;
    let mut left = limit.unwrap_or(usize::MAX);
    while left > 0 && pos < data.len() {
        let Some(h) = data.get(pos..pos + header) else {
            return Err(Error::decode(
                stream,
                pos,
                format_args!(
                    "a {header}-byte block header, but only {} bytes remain",
                    data.len() - pos
                ),
            ));
        };
        let n = i32::from_be_bytes([h[0], h[1], h[2], h[3]]);
        let w = i32::from_be_bytes([h[4], h[5], h[6], h[7]]);
        if !(0..=BLOCK_SIZE as i32).contains(&n) {
            return Err(Error::decode(
                stream,
                pos,
                format_args!("a block delta count in 0..={BLOCK_SIZE}, found {n}"),
            ));
        }
        if !(0..=T::BITS as i32).contains(&w) {
            return Err(Error::decode(
                stream,
                pos + 4,
                format_args!("a bit width in 0..={}, found {w}", T::BITS),
            ));
        }
        let (n, w) = (n as usize, w as u32);
        let min = T::from_be_slice(&h[8..]);
        let first = T::from_be_slice(&h[8 + T::BYTES..]);
        let body = pos + header;
        let plen = packed_len(n, w);
        let Some(packed) = data.get(body..body + plen) else {
            return Err(Error::decode(
                stream,
                body,
                format_args!(
                    "{plen} packed bytes for {n} deltas of {w} bits, but only {} remain",
                    data.len() - body
                ),
            ));
        };
        let take = (n + 1).min(left);
        out.reserve(take);
        out.push(first);
        let mut v = first;
        let deltas = take - 1;
        if w == 0 {
            for _ in 0..deltas {
                v = v.wadd(min);
                out.push(v);
            }
        } else {
            unpack(packed, deltas, w, |p| {
                v = v.wadd(min).wadd(T::from_bits(p));
                out.push(v);
            });
        }
        left -= take;
        pos = body + plen;
    }
    if limit.is_some() && left > 0 {
        return Err(Error::decode(
            stream,
            pos,
            format_args!("{} more values, but the stream ended", left),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    fn enc64(vals: &[i64]) -> Vec<u8> {
        let mut e = LongDeltaEncoder::new();
        let mut out = Vec::new();
        for v in vals {
            e.encode(*v, &mut out);
        }
        e.flush_block(&mut out);
        out
    }

    fn enc32(vals: &[i32]) -> Vec<u8> {
        let mut e = IntDeltaEncoder::new();
        let mut out = Vec::new();
        for v in vals {
            e.encode(*v, &mut out);
        }
        e.flush_block(&mut out);
        out
    }

    fn dec64(data: &[u8]) -> Vec<i64> {
        let mut out = Vec::new();
        decode_into("t", data, None, &mut out).unwrap();
        out
    }

    #[test]
    fn spec_vectors_int64() {
        let v: Vec<i64> = (1..=10).collect();
        assert_eq!(
            hex(&enc64(&v)),
            "00000009000000000000000000000001\
             0000000000000001"
        );
        let v = [1000, 1003, 1010, 1011];
        let b = enc64(&v);
        assert_eq!(
            hex(&b),
            "0000000300000003000000000000000100000000000003e85800"
        );
        assert_eq!(dec64(&b), v);
        assert_eq!(
            hex(&enc64(&[5])),
            "00000000000000007fffffffffffffff0000000000000005"
        );
        let b = enc64(&[10, 5, 20]);
        assert_eq!(
            hex(&b),
            "0000000200000005fffffffffffffffb000000000000000a0500"
        );
        assert_eq!(dec64(&b), [10, 5, 20]);
        let v: Vec<i64> = (0..131).map(|i| 2 * i).collect();
        let b = enc64(&v);
        assert_eq!(
            hex(&b),
            "000000800000000000000000000000020000000000000000\
             000000010000000000000000000000020000000000000102"
        );
        assert_eq!(dec64(&b), v);
        let t0 = 1_593_000_000_000i64;
        let v = [t0, t0 + 1000, t0 + 2000, t0 + 3500];
        let b = enc64(&v);
        assert_eq!(
            hex(&b),
            "000000030000000900000000000003e800000172e632fa0000003e80"
        );
        assert_eq!(dec64(&b), v);
    }

    /// `encode_run` writes the spec's vectors (above, worked by hand) whatever the runs they
    /// come in: in one run, and cut in two at every point, with a block that fills (131
    /// values: a block of 128 values, then one of 3) in the middle of a run.
    #[test]
    fn runs_write_the_spec_vectors() {
        let t0 = 1_593_000_000_000i64;
        let cases: Vec<(Vec<i64>, &str)> = vec![
            (
                vec![1000, 1003, 1010, 1011],
                "0000000300000003000000000000000100000000000003e85800",
            ),
            (
                vec![10, 5, 20],
                "0000000200000005fffffffffffffffb000000000000000a0500",
            ),
            (
                (0..131).map(|i| 2 * i).collect(),
                "000000800000000000000000000000020000000000000000\
                 000000010000000000000000000000020000000000000102",
            ),
            (
                vec![t0, t0 + 1000, t0 + 2000, t0 + 3500],
                "000000030000000900000000000003e800000172e632fa0000003e80",
            ),
            (vec![5], "00000000000000007fffffffffffffff0000000000000005"),
        ];
        for (v, want) in cases {
            for cut in 0..=v.len() {
                let mut e = LongDeltaEncoder::new();
                let mut out = Vec::new();
                e.encode_run(&v[..cut], &mut out);
                e.encode_run(&v[cut..], &mut out);
                e.flush_block(&mut out);
                assert_eq!(hex(&out), want, "{v:?} cut at {cut}");
            }
        }
    }

    /// The block's width is that of its widest field, worked by hand: values 0, 1, 3, 5
    /// have deltas 1, 2, 2, minimum 1, fields 0, 1, 1 of one bit (`011` + pad = 0x60);
    /// values 0, 3, 4, 7 have deltas 3, 1, 3, fields 2, 0, 2 of two bits (`100010` =
    /// 0x88).
    #[test]
    fn width_is_that_of_the_widest_field() {
        assert_eq!(
            hex(&enc64(&[0, 1, 3, 5])),
            "000000030000000100000000000000010000000000000000\
             60"
        );
        assert_eq!(
            hex(&enc64(&[0, 3, 4, 7])),
            "000000030000000200000000000000010000000000000000\
             88"
        );
        assert_eq!(
            hex(&enc32(&[0, 3, 4, 7])),
            "0000000300000002000000010000000088"
        );
    }

    #[test]
    fn spec_vectors_int32() {
        let b = enc32(&[-5, 0, 7]);
        assert_eq!(hex(&b), "000000020000000200000005fffffffb20");
        let mut d = Vec::new();
        decode_into::<i32>("t", &b, Some(3), &mut d).unwrap();
        assert_eq!(d, [-5, 0, 7]);
        let v: Vec<i32> = (1..=10).collect();
        assert_eq!(hex(&enc32(&v)), "00000009000000000000000100000001");
    }

    #[test]
    fn max_byte_size_follows_java() {
        let mut e = IntDeltaEncoder::new();
        let mut out = Vec::new();
        assert_eq!(e.max_byte_size(), 20);
        e.encode(1, &mut out);
        assert_eq!(e.max_byte_size(), 24);
        e.encode(2, &mut out);
        assert_eq!(e.max_byte_size(), 28);
        let mut l = LongDeltaEncoder::new();
        assert_eq!(l.max_byte_size(), 16);
        for i in 0..129 {
            l.encode(i, &mut out);
        }
        // The full block was written out; the encoder is empty again.
        assert_eq!(l.max_byte_size(), 16);
        l.encode(7, &mut out);
        l.encode(8, &mut out);
        assert_eq!(l.max_byte_size(), 32);
    }

    /// Spec §6.8 through the [`Encoder`] trait (as the page writer calls it):
    /// `24 + writeIndex * 4|8` with writeIndex = 2 after three values.
    #[test]
    fn max_byte_size_through_the_trait() {
        let mut out = Vec::new();
        let mut e: Box<dyn Encoder> = Box::new(IntDeltaEncoder::new());
        let mut l: Box<dyn Encoder> = Box::new(LongDeltaEncoder::new());
        for v in [1, 2, 3] {
            e.encode_i32(v, &mut out).unwrap();
            l.encode_i64(v as i64, &mut out).unwrap();
        }
        assert_eq!(e.max_byte_size(), 24 + 2 * 4);
        assert_eq!(l.max_byte_size(), 24 + 2 * 8);
    }

    /// Spec §6.3.4: block A (w = 12, 192 packed bytes), then block B (w = 10, 1190 bits,
    /// 149 bytes): B's last byte carries A's stale bits (`03`) with the same encoder.
    #[test]
    fn stale_pad_bits_emulated() {
        let mut vals = vec![0i32];
        let mut v = 0i32;
        vals.push(v);
        for _ in 0..127 {
            v += 4095;
            vals.push(v);
        }
        assert_eq!(vals.len(), 129);
        let mut b_vals = Vec::new();
        let mut v = 0i32;
        b_vals.push(v);
        for i in 0..119 {
            v += if i % 2 == 0 { 0 } else { 1023 };
            b_vals.push(v);
        }
        assert_eq!(b_vals.len(), 120);
        let mut e = IntDeltaEncoder::new();
        let mut out = Vec::new();
        for x in &vals {
            e.encode(*x, &mut out);
        }
        assert_eq!(out.len(), 16 + 192);
        let a_len = out.len();
        for x in &b_vals {
            e.encode(*x, &mut out);
        }
        e.flush_block(&mut out);
        let b = &out[a_len..];
        assert_eq!(&b[..8], &[0, 0, 0, 119, 0, 0, 0, 10]);
        assert_eq!(b.len(), 16 + 149);
        assert_eq!(b[b.len() - 1], 0x03);
        // A fresh encoder pads with zeros.
        let fresh = enc32(&b_vals);
        assert_eq!(fresh[fresh.len() - 1], 0x00);
        assert_eq!(&fresh[..fresh.len() - 1], &b[..b.len() - 1]);
        // Both decode to the same values.
        let mut d = Vec::new();
        decode_into::<i32>("t", &out, None, &mut d).unwrap();
        let mut all = vals.clone();
        all.extend(&b_vals);
        assert_eq!(d, all);
    }

    /// Reference model of Java's bit-by-bit writes into the persistent buffer.
    fn java_model<T: JavaInt>(pages: &[Vec<T>]) -> Vec<Vec<u8>> {
        let mut buf = vec![0u8; BLOCK_SIZE * T::BYTES];
        let mut res = Vec::new();
        for page in pages {
            let mut out = Vec::new();
            for block in page.chunks(BLOCK_SIZE + 1) {
                let first = block[0];
                let deltas: Vec<T> = block.windows(2).map(|p| p[1].wsub(p[0])).collect();
                let min = deltas.iter().copied().min().unwrap_or(T::MAX);
                let rel: Vec<u64> = deltas.iter().map(|d| d.wsub(min).bits()).collect();
                let w = deltas
                    .iter()
                    .map(|d| d.wsub(min).width())
                    .max()
                    .unwrap_or(0);
                put_i32(&mut out, deltas.len() as i32);
                put_i32(&mut out, w as i32);
                min.put_be(&mut out);
                first.put_be(&mut out);
                for (i, r) in rel.iter().enumerate() {
                    let pos = i * w as usize;
                    for b in 0..w as usize {
                        let bitpos = pos + w as usize - 1 - b;
                        let bit = (r >> b) & 1;
                        let byte = &mut buf[bitpos / 8];
                        let m = 1u8 << (7 - bitpos % 8);
                        if bit == 1 {
                            *byte |= m
                        } else {
                            *byte &= !m
                        }
                    }
                }
                let nb = (deltas.len() * w as usize).div_ceil(8);
                out.extend_from_slice(&buf[..nb]);
                buf[..ZEROED].fill(0);
            }
            res.push(out);
        }
        res
    }

    fn split<T: Clone>(v: &[T], cuts: &[usize]) -> Vec<Vec<T>> {
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (v.len() + 1)).collect();
        cuts.push(0);
        cuts.push(v.len());
        cuts.sort();
        cuts.dedup();
        cuts.windows(2).map(|w| v[w[0]..w[1]].to_vec()).collect()
    }

    fn check_pages<T: JavaInt + std::fmt::Debug>(pages: Vec<Vec<T>>)
    where
        DeltaEncoder<T>: Encoder,
    {
        let expect = java_model(&pages);
        let mut e = DeltaEncoder::<T>::new();
        // The same pages through `encode_run`, each in three runs.
        let mut r = DeltaEncoder::<T>::new();
        for (p, want) in pages.iter().zip(expect) {
            let mut out = Vec::new();
            for v in p {
                e.encode(*v, &mut out);
            }
            e.flush_block(&mut out);
            assert_eq!(out, want);
            let mut runs = Vec::new();
            let (a, b) = (p.len() / 3, p.len() * 2 / 3);
            for run in [&p[..a], &p[a..b], &p[b..]] {
                r.encode_run(run, &mut runs);
            }
            r.flush_block(&mut runs);
            assert_eq!(runs, want);
            let mut back = Vec::new();
            decode_into::<T>("t", &out, Some(p.len()), &mut back).unwrap();
            assert_eq!(&back, p);
            let mut back = Vec::new();
            decode_into::<T>("t", &out, None, &mut back).unwrap();
            assert_eq!(&back, p);
        }
    }

    fn wide_i64() -> impl Strategy<Value = i64> {
        prop_oneof![
            any::<i64>(),
            -1000i64..1000,
            (0u32..64).prop_map(|s| 1i64 << s)
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn int64_pages_match_java_model(v in proptest::collection::vec(wide_i64(), 1..700),
                                        cuts in proptest::collection::vec(any::<usize>(), 0..4)) {
            check_pages(split(&v, &cuts));
        }

        #[test]
        fn int32_pages_match_java_model(v in proptest::collection::vec(prop_oneof![any::<i32>(), -300i32..300], 1..700),
                                        cuts in proptest::collection::vec(any::<usize>(), 0..4)) {
            check_pages(split(&v, &cuts));
        }

        #[test]
        fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..200), count in 0usize..300) {
            let mut a: Vec<i64> = Vec::new();
            let _ = decode_into::<i64>("t", &data, None, &mut a);
            let _ = decode_into::<i64>("t", &data, Some(count), &mut a);
            let mut b: Vec<i32> = Vec::new();
            let _ = decode_into::<i32>("t", &data, None, &mut b);
            let _ = decode_into::<i32>("t", &data, Some(count), &mut b);
        }
    }

    #[test]
    fn malformed_blocks_are_errors() {
        // Truncated header.
        let e = decode_into::<i64>("s", &[0, 0, 0, 1], None, &mut Vec::new()).unwrap_err();
        assert!(matches!(e, Error::Decode { at: 0, .. }), "{e}");
        // n > 128.
        let mut b = enc64(&[1, 2, 3]);
        b[3] = 200;
        assert!(decode_into::<i64>("s", &b, None, &mut Vec::new()).is_err());
        // n < 0.
        let mut b = enc64(&[1, 2, 3]);
        b[0] = 0x80;
        assert!(decode_into::<i64>("s", &b, None, &mut Vec::new()).is_err());
        // w > 64 / w > 32.
        let mut b = enc64(&[1, 2, 3]);
        b[7] = 65;
        let e = decode_into::<i64>("s", &b, None, &mut Vec::new()).unwrap_err();
        assert!(matches!(e, Error::Decode { at: 4, .. }), "{e}");
        let mut b = enc32(&[1, 2, 3]);
        b[7] = 33;
        assert!(decode_into::<i32>("s", &b, None, &mut Vec::new()).is_err());
        // Packed bytes missing.
        let b = enc64(&[10, 5, 20]);
        let e = decode_into::<i64>("s", &b[..b.len() - 1], None, &mut Vec::new()).unwrap_err();
        assert!(matches!(e, Error::Decode { at: 24, .. }), "{e}");
        // More values requested than present.
        assert!(decode_into::<i64>("s", &b, Some(4), &mut Vec::new()).is_err());
        // Fewer values requested: stops early.
        let mut d = Vec::new();
        decode_into::<i64>("s", &b, Some(2), &mut d).unwrap();
        assert_eq!(d, [10, 5]);
        // Exactly the values requested: bytes after them are never read.
        let mut junk = b.clone();
        junk.push(0xff);
        let mut d = Vec::new();
        decode_into::<i64>("s", &junk, Some(3), &mut d).unwrap();
        assert_eq!(d, [10, 5, 20]);
    }
}
