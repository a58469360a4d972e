//! Model-based property test: random operation streams run against the real [`Queue`] and
//! against a deliberately simple reference model kept here, and every result is compared.
//!
//! The model is a `Vec` of items scanned linearly. Due processing repeatedly picks the
//! minimum `(at, id, kind)` among the due timers, with kind order lease < delay < expiry, as
//! the crate docs ("Order") and `queue.rs` (`run_due`, `make_visible`, `fail_attempt`)
//! define it. Time is coarse (multiples of a few nanoseconds) so that ties are frequent.
//!
//! Priority levels, unique keys, replacement and cancel are in the model too: a receive
//! takes the ready item of the highest level with the smallest `ready_seq`; a key is held by
//! whichever live item carries it (a linear scan); cancel finds its item by id.
//!
//! Jitter is left out of the model; `jitter_is_deterministic` checks it separately.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::time::Duration;

use leaseq_core::{
    Acked, Backoff, CancelError, Config, DeadLetter, Event, EventMask, Extended, Failure, Jitter,
    LateAckKind, MessageId, Nacked, PushError, PushOptions, Queue, Reason, Receipt, ReceiptError,
    RedriveError, Stats, Timestamp, UniqueKey,
};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestRunner;

use leaseq_test_kit::seeded::seed_config;
use leaseq_test_kit::time::ts;

type Item = u32;

const NEVER: u64 = u64::MAX;

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn add(t: u64, d: Duration) -> u64 {
    t.saturating_add(nanos(d))
}

// ===================================================================================
// The reference model
// ===================================================================================

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Ready,
    Delayed,
    InFlight,
    /// Acked or dead-lettered: not in the queue.
    Gone,
}

/// How the item's latest lease ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    /// Running, or never leased.
    Running,
    /// Ran out; the receipt may still ack while nobody has leased the item again.
    Expired,
    /// Handed back by its holder (nack, release, extend to zero).
    Released,
    /// The item was dead-lettered and redriven since.
    Redriven,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Acked,
    DeadLettered,
    Cancelled,
}

#[derive(Clone, Debug)]
struct MItem {
    id: u64,
    item: Item,
    /// The queue slot the item sits in (slots matter only for telling how old a stale
    /// receipt is: the docs allow `Unknown` once the slot has held other items).
    slot: u32,
    state: St,
    attempts: u32,
    leases: u32,
    ended: End,
    /// In flight: lease deadline.
    deadline: u64,
    /// In flight: the latest deadline extensions may reach.
    lease_cap: u64,
    /// Deadline of the latest lease, kept after it ends.
    last_deadline: u64,
    /// Delayed: when it becomes visible.
    visible_at: u64,
    /// Ready: when (in order of events) it became visible.
    ready_seq: u64,
    /// `NEVER` for none.
    expires_at: u64,
    last_error: Option<String>,
    level: u8,
    key: Option<Vec<u8>>,
}

#[derive(Clone, Debug, PartialEq)]
struct MDead {
    item: Item,
    attempts: u32,
    reason: Reason,
    last_error: Option<String>,
    at: u64,
    expires_at: Option<u64>,
    priority: u8,
    key: Option<Vec<u8>>,
}

#[derive(Clone, Copy, Debug, Default)]
struct MSlot {
    prev: Option<(u64, Fate)>,
}

#[derive(Clone, Copy, Debug)]
enum MBackoff {
    None,
    Fixed(Duration),
    Exp {
        base: Duration,
        factor: u32,
        max: Duration,
    },
}

impl MBackoff {
    /// Delay after the `n`-th failure, computed independently of the crate.
    fn delay(self, n: u32) -> u128 {
        match self {
            MBackoff::None => 0,
            MBackoff::Fixed(d) => d.as_nanos(),
            MBackoff::Exp { base, factor, max } => {
                let max = max.as_nanos();
                let mut d = base.as_nanos();
                for _ in 1..n {
                    d = d.saturating_mul(factor as u128);
                    if d >= max {
                        break;
                    }
                }
                d.min(max)
            }
        }
    }
    fn to_crate(self) -> Backoff {
        match self {
            MBackoff::None => Backoff::None,
            MBackoff::Fixed(d) => Backoff::Fixed(d),
            MBackoff::Exp { base, factor, max } => Backoff::Exponential { base, factor, max },
        }
    }
}

#[derive(Clone, Debug)]
struct MConfig {
    visibility: Duration,
    max_attempts: u32,
    backoff: MBackoff,
    max_lease: Option<Duration>,
    capacity: Option<usize>,
    event_capacity: usize,
}

impl MConfig {
    fn to_crate(&self) -> Config {
        let mut c = Config::new(self.visibility)
            .with_max_attempts(self.max_attempts)
            .with_backoff(self.backoff.to_crate())
            // No jitter (the default has 50 %): the model leaves it out, see the header.
            .without_jitter()
            .with_events(EventMask::ALL)
            .with_event_capacity(self.event_capacity);
        if let Some(m) = self.max_lease {
            c = c.with_max_lease(m);
        }
        if let Some(n) = self.capacity {
            c = c.with_capacity(n);
        }
        c
    }
}

/// The key of a push, as the model sees it.
#[derive(Clone, Debug)]
enum MKey {
    None,
    Key(Vec<u8>),
    TooLong(usize),
}

/// Why the model refused a push.
#[derive(Clone, Copy, Debug, PartialEq)]
enum MPushError {
    Level(u8),
    KeyTooLong(usize),
    Expired,
    Duplicate(u64),
    Full,
}

/// A receipt as the test knows it.
#[derive(Clone, Copy, Debug)]
struct RRec {
    receipt: Receipt,
    foreign: bool,
    id: u64,
    lease: u32,
    slot: u32,
}

enum MCheck {
    Held(usize),
    Unclaimed(usize),
    Stale(ReceiptError),
}

#[derive(Debug, PartialEq)]
struct MLease {
    item: Item,
    id: u64,
    attempt: u32,
    deadline: u64,
    expires_at: Option<u64>,
    lease: u32,
    slot: u32,
}

struct Model {
    cfg: MConfig,
    now: u64,
    items: Vec<MItem>,
    slots: Vec<MSlot>,
    free: Vec<u32>,
    dead: BTreeMap<u64, MDead>,
    events: VecDeque<Event>,
    /// Lifetime totals; the gauges are recounted from the items in `stats()`.
    totals: Stats,
    ready_seq: u64,
}

impl Model {
    fn new(cfg: MConfig) -> Self {
        Model {
            cfg,
            now: 0,
            items: Vec::new(),
            slots: Vec::new(),
            free: Vec::new(),
            dead: BTreeMap::new(),
            events: VecDeque::new(),
            totals: Stats::default(),
            ready_seq: 0,
        }
    }

    fn stats(&self) -> Stats {
        let mut s = self.totals;
        let count = |st| self.items.iter().filter(|i| i.state == st).count() as u64;
        s.ready = count(St::Ready);
        s.delayed = count(St::Delayed);
        s.in_flight = count(St::InFlight);
        s.dead = self.dead.len() as u64;
        s
    }

    fn live(&self) -> usize {
        self.items.iter().filter(|i| i.state != St::Gone).count()
    }

    fn ready_per_level(&self) -> [u64; 8] {
        let mut r = [0; 8];
        for it in self.items.iter().filter(|i| i.state == St::Ready) {
            r[it.level as usize] += 1;
        }
        r
    }

    /// The live item that holds `key`.
    fn key_holder(&self, key: &[u8]) -> Option<u64> {
        self.items
            .iter()
            .find(|i| i.state != St::Gone && i.key.as_deref() == Some(key))
            .map(|i| i.id)
    }

    fn record(&mut self, e: Event) {
        if self.events.len() >= self.cfg.event_capacity {
            self.totals.events_dropped += 1;
            if self.events.pop_front().is_none() {
                return;
            }
        }
        self.events.push_back(e);
    }

