//! Delay before a failed item is delivered again.

use core::time::Duration;

use crate::error::ConfigError;

/// Delay before an item whose attempt failed (lease expired, nacked, timed out, dropped)
/// becomes visible again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Backoff {
    /// Visible again at once.
    #[default]
    None,
    /// The same delay after every failure.
    Fixed(Duration),
    /// `base × factor^(failures - 1)`, capped at `max`.
    Exponential {
        /// Delay after the first failure.
        base: Duration,
        /// Growth per further failure (at least 1).
        factor: u32,
        /// The largest delay.
        max: Duration,
    },
}

impl Backoff {
    /// Doubling backoff from `base`, capped at `max`.
    pub const fn exponential(base: Duration, max: Duration) -> Self {
        Backoff::Exponential {
            base,
            factor: 2,
            max,
        }
    }

    /// The delay after the `failures`-th failed attempt (1-based), before jitter.
    pub fn delay(&self, failures: u32) -> Duration {
        match *self {
            Backoff::None => Duration::ZERO,
            Backoff::Fixed(d) => d,
            Backoff::Exponential { base, factor, max } => {
                if factor <= 1 {
                    return base.min(max);
                }
                let mut d = base;
                for _ in 1..failures {
                    if d >= max {
                        break;
                    }
                    d = d.saturating_mul(factor);
                }
                d.min(max)
            }
        }
    }

    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        if let Backoff::Exponential { base, factor, max } = *self {
            if factor == 0 {
                return Err(ConfigError::BackoffFactorBelowOne(factor));
            }
            if max < base {
                return Err(ConfigError::BackoffCapBelowBase { base, max });
            }
        }
        Ok(())
    }
}

/// Random shortening of backoff delays, so that items failed together do not all return at
/// the same instant. A delay `d` becomes a value drawn uniformly from `[d × (1 - percent/100), d]`.
///
/// The draws come from a small PRNG seeded by the caller: the same seed and the same
/// operations give the same delays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Jitter {
    percent: u8,
    seed: u64,
}

impl Jitter {
    /// Up to `percent` (0..=100) of each delay taken off at random, from `seed`.
    pub const fn new(percent: u8, seed: u64) -> Self {
        Jitter { percent, seed }
    }
    /// The largest share of a delay taken off, in percent.
    pub const fn percent(&self) -> u8 {
        self.percent
    }
    /// The PRNG seed.
    pub const fn seed(&self) -> u64 {
        self.seed
    }
}

/// SplitMix64: tiny, fast, and good enough to spread delays.
#[derive(Clone, Debug)]
pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    pub(crate) const fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// `d` shortened by a uniform share of at most `percent`%.
    pub(crate) fn jitter(&mut self, d: Duration, percent: u8) -> Duration {
        if d.is_zero() || percent == 0 {
            return d;
        }
        let nanos = crate::time::duration_nanos(d);
        let span = (nanos as u128 * percent as u128 / 100) as u64;
        let cut = if span == 0 {
            0
        } else {
            self.next_u64() % span.saturating_add(1)
        };
        Duration::from_nanos(nanos - cut)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_doubles_and_caps() {
        let b = Backoff::exponential(Duration::from_millis(10), Duration::from_millis(70));
        assert_eq!(b.delay(1), Duration::from_millis(10));
        assert_eq!(b.delay(2), Duration::from_millis(20));
        assert_eq!(b.delay(3), Duration::from_millis(40));
        assert_eq!(b.delay(4), Duration::from_millis(70));
        assert_eq!(b.delay(u32::MAX), Duration::from_millis(70));
        let huge = Backoff::exponential(Duration::MAX, Duration::MAX);
        assert_eq!(huge.delay(9), Duration::MAX);
    }

    #[test]
    fn jitter_stays_in_range_and_is_deterministic() {
        let d = Duration::from_millis(100);
        let mut a = SplitMix64::new(7);
        let mut b = SplitMix64::new(7);
        for _ in 0..1000 {
            let x = a.jitter(d, 30);
            assert_eq!(x, b.jitter(d, 30));
            assert!(x <= d && x >= Duration::from_millis(70), "{x:?}");
        }
        assert!(a.jitter(Duration::MAX, 100) <= Duration::MAX);
        let flat = Backoff::Exponential {
            base: Duration::from_millis(5),
            factor: 1,
            max: Duration::from_secs(1),
        };
        assert_eq!(flat.delay(u32::MAX), Duration::from_millis(5));
    }
}
