//! Points in time as the driver sees them.

use core::fmt;
use core::time::Duration;

/// A point in time: nanoseconds since an epoch the driver picks.
///
/// The queue never reads a clock. Drivers convert their own clock (`std::time::Instant`,
/// tokio's paused clock, a tick counter) into `Timestamp`s measured from one fixed epoch, and
/// pass one to every operation. All arithmetic saturates: `Timestamp::MAX` stands for "never",
/// and adding `Duration::MAX` to anything gives `Timestamp::MAX` rather than panicking.
///
/// It prints (`Display` and `Debug` alike) as the time since the epoch, as a [`Duration`]
/// prints (`12.345s`, `1.5ms`; a precision such as `{:.3}` is passed on), and
/// `Timestamp::MAX` as `never`.
///
/// ```
/// use core::time::Duration;
/// use leaseq_core::Timestamp;
///
/// let t = Timestamp::from_duration(Duration::from_millis(12_345));
/// assert_eq!(t.to_string(), "12.345s");
/// assert_eq!(format!("{t:?}"), "12.345s");
/// assert_eq!(Timestamp::MAX.to_string(), "never");
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct Timestamp(u64);

impl Timestamp {
    /// The epoch.
    pub const ZERO: Timestamp = Timestamp(0);
    /// The latest representable instant; used for "never".
    pub const MAX: Timestamp = Timestamp(u64::MAX);

    /// A timestamp `nanos` nanoseconds after the epoch.
    #[inline]
    pub const fn from_nanos(nanos: u64) -> Self {
        Timestamp(nanos)
    }

    /// A timestamp `d` after the epoch, saturating at [`Timestamp::MAX`].
    #[inline]
    pub const fn from_duration(d: Duration) -> Self {
        Timestamp::ZERO.saturating_add(d)
    }

    /// Nanoseconds since the epoch.
    #[inline]
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Time since the epoch.
    #[inline]
    pub const fn as_duration(self) -> Duration {
        Duration::from_nanos(self.0)
    }

    /// `self + d`, saturating at [`Timestamp::MAX`].
    #[inline]
    pub const fn saturating_add(self, d: Duration) -> Self {
        Timestamp(self.0.saturating_add(duration_nanos(d)))
    }

    /// `self - d`, saturating at [`Timestamp::ZERO`].
    #[inline]
    pub const fn saturating_sub(self, d: Duration) -> Self {
        Timestamp(self.0.saturating_sub(duration_nanos(d)))
    }

    /// The time from `earlier` to `self`, or zero if `earlier` is later.
    #[inline]
    pub const fn saturating_duration_since(self, earlier: Timestamp) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Timestamp::MAX {
            f.pad("never")
        } else {
            fmt::Debug::fmt(&self.as_duration(), f)
        }
    }
}

/// The same as `Display` (not the raw nanoseconds): a `Timestamp` in a derived `Debug`
/// (a delivery, an event, a dead letter) reads as a time.
impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// `d` in nanoseconds, saturating at `u64::MAX` (about 584 years).
#[inline]
pub(crate) const fn duration_nanos(d: Duration) -> u64 {
    let n = d.as_nanos();
    if n > u64::MAX as u128 {
        u64::MAX
    } else {
        n as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        let t = Timestamp::from_nanos(5);
        assert_eq!(t.saturating_add(Duration::MAX), Timestamp::MAX);
        assert_eq!(
            Timestamp::MAX.saturating_add(Duration::from_nanos(1)),
            Timestamp::MAX
        );
        assert_eq!(t.saturating_sub(Duration::from_nanos(9)), Timestamp::ZERO);
        assert_eq!(
            t.saturating_duration_since(Timestamp::from_nanos(9)),
            Duration::ZERO
        );
        assert_eq!(Timestamp::from_duration(Duration::MAX), Timestamp::MAX);
    }

    #[test]
    fn prints_as_a_duration_since_the_epoch() {
        use alloc::format;
        let t = Timestamp::from_nanos(12_345_000_000);
        assert_eq!(format!("{t}"), "12.345s");
        assert_eq!(format!("{t:?}"), "12.345s");
        assert_eq!(format!("{t:.1}"), "12.3s");
        let small = Timestamp::from_nanos(1_500_000);
        assert_eq!(format!("{small:?}"), "1.5ms");
        assert_eq!(format!("{}", Timestamp::ZERO), "0ns");
        assert_eq!(format!("{:?}", Timestamp::MAX), "never");
        let late = Timestamp::MAX.saturating_sub(Duration::from_nanos(1));
        assert_eq!(format!("{late}"), "18446744073.709551614s");
    }
}
