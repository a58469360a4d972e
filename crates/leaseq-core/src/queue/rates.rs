//! Rate limits: at most N leases started per period, per queue, kind or partition, by the
//! Generic Cell Rate Algorithm (GCRA) as governor runs it.
//!
//! Each limit keeps a *theoretical arrival time* (TAT) in the queue's time. A lease may
//! start at `now` when `TAT - tolerance <= now` (tolerance: `(burst - 1) * interval`), and
//! starting it moves the TAT to `max(TAT, now) + interval`. An item is held back while any
//! of its limits (the queue's; its kind's and partition's, if it has them) would not allow
//! it; the walk of a limited receive (`limits::take_allowed`) then goes on to items no rate
//! or concurrency limit holds, as it does past full concurrency limits.
//!
//! **Waking.** A walk that passes items a rate holds notes the earliest instant one of them
//! becomes eligible (`Rates::wake`) and lowers the queue's `due` to it, so that
//! [`poll_timeout`](Queue::poll_timeout) includes it and a driver wakes then, not before
//! (no spinning) and not later. When the queue's time reaches it, the instant is cleared
//! and [`rate_wakes`](Queue::rate_wakes) grows: a driver whose receivers wait wakes one then.
//! The instant can be early (a limit removed or a lease taken by another receiver since):
//! the woken receiver walks again and notes the next one.
//!
//! **The clock stepping back.** Everything here is in the queue's time, which never goes
//! back (`advance` keeps the latest time seen): a driver's clock that steps back is time
//! standing still for the limits. No lease starts beyond what the limit allowed at the
//! latest time seen (no burst from an old TAT looking far away), and the wait is bounded:
//! a TAT is never more than `tolerance + interval` past the queue's time when it is set, so
//! once the driver's clock is back past the latest time seen, a held item waits at most
//! one burst's refill (never a lock-out).
//!
//! **Changing a rate** takes effect at once: the leases the old rate counted as taken (the
//! TAT's lead over now, in intervals) are carried over at the new interval, so a rate
//! raised lets the next lease go sooner and a rate lowered makes it wait longer, and a
//! limit removed forgets its state.

use alloc::collections::BTreeMap;

use super::tags::{Scoped, Tags, KIND, PARTITION};
use super::{Queue, SLOW, TAGGED};
use crate::flow::LimitScope;
use crate::rate::Rate;
use crate::time::Timestamp;

/// One rate limit's state: the GCRA's theoretical arrival time, in nanoseconds.
#[derive(Clone, Copy, Debug)]
pub(super) struct Gcra {
    pub(super) rate: Rate,
    interval: u64,
    tolerance: u64,
    tat: u64,
}

impl Gcra {
    fn new(rate: Rate) -> Self {
        Gcra {
            rate,
            interval: rate.interval_nanos(),
            tolerance: rate.tolerance_nanos(),
            tat: 0,
        }
    }

    /// The first instant (nanoseconds) a lease may start.
    fn eligible_at(&self) -> u64 {
        self.tat.saturating_sub(self.tolerance)
    }

    /// A lease started at `now`.
    fn take(&mut self, now: u64) {
        self.tat = self.tat.max(now).saturating_add(self.interval);
    }

    /// The same state under `rate` from `now`: the TAT's lead over `now` (the leases taken
    /// and not yet refilled, in intervals) carried over at the new interval.
    fn rerate(&self, rate: Rate, now: u64) -> Self {
        let mut new = Gcra::new(rate);
        let lead = u128::from(self.tat.saturating_sub(now));
        let scaled = match self.interval {
            0 => 0,
            old => lead * u128::from(new.interval) / u128::from(old),
        };
        new.tat = now.saturating_add(u64::try_from(scaled).unwrap_or(u64::MAX));
        new
    }
}

