//! Exponential reconnect backoff with jitter (rumqttc itself retries immediately).

use std::time::Duration;

/// Doubling delays from `initial` up to `max`, each drawn uniformly from `[d/2, d]`.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    initial: Duration,
    max: Duration,
    current: Duration,
    rng: u64,
}

impl Backoff {
    pub fn new(initial: Duration, max: Duration, seed: u64) -> Backoff {
        Backoff {
            initial,
            max,
            current: initial.min(max),
            rng: seed | 1,
        }
    }

    /// Back to the initial delay (after a connection that lasted).
    pub fn reset(&mut self) {
        self.current = self.initial.min(self.max);
    }

    /// The next delay.
    pub fn next_delay(&mut self) -> Duration {
        let d = self.current;
        self.current = self.current.saturating_mul(2).min(self.max);
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let r = self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11; // 53 bits
        let frac = r as f64 / (1u64 << 53) as f64;
        d.mul_f64(0.5 + 0.5 * frac)
    }
}

/// A seed from the clock and the process id.
pub(crate) fn seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    t ^ (u64::from(std::process::id()) << 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_with_jitter_up_to_max() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_secs(1), 42);
        let nominal = [100u64, 200, 400, 800, 1000, 1000, 1000];
        for n in nominal {
            let d = b.next_delay();
            let n = Duration::from_millis(n);
            assert!(d >= n / 2 && d <= n, "{d:?} outside [{:?}, {n:?}]", n / 2);
        }
        b.reset();
        assert!(b.next_delay() <= Duration::from_millis(100));
    }

    #[test]
    fn jitter_varies() {
        let mut b = Backoff::new(Duration::from_secs(8), Duration::from_secs(8), 7);
        let a: Vec<_> = (0..8).map(|_| b.next_delay()).collect();
        assert!(a.windows(2).any(|w| w[0] != w[1]));
    }
}