    fn alloc_slot(&mut self) -> u32 {
        match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(MSlot::default());
                (self.slots.len() - 1) as u32
            }
        }
    }

    fn free_slot(&mut self, idx: usize, fate: Fate) {
        let it = &self.items[idx];
        self.slots[it.slot as usize].prev = Some((it.id, fate));
        self.free.push(it.slot);
    }

    fn set_ready(&mut self, idx: usize) {
        self.items[idx].state = St::Ready;
        self.items[idx].ready_seq = self.ready_seq;
        self.ready_seq += 1;
    }

    /// Visible at `at`: ready now if `at <= instant`, else delayed until `at`.
    fn make_visible(&mut self, idx: usize, at: u64, instant: u64) {
        if at <= instant {
            self.set_ready(idx);
        } else {
            self.items[idx].state = St::Delayed;
            self.items[idx].visible_at = at;
        }
    }

    // ----- time ---------------------------------------------------------------------

    fn advance(&mut self, t: u64) -> u64 {
        self.now = self.now.max(t);
        let mut last_at = None;
        loop {
            // (at, id, kind): kind 0 = lease, 1 = delay, 2 = expiry.
            let mut best: Option<(u64, u64, u8)> = None;
            for it in &self.items {
                let mut cands = [None, None];
                match it.state {
                    St::InFlight => cands[0] = Some((it.deadline, it.id, 0)),
                    St::Delayed => cands[0] = Some((it.visible_at, it.id, 1)),
                    _ => {}
                }
                if matches!(it.state, St::Ready | St::Delayed) && it.expires_at != NEVER {
                    cands[1] = Some((it.expires_at, it.id, 2));
                }
                for c in cands.into_iter().flatten() {
                    if c.0 <= self.now && best.is_none_or(|b| c < b) {
                        best = Some(c);
                    }
                }
            }
            let Some((at, id, kind)) = best else {
                return self.now;
            };
            let idx = id as usize;
            if last_at == Some(at) {
                cov("due: two timers at one instant");
            }
            last_at = Some(at);
            match kind {
                0 => {
                    self.totals.lease_expired += 1;
                    self.items[idx].ended = End::Expired;
                    self.items[idx].state = St::Gone; // out of every gauge for a moment
                    self.record(Event::LeaseExpired {
                        id: MessageId_of(id),
                        attempt: self.items[idx].attempts,
                        deadline: ts(at),
                    });
                    self.fail_attempt(idx, at, Reason::LeaseExpired, None);
                }
                1 => self.set_ready(idx),
                _ => {
                    cov("due: expiry of a waiting item");
                    self.items[idx].state = St::Gone;
                    self.bury(idx, at, Reason::Expired);
                }
            }
        }
    }

    /// An attempt ended without an ack at `at` (item already out of the in-flight gauge).
    /// `retry`: `None` for the backoff policy.
    fn fail_attempt(
        &mut self,
        idx: usize,
        at: u64,
        reason: Reason,
        retry: Option<Duration>,
    ) -> Nacked {
        let it = &self.items[idx];
        let attempts = it.attempts;
        if it.expires_at != NEVER && it.expires_at <= at {
            self.bury(idx, at, Reason::Expired);
            return Nacked::DeadLettered { attempts };
        }
        if attempts >= self.cfg.max_attempts {
            self.bury(idx, at, reason);
            return Nacked::DeadLettered { attempts };
        }
        let delay = match retry {
            Some(d) => d.as_nanos(),
            None => self.cfg.backoff.delay(attempts),
        };
        let visible_at = u64::try_from(at as u128 + delay).unwrap_or(NEVER);
        if visible_at < self.now {
            cov("retry: visible before the current time");
        }
        self.make_visible(idx, visible_at, at);
        Nacked::Retrying {
            visible_at: ts(visible_at.max(self.now)),
            attempts,
        }
    }

    fn bury(&mut self, idx: usize, at: u64, reason: Reason) {
        let it = &mut self.items[idx];
        it.state = St::Gone;
        let d = MDead {
            item: it.item,
            attempts: it.attempts,
            reason,
            last_error: it.last_error.take(),
            at,
            expires_at: (it.expires_at != NEVER).then_some(it.expires_at),
            priority: it.level,
            key: it.key.clone(),
        };
        let (id, attempts) = (it.id, it.attempts);
        cov(&format!("dead letter: {reason:?}"));
        self.free_slot(idx, Fate::DeadLettered);
        self.dead.insert(id, d);
        self.totals.dead_lettered += 1;
        if reason == Reason::Expired {
            self.totals.expired += 1;
        }
        self.record(Event::DeadLettered {
            id: MessageId_of(id),
            attempts,
            reason,
        });
    }

    fn poll_timeout(&self) -> Option<u64> {
        let mut best: Option<u64> = None;
        for it in &self.items {
            let mut c = Vec::new();
            match it.state {
                St::InFlight => c.push(it.deadline),
                St::Delayed => c.push(it.visible_at),
                _ => {}
            }
            if it.state != St::Gone && it.expires_at != NEVER {
                c.push(it.expires_at);
            }
            for t in c {
                best = Some(best.map_or(t, |b| b.min(t)));
            }
        }
        best
    }

    // ----- operations ---------------------------------------------------------------

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        item: Item,
        t: u64,
        delay: Duration,
        expires_at: Option<u64>,
        level: u8,
        key: &MKey,
        replace: bool,
        waits: bool,
    ) -> Result<(u64, Option<u64>), MPushError> {
        let now = self.advance(t);
        if level > 7 {
            self.totals.rejected += 1;
            return Err(MPushError::Level(level));
        }
        let key = match key {
            MKey::None => None,
            MKey::Key(k) => Some(k.clone()),
            MKey::TooLong(len) => {
                self.totals.rejected += 1;
                return Err(MPushError::KeyTooLong(*len));
            }
        };
        let expires_at = expires_at.unwrap_or(NEVER);
        if expires_at != NEVER && expires_at <= now {
            self.totals.rejected += 1;
            return Err(MPushError::Expired);
        }
        let mut replacing = None;
        if let Some(holder) = key.as_deref().and_then(|k| self.key_holder(k)) {
            if replace && self.items[holder as usize].state != St::InFlight {
                replacing = Some(holder as usize);
            } else {
                self.totals.rejected += 1;
                self.totals.duplicates += 1;
                return Err(MPushError::Duplicate(holder));
            }
        }
        if replacing.is_none() && self.cfg.capacity.is_some_and(|c| self.live() >= c) {
            // A caller that waits for room is not refused: it pushes again later.
            if !waits {
                self.totals.rejected += 1;
            }
            return Err(MPushError::Full);
        }
        if let Some(old) = replacing {
            self.items[old].state = St::Gone;
            self.free_slot(old, Fate::Cancelled);
            self.totals.cancelled += 1;
            self.totals.replaced += 1;
        }
        let id = self.items.len() as u64;
        let slot = self.alloc_slot();
        self.items.push(MItem {
            id,
            item,
            slot,
            state: St::Gone,
            attempts: 0,
            leases: 0,
            ended: End::Running,
            deadline: 0,
            lease_cap: 0,
            last_deadline: 0,
            visible_at: 0,
            ready_seq: 0,
            expires_at,
            last_error: None,
            level,
            key,
        });
        self.totals.pushed += 1;
        self.make_visible(id as usize, add(now, delay), now);
        if let Some(old) = replacing {
            self.record(Event::Replaced {
                id: MessageId_of(old as u64),
                by: MessageId::new(id),
            });
        }
        Ok((id, replacing.map(|o| o as u64)))
    }

    /// Cancels item `id` (in flight too if `leased`), after the time step.
    fn cancel(&mut self, id: u64, t: u64, leased: bool) -> Result<Item, CancelError> {
        self.advance(t);
        let mid = MessageId::new(id);
        let idx = id as usize;
        let live = self.items.get(idx).is_some_and(|i| i.state != St::Gone);
        if !live {
            return Err(if self.dead.contains_key(&id) {
                CancelError::DeadLettered(mid)
            } else {
                CancelError::NotFound(mid)
            });
        }
        let in_flight = self.items[idx].state == St::InFlight;
        if in_flight && !leased {
            return Err(CancelError::InFlight(mid));
        }
        if in_flight {
            cov("cancel_leased: an item in flight");
        }
        self.items[idx].state = St::Gone;
        self.free_slot(idx, Fate::Cancelled);
        self.totals.cancelled += 1;
        self.record(Event::Cancelled { id: mid, in_flight });
        Ok(self.items[idx].item)
    }

    fn receive_one(&mut self) -> Option<MLease> {
        let now = self.now;
        let idx = self
            .items
            .iter()
            .filter(|i| i.state == St::Ready)
            .min_by_key(|i| (std::cmp::Reverse(i.level), i.ready_seq))?
            .id as usize;
        let (level, seq) = (self.items[idx].level, self.items[idx].ready_seq);
        if level > 0 {
            cov("receive: level above 0");
        }
        if self
            .items
            .iter()
            .any(|i| i.state == St::Ready && i.level < level && i.ready_seq < seq)
        {
            cov("receive: a higher level overtakes an older lower one");
        }
        let vis = self.cfg.visibility;
        let max_lease = self.cfg.max_lease;
        let it = &mut self.items[idx];
        it.state = St::InFlight;
        it.ended = End::Running;
        it.leases += 1;
        it.attempts += 1;
        let mut cap = it.expires_at;
        if let Some(m) = max_lease {
            cap = cap.min(add(now, m));
        }
        it.deadline = add(now, vis).min(cap);
        it.last_deadline = it.deadline;
        it.lease_cap = cap;
        let lease = MLease {
            item: it.item,
            id: it.id,
            attempt: it.attempts,
            deadline: it.deadline,
            expires_at: (it.expires_at != NEVER).then_some(it.expires_at),
            lease: it.leases,
            slot: it.slot,
        };
        self.totals.delivered += 1;
        if lease.attempt > 1 {
            self.totals.redelivered += 1;
            self.record(Event::Redelivered {
                id: MessageId_of(lease.id),
                attempt: lease.attempt,
            });
        } else {
            self.record(Event::Delivered {
                id: MessageId_of(lease.id),
            });
        }
        Some(lease)
    }

    fn check(&mut self, r: &RRec) -> MCheck {
        if r.foreign {
            cov("receipt: foreign");
            self.totals.unknown_receipts += 1;
            return MCheck::Stale(ReceiptError::Unknown);
        }
        let id = r.receipt.id();
        let it = &self.items[r.id as usize];
        if it.state != St::Gone && it.slot == r.slot {
            if r.lease < it.leases {
                return MCheck::Stale(ReceiptError::Redelivered(id));
            }
            assert_eq!(r.lease, it.leases, "test bug: receipt from the future");
            return match (it.state, it.ended) {
                (St::InFlight, _) => MCheck::Held(r.id as usize),
                (_, End::Expired) => MCheck::Unclaimed(r.id as usize),
                (_, End::Released) => MCheck::Stale(ReceiptError::Released(id)),
                (_, End::Redriven) => {
                    cov("receipt: item redriven into the same slot");
                    MCheck::Stale(ReceiptError::DeadLettered(id))
                }
                (_, End::Running) => panic!("test bug: ready item with a running lease"),
            };
        }
        match self.slots[r.slot as usize].prev {
            Some((pid, Fate::Acked)) if pid == r.id => {
                MCheck::Stale(ReceiptError::AlreadyAcked(id))
            }
            Some((pid, Fate::DeadLettered)) if pid == r.id => {
                MCheck::Stale(ReceiptError::DeadLettered(id))
            }
            Some((pid, Fate::Cancelled)) if pid == r.id => {
                cov("receipt: cancelled");
                MCheck::Stale(ReceiptError::Cancelled(id))
            }
            _ => {
                cov("receipt: slot reused, fate forgotten");
                self.totals.unknown_receipts += 1;
                MCheck::Stale(ReceiptError::Unknown)
            }
        }
    }

    fn held(&mut self, r: &RRec) -> Result<usize, ReceiptError> {
        match self.check(r) {
            MCheck::Held(i) => Ok(i),
            MCheck::Unclaimed(_) => Err(ReceiptError::LeaseExpired(r.receipt.id())),
            MCheck::Stale(e) => Err(e),
        }
    }

    fn ack(&mut self, r: &RRec, t: u64) -> Result<Acked, ReceiptError> {
        let now = self.advance(t);
        match self.check(r) {
            MCheck::Held(idx) => {
                self.items[idx].state = St::Gone;
                self.free_slot(idx, Fate::Acked);
                self.totals.acked += 1;
                Ok(Acked::OnTime)
            }
            MCheck::Unclaimed(idx) => {
                let late_by =
                    Duration::from_nanos(now.saturating_sub(self.items[idx].last_deadline));
                self.items[idx].state = St::Gone;
                self.free_slot(idx, Fate::Acked);
                self.totals.acked += 1;
                self.totals.late_acks_unclaimed += 1;
                self.record(Event::LateAck {
                    id: r.receipt.id(),
                    kind: LateAckKind::Unclaimed,
                    late_by: Some(late_by),
                });
                Ok(Acked::LateUnclaimed { late_by })
            }
            MCheck::Stale(e) => {
                let kind = match e {
                    ReceiptError::Redelivered(_) => LateAckKind::Redelivered,
                    ReceiptError::DeadLettered(_) => LateAckKind::DeadLettered,
                    ReceiptError::AlreadyAcked(_) => LateAckKind::AlreadyAcked,
                    ReceiptError::Released(_) => LateAckKind::Released,
                    ReceiptError::Cancelled(_) => LateAckKind::Cancelled,
                    _ => return Err(e),
                };
                self.totals.late_acks_stale += 1;
                self.record(Event::LateAck {
                    id: r.receipt.id(),
                    kind,
                    late_by: None,
                });
                Err(e)
            }
        }
    }

    fn nack(
        &mut self,
        r: &RRec,
        t: u64,
        reason: Reason,
        error: Option<String>,
        retry: Option<Duration>,
    ) -> Result<Nacked, ReceiptError> {
        let now = self.advance(t);
        let idx = self.held(r)?;
        self.totals.nacks += 1;
        let it = &mut self.items[idx];
        it.state = St::Gone;
        it.ended = End::Released;
        if error.is_some() {
            it.last_error = error;
        }
        Ok(self.fail_attempt(idx, now, reason, retry))
    }

    fn release(&mut self, r: &RRec, t: u64) -> Result<Nacked, ReceiptError> {
        self.nack(r, t, Reason::Released, None, Some(Duration::ZERO))
    }

    fn extend(&mut self, r: &RRec, t: u64, vis: Duration) -> Result<Extended, ReceiptError> {
        if vis.is_zero() {
            return self.release(r, t).map(Extended::Released);
        }
        let now = self.advance(t);
        let idx = self.held(r)?;
        let it = &mut self.items[idx];
        let wanted = add(now, vis);
        let deadline = wanted.min(it.lease_cap);
        let capped = deadline < wanted;
        it.deadline = deadline;
        it.last_deadline = deadline;
        self.totals.extends += 1;
        if capped {
            self.totals.extends_capped += 1;
            self.record(Event::ExtensionCapped {
                id: r.receipt.id(),
                deadline: ts(deadline),
            });
        }
        Ok(Extended::Until {
            deadline: ts(deadline),
            capped,
        })
    }

    fn dead_letter(
        &mut self,
        r: &RRec,
        t: u64,
        error: Option<String>,
    ) -> Result<u32, ReceiptError> {
        let now = self.advance(t);
        let idx = match self.check(r) {
            MCheck::Held(i) | MCheck::Unclaimed(i) => i,
            MCheck::Stale(e) => return Err(e),
        };
        let it = &mut self.items[idx];
        it.state = St::Gone;
        if error.is_some() {
            it.last_error = error;
        }
        let attempts = it.attempts;
        self.bury(idx, now, Reason::Rejected);
        Ok(attempts)
    }

    fn redrive(&mut self, id: u64, t: u64) -> Result<u64, RedriveError> {
        let now = self.advance(t);
        let mid = MessageId_of(id);
        let Some(d) = self.dead.get(&id) else {
            return Err(RedriveError::NotFound(mid));
        };
        if d.expires_at.is_some_and(|e| e <= now) {
            return Err(RedriveError::Expired(mid));
        }
        if let Some(holder) = d.key.as_deref().and_then(|k| self.key_holder(k)) {
            return Err(RedriveError::KeyTaken {
                id: mid,
                holder: MessageId_of(holder),
            });
        }
        if self.cfg.capacity.is_some_and(|c| self.live() >= c) {
            return Err(RedriveError::Full(mid));
        }
        let d = self.dead.remove(&id).unwrap();
        self.totals.redriven += 1;
        let slot = self.alloc_slot();
        let it = &mut self.items[id as usize];
        it.item = d.item;
        it.slot = slot;
        it.attempts = 0;
        it.ended = End::Redriven;
        it.last_error = d.last_error;
        it.level = d.priority;
        it.key = d.key;
        self.set_ready(id as usize);
        Ok(id)
    }

    fn redrive_all(&mut self, t: u64) -> usize {
        self.advance(t);
        let ids: Vec<u64> = self.dead.keys().copied().collect();
        let mut n = 0;
        for id in ids {
            match self.redrive(id, t) {
                Ok(_) => n += 1,
                Err(RedriveError::Full(_)) => break,
                Err(_) => {}
            }
        }
        n
    }

    fn take_dead_letter(&mut self, id: u64) -> Option<MDead> {
        let d = self.dead.remove(&id)?;
        self.totals.taken += 1;
        Some(d)
    }
}

