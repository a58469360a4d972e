//! A bounded log-linear histogram of durations.

use alloc::vec;
use alloc::vec::Vec;
use core::time::Duration;

use crate::time::duration_nanos;

/// Sub-buckets per power of two: 16, so a bucket is at most 1/16 (6.25 %) of its values wide.
const SUB_BITS: u32 = 4;
const SUB: u64 = 1 << SUB_BITS;
/// Buckets covering every `u64` nanosecond value.
const BUCKETS: usize = ((64 - SUB_BITS + 1) as usize) * SUB as usize;

/// Durations counted in 976 log-linear buckets covering 1 ns to 584 years with at most
/// 6.25 % relative error. Fixed size (about 8 KiB) however many values are recorded.
///
/// ```
/// use core::time::Duration;
/// use leaseq_core::Histogram;
///
/// let mut h = Histogram::new();
/// for ms in 1..=100 {
///     h.record(Duration::from_millis(ms));
/// }
/// let p99 = h.quantile(0.99).unwrap();
/// assert!(p99 >= Duration::from_millis(99) && p99 <= Duration::from_millis(100));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Histogram {
    counts: Vec<u64>,
    count: u64,
    min: u64,
    max: u64,
    sum: u128,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Histogram {
            counts: vec![0; BUCKETS],
            count: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
        }
    }

    /// Counts one value.
    pub fn record(&mut self, d: Duration) {
        let v = duration_nanos(d);
        self.counts[index(v)] += 1;
        self.count += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.sum += v as u128;
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The smallest value, if any.
    pub fn min(&self) -> Option<Duration> {
        (self.count > 0).then(|| Duration::from_nanos(self.min))
    }

    /// The largest value, if any.
    pub fn max(&self) -> Option<Duration> {
        (self.count > 0).then(|| Duration::from_nanos(self.max))
    }

    /// The mean, if any.
    pub fn mean(&self) -> Option<Duration> {
        (self.count > 0).then(|| Duration::from_nanos((self.sum / self.count as u128) as u64))
    }

    /// The value at quantile `q` (0.5 for the median, 0.99 for p99), rounded up to its
    /// bucket's upper bound and never above the largest value recorded. `None` when empty;
    /// `q` is clamped to `[0, 1]` (NaN reads as 1).
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        if self.count == 0 {
            return None;
        }
        let q = if q >= 0.0 {
            q.min(1.0)
        } else if q < 0.0 {
            0.0
        } else {
            1.0
        };
        let exact = q * self.count as f64;
        let mut rank = exact as u64;
        if (rank as f64) < exact {
            rank += 1;
        }
        let rank = rank.clamp(1, self.count);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(Duration::from_nanos(upper(i).min(self.max).max(self.min)));
            }
        }
        Some(Duration::from_nanos(self.max))
    }

    /// Adds every value of `other`.
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.count += other.count;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
    }

    /// Non-empty buckets as `(upper bound, count)`, in increasing order.
    pub fn buckets(&self) -> impl Iterator<Item = (Duration, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| (Duration::from_nanos(upper(i)), c))
    }
}

fn index(v: u64) -> usize {
    if v < 2 * SUB {
        return v as usize;
    }
    let e = 63 - v.leading_zeros();
    let shift = e - SUB_BITS;
    let m = v >> shift; // in [SUB, 2 * SUB)
    ((shift as u64 + 1) * SUB + (m - SUB)) as usize
}

/// The largest value that falls in bucket `i`.
fn upper(i: usize) -> u64 {
    let i = i as u64;
    if i < 2 * SUB {
        return i;
    }
    let shift = i / SUB - 1;
    let m = i % SUB + SUB;
    (((m + 1) as u128) << shift)
        .saturating_sub(1)
        .min(u64::MAX as u128) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_bounded() {
        assert_eq!(index(u64::MAX), BUCKETS - 1);
        for v in [0, 1, 31, 32, 33, 63, 64, 1000, 1 << 40, u64::MAX] {
            let i = index(v);
            assert!(upper(i) >= v, "{v}");
            if i > 0 {
                assert!(upper(i - 1) < v, "{v}");
            }
        }
        for i in 1..BUCKETS {
            assert_eq!(index(upper(i - 1) + 1), i);
        }
    }

    #[test]
    fn quantiles_within_relative_error() {
        let mut h = Histogram::new();
        for us in 1..=10_000u64 {
            h.record(Duration::from_micros(us));
        }
        let p50 = h.quantile(0.5).unwrap().as_micros() as f64;
        assert!((p50 - 5000.0).abs() / 5000.0 < 0.07, "{p50}");
        assert_eq!(h.quantile(1.0), h.max());
        assert_eq!(h.quantile(f64::NAN), h.max());
        let q0 = h.quantile(-3.0).unwrap();
        assert!(q0 >= h.min().unwrap() && q0.as_nanos() <= 1070, "{q0:?}");
        h.record(Duration::MAX);
        assert!(h.quantile(1.0).is_some());
    }
}
