//! Rate limits' value: at most N leases started per period, with a burst (the Generic Cell
//! Rate Algorithm, as governor runs it; the state it drives is `queue/rates.rs`).

use core::num::NonZeroU32;
use core::time::Duration;

/// A rate limit ([`Queue::set_rate`](crate::Queue::set_rate)): leases of a queue, kind or
/// partition started at most `max` per `period`, evenly (one every `period / max`, the
/// *emission interval*), with up to [`burst`](Self::burst) of them at once after a quiet
/// spell.
///
/// **The burst.** [`per`](Self::per) allows a burst of `max` (governor's quota: a full
/// bucket of `max` leases, refilled one per interval). Over a long run the rate is `max` per
/// `period` exactly, but a window of one `period` may hold up to `2 * max - 1` starts (a
/// full burst, then the refill). [`burst(1)`](Self::burst) spaces every start by the
/// interval: then no window of one `period` holds more than `max`. In general, any `k`
/// leases of one limit span at least `(k - burst) * interval`, so a window of length `w`
/// holds fewer than `burst + w / interval` of them.
///
/// ```
/// use core::num::NonZeroU32;
/// use core::time::Duration;
/// use leaseq_core::Rate;
///
/// let ten = NonZeroU32::new(10).unwrap();
/// let rate = Rate::per(ten, Duration::from_secs(1));
/// assert_eq!(rate.interval(), Duration::from_millis(100));
/// assert_eq!(rate.burst_size(), 10);
/// assert_eq!(rate.burst(NonZeroU32::MIN).burst_size(), 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rate {
    max: NonZeroU32,
    period: Duration,
    burst: NonZeroU32,
}

impl Rate {
    /// `max` leases per `period`, in bursts of up to `max`. A zero `period` limits nothing.
    pub const fn per(max: NonZeroU32, period: Duration) -> Rate {
        Rate {
            max,
            period,
            burst: max,
        }
    }

    /// `max` leases per second.
    pub const fn per_second(max: NonZeroU32) -> Rate {
        Rate::per(max, Duration::from_secs(1))
    }

    /// The same rate with bursts of at most `burst` leases at once (1: evenly spaced).
    pub const fn burst(mut self, burst: NonZeroU32) -> Rate {
        self.burst = burst;
        self
    }

    /// The leases allowed per [`period`](Self::period).
    pub const fn max(&self) -> NonZeroU32 {
        self.max
    }

    /// The period.
    pub const fn period(&self) -> Duration {
        self.period
    }

    /// The most leases started at once after a quiet spell.
    pub const fn burst_size(&self) -> u32 {
        self.burst.get()
    }

    /// The emission interval: `period / max`, rounded up to the nanosecond (so that
    /// rounding never lets more through than asked).
    pub fn interval(&self) -> Duration {
        Duration::from_nanos(self.interval_nanos())
    }

    /// [`interval`](Self::interval) in nanoseconds, saturated.
    pub(crate) fn interval_nanos(&self) -> u64 {
        let period = self.period.as_nanos();
        let max = u128::from(self.max.get());
        u64::try_from(period.div_ceil(max)).unwrap_or(u64::MAX)
    }

    /// The GCRA's tolerance in nanoseconds: how far ahead of now the theoretical arrival
    /// time may be for a lease to start, `(burst - 1) * interval`, saturated.
    pub(crate) fn tolerance_nanos(&self) -> u64 {
        self.interval_nanos()
            .saturating_mul(u64::from(self.burst.get() - 1))
    }
}