/// `MessageId`s cannot be made from outside the crate; the test collects real ones from
/// pushes (both queues number from 0) and looks them up here.
#[allow(non_snake_case)]
fn MessageId_of(id: u64) -> MessageId {
    IDS.with(|ids| {
        ids.borrow()
            .get(id as usize)
            .copied()
            .unwrap_or_else(|| panic!("test bug: no MessageId {id} collected yet"))
    })
}

thread_local! {
    static IDS: std::cell::RefCell<Vec<MessageId>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn note_id(id: MessageId) {
    IDS.with(|ids| {
        let mut ids = ids.borrow_mut();
        let n = id.get() as usize;
        if n == ids.len() {
            ids.push(id);
        }
        assert_eq!(ids[n], id);
    });
}

fn known_ids() -> usize {
    IDS.with(|ids| ids.borrow().len())
}

thread_local! {
    /// How often each kind of outcome came up, so that a strategy that stops reaching an
    /// outcome fails the test instead of silently testing less.
    static COV: std::cell::RefCell<BTreeMap<String, u64>> = const { std::cell::RefCell::new(BTreeMap::new()) };
}

fn cov(key: &str) {
    COV.with(|c| *c.borrow_mut().entry(key.to_string()).or_default() += 1);
}

/// Records `op: <outer variant>(<inner variant>` of a result, e.g. `ack: Err(Redelivered`.
fn cov_result<T: std::fmt::Debug>(op: &str, r: &T) {
    let d = format!("{r:?}");
    let mut key = format!("{op}: ");
    let mut parens = 0;
    for c in d.chars() {
        if c == '(' && parens == 0 {
            parens += 1;
        } else if !c.is_alphabetic() {
            break;
        }
        key.push(c);
    }
    cov(&key);
}

fn dead_view<T: Copy + Into<Item>>(d: &DeadLetter<T>) -> (u64, MDead) {
    (
        d.id.get(),
        MDead {
            item: d.item.into(),
            attempts: d.attempts,
            reason: d.reason,
            last_error: d.last_error.clone(),
            at: d.at.as_nanos(),
            expires_at: d.expires_at.map(Timestamp::as_nanos),
            priority: d.priority,
            key: d.key.map(|k| k.as_bytes().to_vec()),
        },
    )
}

// ===================================================================================
// Operations
// ===================================================================================

#[derive(Clone, Debug)]
enum Time {
    Same,
    Fwd(u64),
    Back(u64),
}

#[derive(Clone, Debug)]
enum FailKind {
    Error,
    TimedOut,
    Dropped,
    Reason(Reason),
    ReasonAndError(Reason),
}

#[derive(Clone, Debug)]
enum Op {
    Push,
    PushDelayed(Duration),
    /// Expiry relative to the call's time (negative: already past), or `None` for
    /// `Timestamp::MAX`.
    PushWith(Duration, Option<i64>),
    Receive,
    ReceiveMany(usize),
    Ack(Index),
    AckMany(Vec<Index>),
    Nack(Index, FailKind, Option<Duration>),
    Extend(Index, Duration),
    Release(Index),
    DeadLetter(Index, bool),
    HandleTimeout,
    /// Jump the clock to `poll_timeout` and call `handle_timeout` there; to
    /// `Timestamp::MAX` ("never") only if the flag is set.
    Wake(bool),
    PollTimeout,
    PollEvents(usize),
    Redrive(Index),
    RedriveAll,
    TakeDeadLetter(Index),
    TakeDeadLetters,
    /// Push to and receive from a second queue, for a foreign receipt.
    Foreign,
    /// A push with a level (8: out of range), a key (see `key_of`), `replace_pending`, a
    /// delay and maybe an expiry.
    PushOpts {
        delay: Duration,
        expiry: Option<Option<i64>>,
        level: u8,
        key: Option<u8>,
        replace: bool,
    },
    /// Cancel a known id (or one past them); the flag: `cancel_leased`.
    Cancel(Index, bool),
}

/// The small key space of the model: duplicates are frequent. Index 3 is a key one byte too
/// long.
fn key_of(k: Option<u8>) -> MKey {
    match k {
        None => MKey::None,
        Some(3) => MKey::TooLong(UniqueKey::MAX_LEN + 1),
        Some(n) => MKey::Key(format!("k{n}").into_bytes()),
    }
}

/// The keys of the model's key space.
const KEYS: [&str; 3] = ["k0", "k1", "k2"];

fn dur() -> impl Strategy<Value = Duration> {
    prop_oneof![
        4 => prop::sample::select(vec![0u64, 1, 5, 5, 10, 10, 20, 40]).prop_map(Duration::from_nanos),
        1 => Just(Duration::MAX),
    ]
}

fn reason() -> impl Strategy<Value = Reason> {
    prop::sample::select(vec![
        Reason::LeaseExpired,
        Reason::Nacked,
        Reason::TimedOut,
        Reason::Dropped,
        Reason::Released,
        Reason::Rejected,
        Reason::Expired,
    ])
}

fn fail_kind() -> impl Strategy<Value = FailKind> {
    prop_oneof![
        Just(FailKind::Error),
        Just(FailKind::TimedOut),
        Just(FailKind::Dropped),
        reason().prop_map(FailKind::Reason),
        reason().prop_map(FailKind::ReasonAndError),
    ]
}

fn time() -> impl Strategy<Value = Time> {
    prop_oneof![
        4 => Just(Time::Same),
        5 => prop::sample::select(vec![1u64, 5, 5, 5, 10, 10, 20, 50]).prop_map(Time::Fwd),
        1 => prop::sample::select(vec![1u64, 5, 10, 1000]).prop_map(Time::Back),
    ]
}

fn push_opts() -> impl Strategy<Value = Op> {
    (
        prop_oneof![3 => Just(Duration::ZERO), 1 => dur()],
        prop_oneof![
            4 => Just(None),
            1 => prop::sample::select(vec![-5i64, 0, 5, 20]).prop_map(|e| Some(Some(e))),
        ],
        prop_oneof![20 => 0u8..=7, 1 => Just(8u8)],
        prop_oneof![2 => Just(None), 6 => (0u8..3).prop_map(Some), 1 => Just(Some(3u8))],
        prop::bool::weighted(0.3),
    )
        .prop_map(|(delay, expiry, level, key, replace)| Op::PushOpts {
            delay,
            expiry,
            level,
            key,
            replace,
        })
}

fn op() -> impl Strategy<Value = Op> {
    let idx = any::<Index>;
    prop_oneof![
        5 => push_opts(),
        2 => (idx(), any::<bool>()).prop_map(|(i, l)| Op::Cancel(i, l)),
        6 => Just(Op::Push),
        2 => dur().prop_map(Op::PushDelayed),
        3 => (dur(), prop_oneof![
            4 => prop::sample::select(vec![-5i64, 0, 5, 10, 10, 20, 40]).prop_map(Some),
            1 => Just(None),
        ]).prop_map(|(d, e)| Op::PushWith(d, e)),
        6 => Just(Op::Receive),
        2 => (0usize..4).prop_map(Op::ReceiveMany),
        5 => idx().prop_map(Op::Ack),
        1 => prop::collection::vec(idx(), 0..4).prop_map(Op::AckMany),
        3 => (idx(), fail_kind(), prop::option::of(dur())).prop_map(|(i, k, r)| Op::Nack(i, k, r)),
        3 => (idx(), dur()).prop_map(|(i, d)| Op::Extend(i, d)),
        2 => idx().prop_map(Op::Release),
        1 => (idx(), any::<bool>()).prop_map(|(i, e)| Op::DeadLetter(i, e)),
        2 => Just(Op::HandleTimeout),
        3 => prop::bool::weighted(0.1).prop_map(Op::Wake),
        1 => Just(Op::PollTimeout),
        2 => (1usize..5).prop_map(Op::PollEvents),
        2 => idx().prop_map(Op::Redrive),
        1 => Just(Op::RedriveAll),
        1 => idx().prop_map(Op::TakeDeadLetter),
        1 => Just(Op::TakeDeadLetters),
        1 => Just(Op::Foreign),
    ]
}

fn config() -> impl Strategy<Value = MConfig> {
    let vis = prop_oneof![
        12 => prop::sample::select(vec![5u64, 10, 10, 20]).prop_map(Duration::from_nanos),
        1 => Just(Duration::MAX),
    ];
    let backoff = prop_oneof![
        Just(MBackoff::None),
        prop::sample::select(vec![0u64, 5, 10])
            .prop_map(|n| MBackoff::Fixed(Duration::from_nanos(n))),
        Just(MBackoff::Fixed(Duration::MAX)),
        (
            prop::sample::select(vec![0u64, 1, 5, 10]),
            1u32..4,
            prop::option::of(prop::sample::select(vec![1u64, 2, 4, 8])),
        )
            .prop_map(|(base, factor, mul)| MBackoff::Exp {
                base: Duration::from_nanos(base),
                factor,
                max: mul.map_or(Duration::MAX, |m| Duration::from_nanos(base * m)),
            }),
    ];
    (
        vis,
        1u32..=4,
        backoff,
        prop::option::of(prop::sample::select(vec![0u64, 5, 20])),
        prop::option::of(1usize..=5),
        prop::sample::select(vec![0usize, 1, 3, 8, 4096]),
    )
        .prop_map(
            |(visibility, max_attempts, backoff, extra, capacity, event_capacity)| MConfig {
                visibility,
                max_attempts,
                backoff,
                max_lease: extra.map(|e| visibility.saturating_add(Duration::from_nanos(e))),
                capacity,
                event_capacity,
            },
        )
}

#[derive(Clone, Debug)]
struct Case {
    cfg: MConfig,
    /// Compare `poll_timeout` after every step (it cleans index fronts, so half the cases
    /// leave it alone to keep stale entries around).
    poll_every_step: bool,
    steps: Vec<(Time, Op)>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        config(),
        any::<bool>(),
        prop::collection::vec((time(), op()), 1..60),
    )
        .prop_map(|(cfg, poll_every_step, steps)| Case {
            cfg,
            poll_every_step,
            steps,
        })
}

