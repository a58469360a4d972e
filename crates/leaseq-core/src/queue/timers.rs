//! Time: the time step, the due timers (lease deadlines, ends of delays, expiries) and
//! what a failed attempt becomes.

use super::{expiry_live, timer_live, LeaseEnd, Queue, State, SLOW};
use crate::event::{Event, Reason};
use crate::id::MessageId;
use crate::outcome::{Nacked, Retry};
use crate::policy::Verdict;
use crate::time::Timestamp;
use crate::timer_index::Timer;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum TimerKind {
    Lease,
    Delay,
    Expiry,
}

impl<T> Queue<T> {
    /// The reaper step: applies everything due at `now` (expired leases go back or to the
    /// dead letters, delays end, items expire). Calling it early or twice does nothing.
    ///
    /// Every other operation does the same first, so the queue's state never depends on how
    /// punctually this is called; call it so that events and visibility are not late when
    /// nothing else happens.
    pub fn handle_timeout(&mut self, now: Timestamp) {
        self.advance(now);
    }

    /// The earliest moment at which anything changes by itself: a lease deadline, the end of
    /// a delay or backoff, an item's expiry, or the instant an item a rate limit held back
    /// becomes eligible (see [`set_rate`](Self::set_rate)). `None` when nothing is
    /// scheduled.
    ///
    /// Push (with delay or expiry), receive, extend, nack, release, redrive and
    /// `handle_timeout` can move it earlier or later; ack and dead-letter can only move it
    /// later. Re-read it after each of them.
    pub fn poll_timeout(&mut self) -> Option<Timestamp> {
        self.settle_lease_front();
        let slots = &self.slots;
        self.delays
            .clean_front(|t| timer_live(slots, t, State::Delayed));
        self.expiries.clean_front(|t| expiry_live(slots, t));
        let next = self.next_due();
        self.due = next.unwrap_or(Timestamp::MAX);
        next
    }

    /// A moment no later than the earliest timer (lease deadline, end of a delay, expiry),
    /// `Timestamp::MAX` when none is known; read without any work. Every operation that
    /// schedules a timer lowers it to that timer at once; it can lag behind timers that were
    /// cancelled (an ack, a later extend) until [`poll_timeout`](Self::poll_timeout) makes it
    /// exact. A driver compares it with its alarm after each operation: an earlier hint means
    /// the alarm must be moved.
    #[inline]
    pub fn next_timeout_bound(&self) -> Timestamp {
        self.due
    }

    #[inline]
    fn next_due(&self) -> Option<Timestamp> {
        let a = self.lease_front().map(|(t, _)| t.at);
        let b = self.delays.peek().map(|t| t.at);
        let c = self.expiries.peek().map(|t| t.at);
        [a, b, c, self.rate_due()].into_iter().flatten().min()
    }

    /// Moves time forward to `now` (never back) and applies what is due. Returns the
    /// queue's time.
    #[inline]
    pub(super) fn advance(&mut self, now: Timestamp) -> Timestamp {
        if now > self.now {
            self.now = now;
        }
        if self.due <= self.now {
            self.run_due();
        }
        self.now
    }