/// The rate limits of a queue (part of its `Flow`).
#[derive(Debug)]
pub(super) struct Rates {
    /// The queue-wide limit.
    pub(super) queue: Option<Gcra>,
    /// The limits by kind and partition.
    pub(super) scoped: BTreeMap<Scoped, Gcra>,
    /// The earliest instant an item a walk passed becomes eligible; `Timestamp::MAX`: none
    /// noted.
    pub(super) wake: Timestamp,
    /// How many noted instants have passed (`Queue::rate_wakes`).
    wakes: u64,
}

impl Default for Rates {
    fn default() -> Self {
        Rates {
            queue: None,
            scoped: BTreeMap::new(),
            wake: Timestamp::MAX,
            wakes: 0,
        }
    }
}

impl Rates {
    /// Whether no rate limit is set.
    pub(super) fn is_empty(&self) -> bool {
        self.queue.is_none() && self.scoped.is_empty()
    }

    /// The instant the queue-wide limit lets the next lease start, if that is after `now`.
    pub(super) fn queue_hold(&self, now: u64) -> Option<u64> {
        self.queue.map(|g| g.eligible_at()).filter(|&at| at > now)
    }

    /// The instant every kind and partition limit of an item with `tags` lets it start, if
    /// that is after `now` (the queue-wide limit checked apart).
    pub(super) fn hold(&self, tags: Option<&Tags>, now: u64) -> Option<u64> {
        let tags = tags.filter(|_| !self.scoped.is_empty())?;
        tags.scoped()
            .filter_map(|k| self.scoped.get(&k))
            .map(Gcra::eligible_at)
            .max()
            .filter(|&at| at > now)
    }

    /// A lease of an item with `tags` started at `now`: every limit it counts against takes
    /// it.
    pub(super) fn take(&mut self, tags: Option<&Tags>, now: u64) {
        if let Some(g) = &mut self.queue {
            g.take(now);
        }
        if let Some(tags) = tags.filter(|_| !self.scoped.is_empty()) {
            for k in tags.scoped() {
                if let Some(g) = self.scoped.get_mut(&k) {
                    g.take(now);
                }
            }
        }
    }
}

/// A scope's key in `Rates::scoped`; `None` for the queue.
pub(super) fn scoped(scope: LimitScope) -> Option<Scoped> {
    match scope {
        LimitScope::Queue => None,
        LimitScope::Kind(k) => Some((KIND, k)),
        LimitScope::Partition(p) => Some((PARTITION, p)),
    }
}

impl<T> Queue<T> {
    /// Sets (`Some`) or removes (`None`) the rate limit of `scope`: leases of its items
    /// start at most as often as `rate` allows (see [`Rate`] for the burst), counted in the
    /// queue's time. Takes effect at once (the leases the old rate counted carry over, see
    /// the module docs); the next receive walks past the items a rate holds back, which stay
    /// ready in their place, and [`poll_timeout`](Self::poll_timeout) then includes the
    /// instant the first of them becomes eligible.
    ///
    /// ```
    /// use core::num::NonZeroU32;
    /// use core::time::Duration;
    /// use leaseq_core::{Config, LimitScope, Queue, Rate, Timestamp};
    ///
    /// let mut q = Queue::new(Config::new(Duration::from_secs(30))).unwrap();
    /// let t0 = Timestamp::ZERO;
    /// let two_a_second = Rate::per_second(NonZeroU32::new(2).unwrap()).burst(NonZeroU32::MIN);
    /// q.set_rate(LimitScope::Queue, Some(two_a_second), t0);
    /// for item in ["a", "b", "c"] {
    ///     q.push(item, t0).unwrap();
    /// }
    /// assert_eq!(q.receive(t0).unwrap().item, "a");
    /// assert!(q.receive(t0).is_none()); // the next start is half a second away
    /// assert_eq!(q.waiting_on_rates(), 2);
    /// let half = Timestamp::from_duration(Duration::from_millis(500));
    /// assert_eq!(q.poll_timeout(), Some(half)); // a driver wakes exactly then
    /// q.handle_timeout(half);
    /// assert_eq!(q.rate_wakes(), 1); // ... and wakes a waiting receiver
    /// assert_eq!(q.receive(half).unwrap().item, "b");
    /// ```
    pub fn set_rate(&mut self, scope: LimitScope, rate: Option<Rate>, now: Timestamp) {
        let now = self.advance(now).as_nanos();
        let rates = &mut self.flow_mut().rates;
        let slot = match scoped(scope) {
            None => rates.queue.as_mut(),
            Some(k) => rates.scoped.get_mut(&k),
        };
        let new = match (slot.copied(), rate) {
            (_, None) => None,
            (Some(old), Some(rate)) => Some(old.rerate(rate, now)),
            (None, Some(rate)) => Some(Gcra::new(rate)),
        };
        match (scoped(scope), new) {
            (None, new) => rates.queue = new,
            (Some(k), Some(g)) => _ = rates.scoped.insert(k, g),
            (Some(k), None) => _ = rates.scoped.remove(&k),
        }
    }

