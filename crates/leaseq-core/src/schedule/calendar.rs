//! Where a schedule's ticks fall: the [`Calendar`] hook, and [`Interval`], the calendar of
//! plain intervals the core computes itself.
//!
//! Calendars that need dates (cron expressions, time zones, daylight saving, leap days) are
//! computed outside this `no_std` crate, by a crate that knows them, and plugged in through
//! [`Calendar`]: the core only asks "the first tick after `t`" and "the last tick at or
//! before `t`", so every policy decision stays here, deterministic and testable.

use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use core::time::Duration;

use super::error::ScheduleError;
use crate::time::{duration_nanos, Timestamp};

/// The instants at which a schedule ticks, as [`Timestamp`]s on the **wall clock**
/// (nanoseconds since the UNIX epoch), so that every process sharing a queue names the same
/// tick with the same instant.
///
/// Ticks must be strictly increasing. The planner never trusts that blindly: a
/// `next_after(t)` that is not after `t`, or a `last_at_or_before(t)` that is after `t`, is
/// taken as "no such tick" (the schedule stops there rather than looping or going back).
///
/// ```
/// use leaseq_core::schedule::Calendar;
/// use leaseq_core::Timestamp;
///
/// /// Ticks at 10, 20 and 35 (nanoseconds), then never again.
/// struct Three;
/// impl Calendar for Three {
///     fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
///         [10, 20, 35].into_iter().map(Timestamp::from_nanos).find(|&x| x > t)
///     }
///     fn last_at_or_before(&self, t: Timestamp) -> Option<Timestamp> {
///         [35, 20, 10].into_iter().map(Timestamp::from_nanos).find(|&x| x <= t)
///     }
/// }
/// assert_eq!(Three.next_after(Timestamp::from_nanos(20)), Some(Timestamp::from_nanos(35)));
/// assert_eq!(Three.last_at_or_before(Timestamp::from_nanos(9)), None);
/// ```
pub trait Calendar {
    /// The first tick strictly after `t`, or `None` if the schedule has no tick after `t`.
    fn next_after(&self, t: Timestamp) -> Option<Timestamp>;

    /// The last tick at or before `t`, or `None` if the schedule has no tick by `t`.
    fn last_at_or_before(&self, t: Timestamp) -> Option<Timestamp>;

    /// The calendar in words, for operators (`every 60s`, a cron expression and its time
    /// zone): stored with the schedule's state, so that tools that do not know the calendar
    /// can show it. Default: `None` (not said).
    fn describe(&self) -> Option<String> {
        None
    }
}

impl<C: Calendar + ?Sized> Calendar for &C {
    fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        (**self).next_after(t)
    }
    fn last_at_or_before(&self, t: Timestamp) -> Option<Timestamp> {
        (**self).last_at_or_before(t)
    }
    fn describe(&self) -> Option<String> {
        (**self).describe()
    }
}

impl<C: Calendar + ?Sized> Calendar for Box<C> {
    fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        (**self).next_after(t)
    }
    fn last_at_or_before(&self, t: Timestamp) -> Option<Timestamp> {
        (**self).last_at_or_before(t)
    }
    fn describe(&self) -> Option<String> {
        (**self).describe()
    }
}

/// Every `every`, from `anchor` on: ticks at `anchor + k × every` for `k = 0, 1, 2, ...`,
/// up to [`Timestamp::MAX`] (excluded: it stands for "never").
///
/// The anchor fixes the phase: `Interval::new(Duration::from_secs(60), Timestamp::ZERO)`
/// ticks on every wall-clock minute, the same instants in every process. Both lookups are
/// O(1), however far apart their arguments are.
///
/// ```
/// use core::time::Duration;
/// use leaseq_core::schedule::{Calendar, Interval};
/// use leaseq_core::Timestamp;
///
/// let every_5s = Interval::new(Duration::from_secs(5), Timestamp::from_nanos(1_000)).unwrap();
/// let t = |s: u64| Timestamp::from_nanos(1_000 + s * 1_000_000_000);
/// assert_eq!(every_5s.next_after(t(7)), Some(t(10)));
/// assert_eq!(every_5s.last_at_or_before(t(7)), Some(t(5)));
/// assert_eq!(every_5s.last_at_or_before(Timestamp::ZERO), None); // before the anchor
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Interval {
    /// The period in nanoseconds: at least 1.
    every: u64,
    anchor: Timestamp,
}

