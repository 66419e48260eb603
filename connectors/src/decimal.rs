//! Clinger's fast path, shared by the payload parsers' number readers: a decimal whose digits
//! form an integer `m` of at most 2^53 with `k` ≤ 22 of them after the point is `m / 10^k`,
//! a division of two exact doubles and so the correctly rounded value.

/// Exact powers of ten as `f64` (all are representable up to 1e22).
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// `m / 10^k` correctly rounded, when the fast path gives it (`m` ≤ 2^53, `k` ≤ 22).
#[inline]
pub(crate) fn exact(m: u64, k: usize) -> Option<f64> {
    if m > 1 << 53 {
        return None;
    }
    Some(m as f64 / *POW10.get(k)?)
}

#[cfg(test)]
mod tests {
    use super::exact;

    #[test]
    fn the_fast_path_equals_the_standard_parser_within_its_bounds_only() {
        // Values and the text the standard library parses to the same double.
        assert_eq!(exact(12_345, 2), Some("123.45".parse().unwrap()));
        assert_eq!(
            exact(1 << 53, 22),
            Some("9007199254740992e-22".parse().unwrap())
        );
        assert_eq!(exact(1, 0), Some(1.0));
        assert_eq!(exact(0, 22), Some(0.0));
        assert_eq!(exact((1 << 53) + 1, 0), None);
        assert_eq!(exact(1, 23), None);
    }
}
