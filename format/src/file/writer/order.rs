//! Java `HashMap<String, _>` iteration order (spec §7.1).
//!
//! The 0.10 writer emits the chunk groups of one flush in `HashMap` order of the device
//! ids and the chunks of a group in `HashMap` order of the measurement ids. To produce
//! the same bytes we replay that order: buckets `0..cap` in index order, bucket index
//! `(h ^ (h >>> 16)) & (cap - 1)` with `h = String.hashCode()`, insertion order inside a
//! bucket, capacity 16 doubling when the size exceeds `0.75 * cap` (and, as `treeifyBin`
//! does below capacity 64, when a bucket receives its 9th key). `clear()` keeps the
//! capacity. Buckets that Java would turn into trees (9+ keys at capacity ≥ 64) are not
//! replayed; their order would differ (a probability far below 10⁻⁹ for real names).

/// Java's `String.hashCode`: `h = 31*h + c` over the UTF-16 code units, wrapping.
pub(crate) fn java_string_hash(s: &str) -> i32 {
    let mut h: i32 = 0;
    if s.is_ascii() {
        for b in s.bytes() {
            h = h.wrapping_mul(31).wrapping_add(b as i32);
        }
    } else {
        for u in s.encode_utf16() {
            h = h.wrapping_mul(31).wrapping_add(u as i32);
        }
    }
    h
}

/// `HashMap.hash`: the high half folded into the low half.
#[inline]
fn spread(h: i32) -> u32 {
    let h = h as u32;
    h ^ (h >> 16)
}

const INITIAL_CAPACITY: usize = 16;
const TREEIFY_THRESHOLD: u32 = 8;
const MIN_TREEIFY_CAPACITY: usize = 64;

/// The key order of a Java `HashMap` into which ids were inserted (no removals).
#[derive(Debug, Clone, Default)]
pub(crate) struct JavaHashOrder {
    /// Table capacity; 0 until the first insertion (Java allocates lazily).
    cap: usize,
    /// `(spread hash, id)` in insertion order.
    entries: Vec<(u32, u32)>,
    /// Keys per bucket at the current capacity.
    bucket_len: Vec<u32>,
}