    /// The rate limit of `scope`, if one is set.
    pub fn rate(&self, scope: LimitScope) -> Option<Rate> {
        let rates = &self.flow.as_deref()?.rates;
        match scoped(scope) {
            None => rates.queue.map(|g| g.rate),
            Some(k) => rates.scoped.get(&k).map(|g| g.rate),
        }
    }

    /// Ready items a rate limit holds back at the queue's time (whether or not a
    /// concurrency limit holds them too; all of them while the queue-wide rate does): a
    /// pass over the ready items with rates; 0 at once without.
    pub fn waiting_on_rates(&self) -> u64 {
        let Some(flow) = self.flow.as_deref().filter(|f| !f.rates.is_empty()) else {
            return 0;
        };
        let now = self.now.as_nanos();
        if flow.rates.queue_hold(now).is_some() {
            return self.stats.ready;
        }
        (0..self.ready.len())
            .flat_map(|level| self.ready[level].iter(&self.slots))
            .filter(|&slot| {
                let s = &self.slots[slot];
                s.meta & TAGGED != 0 && flow.rates.hold(flow.tags.get(&s.id), now).is_some()
            })
            .count() as u64
    }

    /// How many times an instant at which an item a rate held back becomes eligible was
    /// reached (by [`handle_timeout`](Self::handle_timeout) at the instant
    /// [`poll_timeout`](Self::poll_timeout) gave, or by any later call). A driver whose
    /// receivers wait for items wakes one when this grows (it may find the item taken, or
    /// held again: it then waits for the next).
    pub fn rate_wakes(&self) -> u64 {
        self.flow.as_deref().map_or(0, |f| f.rates.wakes)
    }

    /// A walk passed items a rate holds until `at` (nanoseconds; `None`: none): the queue's
    /// next timeout is no later. An `exact` instant (the walk saw every ready item: it found
    /// none to lease) replaces the one noted before, which may be stale (a rate changed or
    /// removed since); otherwise the earlier of the two is kept.
    pub(super) fn note_rate_wake(&mut self, at: Option<u64>, exact: bool) {
        let at = at.map_or(Timestamp::MAX, Timestamp::from_nanos);
        if let Some(flow) = self.flow.as_deref_mut() {
            flow.rates.wake = if exact { at } else { flow.rates.wake.min(at) };
            self.due = self.due.min(at);
        }
    }

    /// The noted rate instant, if any (only with flow control: `SLOW`).
    #[inline]
    pub(super) fn rate_due(&self) -> Option<Timestamp> {
        if self.ready_mask & SLOW == 0 {
            return None;
        }
        let wake = self.flow.as_deref()?.rates.wake;
        (wake != Timestamp::MAX).then_some(wake)
    }

    /// Clears the noted rate instant if the queue's time has reached it, counting a wake.
    #[cold]
    #[inline(never)]
    pub(super) fn run_rate_due(&mut self) {
        let now = self.now;
        if let Some(flow) = self.flow.as_deref_mut() {
            if flow.rates.wake <= now {
                flow.rates.wake = Timestamp::MAX;
                flow.rates.wakes += 1;
            }
        }
    }
}