impl Interval {
    /// Ticks every `every` from `anchor`. Refused with [`ScheduleError::ZeroInterval`] for a
    /// zero period. A period longer than `u64::MAX` nanoseconds (about 584 years) is taken as
    /// that.
    pub const fn new(every: Duration, anchor: Timestamp) -> Result<Interval, ScheduleError> {
        let every = duration_nanos(every);
        if every == 0 {
            return Err(ScheduleError::ZeroInterval);
        }
        Ok(Interval { every, anchor })
    }

    /// The period.
    pub const fn every(&self) -> Duration {
        Duration::from_nanos(self.every)
    }

    /// The first tick.
    pub const fn anchor(&self) -> Timestamp {
        self.anchor
    }

    /// Tick number `k`, or `None` if it would reach [`Timestamp::MAX`].
    fn tick(&self, k: u64) -> Option<Timestamp> {
        let offset = k.checked_mul(self.every)?;
        let at = self.anchor.as_nanos().checked_add(offset)?;
        (at < u64::MAX).then_some(Timestamp::from_nanos(at))
    }
}

impl Calendar for Interval {
    fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        match t.as_nanos().checked_sub(self.anchor.as_nanos()) {
            None => self.tick(0),
            Some(since) => self.tick(since / self.every + 1),
        }
    }

    fn last_at_or_before(&self, t: Timestamp) -> Option<Timestamp> {
        let since = t.as_nanos().checked_sub(self.anchor.as_nanos())?;
        let k = since / self.every;
        // Tick `k` is at or before `t`; only `Timestamp::MAX` itself is not a tick.
        self.tick(k)
            .or_else(|| k.checked_sub(1).and_then(|k| self.tick(k)))
    }

    /// `every 60s`, and the anchor when it is not the epoch: `every 5s from 1000 ns`.
    fn describe(&self) -> Option<String> {
        let every = self.every();
        Some(match self.anchor.as_nanos() {
            0 => format!("every {every:?}"),
            ns => format!("every {every:?} from {ns} ns"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(n: u64) -> Timestamp {
        Timestamp::from_nanos(n)
    }

    #[test]
    fn interval_lookups_at_the_edges() {
        let i = Interval::new(Duration::from_nanos(10), ns(5)).unwrap();
        assert_eq!(i.next_after(ns(0)), Some(ns(5)));
        assert_eq!(i.next_after(ns(4)), Some(ns(5)));
        assert_eq!(i.next_after(ns(5)), Some(ns(15)));
        assert_eq!(i.last_at_or_before(ns(4)), None);
        assert_eq!(i.last_at_or_before(ns(5)), Some(ns(5)));
        assert_eq!(i.last_at_or_before(ns(14)), Some(ns(5)));
        assert_eq!(i.last_at_or_before(ns(15)), Some(ns(15)));
        // The last representable tick, and none after it.
        let last = 5 + (u64::MAX - 1 - 5) / 10 * 10;
        assert_eq!(i.last_at_or_before(Timestamp::MAX), Some(ns(last)));
        assert_eq!(i.next_after(ns(last)), None);
        assert_eq!(i.next_after(Timestamp::MAX), None);
        // A tick would land exactly on MAX: it is not one.
        let one = Interval::new(Duration::from_nanos(1), ns(0)).unwrap();
        assert_eq!(
            one.last_at_or_before(Timestamp::MAX),
            Some(ns(u64::MAX - 1))
        );
        assert_eq!(one.next_after(ns(u64::MAX - 1)), None);
        assert_eq!(
            Interval::new(Duration::ZERO, ns(0)),
            Err(ScheduleError::ZeroInterval)
        );
        let huge = Interval::new(Duration::MAX, ns(0)).unwrap();
        assert_eq!(huge.next_after(ns(0)), None);
    }

    #[test]
    fn an_interval_says_its_period_and_anchor() {
        let minute = Interval::new(Duration::from_secs(60), ns(0)).unwrap();
        assert_eq!(minute.describe().as_deref(), Some("every 60s"));
        let fast = Interval::new(Duration::from_millis(150), ns(1_000)).unwrap();
        assert_eq!(fast.describe().as_deref(), Some("every 150ms from 1000 ns"));
        // Through a reference and a box, as a scheduler may hold it.
        let by_ref: &dyn Calendar = &&fast;
        assert_eq!(by_ref.describe(), fast.describe());
        let boxed: Box<dyn Calendar> = Box::new(fast);
        assert_eq!(boxed.describe(), fast.describe());
    }
}