// ===================================================================================
// The runner
// ===================================================================================

struct Harness {
    q: Queue<Item>,
    other: Queue<Item>,
    m: Model,
    clock: u64,
    receipts: Vec<RRec>,
    next_item: Item,
}

impl Harness {
    fn new(cfg: &MConfig) -> Self {
        Harness {
            q: Queue::new(cfg.to_crate()).expect("valid config"),
            other: Queue::new(cfg.to_crate()).expect("valid config"),
            m: Model::new(cfg.clone()),
            clock: 0,
            receipts: Vec::new(),
            next_item: 1000,
        }
    }

    fn receipt(&self, i: &Index) -> Option<RRec> {
        (!self.receipts.is_empty()).then(|| self.receipts[i.index(self.receipts.len())])
    }

    fn check_lease(&mut self, got: leaseq_core::Lease<Item>, want: MLease) {
        assert_eq!(
            (
                got.item,
                got.id.get(),
                got.attempt,
                got.deadline.as_nanos(),
                got.expires_at.map(Timestamp::as_nanos),
            ),
            (
                want.item,
                want.id,
                want.attempt,
                want.deadline,
                want.expires_at
            ),
            "lease"
        );
        cov(if want.attempt > 1 {
            "receive: redelivery"
        } else {
            "receive: first"
        });
        if want.deadline < add(self.m.now, self.m.cfg.visibility) {
            cov("receive: deadline cut by max_lease or expiry");
        }
        assert_eq!(got.receipt.id(), got.id);
        assert_eq!(got.receipt.lease_number(), want.lease);
        self.receipts.push(RRec {
            receipt: got.receipt,
            foreign: false,
            id: want.id,
            lease: want.lease,
            slot: want.slot,
        });
    }

