//! The bloom filter over full series paths (spec §5.9), with IoTDB's Murmur128 variant.

use crate::errors::{Error, Result};
use crate::util::io::{self, ByteReader};

const SEEDS: [i32; 8] = [5, 7, 11, 19, 31, 37, 43, 59];
/// Default false-positive rate of the 0.10 writer.
pub const DEFAULT_ERROR_RATE: f64 = 0.05;
const MIN_BITS: usize = 256;
const MAX_HASHES: usize = 8;

/// A bloom filter as TsFileMetadata stores it.
#[derive(Debug, Clone, Eq)]
pub struct BloomFilter {
    /// Bit array, bit `i` in byte `i / 8` at LSB position `i % 8` (`BitSet` layout);
    /// missing trailing bytes are zero (a read filter keeps only the stored bytes, so
    /// a corrupt `size` cannot make it allocate).
    bits: Vec<u8>,
    /// Number of bits `m`.
    size: usize,
    /// Number of hash functions `k`.
    hash_count: usize,
}

impl BloomFilter {
    /// An empty filter sized for `n` paths at `error_rate` (clamped to 0.01..=0.1).
    pub fn with_capacity(n: usize, error_rate: f64) -> Self {
        let p = error_rate.clamp(0.01, 0.1);
        let ln2 = std::f64::consts::LN_2;
        let m = ((-(n as f64) * p.ln() / ln2 / ln2) as i32).wrapping_add(1);
        let size = (m.max(0) as usize).max(MIN_BITS);
        let k = (((-p.ln() / ln2) as i32) + 1) as usize;
        BloomFilter {
            bits: vec![0; size.div_ceil(8)],
            size,
            hash_count: k.min(MAX_HASHES),
        }
    }

    /// Number of bits.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Number of hash functions.
    pub fn hash_count(&self) -> usize {
        self.hash_count
    }

    /// Bytes of the serialized bit array (trailing zero bytes dropped).
    pub fn serialized_bits_len(&self) -> usize {
        self.bits.iter().rposition(|b| *b != 0).map_or(0, |i| i + 1)
    }

    fn bit_indices(&self, path: &str) -> impl Iterator<Item = usize> + '_ {
        let bytes = path.as_bytes().to_vec();
        SEEDS[..self.hash_count].iter().map(move |seed| {
            let h = murmur128_hash(&bytes, *seed);
            // Java: Math.abs(int) % size; abs(MIN_VALUE) stays negative, which Java
            // would reject; fold it into range instead.
            (h.unsigned_abs() as usize) % self.size
        })
    }

    /// Adds a full path as Java and as the C++ TsFile 2.x library hash it (they differ for
    /// some non-ASCII paths), so both find it. Used by the v4 writer.
    pub fn add_both(&mut self, path: &str) {
        self.add(path);
        let idx: Vec<usize> = SEEDS[..self.hash_count]
            .iter()
            .map(|seed| {
                (murmur128_hash_unsigned_tail(path.as_bytes(), *seed).unsigned_abs() as usize)
                    % self.size
            })
            .collect();
        for i in idx {
            if self.bits.len() <= i / 8 {
                self.bits.resize(self.size.div_ceil(8), 0);
            }
            self.bits[i / 8] |= 1 << (i % 8);
        }
    }

    /// Whether the C++ TsFile 2.x library's hashing of `path` finds it.
    pub fn contains_unsigned_tail(&self, path: &str) -> bool {
        SEEDS[..self.hash_count].iter().all(|seed| {
            let i = (murmur128_hash_unsigned_tail(path.as_bytes(), *seed).unsigned_abs() as usize)
                % self.size;
            self.bits.get(i / 8).is_some_and(|b| b >> (i % 8) & 1 == 1)
        })
    }

    /// Adds a full path (`device.measurement`).
    pub fn add(&mut self, path: &str) {
        let idx: Vec<usize> = self.bit_indices(path).collect();
        for i in idx {
            if self.bits.len() <= i / 8 {
                self.bits.resize(self.size.div_ceil(8), 0);
            }
            self.bits[i / 8] |= 1 << (i % 8);
        }
    }

    /// Whether the path may be in the set.
    pub fn contains(&self, path: &str) -> bool {
        self.bit_indices(path).all(|i| {
            self.bits
                .get(i / 8)
                .is_some_and(|b| b & (1 << (i % 8)) != 0)
        })
    }

    /// The stored bit array (trailing zero bytes dropped).
    pub fn bit_bytes(&self) -> &[u8] {
        &self.bits[..self.serialized_bits_len()]
    }

    /// A filter from a stored bit array, its size in bits and its hash count (v4 stores
    /// them as var-ints); refuses sizes that do not cover the bytes and counts outside 1..=8.
    pub fn from_parts(bits: Vec<u8>, size: usize, hash_count: usize) -> Option<Self> {
        if size == 0 || size.div_ceil(8) < bits.len() || !(1..=MAX_HASHES).contains(&hash_count) {
            return None;
        }
        Some(BloomFilter {
            bits,
            size,
            hash_count,
        })
    }

    /// Appends `i32 len, bits, i32 size, i32 k`.
    pub fn serialize(&self, out: &mut Vec<u8>) {
        let n = self.serialized_bits_len();
        io::put_binary(out, &self.bits[..n]);
        io::put_i32(out, self.size as i32);
        io::put_i32(out, self.hash_count as i32);
    }

    /// Reads a serialized filter.
    pub fn deserialize(r: &mut ByteReader<'_>) -> Result<Self> {
        let bits = r.read_binary("bloom filter bit array")?.to_vec();
        let at = r.offset();
        let size = r.read_i32("bloom filter size")?;
        let k = r.read_i32("bloom filter hash count")?;
        if size <= 0 || (size as usize).div_ceil(8) < bits.len() || !(1..=8).contains(&k) {
            return Err(Error::format(
                at,
                format_args!(
                    "a bloom filter size covering its {} bytes and 1..=8 hashes, found size {size}, {k} hashes",
                    bits.len()
                ),
            ));
        }
        Ok(BloomFilter {
            bits,
            size: size as usize,
            hash_count: k as usize,
        })
    }
}

