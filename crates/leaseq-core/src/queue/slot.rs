//! A slot of the queue: where an item lives, its state, its counters, how its previous
//! occupant left, and its links on the lists threaded through the slots; a lease's times
//! and the slot's own changes when it is leased (shared by `receive` and `receive_run`).

use crate::time::Timestamp;
use crate::timer_index::Timer;

/// Where an item stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    Free,
    Ready,
    Delayed,
    InFlight,
}

/// How the latest lease of an item ended, which decides what its old receipt may still do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LeaseEnd {
    /// Not leased yet, or the lease is running.
    None,
    /// Ran out: an ack with its receipt is still accepted until the item is leased again.
    Expired,
    /// The holder handed it back: its receipt is done.
    Released,
}

/// What the last item to leave a slot became; lets a stale receipt be told precisely.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fate {
    Acked,
    DeadLettered,
    Cancelled,
}

/// `Slot::meta`: the priority level in the low bits.
pub(super) const LEVEL_BITS: u8 = 0b0111;
/// `Slot::meta`: the item holds a unique key (in the key table).
pub(super) const KEYED: u8 = 0b1000;
/// `Slot::meta`: the item is in flight and its lease is on the in-flight list
/// (`Slot::prev`, `Slot::next`; see `flight`).
pub(super) const LISTED: u8 = 0b1_0000;
/// `Slot::meta`: the item has flow keys (a kind, a partition; see `limits`).
pub(super) const TAGGED: u8 = 0b10_0000;
/// `Slot::meta`: the item is in flight and counted in its flow keys' counts.
pub(super) const COUNTED: u8 = 0b100_0000;
/// No slot: the end of a list threaded through the slots.
pub(super) const NIL: u32 = u32::MAX;

/// One item's place in the queue (reused once the item leaves: see `Queue::occupy`).
pub(super) struct Slot<T> {
    pub(super) item: Option<T>,
    pub(super) id: u64,
    /// Bumped on every state change; index entries made at another epoch are stale.
    pub(super) epoch: u32,
    /// Leases issued for this message, across redrives.
    pub(super) leases: u32,
    /// Deliveries since push or the last redrive.
    pub(super) attempts: u32,
    pub(super) state: State,
    pub(super) ended: LeaseEnd,
    /// In flight: the latest deadline extensions may reach. Ready, with feature
    /// `ready-since`: when the item became ready (`Queue::oldest_ready_since`).
    pub(super) lease_cap: Timestamp,
    /// The deadline of the latest lease, kept after it ends (for "late by").
    pub(super) last_deadline: Timestamp,
    /// The item's own deadline; `Timestamp::MAX` for none.
    pub(super) expires_at: Timestamp,
    /// The previous occupant of this slot (meaningful when `prev_fate` is set).
    pub(super) prev_id: u64,
    /// How the previous occupant left; `None` before the slot's first use ends.
    pub(super) prev_fate: Option<Fate>,
    /// The priority level (`LEVEL_BITS`), whether the item holds a key (`KEYED`) and
    /// whether its lease is on the in-flight list (`LISTED`): one byte.
    pub(super) meta: u8,
    /// The neighbours on the slot's list (`NIL` at its ends): its level's ready list while
    /// ready, the in-flight list while `LISTED`; `next` is the next free slot while free.
    pub(super) prev: u32,
    pub(super) next: u32,
}

impl<T> Slot<T> {
    /// The item's priority level.
    #[inline]
    pub(super) fn level(&self) -> usize {
        (self.meta & LEVEL_BITS) as usize
    }

    /// Whether the item holds a unique key.
    #[inline]
    pub(super) fn keyed(&self) -> bool {
        self.meta & KEYED != 0
    }

    /// Frees this slot (index `slot`), whose item left as `fate`, onto the free list whose
    /// head is `free`: the slot's own half of `Queue::vacate`. Returns whether the item had
    /// an expiry and whether it held a key or flow keys (the caller's to take off its gauge
    /// and tables; `meta` is left as it was for that).
    #[inline(always)]
    pub(super) fn vacate(&mut self, slot: usize, fate: Fate, free: &mut u32) -> (bool, bool) {
        let expiring = self.expires_at != Timestamp::MAX;
        let keyed = self.meta & (KEYED | TAGGED) != 0;
        self.epoch = self.epoch.wrapping_add(1);
        self.state = State::Free;
        self.prev_id = self.id;
        self.prev_fate = Some(fate);
        self.next = *free;
        *free = slot as u32;
        (expiring, keyed)
    }

    /// Puts a new item into this free slot (still `Free`; see `Queue::occupy`).
    #[inline(always)]
    pub(super) fn fill(
        &mut self,
        item: T,
        id: u64,
        expires_at: Timestamp,
        leases: u32,
        attempts: u32,
        meta: u8,
    ) {
        self.item = Some(item);
        self.id = id;
        self.leases = leases;
        self.attempts = attempts;
        self.ended = LeaseEnd::None;
        self.expires_at = expires_at;
        self.meta = meta;
    }

    /// Notes that the item became ready at `since` (feature `ready-since`; nothing without
    /// it, so that the push path costs what it did).
    #[inline(always)]
    pub(super) fn note_ready(&mut self, since: Timestamp) {
        #[cfg(feature = "ready-since")]
        {
            self.lease_cap = since;
        }
        #[cfg(not(feature = "ready-since"))]
        let _ = since;
    }

    /// A timer at `at` for this slot (index `slot`) as it is now: stale once its epoch moves.
    #[inline]
    pub(super) fn timer(&self, slot: usize, at: Timestamp) -> Timer {
        Timer {
            at,
            id: self.id,
            slot: slot as u32,
            epoch: self.epoch,
        }
    }
}

/// The lease cap and deadline of a lease of `s` taken at `now` (no max lease is
/// `u64::MAX`, which saturates to "never").
#[inline(always)]
pub(super) fn lease_times<T>(
    s: &Slot<T>,
    now: Timestamp,
    visibility_ns: u64,
    max_lease_ns: u64,
) -> (Timestamp, Timestamp) {
    let cap = s.expires_at.min(add_nanos(now, max_lease_ns));
    (cap, add_nanos(now, visibility_ns).min(cap))
}

/// The slot's own changes when its item is leased (`lease_times` gave `cap` and
/// `deadline`).
#[inline(always)]
pub(super) fn start_lease<T>(s: &mut Slot<T>, cap: Timestamp, deadline: Timestamp) {
    s.epoch = s.epoch.wrapping_add(1);
    s.state = State::InFlight;
    s.ended = LeaseEnd::None;
    s.leases = s.leases.saturating_add(1);
    s.attempts = s.attempts.saturating_add(1);
    s.last_deadline = deadline;
    s.lease_cap = cap;
}

/// `t` plus `nanos`, saturating at "never".
#[inline]
fn add_nanos(t: Timestamp, nanos: u64) -> Timestamp {
    Timestamp::from_nanos(t.as_nanos().saturating_add(nanos))
}
