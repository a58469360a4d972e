//! Snooze: a running lease put back for a while without counting its attempt, within a
//! bound per item (`Config::with_max_snoozes`).

use alloc::string::String;
use core::time::Duration;

use super::{LeaseEnd, Queue};
use crate::error::ReceiptError;
use crate::event::Reason;
use crate::id::Receipt;
use crate::outcome::{Nacked, Retry};
use crate::time::Timestamp;

/// The result of [`Queue::snooze`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Snoozed {
    /// Put back uncounted: visible again at `visible_at`.
    Later {
        /// From when it is visible again.
        visible_at: Timestamp,
        /// The item's snoozes so far, this one included.
        snoozes: u32,
    },
    /// Past the item's bound ([`Config::max_snoozes`](crate::Config::max_snoozes)): the
    /// snooze counted as a failed attempt, as a nack would ([`Nacked`] says whether it
    /// will be delivered again, after the snooze's delay, or went to the dead letters).
    Counted(Nacked),
}

impl<T> Queue<T> {
    /// Puts the item back for `delay` without counting the attempt: the next delivery has
    /// the same attempt number (River's `JobSnooze`). For a handler that finds the item not
    /// ready for it yet (a resource busy, a rate limit elsewhere) and is not failing.
    ///
    /// Bounded so that an item cannot snooze forever unnoticed: an item snoozes uncounted
    /// at most [`Config::max_snoozes`](crate::Config::max_snoozes) times; each snooze after
    /// that counts as a failed attempt with [`Reason::Released`] and the last error
    /// `"snooze limit reached"`, retried after `delay`, and dead-lettered once its attempts
    /// are spent ([`Snoozed::Counted`]). Uncounted snoozes are counted in
    /// [`Stats::snoozed`](crate::Stats::snoozed); counted ones in `nacks`.
    ///
    /// Refused with the receipt's [`ReceiptError`] unless the lease is running.
    ///
    /// ```
    /// use core::time::Duration;
    /// use leaseq_core::{Config, Queue, Snoozed, Timestamp};
    ///
    /// let mut q = Queue::new(Config::new(Duration::from_secs(30)).with_max_snoozes(1)).unwrap();
    /// let t0 = Timestamp::ZERO;
    /// q.push("job", t0).unwrap();
    /// let lease = q.receive(t0).unwrap();
    /// let snoozed = q.snooze(lease.receipt, t0, Duration::from_secs(5)).unwrap();
    /// let t5 = t0.saturating_add(Duration::from_secs(5));
    /// assert_eq!(snoozed, Snoozed::Later { visible_at: t5, snoozes: 1 });
    /// assert!(q.receive(t0).is_none());
    /// let again = q.receive(t5).unwrap();
    /// assert_eq!(again.attempt, 1); // not counted
    /// // The bound is reached: this one counts.
    /// let counted = q.snooze(again.receipt, t5, Duration::from_secs(5)).unwrap();
    /// assert!(matches!(counted, Snoozed::Counted(_)));
    /// assert_eq!(q.stats().snoozed, 1);
    /// ```
    pub fn snooze(
        &mut self,
        receipt: Receipt,
        now: Timestamp,
        delay: Duration,
    ) -> Result<Snoozed, ReceiptError> {
        let now = self.advance(now);
        let slot = self.held(receipt)?;
        self.leave_flight(slot);
        self.slots[slot].ended = LeaseEnd::Released;
        let snoozes = self.snoozes_of(slot);
        if snoozes >= self.config.max_snoozes {
            self.stats.nacks += 1;
            self.set_error(slot, String::from("snooze limit reached"));
            let nacked = self.fail_attempt(slot, now, Reason::Released, Retry::After(delay));
            return Ok(Snoozed::Counted(nacked));
        }
        let snoozes = snoozes + 1;
        self.side.entry(slot as u32).or_default().snoozes = snoozes;
        self.stats.snoozed += 1;
        let s = &mut self.slots[slot];
        s.attempts = s.attempts.saturating_sub(1);
        let visible_at = now.saturating_add(delay);
        self.make_visible(slot, visible_at, now);
        self.trim_indexes();
        Ok(Snoozed::Later {
            visible_at,
            snoozes,
        })
    }
}
