//! Bit-packing helpers (MSB-first) shared by RLE and TS_2DIFF.
//!
//! Both encodings store `w`-bit unsigned fields as one contiguous big-endian bit string:
//! field `i` occupies bits `[i*w, (i+1)*w)` counted from the most significant bit of the
//! first byte. [`BitWriter`] appends such fields, [`unpack`] reads them back with 64-bit
//! (or, for `w > 56`, 128-bit) loads instead of bit-by-bit loops.

mod sealed {
    pub trait Sealed {}
    impl Sealed for i32 {}
    impl Sealed for i64 {}
}

/// The two Java integer types (`int`, `long`) the integer codecs are generic over, with
/// Java's wrapping arithmetic. Sealed: implemented for `i32` and `i64` only.
pub trait JavaInt: sealed::Sealed + Copy + Eq + Ord + Default + Send + Sync + 'static {
    /// Width in bits (32 or 64).
    const BITS: u32;
    /// Bytes of the big-endian form.
    const BYTES: usize;
    /// `Integer.MAX_VALUE` / `Long.MAX_VALUE`.
    const MAX: Self;
    /// Wrapping subtraction.
    fn wsub(self, o: Self) -> Self;
    /// Wrapping addition.
    fn wadd(self, o: Self) -> Self;
    /// Wrapping multiplication.
    fn wmul(self, o: Self) -> Self;
    /// Java `/`: truncating, `MIN / -1 == MIN` (callers exclude division by zero).
    fn jdiv(self, o: Self) -> Self;
    /// Java `(int)` narrowing (identity for `i32`).
    fn low_i32(self) -> i32;
    /// Exact widening.
    fn to_i128(self) -> i128;
    /// The value of the low `BITS` bits of `v` (Java narrowing of a `long`).
    fn from_i64(v: i64) -> Self;
    /// The two's-complement bits, zero-extended to 64 bits.
    fn bits(self) -> u64;
    /// The value whose two's-complement bits are the low `BITS` bits of `b`.
    fn from_bits(b: u64) -> Self;
    /// Appends the big-endian form.
    fn put_be(self, out: &mut Vec<u8>);
    /// Reads the big-endian form from exactly `BYTES` bytes.
    fn from_be_slice(b: &[u8]) -> Self;
    /// Java `BITS - numberOfLeadingZeros(v)`.
    #[inline]
    fn width(self) -> u32 {
        64 - self.bits().leading_zeros()
    }
}

/// Implements [`JavaInt`] for a signed integer type and its unsigned twin.
macro_rules! java_int {
    ($t:ty, $u:ty) => {
        impl JavaInt for $t {
            const BITS: u32 = <$t>::BITS;
            const BYTES: usize = std::mem::size_of::<$t>();
            const MAX: Self = <$t>::MAX;
            #[inline]
            fn wsub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            #[inline]
            fn wadd(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            #[inline]
            fn wmul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            #[inline]
            fn jdiv(self, o: Self) -> Self {
                self.wrapping_div(o)
            }
            #[inline]
            fn low_i32(self) -> i32 {
                self as i32
            }
            #[inline]
            fn to_i128(self) -> i128 {
                self as i128
            }
            #[inline]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline]
            fn bits(self) -> u64 {
                self as $u as u64
            }
            #[inline]
            fn from_bits(b: u64) -> Self {
                b as $u as $t
            }
            #[inline]
            fn put_be(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_be_bytes());
            }
            #[inline]
            fn from_be_slice(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(&b[..std::mem::size_of::<$t>()]);
                <$t>::from_be_bytes(a)
            }
        }
    };
}

java_int!(i32, u32);
java_int!(i64, u64);

/// Appends `w`-bit fields MSB-first to a byte vector.
///
/// Fields must already fit in `w` bits (callers guarantee it: `w` is the maximum width
/// over the packed values). [`BitWriter::finish`] zero-pads the last byte.
pub(crate) struct BitWriter {
    acc: u128,
    nbits: u32,
}