impl JavaHashOrder {
    /// An empty map as `new HashMap<>()` makes it.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Whether no key was inserted since the last clear.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The ids in insertion order.
    pub(crate) fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.entries.iter().map(|e| e.1)
    }

    /// Current table capacity (0 before the first insertion).
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.cap
    }

    /// Inserts a key that is not yet present, identified by `id`, with Java hash `hash`.
    pub(crate) fn insert(&mut self, hash: i32, id: u32) {
        if self.cap == 0 {
            self.resize_to(INITIAL_CAPACITY);
        }
        let s = spread(hash);
        let b = (s as usize) & (self.cap - 1);
        let before = self.bucket_len[b];
        self.entries.push((s, id));
        self.bucket_len[b] += 1;
        if before >= TREEIFY_THRESHOLD && self.cap < MIN_TREEIFY_CAPACITY {
            // treeifyBin on a small table resizes instead.
            self.resize_to(self.cap * 2);
        }
        if self.entries.len() > self.cap / 4 * 3 {
            self.resize_to(self.cap * 2);
        }
    }

    /// `HashMap.clear()`: removes every key, keeps the table capacity.
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.bucket_len.iter_mut().for_each(|c| *c = 0);
    }

    fn resize_to(&mut self, cap: usize) {
        self.cap = cap;
        self.bucket_len.clear();
        self.bucket_len.resize(cap, 0);
        let mask = cap - 1;
        for (s, _) in &self.entries {
            self.bucket_len[(*s as usize) & mask] += 1;
        }
    }

    /// The ids in Java iteration order.
    pub(crate) fn iteration_order(&self) -> Vec<u32> {
        if self.entries.is_empty() {
            return Vec::new();
        }
        let mask = (self.cap - 1) as u32;
        let mut keyed: Vec<(u32, u32, u32)> = self
            .entries
            .iter()
            .enumerate()
            .map(|(seq, (s, id))| (s & mask, seq as u32, *id))
            .collect();
        keyed.sort_unstable();
        keyed.into_iter().map(|k| k.2).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order_of(names: &[&str]) -> Vec<String> {
        let mut m = JavaHashOrder::new();
        for (i, n) in names.iter().enumerate() {
            m.insert(java_string_hash(n), i as u32);
        }
        m.iteration_order()
            .into_iter()
            .map(|i| names[i as usize].to_string())
            .collect()
    }

    #[test]
    fn string_hash_matches_java() {
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("s1"), 3614);
        assert_eq!(java_string_hash("s4"), 3617);
        // "root.sg.d1".hashCode() in Java.
        assert_eq!(java_string_hash("root.sg.d1"), 1_784_206_875);
        // Non-BMP: one char, two UTF-16 units (0xD83D, 0xDE00).
        assert_eq!(java_string_hash("😀"), 0xD83D * 31 + 0xDE00);
        assert_eq!(java_string_hash("é"), 0xE9);
    }

    #[test]
    fn spec_example_s1_to_s4() {
        assert_eq!(
            order_of(&["s1", "s2", "s3", "s4"]),
            ["s3", "s4", "s1", "s2"]
        );
    }

    #[test]
    fn resize_at_load_factor_and_clear_keeps_capacity() {
        let mut m = JavaHashOrder::new();
        assert_eq!(m.capacity(), 0);
        for i in 0..12 {
            m.insert(i, i as u32);
        }
        assert_eq!(m.capacity(), 16);
        m.insert(12, 12);
        assert_eq!(m.capacity(), 32);
        m.clear();
        assert!(m.is_empty());
        assert_eq!(m.capacity(), 32);
        // With capacity 32, hash 16 and hash 48 land in buckets 16 and 16 (48 & 31).
        m.insert(48, 0);
        m.insert(16, 1);
        m.insert(1, 2);
        assert_eq!(m.iteration_order(), [2, 0, 1]);
    }

    #[test]
    fn ninth_key_in_a_bucket_resizes_small_tables() {
        // Hashes 0, 16, 32, ... all land in bucket 0 at capacity 16.
        let mut m = JavaHashOrder::new();
        for i in 0..8 {
            m.insert(i * 16, i as u32);
        }
        assert_eq!(m.capacity(), 16);
        m.insert(8 * 16, 8);
        assert_eq!(m.capacity(), 32);
        // At 32: even multiples of 16 in bucket 0, odd ones in bucket 16.
        assert_eq!(m.iteration_order(), [0, 2, 4, 6, 8, 1, 3, 5, 7]);
    }

    #[test]
    fn matches_java_hashmap_output() {
        // Orders printed by `java.util.HashMap.keySet()` on OpenJDK 17.
        let names: Vec<String> = (0..=40).map(|i| format!("m{i:03}")).collect();
        let refs: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
        let java = "m021 m000 m022 m020 m003 m025 m004 m026 m001 m023 m002 m024 m007 m029 m008 \
                    m005 m027 m006 m028 m009 m040 m010 m032 m011 m033 m030 m031 m014 m036 m015 \
                    m037 m012 m034 m013 m035 m018 m019 m016 m038 m017 m039";
        assert_eq!(
            order_of(&refs).join(" "),
            java.split_whitespace().collect::<Vec<_>>().join(" ")
        );
        // Ten keys of bucket 5 (at capacity 16) plus three others: the 9th key resizes.
        let keys = [
            "k0", "k70", "k81", "k92", "k120", "k131", "k142", "k153", "k164", "k175", "x1", "x2",
            "x3",
        ];
        assert_eq!(
            order_of(&keys).join(" "),
            "k0 k70 k81 k92 k120 k131 k142 k153 k164 k175 x1 x2 x3"
        );
        let keys =
            "k0 k70 k81 k92 k120 k131 k142 k153 x1 x2 x3 y1 y2 y3 y4 y5 y6 y7 y8 y9 z1 z2 z3";
        let keys: Vec<&str> = keys.split(' ').collect();
        assert_eq!(
            order_of(&keys).join(" "),
            "y9 k0 k70 k81 k92 k120 k131 k142 k153 z1 y1 z2 x1 y2 z3 x2 y3 x3 y4 y5 y6 y7 y8"
        );
    }
}
