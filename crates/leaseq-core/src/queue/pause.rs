//! Pausing: a paused queue hands out no lease, at any time, until it is resumed. Pushes are
//! still accepted, timers still run (delays end, leases run out, items expire), and leases
//! already out can still be acked, nacked, extended and released.
//!
//! The flag is `Stats::paused`, and it sets bit 0 of the ready-level mask (`SLOW`, level 0
//! has no bit of its own; flow control sets it too): a receive already leaves the
//! single-level fast path whenever the mask is not zero, so a queue that is never paused
//! runs exactly the instructions it ran before, and the paused check costs only the path
//! that bit 0 sends a receive to.

use super::{Queue, SLOW};
use crate::time::Timestamp;

impl<T> Queue<T> {
    /// Pauses the queue: from `now` on, [`receive`](Self::receive) and
    /// [`receive_many`](Self::receive_many) lease nothing, whatever is ready, until
    /// [`resume`](Self::resume). Pushes are accepted, timers run, and the leases already out
    /// can be settled as usual. Returns whether the queue was running (pausing a paused
    /// queue changes nothing).
    ///
    /// ```
    /// use core::time::Duration;
    /// use leaseq_core::{Config, Queue, Timestamp};
    ///
    /// let mut q = Queue::new(Config::new(Duration::from_secs(1))).unwrap();
    /// let t0 = Timestamp::ZERO;
    /// q.push("a", t0).unwrap();
    /// assert!(q.pause(t0));
    /// q.push("b", t0).unwrap(); // still accepted
    /// assert!(q.receive(t0).is_none());
    /// assert!(q.stats().paused);
    /// assert!(q.resume(t0));
    /// assert_eq!(q.receive(t0).unwrap().item, "a");
    /// ```
    pub fn pause(&mut self, now: Timestamp) -> bool {
        self.advance(now);
        let was = self.is_paused();
        self.ready_mask |= SLOW;
        self.stats.paused = true;
        !was
    }

    /// Resumes a paused queue: receives lease again from `now` on. Returns whether it was
    /// paused.
    pub fn resume(&mut self, now: Timestamp) -> bool {
        self.advance(now);
        let was = self.is_paused();
        if self.flow.is_none() {
            self.ready_mask &= !SLOW;
        }
        self.stats.paused = false;
        was
    }

    /// Whether the queue is paused (see [`pause`](Self::pause)).
    #[inline]
    pub fn is_paused(&self) -> bool {
        self.stats.paused
    }
}