impl BitWriter {
    /// An empty writer.
    #[inline]
    pub(crate) fn new() -> Self {
        BitWriter { acc: 0, nbits: 0 }
    }

    /// Appends the low `w` bits of `v` (`w <= 64`).
    #[inline]
    pub(crate) fn push(&mut self, v: u64, w: u32, out: &mut Vec<u8>) {
        if w == 0 {
            return;
        }
        self.acc = (self.acc << w) | v as u128;
        self.nbits += w;
        if self.nbits >= 64 {
            // The 64 oldest pending bits; bits above `nbits` are stale and never read.
            self.nbits -= 64;
            out.extend_from_slice(&((self.acc >> self.nbits) as u64).to_be_bytes());
        }
    }

    /// Writes the remaining bits, the last byte zero-padded on the right.
    #[inline]
    pub(crate) fn finish(self, out: &mut Vec<u8>) {
        let nbytes = self.nbits.div_ceil(8);
        if nbytes > 0 {
            let v = (self.acc << (nbytes * 8 - self.nbits)) as u64;
            out.extend_from_slice(&v.to_be_bytes()[8 - nbytes as usize..]);
        }
    }
}

/// Appends `field(x)` for each `x` of `src` as `w`-bit fields (`w <= 64`, every field
/// fitting in `w` bits), MSB-first, the last byte zero-padded: the same bytes as
/// [`BitWriter::push`] for each field, then [`BitWriter::finish`].
pub(crate) fn pack<T: Copy>(src: &[T], w: u32, field: impl Fn(T) -> u64, out: &mut Vec<u8>) {
    if w == 0 {
        return;
    }
    let mut rest = src;
    if w <= 16 {
        // Eight fields are exactly `w` bytes: pack them in one register.
        out.reserve(packed_len(src.len(), w) + 16);
        let mut groups = src.chunks_exact(8);
        for g in &mut groups {
            let len = out.len();
            if w <= 8 {
                let mut acc = 0u64;
                for &x in g {
                    acc = (acc << w) | field(x);
                }
                out.extend_from_slice(&(acc << (64 - 8 * w)).to_be_bytes());
            } else {
                let mut acc = 0u128;
                for &x in g {
                    acc = (acc << w) | field(x) as u128;
                }
                out.extend_from_slice(&(acc << (128 - 8 * w)).to_be_bytes());
            }
            out.truncate(len + w as usize);
        }
        rest = groups.remainder();
    }
    let mut bw = BitWriter::new();
    for &x in rest {
        bw.push(field(x), w, out);
    }
    bw.finish(out);
}

/// Number of bytes `n` fields of `w` bits occupy.
#[inline]
pub(crate) fn packed_len(n: usize, w: u32) -> usize {
    (n * w as usize).div_ceil(8)
}