    /// A push; `opts` (level, key, replace) only for `Op::PushOpts`, which goes through
    /// `push_take` so that a replaced item can be checked.
    fn push(
        &mut self,
        t: u64,
        delay: Duration,
        expiry: Option<Option<i64>>,
        opts: Option<(u8, Option<u8>, bool)>,
    ) {
        let item = self.next_item;
        self.next_item += 1;
        let expires_at = expiry.map(|e| match e {
            Some(off) => t.saturating_add_signed(off),
            None => NEVER,
        });
        let (level, key, replace) = opts.unwrap_or((0, None, false));
        // Every third push with options comes from a caller that waits for room.
        let waits = opts.is_some() && item % 3 == 0;
        let mkey = key_of(key);
        let got = match (opts, expiry) {
            (None, None) if delay.is_zero() => self.q.push(item, ts(t)).map(|id| (id, None)),
            (None, None) => self.q.push_delayed(item, ts(t), delay).map(|id| (id, None)),
            _ => {
                let mut o = PushOptions::new().delay(delay).priority(level);
                if let Some(e) = expires_at {
                    o = o.expires_at(ts(e));
                }
                match &mkey {
                    MKey::None => {}
                    MKey::Key(k) => o = o.key(k),
                    MKey::TooLong(n) => o = o.key(vec![b'x'; *n]),
                }
                if replace {
                    o = o.replace_pending();
                }
                if waits {
                    o = o.waits_for_room();
                }
                if opts.is_some() {
                    self.q.push_take(item, ts(t), o).map(|p| (p.id, p.replaced))
                } else {
                    self.q.push_with(item, ts(t), o).map(|id| (id, None))
                }
            }
        };
        let want = self
            .m
            .push(item, t, delay, expires_at, level, &mkey, replace, waits);
        match (got, want) {
            (Ok((id, replaced)), Ok((mid, mreplaced))) => {
                cov("push: Ok");
                note_id(id);
                assert_eq!(id.get(), mid, "push id");
                let mreplaced = mreplaced.map(|o| (MessageId_of(o), self.m.items[o as usize].item));
                assert_eq!(replaced, mreplaced, "replaced");
                if replaced.is_some() {
                    cov("push: replaced a pending item");
                }
            }
            (Err(PushError::Full(back)), Err(MPushError::Full)) => {
                cov("push: Full");
                assert_eq!(back, item);
            }
            (Err(PushError::AlreadyExpired(back)), Err(MPushError::Expired)) => {
                cov("push: AlreadyExpired");
                assert_eq!(back, item);
            }
            (
                Err(PushError::PriorityOutOfRange { item: back, level }),
                Err(MPushError::Level(l)),
            ) => {
                cov("push: PriorityOutOfRange");
                assert_eq!((back, level), (item, l));
            }
            (Err(PushError::KeyTooLong { item: back, len }), Err(MPushError::KeyTooLong(l))) => {
                cov("push: KeyTooLong");
                assert_eq!((back, len), (item, l));
            }
            (
                Err(PushError::DuplicateKey {
                    item: back,
                    existing,
                }),
                Err(MPushError::Duplicate(holder)),
            ) => {
                cov(if replace {
                    "push: DuplicateKey (holder in flight)"
                } else {
                    "push: DuplicateKey"
                });
                assert_eq!((back, existing.get()), (item, holder));
            }
            (got, want) => panic!("push: queue {got:?}, model {want:?}"),
        }
    }