    /// Applies every timer due at or before `self.now`, earliest first (ties in push order),
    /// then makes `due` exact.
    #[inline(never)]
    fn run_due(&mut self) {
        if self.ready_mask & SLOW != 0 {
            self.run_rate_due();
        }
        loop {
            let mut best: Option<(Timer, TimerKind)> = None;
            let (lease, listed) = match self.lease_front() {
                Some((t, listed)) => (Some(t), listed),
                None => (None, false),
            };
            for (kind, t) in [
                (TimerKind::Lease, lease),
                (TimerKind::Delay, self.delays.peek().copied()),
                (TimerKind::Expiry, self.expiries.peek().copied()),
            ] {
                if let Some(t) = t {
                    if t.at <= self.now && best.is_none_or(|(b, bk)| (t, kind) < (b, bk)) {
                        best = Some((t, kind));
                    }
                }
            }
            let Some((t, kind)) = best else {
                self.due = self.next_due().unwrap_or(Timestamp::MAX);
                return;
            };
            match kind {
                TimerKind::Lease if listed => {
                    // The list's head: live, at its exact deadline.
                    self.expire_lease(t);
                }
                TimerKind::Lease => {
                    self.leases.pop();
                    if timer_live(&self.slots, &t, State::InFlight) {
                        let deadline = self.slots[t.slot as usize].last_deadline;
                        if deadline > t.at {
                            // Extended since the entry was made: on to the current deadline.
                            self.leases.insert(Timer { at: deadline, ..t });
                        } else {
                            self.expire_lease(t);
                        }
                    }
                }
                TimerKind::Delay => {
                    self.delays.pop();
                    if timer_live(&self.slots, &t, State::Delayed) {
                        self.stats.delayed -= 1;
                        let s = &mut self.slots[t.slot as usize];
                        s.epoch = s.epoch.wrapping_add(1);
                        s.state = State::Ready;
                        let level = s.level();
                        self.enqueue_ready(t.slot, level, t.at);
                        self.trim_indexes();
                    }
                }
                TimerKind::Expiry => {
                    self.expiries.pop();
                    let slot = t.slot as usize;
                    // An item in flight is handled by its lease, whose deadline never passes
                    // the expiry.
                    if expiry_live(&self.slots, &t) && self.slots[slot].state != State::InFlight {
                        self.leave_waiting(slot);
                        self.bury(slot, t.at, Reason::Expired);
                    }
                }
            }
        }
    }

    /// Pops stale lease entries off the front, and moves the entry of a lease extended since
    /// it was made on to the lease's current deadline, until the front is a live lease at its
    /// real deadline (or there is none).
    fn settle_lease_front(&mut self) {
        while let Some(&t) = self.leases.peek() {
            let s = &self.slots[t.slot as usize];
            if s.epoch != t.epoch || s.state != State::InFlight {
                self.leases.pop();
            } else if s.last_deadline > t.at {
                let at = s.last_deadline;
                self.leases.pop();
                self.leases.insert(Timer { at, ..t });
            } else {
                break;
            }
        }
    }

    fn expire_lease(&mut self, t: Timer) {
        let slot = t.slot as usize;
        self.leave_flight(slot);
        self.stats.lease_expired += 1;
        let s = &mut self.slots[slot];
        s.ended = LeaseEnd::Expired;
        let event = Event::LeaseExpired {
            id: MessageId(s.id),
            attempt: s.attempts,
            deadline: t.at,
        };
        self.record(event);
        self.fail_attempt(slot, t.at, Reason::LeaseExpired, Retry::Backoff);
    }

    /// An attempt of an item no longer in flight (in-flight count already taken off) ended
    /// without an ack at `at`: back to the queue after the backoff, or to the dead letters,
    /// as the [`RetryPolicy`](crate::RetryPolicy) decides.
    pub(super) fn fail_attempt(
        &mut self,
        slot: usize,
        at: Timestamp,
        reason: Reason,
        retry: Retry,
    ) -> Nacked {
        let s = &self.slots[slot];
        let attempts = s.attempts;
        let expired = s.expires_at != Timestamp::MAX && s.expires_at <= at;
        let delay = match self.retry.after_failure(attempts, expired, reason, retry) {
            Verdict::Retry { delay } => delay,
            Verdict::DeadLetter { reason } => {
                self.bury(slot, at, reason);
                return Nacked::DeadLettered { attempts };
            }
        };
        let visible_at = at.saturating_add(delay);
        self.make_visible(slot, visible_at, at);
        self.trim_indexes();
        Nacked::Retrying {
            visible_at: visible_at.max(self.now),
            attempts,
        }
    }
}
