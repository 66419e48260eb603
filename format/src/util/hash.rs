//! A keyed hash for the writer's name maps, cheaper than the standard library's SipHash
//! on the short device and measurement names looked up once per written row.
//!
//! Each 8-byte word is mixed with a folded 64x64->128-bit multiplication by a per-map
//! random key (drawn from the standard library's `RandomState`), so collisions cannot be
//! planned without the key.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

/// The folded multiply: the low and high halves of the 128-bit product, xor-ed.
#[inline]
fn fold(a: u64, b: u64) -> u64 {
    let p = (a as u128).wrapping_mul(b as u128);
    (p as u64) ^ ((p >> 64) as u64)
}

/// Builds [`NameHasher`]s with this map's random keys.
#[derive(Clone, Debug)]
pub struct NameHashState {
    seed: u64,
    key: u64,
}

impl Default for NameHashState {
    fn default() -> Self {
        let rs = RandomState::new();
        NameHashState {
            seed: rs.hash_one(0x5eed_u64),
            // Odd, so the multiplication never loses the low bit.
            key: rs.hash_one(0x006b_6579_u64) | 1,
        }
    }
}

impl BuildHasher for NameHashState {
    type Hasher = NameHasher;

    #[inline]
    fn build_hasher(&self) -> NameHasher {
        NameHasher {
            h: self.seed,
            key: self.key,
        }
    }
}

/// The hasher of [`NameHashState`].
#[derive(Clone, Debug)]
pub struct NameHasher {
    h: u64,
    key: u64,
}

impl Hasher for NameHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut h = self.h;
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut a = [0u8; 8];
            a.copy_from_slice(w);
            h = fold(h ^ u64::from_le_bytes(a), self.key);
        }
        let tail = words.remainder();
        // The tail's length goes into the word, so "a" and "a\0" differ.
        let mut t = (tail.len() as u64) << 56;
        for (i, b) in tail.iter().enumerate() {
            t |= (*b as u64) << (8 * i);
        }
        self.h = fold(h ^ t, self.key);
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.h = fold(self.h ^ i as u64, self.key);
    }

    #[inline]
    fn finish(&self) -> u64 {
        fold(self.h, self.key ^ 0x9e37_79b9_7f4a_7c15)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};

    #[test]
    fn equal_names_hash_equal_and_near_names_differ() {
        let s = NameHashState::default();
        assert_eq!(
            s.hash_one("root.sg.d1"),
            s.hash_one(String::from("root.sg.d1"))
        );
        let names = [
            "",
            "a",
            "a\0",
            "b",
            "ab",
            "ba",
            "root.sg.d1",
            "root.sg.d2",
            "root.sg.d10",
            "root.sg.d01",
            "12345678",
            "123456789",
            "1234567\0",
        ];
        let hashes: HashSet<u64> = names.iter().map(|n| s.hash_one(n)).collect();
        assert_eq!(hashes.len(), names.len());
    }

    #[test]
    fn maps_find_what_was_inserted() {
        let mut m: HashMap<String, u32, NameHashState> = HashMap::default();
        for i in 0..1000u32 {
            m.insert(format!("root.bench.d{i:03}"), i);
        }
        for i in 0..1000u32 {
            assert_eq!(m.get(format!("root.bench.d{i:03}").as_str()), Some(&i));
        }
        assert_eq!(m.get("root.bench.d1000"), None);
    }
}