    fn step(&mut self, time: &Time, op: &Op) {
        let t = match *time {
            Time::Same => self.clock,
            Time::Fwd(d) => {
                self.clock = self.clock.saturating_add(d);
                self.clock
            }
            Time::Back(d) => self.clock.saturating_sub(d),
        };
        if t < self.q.now().as_nanos() {
            cov("time: earlier than already seen");
        }
        if t == NEVER {
            cov("time: Timestamp::MAX");
        }
        match op {
            Op::Push => self.push(t, Duration::ZERO, None, None),
            Op::PushDelayed(d) => self.push(t, *d, None, None),
            Op::PushWith(d, e) => self.push(t, *d, Some(*e), None),
            Op::PushOpts {
                delay,
                expiry,
                level,
                key,
                replace,
            } => self.push(t, *delay, *expiry, Some((*level, *key, *replace))),
            Op::Cancel(i, leased) => {
                // Known ids and two past them (never pushed).
                let k = i.index(known_ids() + 2) as u64;
                let id = MessageId::new(k);
                let (got, want) = if *leased {
                    (self.q.cancel_leased(id, ts(t)), self.m.cancel(k, t, true))
                } else {
                    (self.q.cancel(id, ts(t)), self.m.cancel(k, t, false))
                };
                assert_eq!(got, want, "cancel {id} (leased: {leased})");
                cov_result(if *leased { "cancel_leased" } else { "cancel" }, &got);
            }
            Op::Receive => {
                let got = self.q.receive(ts(t));
                self.m.advance(t);
                let want = self.m.receive_one();
                match (got, want) {
                    (Some(g), Some(w)) => self.check_lease(g, w),
                    (None, None) => {}
                    (g, w) => panic!("receive: queue {g:?}, model {w:?}"),
                }
            }
            Op::ReceiveMany(max) => {
                let mut out = Vec::new();
                let n = self.q.receive_many(ts(t), *max, &mut out);
                assert_eq!(n, out.len());
                self.m.advance(t);
                let mut want = Vec::new();
                while want.len() < *max {
                    match self.m.receive_one() {
                        Some(l) => want.push(l),
                        None => break,
                    }
                }
                assert_eq!(n, want.len(), "receive_many count");
                for (g, w) in out.into_iter().zip(want) {
                    self.check_lease(g, w);
                }
            }
            Op::Ack(i) => {
                if let Some(r) = self.receipt(i) {
                    let got = self.q.ack(r.receipt, ts(t));
                    let want = self.m.ack(&r, t);
                    assert_eq!(got, want, "ack");
                    cov_result("ack", &got);
                }
            }
            Op::AckMany(is) => {
                let rs: Vec<RRec> = is.iter().filter_map(|i| self.receipt(i)).collect();
                let receipts: Vec<Receipt> = rs.iter().map(|r| r.receipt).collect();
                let got = self.q.ack_many(&receipts, ts(t));
                // One time step for the whole batch (applied even when it is empty).
                self.m.advance(t);
                let want = rs.iter().filter(|r| self.m.ack(r, t).is_ok()).count();
                assert_eq!(got, want, "ack_many");
                if got > 0 && got < rs.len() {
                    cov("ack_many: some accepted, some refused");
                }
            }
            Op::Nack(i, kind, retry) => {
                if let Some(r) = self.receipt(i) {
                    let n = self.next_item;
                    self.next_item += 1;
                    let (mut f, reason, error) = match kind {
                        FailKind::Error => (
                            Failure::error(format!("e{n}")),
                            Reason::Nacked,
                            Some(format!("e{n}")),
                        ),
                        FailKind::TimedOut => (Failure::timed_out(), Reason::TimedOut, None),
                        FailKind::Dropped => (Failure::dropped(), Reason::Dropped, None),
                        FailKind::Reason(r) => (Failure::with_reason(*r), *r, None),
                        FailKind::ReasonAndError(r) => (
                            Failure::with_reason(*r).and_error(format!("r{n}")),
                            *r,
                            Some(format!("r{n}")),
                        ),
                    };
                    if let Some(d) = retry {
                        f = f.retry_after(*d);
                    }
                    let got = self.q.nack(r.receipt, ts(t), f);
                    let want = self.m.nack(&r, t, reason, error, *retry);
                    assert_eq!(got, want, "nack");
                    cov_result("nack", &got);
                    if retry.is_some() && matches!(got, Ok(Nacked::Retrying { .. })) {
                        cov("nack: retry_after");
                    }
                }
            }
            Op::Extend(i, d) => {
                if let Some(r) = self.receipt(i) {
                    let got = self.q.extend(r.receipt, ts(t), *d);
                    let want = self.m.extend(&r, t, *d);
                    assert_eq!(got, want, "extend by {d:?}");
                    cov_result("extend", &got);
                    if let Ok(Extended::Until { capped: true, .. }) = got {
                        cov("extend: capped");
                    }
                }
            }
            Op::Release(i) => {
                if let Some(r) = self.receipt(i) {
                    let got = self.q.release(r.receipt, ts(t));
                    let want = self.m.release(&r, t);
                    assert_eq!(got, want, "release");
                    cov_result("release", &got);
                }
            }
            Op::DeadLetter(i, with_error) => {
                if let Some(r) = self.receipt(i) {
                    let err = with_error.then(|| format!("poison{}", self.next_item));
                    self.next_item += 1;
                    let got = self.q.dead_letter(r.receipt, ts(t), err.clone());
                    let want = self.m.dead_letter(&r, t, err);
                    assert_eq!(got, want, "dead_letter");
                    cov_result("dead_letter", &got);
                }
            }
            Op::HandleTimeout => {
                self.q.handle_timeout(ts(t));
                self.m.advance(t);
            }
            Op::Wake(to_never) => {
                let got = self.q.poll_timeout().map(Timestamp::as_nanos);
                assert_eq!(got, self.m.poll_timeout(), "poll_timeout");
                if let Some(at) = got.filter(|&at| at != NEVER || *to_never) {
                    self.clock = self.clock.max(at);
                }
                self.q.handle_timeout(ts(self.clock));
                self.m.advance(self.clock);
            }
            Op::PollTimeout => {
                let got = self.q.poll_timeout().map(Timestamp::as_nanos);
                assert_eq!(got, self.m.poll_timeout(), "poll_timeout");
            }
            Op::PollEvents(n) => {
                for _ in 0..*n {
                    let got = self.q.poll_event();
                    assert_eq!(got, self.m.events.pop_front(), "poll_event");
                    if let Some(e) = got {
                        cov_result("event", &e);
                    }
                }
            }
            Op::Redrive(i) => {
                let n = known_ids();
                if n > 0 {
                    let k = i.index(n);
                    let id = MessageId_of(k as u64);
                    let got = self.q.redrive(id, ts(t)).map(MessageId::get);
                    let want = self.m.redrive(k as u64, t);
                    assert_eq!(got, want, "redrive {id}");
                    cov_result("redrive", &got);
                }
            }
            Op::RedriveAll => {
                let got = self.q.redrive_all(ts(t));
                let want = self.m.redrive_all(t);
                assert_eq!(got, want, "redrive_all");
                if got > 0 {
                    cov("redrive_all: some");
                }
            }
            Op::TakeDeadLetter(i) => {
                let n = known_ids();
                if n > 0 {
                    let k = i.index(n) as u64;
                    let got = self
                        .q
                        .take_dead_letter(MessageId_of(k))
                        .map(|d| dead_view(&d));
                    let want = self.m.take_dead_letter(k).map(|d| (k, d));
                    assert_eq!(got, want, "take_dead_letter");
                    cov_result("take_dead_letter", &got.is_some());
                }
            }
            Op::TakeDeadLetters => {
                let got: Vec<_> = self.q.take_dead_letters().iter().map(dead_view).collect();
                let want: Vec<_> = std::mem::take(&mut self.m.dead).into_iter().collect();
                self.m.totals.taken += want.len() as u64;
                assert_eq!(got, want, "take_dead_letters");
                if !got.is_empty() {
                    cov("take_dead_letters: some");
                }
            }
            Op::Foreign => {
                let item = self.next_item;
                self.next_item += 1;
                if let Ok(id) = self.other.push(item, ts(t)) {
                    note_id(id);
                }
                if let Some(l) = self.other.receive(ts(t)) {
                    self.receipts.push(RRec {
                        receipt: l.receipt,
                        foreign: true,
                        id: l.id.get(),
                        lease: l.receipt.lease_number(),
                        slot: u32::MAX,
                    });
                }
            }
        }
    }