impl PartialEq for BloomFilter {
    fn eq(&self, other: &Self) -> bool {
        let n = self.serialized_bits_len();
        self.size == other.size
            && self.hash_count == other.hash_count
            && n == other.serialized_bits_len()
            && self.bits[..n] == other.bits[..n]
    }
}

fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51afd7ed558ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ceb9fe1a85ec53);
    k ^= k >> 33;
    k
}

/// IoTDB's `Murmur128Hash.hash(value, seed)`: MurmurHash3 x64-128 with sign-extended
/// tail bytes, returning the low 32 bits of `h1 + h2`.
pub fn murmur128_hash(key: &[u8], seed: i32) -> i32 {
    murmur128(key, seed, true)
}

/// The same hash with the tail bytes taken unsigned, as the C++ TsFile 2.x library computes
/// it; it differs from Java's only for paths whose last `len % 16` bytes include one >= 0x80.
pub fn murmur128_hash_unsigned_tail(key: &[u8], seed: i32) -> i32 {
    murmur128(key, seed, false)
}

fn murmur128(key: &[u8], seed: i32, signed_tail: bool) -> i32 {
    const C1: u64 = 0x87c37b91114253d5;
    const C2: u64 = 0x4cf5ad432745937f;
    let len = key.len();
    let mut h1 = seed as i64 as u64;
    let mut h2 = h1;
    let nblocks = len >> 4;
    for i in 0..nblocks {
        let b = &key[i * 16..i * 16 + 16];
        let mut k1 = u64::from_le_bytes(b[..8].try_into().unwrap());
        let mut k2 = u64::from_le_bytes(b[8..].try_into().unwrap());
        k1 = k1.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2);
        h1 ^= k1;
        h1 = h1
            .rotate_left(27)
            .wrapping_add(h2)
            .wrapping_mul(5)
            .wrapping_add(0x52dce729);
        k2 = k2.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1);
        h2 ^= k2;
        h2 = h2
            .rotate_left(31)
            .wrapping_add(h1)
            .wrapping_mul(5)
            .wrapping_add(0x38495ab5);
    }
    let tail = &key[nblocks * 16..];
    let r = tail.len();
    let sx = |j: usize| {
        if signed_tail {
            tail[j] as i8 as i64 as u64
        } else {
            tail[j] as u64
        }
    };
    let mut k1: u64 = 0;
    let mut k2: u64 = 0;
    if r > 8 {
        for j in (8..r).rev() {
            k2 ^= sx(j) << (8 * (j - 8));
        }
        k2 = k2.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1);
        h2 ^= k2;
    }
    if r > 0 {
        for j in (0..r.min(8)).rev() {
            k1 ^= sx(j) << (8 * j);
        }
        k1 = k1.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2);
        h1 ^= k1;
    }
    h1 ^= len as u64;
    h2 ^= len as u64;
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    h1 = fmix64(h1);
    h2 = fmix64(h2);
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    h1.wrapping_add(h2) as i32
}

