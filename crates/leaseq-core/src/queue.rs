//! The lease queue state machine.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;

use crate::backoff::SplitMix64;
use crate::config::{Config, ConfigError};
use crate::dead_letter::DeadLetter;
use crate::error::{PushError, ReceiptError, RedriveError};
use crate::event::{Event, LateAckKind, Reason};
use crate::id::{MessageId, Receipt};
use crate::lease::Lease;
use crate::outcome::{Acked, Extended, Failure, Nacked, PushOptions, Retry};
use crate::stats::{ConservationError, Stats};
use crate::time::Timestamp;
use crate::timer_index::{Timer, TimerIndex};
use crate::view::{ItemState, ItemView};

/// Where an item stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Free,
    Ready,
    Delayed,
    InFlight,
}

/// How the latest lease of an item ended, which decides what its old receipt may still do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LeaseEnd {
    /// Not leased yet, or the lease is running.
    None,
    /// Ran out: an ack with its receipt is still accepted until the item is leased again.
    Expired,
    /// The holder handed it back: its receipt is done.
    Released,
}

/// What the last item to leave a slot became; lets a stale receipt be told precisely.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Acked,
    DeadLettered,
}

struct Slot<T> {
    item: Option<T>,
    id: u64,
    /// Bumped on every state change; index entries made at another epoch are stale.
    epoch: u32,
    /// Leases issued for this message, across redrives.
    leases: u32,
    /// Deliveries since push or the last redrive.
    attempts: u32,
    state: State,
    ended: LeaseEnd,
    /// In flight: the latest deadline extensions may reach.
    lease_cap: Timestamp,
    /// The deadline of the latest lease, kept after it ends (for "late by").
    last_deadline: Timestamp,
    /// The item's own deadline; `Timestamp::MAX` for none.
    expires_at: Timestamp,
    /// The previous occupant of this slot (meaningful when `prev_fate` is set).
    prev_id: u64,
    /// How the previous occupant left; `None` before the slot's first use ends.
    prev_fate: Option<Fate>,
}

impl<T> Slot<T> {
    /// A timer at `at` for this slot (index `slot`) as it is now: stale once its epoch moves.
    #[inline]
    fn timer(&self, slot: usize, at: Timestamp) -> Timer {
        Timer {
            at,
            id: self.id,
            slot: slot as u32,
            epoch: self.epoch,
        }
    }
}