    fn compare(&mut self, poll: bool) {
        if let Err(e) = self.q.check_invariants() {
            panic!("invariants: {e}");
        }
        assert_eq!(self.q.stats(), self.m.stats(), "stats");
        assert_eq!(self.q.now().as_nanos(), self.m.now, "now");
        assert_eq!(self.q.len(), self.m.live(), "len");
        assert_eq!(
            self.q.ready_per_level(),
            self.m.ready_per_level(),
            "ready per level"
        );
        for key in KEYS {
            assert_eq!(
                self.q.key_holder(key).map(MessageId::get),
                self.m.key_holder(key.as_bytes()),
                "holder of {key}"
            );
        }
        let got: Vec<_> = self.q.dead_letters().map(dead_view).collect();
        let want: Vec<_> = self.m.dead.iter().map(|(k, v)| (*k, v.clone())).collect();
        assert_eq!(got, want, "dead letters");
        let sizes = self.q.index_sizes();
        if sizes
            .leases
            .max(sizes.delays)
            .max(sizes.expiries)
            .max(sizes.ready)
            > 66
        {
            cov("index: past the compaction slack");
        }
        if poll {
            let got = self.q.poll_timeout().map(Timestamp::as_nanos);
            assert_eq!(got, self.m.poll_timeout(), "poll_timeout");
        }
    }
}

fn run_case(case: &Case) {
    IDS.with(|ids| ids.borrow_mut().clear());
    let mut h = Harness::new(&case.cfg);
    for (time, op) in &case.steps {
        h.step(time, op);
        h.compare(case.poll_every_step);
    }
    // Every event, in order.
    loop {
        let (g, w) = (h.q.poll_event(), h.m.events.pop_front());
        assert_eq!(g, w, "final events");
        if g.is_none() {
            break;
        }
    }
    // Every pushed item is in exactly one place: live, dead-lettered, or gone (acked or
    // taken), and the queue's counts of each agree.
    let mut pushed: BTreeSet<u64> = (0..h.m.items.len() as u64).collect();
    let mut live = Vec::new();
    for it in &h.m.items {
        if it.state != St::Gone {
            live.push(it.id);
        }
    }
    for id in h.m.dead.keys() {
        assert!(pushed.remove(id), "dead letter {id} is also elsewhere");
    }
    for id in live {
        assert!(pushed.remove(&id), "live item {id} is also elsewhere");
    }
    let s = h.q.stats();
    if s.events_dropped > 0 {
        cov("events: dropped");
    }
    assert_eq!(
        pushed.len() as u64,
        s.acked + s.taken + s.cancelled,
        "acked + taken + cancelled"
    );
    assert_eq!(s.pushed, h.m.items.len() as u64, "pushed");
}

/// Runs `cases` random cases against the model, then checks that every kind of outcome
/// came up at least once.
fn run_model(config: ProptestConfig, strategy: impl Strategy<Value = Case>, expect: &[&str]) {
    COV.with(|c| c.borrow_mut().clear());
    let mut runner = TestRunner::new(config);
    if let Err(e) = runner.run(&strategy, |case| {
        run_case(&case);
        Ok(())
    }) {
        panic!("{e}");
    }
    let seen = COV.with(|c| c.borrow().clone());
    if std::env::var_os("MODEL_COVERAGE").is_some() {
        eprintln!("{seen:#?}");
    }
    let missing: Vec<_> = expect.iter().filter(|k| !seen.contains_key(**k)).collect();
    assert!(
        missing.is_empty(),
        "outcomes never reached: {missing:?}\nreached: {seen:#?}"
    );
}

/// Outcomes every run must reach.
const EXPECTED: &[&str] = &[
    "push: Ok",
    "push: Full",
    "push: AlreadyExpired",
    "receive: first",
    "receive: redelivery",
    "receive: deadline cut by max_lease or expiry",
    "ack: Ok(OnTime",
    "ack: Ok(LateUnclaimed",
    "ack: Err(Redelivered",
    "ack: Err(DeadLettered",
    "ack: Err(AlreadyAcked",
    "ack: Err(Released",
    "ack: Err(Unknown",
    "ack_many: some accepted, some refused",
    "nack: Ok(Retrying",
    "nack: Ok(DeadLettered",
    "nack: Err(LeaseExpired",
    "nack: retry_after",
    "extend: Ok(Until",
    "extend: Ok(Released",
    "extend: Err(LeaseExpired",
    "extend: capped",
    "release: Ok(Retrying",
    "release: Ok(DeadLettered",
    "dead_letter: Ok(",
    "dead_letter: Err(Redelivered",
    "redrive: Ok(",
    "redrive: Err(NotFound",
    "redrive: Err(Expired",
    "redrive: Err(Full",
    "redrive_all: some",
    "take_dead_letter: true",
    "take_dead_letters: some",
    "receipt: foreign",
    "receipt: slot reused, fate forgotten",
    "receipt: item redriven into the same slot",
    "due: two timers at one instant",
    "due: expiry of a waiting item",
    "retry: visible before the current time",
    "dead letter: LeaseExpired",
    "dead letter: Nacked",
    "dead letter: TimedOut",
    "dead letter: Dropped",
    "dead letter: Released",
    "dead letter: Rejected",
    "dead letter: Expired",
    "event: Delivered",
    "event: Redelivered",
    "event: LeaseExpired",
    "event: DeadLettered",
    "event: LateAck",
    "event: ExtensionCapped",
    "events: dropped",
    "time: earlier than already seen",
    "time: Timestamp::MAX",
    "push: PriorityOutOfRange",
    "push: KeyTooLong",
    "push: DuplicateKey",
    "push: DuplicateKey (holder in flight)",
    "push: replaced a pending item",
    "receive: level above 0",
    "receive: a higher level overtakes an older lower one",
    "cancel: Ok(",
    "cancel: Err(InFlight",
    "cancel: Err(DeadLettered",
    "cancel: Err(NotFound",
    "cancel_leased: Ok(",
    "cancel_leased: an item in flight",
    "ack: Err(Cancelled",
    "redrive: Err(KeyTaken",
    "receipt: cancelled",
    "event: Cancelled",
    "event: Replaced",
];