#[cfg(test)]
mod tests {

    #[test]
    fn unsigned_tail_matches_the_cpp_library() {
        // Bits of the 256-bit, 5-hash filter the PyPI `tsfile` 2.5.0 library wrote for its
        // only series `root.sg.d1.温度` (read from that file).
        let mut b = BloomFilter::with_capacity(1, DEFAULT_ERROR_RATE);
        let p = "root.sg.d1.温度";
        let idx: Vec<usize> = SEEDS[..b.hash_count()]
            .iter()
            .map(|s| (murmur128_hash_unsigned_tail(p.as_bytes(), *s).unsigned_abs() as usize) % 256)
            .collect();
        let mut sorted = idx.clone();
        sorted.sort();
        assert_eq!(sorted, [38, 82, 118, 191, 216]);
        b.add_both(p);
        assert!(b.contains(p) && b.contains_unsigned_tail(p));
    }
    use super::*;

    #[test]
    fn murmur_vectors() {
        let cases: [(&str, [i32; 8]); 5] = [
            (
                "d1.s1",
                [
                    -1349307291,
                    -2017493632,
                    -1725853040,
                    -1806119938,
                    216080625,
                    941949958,
                    161813307,
                    873111754,
                ],
            ),
            (
                "root.sg.d1.s1",
                [
                    -1021017105,
                    1766616266,
                    2009716169,
                    -669598302,
                    -404990910,
                    -2126538597,
                    -1369854800,
                    -1238114800,
                ],
            ),
            (
                "a",
                [
                    623062375,
                    1387394267,
                    662681686,
                    -1321099737,
                    1426279078,
                    -812003478,
                    -1285458627,
                    812441596,
                ],
            ),
            (
                "abcdefghijklmnopq",
                [
                    1079774394,
                    -235358107,
                    -788210699,
                    1181893484,
                    1746318899,
                    -1551839023,
                    -1636551700,
                    53665894,
                ],
            ),
            (
                "été.s1",
                [
                    -314628975,
                    -972662279,
                    -360421633,
                    1970842698,
                    631116106,
                    1157336042,
                    -1398817231,
                    638522094,
                ],
            ),
        ];
        for (s, want) in cases {
            for (seed, w) in SEEDS.iter().zip(want) {
                assert_eq!(murmur128_hash(s.as_bytes(), *seed), w, "{s} seed {seed}");
            }
        }
    }

    #[test]
    fn sizes_and_serialization() {
        for (n, m) in [
            (0, 256),
            (1, 256),
            (41, 256),
            (42, 262),
            (100, 624),
            (1000, 6236),
            (22500, 140293),
        ] {
            let b = BloomFilter::with_capacity(n, DEFAULT_ERROR_RATE);
            assert_eq!(b.size(), m, "n = {n}");
            assert_eq!(b.hash_count(), 5);
        }
        assert_eq!(BloomFilter::with_capacity(1, 0.01).hash_count(), 7);
        assert_eq!(BloomFilter::with_capacity(1, 0.1).hash_count(), 4);
        let mut b = BloomFilter::with_capacity(1, DEFAULT_ERROR_RATE);
        b.add("d1.s1");
        let mut out = Vec::new();
        b.serialize(&mut out);
        let hex: String = out.iter().map(|x| format!("{x:02x}")).collect();
        assert_eq!(hex, "0000001f040000000000000000000000000001000100000800000000000000000000020000010000000005");
        let mut r = ByteReader::new(&out, 0);
        let back = BloomFilter::deserialize(&mut r).unwrap();
        assert!(back.contains("d1.s1"));
        assert_eq!(back, b);
    }
}