/// What a receipt points at.
enum Check {
    /// The lease is running.
    Held(usize),
    /// The lease ran out and nobody took the item since: an ack is still welcome.
    Unclaimed(usize),
    Stale(ReceiptError),
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum TimerKind {
    Lease,
    Delay,
    Expiry,
}

/// A lease queue: the whole state machine, with no clock, no timers and no I/O.
///
/// See the [crate docs](crate) for the driving rules. In short: pass the current time to
/// every call, call [`handle_timeout`](Self::handle_timeout) when
/// [`poll_timeout`](Self::poll_timeout) says, and drain [`poll_event`](Self::poll_event).
///
/// ```
/// use core::time::Duration;
/// use leaseq_core::{Config, Queue, Timestamp};
///
/// let mut q = Queue::new(Config::new(Duration::from_secs(1)).with_max_attempts(2)).unwrap();
/// let t0 = Timestamp::ZERO;
/// let id = q.push("job", t0).unwrap();
///
/// let lease = q.receive(t0).unwrap();
/// assert_eq!((lease.item, lease.id, lease.attempt), ("job", id, 1));
///
/// // The worker hangs; the lease runs out and the item comes back.
/// let t1 = lease.deadline;
/// assert_eq!(q.poll_timeout(), Some(t1));
/// q.handle_timeout(t1);
/// let again = q.receive(t1).unwrap();
/// assert_eq!((again.id, again.attempt), (id, 2));
///
/// // The first holder wakes up and acks with its old receipt: refused and counted.
/// assert!(q.ack(lease.receipt, t1).is_err());
/// q.ack(again.receipt, t1).unwrap();
/// assert_eq!(q.stats().late_acks_stale, 1);
/// assert!(q.check_invariants().is_ok());
/// ```
pub struct Queue<T> {
    config: Config,
    tag: u32,
    now: Timestamp,
    next_id: u64,
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    /// Ready items in delivery order, as (slot, epoch).
    ready: VecDeque<(u32, u32)>,
    leases: TimerIndex,
    delays: TimerIndex,
    expiries: TimerIndex,
    /// Live items (ready, delayed, in flight) that have an expiry.
    expiring: u64,
    /// No timer in any index (stale ones included) is earlier than this; `Timestamp::MAX`
    /// when there are none. Lowered on every insert, made exact by `run_due` and
    /// `poll_timeout`, so that `advance` is one compare while nothing is due.
    due: Timestamp,
    /// `config.visibility` in nanoseconds (saturated), for the receive path.
    visibility_ns: u64,
    /// `config.max_lease` in nanoseconds; `u64::MAX` for none.
    max_lease_ns: u64,
    dead: BTreeMap<MessageId, DeadLetter<T>>,
    /// The last error of each live item that has one, by slot. Kept out of the slots: few
    /// items have one, and every slot would otherwise carry an `Option<String>`.
    errors: BTreeMap<u32, String>,
    events: VecDeque<Event>,
    stats: Stats,
    rng: SplitMix64,
}

impl<T> Queue<T> {
    /// An empty queue, or the reason `config` cannot work.
    pub fn new(config: Config) -> Result<Self, ConfigError> {
        config.validate()?;
        let seed = config.jitter.map_or(0, |j| j.seed());
        let visibility_ns = Timestamp::ZERO.saturating_add(config.visibility).as_nanos();
        let max_lease_ns = config
            .max_lease
            .map_or(u64::MAX, |m| Timestamp::ZERO.saturating_add(m).as_nanos());
        Ok(Queue {
            visibility_ns,
            max_lease_ns,
            config,
            tag: next_tag(),
            now: Timestamp::ZERO,
            next_id: 0,
            slots: Vec::new(),
            free: Vec::new(),
            ready: VecDeque::new(),
            leases: TimerIndex::default(),
            delays: TimerIndex::default(),
            expiries: TimerIndex::default(),
            expiring: 0,
            due: Timestamp::MAX,
            dead: BTreeMap::new(),
            errors: BTreeMap::new(),
            events: VecDeque::new(),
            stats: Stats::default(),
            rng: SplitMix64::new(seed),
        })
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The latest time the queue has seen. Earlier times passed later are taken as this one.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// Gauges and totals. See [`Stats`] for the conservation law they obey.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Items ready, delayed or in flight.
    pub fn len(&self) -> usize {
        self.stats.live() as usize
    }

    /// Whether no item is ready, delayed or in flight (dead letters are not counted).
    pub fn is_empty(&self) -> bool {
        self.stats.live() == 0
    }

    // ----- push -------------------------------------------------------------------------

    /// Adds an item, visible at once. Returns its id, or hands the item back when the
    /// queue is at capacity.
    #[inline]
    pub fn push(&mut self, item: T, now: Timestamp) -> Result<MessageId, PushError<T>> {
        let now = self.advance(now);
        self.push_at(item, now, now, Timestamp::MAX)
    }

    /// Adds an item that becomes visible after `delay`.
    pub fn push_delayed(
        &mut self,
        item: T,
        now: Timestamp,
        delay: Duration,
    ) -> Result<MessageId, PushError<T>> {
        self.push_with(item, now, PushOptions::new().delay(delay))
    }

    /// Adds an item with a delay and/or an expiry (see [`PushOptions`]).
    ///
    /// An item whose expiry is not after `now` is handed back with
    /// [`PushError::AlreadyExpired`].
    pub fn push_with(
        &mut self,
        item: T,
        now: Timestamp,
        options: PushOptions,
    ) -> Result<MessageId, PushError<T>> {
        let now = self.advance(now);
        let expires_at = options.expires_at.unwrap_or(Timestamp::MAX);
        // `Timestamp::MAX` is "never", even when the driver's clock has reached it.
        if expires_at != Timestamp::MAX && expires_at <= now {
            self.stats.rejected += 1;
            return Err(PushError::AlreadyExpired(item));
        }
        self.push_at(item, now, now.saturating_add(options.delay), expires_at)
    }

    /// Push after the time step and the expiry check: visible at `visible_at`.
    #[inline]
    fn push_at(
        &mut self,
        item: T,
        now: Timestamp,
        visible_at: Timestamp,
        expires_at: Timestamp,
    ) -> Result<MessageId, PushError<T>> {
        let at_capacity = self
            .config
            .capacity
            .is_some_and(|c| self.stats.live() >= c as u64);
        if at_capacity || (self.free.is_empty() && self.slots.len() >= u32::MAX as usize) {
            self.stats.rejected += 1;
            return Err(PushError::Full(item));
        }
        let id = self.next_id;
        self.next_id += 1;
        let slot = self.occupy(item, id, expires_at, 0, 0);
        self.stats.pushed += 1;
        self.make_visible(slot, visible_at, now);
        Ok(MessageId(id))
    }

    /// Puts an item into a free slot (state Free; the caller makes it ready or delayed).
    #[inline]
    fn occupy(
        &mut self,
        item: T,
        id: u64,
        expires_at: Timestamp,
        leases: u32,
        attempts: u32,
    ) -> usize {
        let slot = match self.free.pop() {
            Some(i) => {
                let s = &mut self.slots[i as usize];
                s.item = Some(item);
                s.id = id;
                s.leases = leases;
                s.attempts = attempts;
                s.ended = LeaseEnd::None;
                s.expires_at = expires_at;
                i as usize
            }
            None => {
                self.slots.push(Slot {
                    item: Some(item),
                    id,
                    epoch: 0,
                    leases,
                    attempts,
                    state: State::Free,
                    ended: LeaseEnd::None,
                    lease_cap: Timestamp::ZERO,
                    last_deadline: Timestamp::ZERO,
                    expires_at,
                    prev_id: 0,
                    prev_fate: None,
                });
                self.slots.len() - 1
            }
        };
        if expires_at != Timestamp::MAX {
            self.schedule_expiry(slot, expires_at);
        }
        slot
    }

    /// Enters the expiry of the item just put into `slot`.
    #[inline(never)]
    fn schedule_expiry(&mut self, slot: usize, expires_at: Timestamp) {
        self.expiring += 1;
        self.due = self.due.min(expires_at);
        // Compact before inserting: the slot is still `Free` here, so `expiry_live` would
        // take the new item's own timer for a stale one and drop it (the item would then
        // never expire).
        if self.expiries.needs_compaction(self.expiring) {
            let slots = &self.slots;
            self.expiries.compact(|t| expiry_live(slots, t));
        }
        let timer = self.slots[slot].timer(slot, expires_at);
        self.expiries.insert(timer);
    }

    /// Makes a free or in-flight slot ready, if `at` is not after `instant` (the moment being
    /// applied), or delayed until `at`. A delay that ends before `self.now` still goes through
    /// the delay index, so that `run_due` places it in time order among the other timers.
    #[inline]
    fn make_visible(&mut self, slot: usize, at: Timestamp, instant: Timestamp) {
        let s = &mut self.slots[slot];
        s.epoch = s.epoch.wrapping_add(1);
        if at <= instant {
            s.state = State::Ready;
            self.ready.push_back((slot as u32, s.epoch));
            self.stats.ready += 1;
        } else {
            self.make_delayed(slot, at);
        }
    }

    /// The delayed half of `make_visible` (epoch already bumped).
    #[inline(never)]
    fn make_delayed(&mut self, slot: usize, at: Timestamp) {
        let s = &mut self.slots[slot];
        s.state = State::Delayed;
        self.due = self.due.min(at);
        self.delays.insert(s.timer(slot, at));
        self.stats.delayed += 1;
        if self.delays.needs_compaction(self.stats.delayed) {
            let slots = &self.slots;
            self.delays
                .compact(|t| timer_live(slots, t, State::Delayed));
        }
    }

    // ----- receive ----------------------------------------------------------------------

    /// Leases the next visible item for one visibility timeout, or `None` if nothing is
    /// visible. Visible items are served in the order they became visible (see the crate
    /// docs for ties).
    #[inline]
    pub fn receive(&mut self, now: Timestamp) -> Option<Lease<T>>
    where
        T: Clone,
    {
        let now = self.advance(now);
        let slot = self.lease_next(now)?;
        Some(self.lease_of(slot))
    }

    /// Leases up to `max` visible items into `out`; returns how many. One time step and one
    /// due-timer check for the whole batch.
    pub fn receive_many(&mut self, now: Timestamp, max: usize, out: &mut Vec<Lease<T>>) -> usize
    where
        T: Clone,
    {
        let now = self.advance(now);
        let mut n = 0;
        while n < max {
            match self.lease_next(now) {
                Some(slot) => out.push(self.lease_of(slot)),
                None => break,
            }
            n += 1;
        }
        n
    }

    /// Every state change of a receive: leases the next visible item and returns its slot,
    /// which [`lease_of`](Self::lease_of) turns into the `Lease`. Split so that the `Lease`
    /// is built in the caller from fields just stored, rather than returned through memory
    /// written piecewise and read back whole (a store-forwarding stall in the caller).
    fn lease_next(&mut self, now: Timestamp) -> Option<usize> {
        let slot = loop {
            let (slot, epoch) = self.ready.pop_front()?;
            if self.slots[slot as usize].epoch == epoch {
                break slot as usize;
            }
        };
        self.stats.ready -= 1;
        let visibility_ns = self.visibility_ns;
        let max_lease_ns = self.max_lease_ns;
        let s = &mut self.slots[slot];
        s.epoch = s.epoch.wrapping_add(1);
        s.state = State::InFlight;
        s.ended = LeaseEnd::None;
        s.leases = s.leases.saturating_add(1);
        s.attempts = s.attempts.saturating_add(1);
        // No max lease is `u64::MAX`, which saturates to "never".
        let cap = s.expires_at.min(add_nanos(now, max_lease_ns));
        let deadline = add_nanos(now, visibility_ns).min(cap);
        s.last_deadline = deadline;
        s.lease_cap = cap;
        let id = MessageId(s.id);
        let attempt = s.attempts;
        let timer = s.timer(slot, deadline);
        self.leases.insert(timer);
        self.due = self.due.min(deadline);
        self.stats.in_flight += 1;
        self.stats.delivered += 1;
        if attempt > 1 {
            self.stats.redelivered += 1;
            self.record(Event::Redelivered { id, attempt });
        } else {
            self.record(Event::Delivered { id });
        }
        // `trim_indexes` narrowed to what a receive can push past its bound: the ready list
        // lost a live item; the lease index gained an entry with its live lease.
        if self.ready.len() as u64 > 2 * self.stats.ready + 64 {
            self.compact_indexes();
        }
        Some(slot)
    }

    /// The `Lease` for the slot `lease_next` just leased.
    #[inline]
    fn lease_of(&self, slot: usize) -> Lease<T>
    where
        T: Clone,
    {
        let s = &self.slots[slot];
        let id = MessageId(s.id);
        Lease {
            item: s.item.clone().expect("leased slot holds an item"),
            id,
            receipt: Receipt {
                id,
                slot: slot as u32,
                lease: s.leases,
                queue: self.tag,
            },
            attempt: s.attempts,
            deadline: s.last_deadline,
            expires_at: (s.expires_at != Timestamp::MAX).then_some(s.expires_at),
        }
    }

    // ----- settle -----------------------------------------------------------------------

    /// Removes the item for good.
    ///
    /// Accepted while the lease runs, and also after its deadline as long as nobody has
    /// leased the item again ([`Acked::LateUnclaimed`], counted in
    /// [`Stats::late_acks_unclaimed`]). A stale receipt is refused with the reason, counted in
    /// [`Stats::late_acks_stale`] and reported as [`Event::LateAck`].
    #[inline]
    pub fn ack(&mut self, receipt: Receipt, now: Timestamp) -> Result<Acked, ReceiptError> {
        let now = self.advance(now);
        // Fast path: the lease is running.
        if let Some(slot) = self.running(receipt) {
            let s = &self.slots[slot];
            let epoch = s.epoch;
            let expiring = s.expires_at != Timestamp::MAX;
            self.stats.in_flight -= 1;
            self.leases.remove_if_front(slot as u32, epoch);
            self.slots[slot].item = None;
            self.vacate(slot, Fate::Acked);
            self.stats.acked += 1;
            // `trim_indexes` narrowed to the gauges an ack lowers.
            if self.leases.needs_compaction(self.stats.in_flight)
                || (expiring && self.expiries.needs_compaction(self.expiring))
            {
                self.compact_indexes();
            }
            return Ok(Acked::OnTime);
        }
        self.ack_checked(receipt, now)
    }

    /// `ack` for whatever the fast path does not take.
    #[inline(never)]
    fn ack_checked(&mut self, receipt: Receipt, now: Timestamp) -> Result<Acked, ReceiptError> {
        match self.check(receipt) {
            Check::Held(slot) => {
                self.stats.in_flight -= 1;
                let epoch = self.slots[slot].epoch;
                self.leases.remove_if_front(slot as u32, epoch);
                self.release_slot(slot, Fate::Acked);
                self.stats.acked += 1;
                Ok(Acked::OnTime)
            }
            Check::Unclaimed(slot) => {
                let late_by = now.saturating_duration_since(self.slots[slot].last_deadline);
                self.leave_waiting(slot);
                self.release_slot(slot, Fate::Acked);
                self.stats.acked += 1;
                self.stats.late_acks_unclaimed += 1;
                self.record(Event::LateAck {
                    id: receipt.id,
                    kind: LateAckKind::Unclaimed,
                    late_by: Some(late_by),
                });
                Ok(Acked::LateUnclaimed { late_by })
            }
            Check::Stale(err) => {
                let kind = match err {
                    ReceiptError::Redelivered(_) => LateAckKind::Redelivered,
                    ReceiptError::DeadLettered(_) => LateAckKind::DeadLettered,
                    ReceiptError::AlreadyAcked(_) => LateAckKind::AlreadyAcked,
                    ReceiptError::Released(_) => LateAckKind::Released,
                    _ => return Err(err),
                };
                self.stats.late_acks_stale += 1;
                self.record(Event::LateAck {
                    id: receipt.id,
                    kind,
                    late_by: None,
                });
                Err(err)
            }
        }
    }

    /// Acks every receipt in `receipts`, in order, with one time step; returns how many were
    /// accepted. Refusals are counted and reported exactly as by [`ack`](Self::ack).
    pub fn ack_many(&mut self, receipts: &[Receipt], now: Timestamp) -> usize {
        // The time step comes first, even for an empty batch (driving rule 3).
        let now = self.advance(now);
        receipts
            .iter()
            .filter(|r| self.ack(**r, now).is_ok())
            .count()
    }

    /// Hands the item back before its deadline. The attempt counts: at the attempt limit the
    /// item is dead-lettered with `failure.reason` and error, otherwise it becomes visible
    /// again after the backoff (or the delay `failure` names).
    ///
    /// Refused with [`ReceiptError::LeaseExpired`] once the lease has run out: that attempt
    /// was already counted as expired.
    pub fn nack(
        &mut self,
        receipt: Receipt,
        now: Timestamp,
        failure: Failure,
    ) -> Result<Nacked, ReceiptError> {
        let now = self.advance(now);
        let slot = self.held(receipt)?;
        self.stats.nacks += 1;
        self.stats.in_flight -= 1;
        self.slots[slot].ended = LeaseEnd::Released;
        if let Some(error) = failure.error {
            self.errors.insert(slot as u32, error);
        }
        Ok(self.fail_attempt(slot, now, failure.reason, failure.retry))
    }

    /// Moves the lease deadline to `now + visibility` (SQS ChangeMessageVisibility), but not
    /// past the max lease lifetime or the item's expiry (`capped` in [`Extended::Until`] says
    /// when it was cut). A visibility of zero releases the item now, as
    /// [`release`](Self::release).
    pub fn extend(
        &mut self,
        receipt: Receipt,
        now: Timestamp,
        visibility: Duration,
    ) -> Result<Extended, ReceiptError> {
        if visibility.is_zero() {
            return self.release(receipt, now).map(Extended::Released);
        }
        let now = self.advance(now);
        let slot = match self.running(receipt) {
            Some(slot) => slot,
            None => self.held(receipt)?,
        };
        let s = &mut self.slots[slot];
        let wanted = now.saturating_add(visibility);
        let deadline = wanted.min(s.lease_cap);
        let capped = deadline < wanted;
        if deadline >= s.last_deadline {
            // Later (the usual case): the lease keeps its index entry, which is never later
            // than `last_deadline` and moves on to it when it comes up (`run_due`,
            // `settle_lease_front`). No insert, no stale entry.
            s.last_deadline = deadline;
        } else {
            // Earlier: a new entry; the old one goes stale.
            s.epoch = s.epoch.wrapping_add(1);
            s.last_deadline = deadline;
            let timer = s.timer(slot, deadline);
            self.leases.insert(timer);
            self.due = self.due.min(deadline);
            if self.leases.needs_compaction(self.stats.in_flight) {
                self.compact_leases();
            }
        }
        self.stats.extends += 1;
        if capped {
            self.stats.extends_capped += 1;
            self.record(Event::ExtensionCapped {
                id: receipt.id,
                deadline,
            });
        }
        Ok(Extended::Until { deadline, capped })
    }

    /// Hands the item back at once, without an error and without backoff. The attempt
    /// counts; at the attempt limit the item is dead-lettered with [`Reason::Released`].
    pub fn release(&mut self, receipt: Receipt, now: Timestamp) -> Result<Nacked, ReceiptError> {
        let now = self.advance(now);
        let slot = self.held(receipt)?;
        self.stats.nacks += 1;
        self.stats.in_flight -= 1;
        self.slots[slot].ended = LeaseEnd::Released;
        Ok(self.fail_attempt(slot, now, Reason::Released, Retry::After(Duration::ZERO)))
    }

    /// Sends a poison item straight to the dead letters with [`Reason::Terminated`] and
    /// `error`, whatever attempts it has left. Like an ack, accepted after the deadline while
    /// nobody has leased the item again.
    pub fn dead_letter(
        &mut self,
        receipt: Receipt,
        now: Timestamp,
        error: Option<String>,
    ) -> Result<u32, ReceiptError> {
        let now = self.advance(now);
        let slot = match self.check(receipt) {
            Check::Held(slot) => {
                self.stats.in_flight -= 1;
                slot
            }
            Check::Unclaimed(slot) => {
                self.leave_waiting(slot);
                slot
            }
            Check::Stale(err) => return Err(err),
        };
        if let Some(error) = error {
            self.errors.insert(slot as u32, error);
        }
        let attempts = self.slots[slot].attempts;
        self.bury(slot, now, Reason::Terminated);
        Ok(attempts)
    }

    // ----- time -------------------------------------------------------------------------

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
    /// a delay or backoff, or an item's expiry. `None` when nothing is scheduled.
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

    /// Every live item (ready, delayed or in flight) in slot order, as of the queue's
    /// latest time: call [`handle_timeout`](Self::handle_timeout) first to bring it up to
    /// date. Costs a pass over every slot; for admin tools and checks, not the hot path.
    pub fn items(&self) -> impl Iterator<Item = ItemView> + '_ {
        self.slots.iter().filter_map(|s| {
            let state = match s.state {
                State::Free => return None,
                State::Ready => ItemState::Ready,
                State::Delayed => ItemState::Delayed,
                State::InFlight => ItemState::InFlight {
                    deadline: s.last_deadline,
                },
            };
            Some(ItemView {
                id: MessageId(s.id),
                state,
                attempts: s.attempts,
                expires_at: (s.expires_at != Timestamp::MAX).then_some(s.expires_at),
            })
        })
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

    /// The oldest event not yet polled.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    #[inline]
    fn next_due(&self) -> Option<Timestamp> {
        let a = self.leases.peek().map(|t| t.at);
        let b = self.delays.peek().map(|t| t.at);
        let c = self.expiries.peek().map(|t| t.at);
        [a, b, c].into_iter().flatten().min()
    }

    /// Moves time forward to `now` (never back) and applies what is due. Returns the
    /// queue's time.
    #[inline]
    fn advance(&mut self, now: Timestamp) -> Timestamp {
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
        loop {
            let mut best: Option<(Timer, TimerKind)> = None;
            for (kind, t) in [
                (TimerKind::Lease, self.leases.peek()),
                (TimerKind::Delay, self.delays.peek()),
                (TimerKind::Expiry, self.expiries.peek()),
            ] {
                if let Some(t) = t {
                    if t.at <= self.now && best.is_none_or(|(b, bk)| (*t, kind) < (b, bk)) {
                        best = Some((*t, kind));
                    }
                }
            }
            let Some((t, kind)) = best else {
                self.due = self.next_due().unwrap_or(Timestamp::MAX);
                return;
            };
            match kind {
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
                        self.ready.push_back((t.slot, s.epoch));
                        self.stats.ready += 1;
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
        self.stats.in_flight -= 1;
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
    /// without an ack at `at`: back to the queue after the backoff, or to the dead letters.
    fn fail_attempt(&mut self, slot: usize, at: Timestamp, reason: Reason, retry: Retry) -> Nacked {
        let s = &self.slots[slot];
        let attempts = s.attempts;
        if s.expires_at != Timestamp::MAX && s.expires_at <= at {
            self.bury(slot, at, Reason::Expired);
            return Nacked::DeadLettered { attempts };
        }
        if attempts >= self.config.max_attempts {
            self.bury(slot, at, reason);
            return Nacked::DeadLettered { attempts };
        }
        let delay = match retry {
            Retry::After(d) => d,
            Retry::Backoff => {
                let d = self.config.backoff.delay(attempts);
                match self.config.jitter {
                    Some(j) => self.rng.jitter(d, j.percent()),
                    None => d,
                }
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

    // ----- dead letters -----------------------------------------------------------------

    /// Moves an item that is out of every gauge to the dead letters.
    fn bury(&mut self, slot: usize, at: Timestamp, reason: Reason) {
        let s = &mut self.slots[slot];
        let Some(item) = s.item.take() else { return };
        let letter = DeadLetter {
            item,
            id: MessageId(s.id),
            attempts: s.attempts,
            reason,
            last_error: self.errors.remove(&(slot as u32)),
            at,
            expires_at: (s.expires_at != Timestamp::MAX).then_some(s.expires_at),
            leases: s.leases,
        };
        let event = Event::DeadLettered {
            id: letter.id,
            attempts: letter.attempts,
            reason,
        };
        self.free_slot(slot, Fate::DeadLettered);
        self.dead.insert(letter.id, letter);
        self.stats.dead += 1;
        self.stats.dead_lettered += 1;
        if reason == Reason::Expired {
            self.stats.expired += 1;
        }
        self.record(event);
    }

    /// The dead letters, in id (push) order.
    pub fn dead_letters(&self) -> impl Iterator<Item = &DeadLetter<T>> + '_ {
        self.dead.values()
    }

    /// One dead letter.
    pub fn get_dead_letter(&self, id: MessageId) -> Option<&DeadLetter<T>> {
        self.dead.get(&id)
    }

    /// Removes one dead letter and hands it over.
    pub fn take_dead_letter(&mut self, id: MessageId) -> Option<DeadLetter<T>> {
        let letter = self.dead.remove(&id)?;
        self.stats.dead -= 1;
        self.stats.taken += 1;
        Some(letter)
    }

    /// Removes every dead letter and hands them over, in id order.
    pub fn take_dead_letters(&mut self) -> Vec<DeadLetter<T>> {
        let all = core::mem::take(&mut self.dead);
        self.stats.dead -= all.len() as u64;
        self.stats.taken += all.len() as u64;
        all.into_values().collect()
    }

    /// Puts a dead letter back in the queue, visible at once, with its attempts reset and its
    /// id and expiry kept.
    pub fn redrive(&mut self, id: MessageId, now: Timestamp) -> Result<MessageId, RedriveError> {
        let now = self.advance(now);
        let Some(letter) = self.dead.get(&id) else {
            return Err(RedriveError::NotFound(id));
        };
        if letter.expires_at.is_some_and(|e| e <= now) {
            return Err(RedriveError::Expired(id));
        }
        if self
            .config
            .capacity
            .is_some_and(|c| self.stats.live() >= c as u64)
            || (self.free.is_empty() && self.slots.len() >= u32::MAX as usize)
        {
            return Err(RedriveError::Full(id));
        }
        let letter = self.dead.remove(&id).expect("checked above");
        self.stats.dead -= 1;
        self.stats.redriven += 1;
        let expires_at = letter.expires_at.unwrap_or(Timestamp::MAX);
        let slot = self.occupy(letter.item, id.0, expires_at, letter.leases, 0);
        if let Some(error) = letter.last_error {
            self.errors.insert(slot as u32, error);
        }
        self.make_visible(slot, now, now);
        Ok(id)
    }

    /// Redrives every dead letter that can go back, in id order; returns how many went.
    /// Stops at capacity; expired ones stay.
    pub fn redrive_all(&mut self, now: Timestamp) -> usize {
        // Apply what is due first (driving rule 3): a lease that ran out on its last attempt
        // at `now` is a dead letter at `now`, and must be among those redriven.
        let now = self.advance(now);
        let ids: Vec<MessageId> = self.dead.keys().copied().collect();
        let mut n = 0;
        for id in ids {
            match self.redrive(id, now) {
                Ok(_) => n += 1,
                Err(RedriveError::Full(_)) => break,
                Err(_) => {}
            }
        }
        n
    }

    // ----- receipts ---------------------------------------------------------------------

    fn check(&mut self, r: Receipt) -> Check {
        let found = if r.queue == self.tag {
            self.slots.get(r.slot as usize)
        } else {
            None
        };
        let Some(s) = found else {
            self.stats.unknown_receipts += 1;
            return Check::Stale(ReceiptError::Unknown);
        };
        if s.state != State::Free && s.id == r.id.0 {
            if r.lease > s.leases || r.lease == 0 {
                self.stats.unknown_receipts += 1;
                return Check::Stale(ReceiptError::Unknown);
            }
            if r.lease < s.leases {
                return Check::Stale(ReceiptError::Redelivered(r.id));
            }
            return match (s.state, s.ended) {
                (State::InFlight, _) => Check::Held(r.slot as usize),
                (_, LeaseEnd::Expired) => Check::Unclaimed(r.slot as usize),
                (_, LeaseEnd::Released) => Check::Stale(ReceiptError::Released(r.id)),
                // Waiting with no lease ended since: a redrive put it back (`occupy` resets
                // `ended`), so this receipt's lease ended in the dead letters.
                (_, LeaseEnd::None) => Check::Stale(ReceiptError::DeadLettered(r.id)),
            };
        }
        match s.prev_fate {
            Some(Fate::Acked) if s.prev_id == r.id.0 => {
                Check::Stale(ReceiptError::AlreadyAcked(r.id))
            }
            Some(Fate::DeadLettered) if s.prev_id == r.id.0 => {
                Check::Stale(ReceiptError::DeadLettered(r.id))
            }
            _ => {
                self.stats.unknown_receipts += 1;
                Check::Stale(ReceiptError::Unknown)
            }
        }
    }

    /// The slot of the running lease `r` was issued for: `check`'s `Held` case alone, inlined
    /// into the hot paths.
    #[inline]
    fn running(&self, r: Receipt) -> Option<usize> {
        let s = self.slots.get(r.slot as usize)?;
        (r.queue == self.tag && s.state == State::InFlight && s.id == r.id.0 && s.leases == r.lease)
            .then_some(r.slot as usize)
    }

    /// The slot of a running lease, or why there is none.
    fn held(&mut self, r: Receipt) -> Result<usize, ReceiptError> {
        match self.check(r) {
            Check::Held(slot) => Ok(slot),
            Check::Unclaimed(_) => Err(ReceiptError::LeaseExpired(r.id)),
            Check::Stale(e) => Err(e),
        }
    }

    // ----- slots ------------------------------------------------------------------------

    /// Takes a ready or delayed item out of its gauge (its index entry goes stale).
    fn leave_waiting(&mut self, slot: usize) {
        match self.slots[slot].state {
            State::Ready => {
                self.stats.ready -= 1;
                if self.ready.len() as u64 > 2 * self.stats.ready + 64 {
                    let slots = &self.slots;
                    let skip = slot as u32;
                    self.ready
                        .retain(|&(i, e)| i != skip && slots[i as usize].epoch == e);
                }
            }
            State::Delayed => self.stats.delayed -= 1,
            State::InFlight => self.stats.in_flight -= 1,
            State::Free => {}
        }
    }

    /// Frees an acked slot.
    #[inline]
    fn release_slot(&mut self, slot: usize, fate: Fate) {
        self.slots[slot].item = None;
        self.free_slot(slot, fate);
    }

    #[inline]
    fn free_slot(&mut self, slot: usize, fate: Fate) {
        self.vacate(slot, fate);
        self.trim_indexes();
    }

    /// `free_slot` without the index trim, for callers that trim what they changed.
    #[inline]
    fn vacate(&mut self, slot: usize, fate: Fate) {
        let s = &mut self.slots[slot];
        if s.expires_at != Timestamp::MAX {
            self.expiring -= 1;
        }
        s.epoch = s.epoch.wrapping_add(1);
        s.state = State::Free;
        s.prev_id = s.id;
        s.prev_fate = Some(fate);
        if !self.errors.is_empty() {
            self.errors.remove(&(slot as u32));
        }
        self.free.push(slot as u32);
    }

    fn compact_leases(&mut self) {
        let slots = &self.slots;
        self.leases
            .compact(|t| timer_live(slots, t, State::InFlight));
    }

    /// Keeps every index within `2 × live + 64` entries. Inserts check their own index, but
    /// entries also go stale when a live count drops with no insert to follow (ack, nack,
    /// release, dead letter, expiry, receive, end of a delay): without this an index stays
    /// at its peak size, e.g. after a batch of leases is acked out of order. Called wherever
    /// an item leaves a gauge, once its slot is consistent again.
    #[inline]
    fn trim_indexes(&mut self) {
        if self.leases.needs_compaction(self.stats.in_flight)
            || self.delays.needs_compaction(self.stats.delayed)
            || self.expiries.needs_compaction(self.expiring)
            || self.ready.len() as u64 > 2 * self.stats.ready + 64
        {
            self.compact_indexes();
        }
    }

    #[cold]
    #[inline(never)]
    fn compact_indexes(&mut self) {
        let slots = &self.slots;
        if self.leases.needs_compaction(self.stats.in_flight) {
            self.leases
                .compact(|t| timer_live(slots, t, State::InFlight));
        }
        if self.delays.needs_compaction(self.stats.delayed) {
            self.delays
                .compact(|t| timer_live(slots, t, State::Delayed));
        }
        if self.expiries.needs_compaction(self.expiring) {
            self.expiries.compact(|t| expiry_live(slots, t));
        }
        if self.ready.len() as u64 > 2 * self.stats.ready + 64 {
            self.ready.retain(|&(i, e)| slots[i as usize].epoch == e);
        }
    }

    fn record(&mut self, event: Event) {
        if self.config.events.bits() & event.kind_bit() == 0 {
            return;
        }
        if self.events.len() >= self.config.event_capacity {
            self.stats.events_dropped += 1;
            if self.events.pop_front().is_none() {
                return;
            }
        }
        self.events.push_back(event);
    }

    // ----- checks -----------------------------------------------------------------------

    /// Checks conservation and recounts every gauge from the items themselves; also checks
    /// that no index has grown past its bound. O(n): for tests and debugging.
    pub fn check_invariants(&self) -> Result<(), ConservationError> {
        self.stats.check_conservation()?;
        let fail = |law| {
            Err(ConservationError {
                stats: alloc::boxed::Box::new(self.stats),
                law,
            })
        };
        let count = |st| self.slots.iter().filter(|s| s.state == st).count() as u64;
        if count(State::Ready) != self.stats.ready
            || count(State::Delayed) != self.stats.delayed
            || count(State::InFlight) != self.stats.in_flight
        {
            return fail("gauges match the items' states");
        }
        if self.dead.len() as u64 != self.stats.dead {
            return fail("dead gauge matches the dead letters");
        }
        let live_ready = self
            .ready
            .iter()
            .filter(|&&(i, e)| self.slots[i as usize].epoch == e)
            .count() as u64;
        if live_ready != self.stats.ready {
            return fail("every ready item is in the ready list once");
        }
        let live_leases = self
            .leases
            .iter()
            .filter(|t| timer_live(&self.slots, t, State::InFlight))
            .count() as u64;
        if live_leases != self.stats.in_flight {
            return fail("every lease has one live deadline");
        }
        if self.leases.len() as u64 > 2 * self.stats.in_flight + 64 + 1
            || self.delays.len() as u64 > 2 * self.stats.delayed + 64 + 1
            || self.expiries.len() as u64 > 2 * self.expiring + 64 + 1
            || self.ready.len() as u64 > 2 * self.stats.ready + 64 + 1
        {
            return fail("indexes stay within 2 x live + 65");
        }
        if self.free.len() + self.stats.live() as usize != self.slots.len() {
            return fail("every slot is either free or holds a live item");
        }
        Ok(())
    }

    /// Sizes of the internal indexes (lease deadlines, delays, expiries, ready list),
    /// including stale entries not yet compacted. For benchmarks and memory checks.
    pub fn index_sizes(&self) -> IndexSizes {
        IndexSizes {
            leases: self.leases.len(),
            delays: self.delays.len(),
            expiries: self.expiries.len(),
            ready: self.ready.len(),
            slots: self.slots.len(),
        }
    }
}

/// Entry counts of a queue's internal indexes, stale entries included.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct IndexSizes {
    /// Lease deadline entries.
    pub leases: usize,
    /// Delay entries.
    pub delays: usize,
    /// Expiry entries.
    pub expiries: usize,
    /// Ready list entries.
    pub ready: usize,
    /// Allocated item slots (live plus free).
    pub slots: usize,
}

impl<T> core::fmt::Debug for Queue<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Queue")
            .field("now", &self.now)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

fn timer_live<T>(slots: &[Slot<T>], t: &Timer, state: State) -> bool {
    let s = &slots[t.slot as usize];
    s.epoch == t.epoch && s.state == state
}

fn expiry_live<T>(slots: &[Slot<T>], t: &Timer) -> bool {
    let s = &slots[t.slot as usize];
    s.state != State::Free && s.id == t.id && s.expires_at == t.at
}

/// `t` plus `nanos`, saturating at "never".
#[inline]
fn add_nanos(t: Timestamp, nanos: u64) -> Timestamp {
    Timestamp::from_nanos(t.as_nanos().saturating_add(nanos))
}

/// A per-queue tag, so that a receipt from one queue is never taken by another.
fn next_tag() -> u32 {
    #[cfg(target_has_atomic = "32")]
    {
        use core::sync::atomic::{AtomicU32, Ordering};
        static NEXT: AtomicU32 = AtomicU32::new(1);
        NEXT.fetch_add(1, Ordering::Relaxed)
    }
    #[cfg(not(target_has_atomic = "32"))]
    {
        1
    }
}