/// The queue and the reference model agree on every result, event, stat and dead letter,
/// and the queue's own invariants hold after every step. 10,000 short cases.
#[test]
fn queue_matches_model() {
    run_model(seed_config(10_000, 0x0001_ea5e_c0de), case(), EXPECTED);
}

/// Operations for the long cases, in phases: `fill` pushes and receives many items,
/// otherwise settle them (acks and nacks with random, often stale, receipts, out of order).
fn op_phase(fill: bool) -> impl Strategy<Value = Op> {
    let (f, s) = if fill { (8, 1) } else { (1, 8) };
    let idx = any::<Index>;
    prop_oneof![
        f => Just(Op::Push),
        f => Just(Op::Receive),
        f => (1usize..4).prop_map(Op::ReceiveMany),
        f => (dur(), prop::sample::select(vec![Some(10i64), Some(100), Some(1000), None]))
            .prop_map(|(d, e)| Op::PushWith(d, e)),
        s => idx().prop_map(Op::Ack),
        1 => prop::collection::vec(idx(), 0..4).prop_map(Op::AckMany),
        s => (idx(), fail_kind(), prop::option::of(dur())).prop_map(|(i, k, r)| Op::Nack(i, k, r)),
        s => (idx(), any::<bool>()).prop_map(|(i, e)| Op::DeadLetter(i, e)),
        1 => (idx(), dur()).prop_map(|(i, d)| Op::Extend(i, d)),
        1 => idx().prop_map(Op::Release),
        1 => Just(Op::Wake(false)),
        1 => Just(Op::HandleTimeout),
        1 => idx().prop_map(Op::Redrive),
        1 => Just(Op::RedriveAll),
        1 => (1usize..5).prop_map(Op::PollEvents),
        1 => Just(Op::Foreign),
        f => push_opts(),
        1 => (idx(), any::<bool>()).prop_map(|(i, l)| Op::Cancel(i, l)),
    ]
}

fn phase(fill: bool) -> impl Strategy<Value = Vec<(Time, Op)>> {
    let time = prop_oneof![
        9 => Just(Time::Same),
        1 => prop::sample::select(vec![1u64, 5, 10]).prop_map(Time::Fwd),
    ];
    prop::collection::vec((time, op_phase(fill)), 150..250)
}

/// Fewer, longer cases in fill and settle phases: enough items and stale index entries for
/// the indexes to pass their compaction slack and shrink again, which short cases never
/// reach.
#[test]
fn queue_matches_model_long() {
    let strategy = (
        config(),
        any::<bool>(),
        (phase(true), phase(false), phase(true), phase(false)),
    )
        .prop_map(|(mut cfg, poll_every_step, (a, b, c, d))| {
            // Long leases, so that many are held at once.
            cfg.capacity = None;
            cfg.visibility = cfg.visibility.saturating_mul(50);
            cfg.max_lease = cfg.max_lease.map(|m| m.saturating_mul(50));
            Case {
                cfg,
                poll_every_step,
                steps: [a, b, c, d].concat(),
            }
        });
    run_model(
        seed_config(64, 0x0010_c0de),
        strategy,
        &["index: past the compaction slack", "ack: Ok(OnTime"],
    );
}

// ===================================================================================
// Jitter determinism
// ===================================================================================

/// Runs `ops` against a queue with `cfg` and writes every observable result to a log.
fn jitter_log(cfg: Config, ops: &[(u64, u8, Index)]) -> (String, Vec<(u64, Nacked)>) {
    let mut q: Queue<u32> = Queue::new(cfg).unwrap();
    let mut log = String::new();
    let mut receipts: Vec<Receipt> = Vec::new();
    let mut retries = Vec::new();
    let mut now = 0u64;
    for (i, (dt, kind, idx)) in ops.iter().enumerate() {
        now += dt;
        let t = ts(now);
        match kind % 5 {
            0 => writeln!(log, "push {:?}", q.push(i as u32, t).map(|id| id.get())).unwrap(),
            1 => {
                let l = q.receive(t);
                writeln!(
                    log,
                    "receive {:?}",
                    l.as_ref().map(|l| (l.id, l.attempt, l.deadline))
                )
                .unwrap();
                receipts.extend(l.map(|l| l.receipt));
            }
            2 if !receipts.is_empty() => {
                let r = receipts[idx.index(receipts.len())];
                let res = q.nack(r, t, Failure::error("x"));
                if let Ok(n) = res {
                    retries.push((now, n));
                }
                writeln!(log, "nack {res:?}").unwrap();
            }
            3 if !receipts.is_empty() => {
                let r = receipts[idx.index(receipts.len())];
                writeln!(log, "ack {:?}", q.ack(r, t)).unwrap();
            }
            _ => {
                q.handle_timeout(t);
                writeln!(log, "timeout {:?}", q.poll_timeout()).unwrap();
            }
        }
        writeln!(log, "{:?}", q.stats()).unwrap();
        while let Some(e) = q.poll_event() {
            writeln!(log, "{e:?}").unwrap();
        }
        q.check_invariants().unwrap();
    }
    (log, retries)
}

proptest! {
    #![proptest_config(seed_config(500, 0x7177e5))]

    /// Two queues with the same jitter seed and the same calls give identical results;
    /// jittered retries stay within `[d × (1 - p), d]` of the backoff delay.
    #[test]
    fn jitter_is_deterministic(
        seed in any::<u64>(),
        percent in 0u8..=100,
        fixed in any::<bool>(),
        ops in prop::collection::vec(
            (prop::sample::select(vec![0u64, 0, 1000, 5000, 20_000]), any::<u8>(), any::<Index>()),
            1..80,
        ),
    ) {
        let d = Duration::from_nanos(10_000);
        let backoff = if fixed {
            Backoff::Fixed(d)
        } else {
            Backoff::exponential(d, Duration::from_nanos(80_000))
        };
        let cfg = Config::new(Duration::from_nanos(50_000))
            .with_max_attempts(6)
            .with_backoff(backoff)
            .with_jitter(Jitter::new(percent, seed))
            .with_events(EventMask::ALL);
        let (a, retries) = jitter_log(cfg.clone(), &ops);
        let (b, _) = jitter_log(cfg, &ops);
        prop_assert_eq!(&a, &b);
        for (at, n) in retries {
            if let Nacked::Retrying { visible_at, attempts } = n {
                let full = nanos(backoff.delay(attempts));
                let min = full - full * percent as u64 / 100;
                let got = visible_at.as_nanos() - at;
                prop_assert!(got >= min && got <= full, "delay {} not in [{}, {}]", got, min, full);
            }
        }
    }
}