/// Reads `n` fields of `w` bits (`1 <= w <= 64`) from `src`, which must hold at least
/// [`packed_len`]`(n, w)` bytes, calling `f` with each field in order.
#[inline]
pub(crate) fn unpack(src: &[u8], n: usize, w: u32, mut f: impl FnMut(u64)) {
    debug_assert!((1..=64).contains(&w));
    debug_assert!(src.len() >= packed_len(n, w));
    let len = packed_len(n, w);
    let src = &src[..len];
    // Fast path: fields whose 8-byte window lies inside `src`.
    let w64 = w as usize;
    let mut i = 0;
    if w <= 56 {
        let mask = u64::MAX >> (64 - w);
        while i < n {
            let bit = i * w64;
            let byte = bit >> 3;
            if byte + 8 > len {
                break;
            }
            let mut a = [0u8; 8];
            a.copy_from_slice(&src[byte..byte + 8]);
            let word = u64::from_be_bytes(a);
            let shift = (bit & 7) as u32;
            f((word >> (64 - shift - w)) & mask);
            i += 1;
        }
    }
    // Tail (and wide fields): copy the window into a zero-padded 16-byte buffer.
    while i < n {
        let bit = i * w64;
        let byte = bit >> 3;
        let mut a = [0u8; 16];
        let end = (byte + 16).min(len);
        a[..end - byte].copy_from_slice(&src[byte..end]);
        let word = u128::from_be_bytes(a);
        let shift = (bit & 7) as u32;
        f(((word << shift) >> (128 - w)) as u64);
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn writer_is_msb_first() {
        let mut out = Vec::new();
        let mut w = BitWriter::new();
        for v in [1u64, 2, 3, 4, 5, 6, 7, 0] {
            w.push(v, 3, &mut out);
        }
        w.finish(&mut out);
        // 001 010 011 100 101 110 111 000
        assert_eq!(out, [0x29, 0xcb, 0xb8]);
        let mut out = Vec::new();
        let mut w = BitWriter::new();
        w.push(0b101, 3, &mut out);
        w.finish(&mut out);
        assert_eq!(out, [0xa0]);
    }

    /// The fields as a string of '0'/'1', MSB-first, zero-padded to whole bytes, then
    /// read back as bytes: the packing written out bit by bit.
    fn bitwise(fields: &[u64], w: u32) -> Vec<u8> {
        let mut bits = String::new();
        for f in fields {
            for i in (0..w).rev() {
                bits.push(if (f >> i) & 1 == 1 { '1' } else { '0' });
            }
        }
        while !bits.len().is_multiple_of(8) {
            bits.push('0');
        }
        (0..bits.len() / 8)
            .map(|i| u8::from_str_radix(&bits[8 * i..8 * i + 8], 2).unwrap())
            .collect()
    }

    /// Three-bit fields packed by eights (a whole group, then a tail), worked by hand:
    /// 001 010 011 100 101 110 111 000 | 111 001.
    #[test]
    fn pack_groups_and_tail() {
        let mut out = vec![0xaa];
        pack(&[1u64, 2, 3, 4, 5, 6, 7, 0, 7, 1], 3, |x| x, &mut out);
        assert_eq!(out, [0xaa, 0x29, 0xcb, 0xb8, 0xe4]);
        // Ten-bit fields (the 128-bit group): 0x3ff then seven zeros, one 0x001.
        let mut out = Vec::new();
        pack(&[0x3ffu64, 0, 0, 0, 0, 0, 0, 0, 1], 10, |x| x, &mut out);
        assert_eq!(out, [0xff, 0xc0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x40]);
        let mut out = Vec::new();
        pack(&[5u64, 6], 0, |x| x, &mut out);
        assert!(out.is_empty());
        pack(&[] as &[u64], 7, |x| x, &mut out);
        assert!(out.is_empty());
    }

    proptest! {
        #[test]
        fn pack_matches_the_bitwise_layout(
            w in 0u32..=64,
            raw in proptest::collection::vec(any::<u64>(), 0..40),
        ) {
            let mask = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
            let fields: Vec<u64> = raw.iter().map(|x| x & mask).collect();
            let mut out = Vec::new();
            pack(&fields, w, |x| x, &mut out);
            prop_assert_eq!(&out, &bitwise(&fields, w));
            let mut bw_out = Vec::new();
            let mut bw = BitWriter::new();
            for f in &fields {
                bw.push(*f, w, &mut bw_out);
            }
            bw.finish(&mut bw_out);
            prop_assert_eq!(&bw_out, &out);
        }
    }

    /// Java `int`/`long` arithmetic, values worked out by hand from the JLS (wrapping
    /// two's-complement, truncating division with `MIN / -1 == MIN`, narrowing keeps the
    /// low bits).
    #[test]
    fn java_int_semantics() {
        assert_eq!(i32::MIN.wsub(1), i32::MAX);
        assert_eq!(5i32.wsub(7), -2);
        assert_eq!(i64::MIN.wsub(1), i64::MAX);
        assert_eq!(i32::MAX.wadd(1), i32::MIN);
        assert_eq!(2i64.wadd(3), 5);
        assert_eq!(0x1_0000i32.wmul(0x1_0000), 0);
        assert_eq!(6i32.wmul(-7), -42);
        assert_eq!(0x1_0000_0000i64.wmul(0x1_0000_0000), 0);
        assert_eq!(i32::MIN.jdiv(-1), i32::MIN);
        assert_eq!(i64::MIN.jdiv(-1), i64::MIN);
        assert_eq!((-7i32).jdiv(2), -3);
        assert_eq!(7i64.jdiv(2), 3);
        assert_eq!(0x1_0000_0005i64.low_i32(), 5);
        assert_eq!(0x8000_0000i64.low_i32(), i32::MIN);
        assert_eq!((-9i32).low_i32(), -9);
        assert_eq!((-1i32).to_i128(), -1);
        assert_eq!(i64::MIN.to_i128(), -(1i128 << 63));
        assert_eq!(i32::from_i64(0x1_8000_0000), i32::MIN);
        assert_eq!(i32::from_i64(-2), -2);
        assert_eq!(i64::from_i64(-2), -2);
        assert_eq!((-1i32).bits(), 0xffff_ffff);
        assert_eq!((-1i64).bits(), u64::MAX);
        assert_eq!(7i32.bits(), 7);
        assert_eq!(i32::from_bits(0x1_ffff_fffe), -2);
        assert_eq!(i64::from_bits(u64::MAX - 1), -2);
        let mut out = vec![9];
        0x0102_0304i32.put_be(&mut out);
        (-2i64).put_be(&mut out);
        assert_eq!(
            out,
            [9, 1, 2, 3, 4, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe]
        );
        assert_eq!(i32::from_be_slice(&[1, 2, 3, 4, 5]), 0x0102_0304);
        assert_eq!(
            i64::from_be_slice(&[0x80, 0, 0, 0, 0, 0, 0, 1, 7]),
            i64::MIN + 1
        );
        assert_eq!(0i32.width(), 0);
        assert_eq!(1i32.width(), 1);
        assert_eq!(255i64.width(), 8);
        assert_eq!((-1i32).width(), 32);
        assert_eq!((-1i64).width(), 64);
    }

    /// 64-bit fields and a field that straddles the 64-bit flush of the writer.
    #[test]
    fn writer_wide_fields() {
        let mut out = Vec::new();
        let mut w = BitWriter::new();
        w.push(0x0123_4567_89ab_cdef, 64, &mut out);
        assert_eq!(out, 0x0123_4567_89ab_cdefu64.to_be_bytes());
        w.push(0b1, 1, &mut out);
        w.push(0, 0, &mut out);
        w.push(u64::MAX, 64, &mut out);
        w.finish(&mut out);
        // 1 then 64 ones then 7 zero pad bits: ff × 8, then 1000_0000.
        assert_eq!(
            out[8..],
            [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x80]
        );
        assert_eq!(packed_len(3, 0), 0);
        assert_eq!(packed_len(3, 3), 2);
        assert_eq!(packed_len(8, 7), 7);
        let mut got = Vec::new();
        unpack(&out, 1, 64, |v| got.push(v));
        assert_eq!(got, [0x0123_4567_89ab_cdef]);
        let mut got = Vec::new();
        unpack(&[0xa5, 0x0f], 4, 4, |v| got.push(v));
        assert_eq!(got, [0xa, 0x5, 0x0, 0xf]);
    }

    proptest! {
        #[test]
        fn pack_unpack(w in 1u32..=64, raw in proptest::collection::vec(any::<u64>(), 0..200)) {
            let vals: Vec<u64> = raw.iter().map(|v| if w == 64 { *v } else { v & ((1u64 << w) - 1) }).collect();
            let mut out = Vec::new();
            let mut bw = BitWriter::new();
            for v in &vals {
                bw.push(*v, w, &mut out);
            }
            bw.finish(&mut out);
            prop_assert_eq!(out.len(), packed_len(vals.len(), w));
            let mut back = Vec::new();
            unpack(&out, vals.len(), w, |v| back.push(v));
            prop_assert_eq!(back, vals);
        }
    }
}
