//! Tests added for mutants of the compression helpers that no other test caught
//! (docs/mutants.md, the encoding choice's skip rule).

use super::*;

/// [`snappy_len_at_least`] is the bound its documentation states: one byte of length and at
/// least 3 bytes for every 64 input bytes, that is `1 + floor(3n / 64)` for an `n`-byte
/// input; worked out by hand for a few lengths (63: 1 + floor(189 / 64) = 3; 21: 1 +
/// floor(63 / 64) = 1; 22: 1 + floor(66 / 64) = 2; 100: 1 + floor(300 / 64) = 5; 64,000:
/// 1 + 3,000), then for every length up to 1,000 and a few larger ones.
#[test]
fn the_snappy_floor_is_a_length_byte_plus_three_bytes_per_64_input_bytes() {
    for (n, want) in [
        (0, 1),
        (21, 1),
        (22, 2),
        (63, 3),
        (64, 4),
        (100, 5),
        (64_000, 3_001),
    ] {
        assert_eq!(snappy_len_at_least(n), want, "{n}");
    }
    for n in (0..=1_000).chain([4_095, 65_535, (1 << 20) + 63]) {
        assert_eq!(snappy_len_at_least(n), 1 + 3 * n / 64, "{n}");
    }
}
