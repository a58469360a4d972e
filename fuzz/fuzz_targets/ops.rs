//! Drives a `leaseq_core::Queue` with an arbitrary stream of operations (the same ones as
//! `crates/leaseq-core/tests/model/`, plus jitter and arbitrary durations; priority levels,
//! unique keys, replacement and cancel included), checks `check_invariants()` after every
//! operation, checks what each result promises, and at the end runs the queue dry and checks
//! the conservation partition: every pushed id is in exactly one of acked, dead-lettered
//! (kept or taken), cancelled (or replaced), still queued.
#![no_main]

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use arbitrary::Arbitrary;
use leaseq_core::{
    Acked, Backoff, CancelError, Config, Event, EventMask, Extended, Failure, ItemState, Jitter,
    Lease, MessageId, Nacked, PushError, PushOptions, Queue, Reason, Receipt, ReceiptError,
    RedriveError, Timestamp, UniqueKey, MAX_PRIORITY,
};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Dur {
    Zero,
    Small(u8),
    Nanos(u64),
    Max,
}

impl Dur {
    fn get(self) -> Duration {
        match self {
            Dur::Zero => Duration::ZERO,
            Dur::Small(n) => Duration::from_nanos(n as u64 % 64),
            Dur::Nanos(n) => Duration::from_nanos(n),
            Dur::Max => Duration::MAX,
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum FuzzBackoff {
    None,
    Fixed(Dur),
    Exponential { base: Dur, factor: u8, max: Dur },
}

#[derive(Arbitrary, Debug)]
struct FuzzConfig {
    visibility: Dur,
    max_attempts: u8,
    backoff: FuzzBackoff,
    jitter: Option<(u8, u64)>,
    max_lease_extra: Option<Dur>,
    capacity: Option<u8>,
    events: u8,
    event_capacity: u8,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Time {
    Same,
    Fwd(u8),
    FwdBig(u64),
    Back(u16),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum FailKind {
    Error,
    TimedOut,
    Dropped,
    Reason(u8),
    ReasonAndError(u8),
}

#[derive(Arbitrary, Debug, Clone)]
enum Op {
    Push,
    PushDelayed(Dur),
    PushWith {
        delay: Dur,
        expires_in: Option<i16>,
    },
    Receive,
    ReceiveMany(u8),
    Ack(u16),
    AckMany(Vec<u16>),
    Nack(u16, FailKind, Option<Dur>),
    Extend(u16, Dur),
    Release(u16),
    DeadLetter(u16, bool),
    HandleTimeout,
    Wake(bool),
    PollTimeout,
    PollEvents(u8),
    Redrive(u16),
    RedriveAll,
    TakeDeadLetter(u16),
    TakeDeadLetters,
    Foreign,
    /// A push with a level (any `u8`: above 7 is refused), a key (see `key_bytes`),
    /// `replace_pending`, a delay and maybe an expiry.
    PushOpts {
        delay: Dur,
        expires_in: Option<i16>,
        level: u8,
        key: Option<u8>,
        replace: bool,
    },
    /// Cancel a known id (or one past them); the flag: `cancel_leased`.
    Cancel(u16, bool),
}

/// A small key space (duplicates are frequent), plus keys at and past the length limit.
fn key_bytes(k: u8) -> Vec<u8> {
    match k {
        250..=252 => vec![b'L'; UniqueKey::MAX_LEN],
        253..=255 => vec![b'x'; UniqueKey::MAX_LEN + 1 + (k as usize - 253) * 100],
        n => format!("k{}", n % 4).into_bytes(),
    }
}

#[derive(Arbitrary, Debug)]
struct Input {
    config: FuzzConfig,
    steps: Vec<(Time, Op)>,
}

const REASONS: [Reason; 7] = [
    Reason::LeaseExpired,
    Reason::Nacked,
    Reason::TimedOut,
    Reason::Dropped,
    Reason::Released,
    Reason::Rejected,
    Reason::Expired,
];

const EVENT_KINDS: [EventMask; 8] = [
    EventMask::DELIVERED,
    EventMask::REDELIVERED,
    EventMask::LEASE_EXPIRED,
    EventMask::DEAD_LETTERED,
    EventMask::LATE_ACK,
    EventMask::EXTENSION_CAPPED,
    EventMask::CANCELLED,
    EventMask::REPLACED,
];

fn build_config(c: &FuzzConfig) -> Option<Config> {
    let visibility = c.visibility.get();
    let backoff = match c.backoff {
        FuzzBackoff::None => Backoff::None,
        FuzzBackoff::Fixed(d) => Backoff::Fixed(d.get()),
        FuzzBackoff::Exponential { base, factor, max } => Backoff::Exponential {
            base: base.get(),
            factor: factor as u32,
            max: max.get(),
        },
    };
    let mut events = EventMask::NONE;
    for (i, k) in EVENT_KINDS.iter().enumerate() {
        if c.events & (1 << i) != 0 {
            events = events | *k;
        }
    }
    let mut config = Config::new(visibility)
        .with_max_attempts(c.max_attempts as u32 % 6)
        .with_backoff(backoff)
        .with_events(events)
        .with_event_capacity(c.event_capacity as usize % 16);
    if let Some((percent, seed)) = c.jitter {
        config = config.with_jitter(Jitter::new(percent % 128, seed));
    }
    if let Some(extra) = c.max_lease_extra {
        config = config.with_max_lease(visibility.saturating_add(extra.get()));
    }
    if let Some(cap) = c.capacity {
        config = config.with_capacity(cap as usize % 12);
    }
    // Invalid configs must be refused with a typed error, never panic; nothing to run then.
    match config.validate() {
        Ok(()) => Some(config),
        Err(e) => {
            assert!(Queue::<u32>::new(config).err() == Some(e));
            None
        }
    }
}

struct Driver {
    q: Queue<u32>,
    other: Queue<u32>,
    max_attempts: u32,
    visibility: Duration,
    clock: u64,
    receipts: Vec<Receipt>,
    /// Ids `ack` accepted (one by one).
    acked: BTreeSet<u64>,
    /// How many receipts `ack_many` accepted (it does not say which).
    acked_in_batches: u64,
    /// Ids whose dead letter was taken.
    taken: BTreeSet<u64>,
    /// Ids cancelled or replaced.
    cancelled: BTreeSet<u64>,
    /// Level and key of every id pushed.
    meta: BTreeMap<u64, (u8, Option<Vec<u8>>)>,
    ids: Vec<MessageId>,
    next_item: u32,
}

impl Driver {
    fn note_id(&mut self, id: MessageId) {
        if id.get() as usize == self.ids.len() {
            self.ids.push(id);
        }
    }

    fn receipt(&self, i: u16) -> Option<Receipt> {
        (!self.receipts.is_empty()).then(|| self.receipts[i as usize % self.receipts.len()])
    }

    /// What every lease promises.
    fn check_lease(&mut self, l: &Lease<u32>) {
        let now = self.q.now();
        let id = l.id.get();
        assert!(
            !self.acked.contains(&id),
            "{id} delivered after it was acked"
        );
        assert!(
            !self.taken.contains(&id),
            "{id} delivered after its dead letter was taken"
        );
        assert!(
            !self.cancelled.contains(&id),
            "{id} delivered after it was cancelled"
        );
        assert!(
            l.attempt >= 1 && l.attempt <= self.max_attempts,
            "attempt {}",
            l.attempt
        );
        assert_eq!(l.receipt.id(), l.id);
        if let Some(e) = l.expires_at {
            assert!(
                e > now || now == Timestamp::MAX,
                "expired item {id} delivered"
            );
            assert!(l.deadline <= e, "lease outlives the item's expiry");
        }
        assert!(l.deadline <= now.saturating_add(self.visibility));
        assert!(l.deadline > now || now == Timestamp::MAX);
        self.receipts.push(l.receipt);
    }

    fn step(&mut self, time: Time, op: Op) {
        let t = match time {
            Time::Same => self.clock,
            Time::Fwd(d) => {
                self.clock = self.clock.saturating_add(d as u64 % 32);
                self.clock
            }
            Time::FwdBig(d) => {
                self.clock = self.clock.saturating_add(d);
                self.clock
            }
            Time::Back(d) => self.clock.saturating_sub(d as u64),
        };
        let ts = Timestamp::from_nanos(t);
        let before = self.q.now();
        match op {
            Op::Push | Op::PushDelayed(_) | Op::PushWith { .. } => {
                let item = self.next_item;
                self.next_item += 1;
                let r = match op {
                    Op::Push => self.q.push(item, ts),
                    Op::PushDelayed(d) => self.q.push_delayed(item, ts, d.get()),
                    Op::PushWith { delay, expires_in } => {
                        let mut o = PushOptions::new().delay(delay.get());
                        if let Some(e) = expires_in {
                            o = o.expires_at(Timestamp::from_nanos(
                                t.saturating_add_signed(e as i64),
                            ));
                        }
                        self.q.push_with(item, ts, o)
                    }
                    _ => unreachable!(),
                };
                match r {
                    Ok(id) => {
                        assert_eq!(id.get() as usize, self.ids.len(), "ids in push order");
                        self.note_id(id);
                        self.meta.insert(id.get(), (0, None));
                    }
                    // The item is handed back: nothing lost.
                    Err(PushError::Full(back)) | Err(PushError::AlreadyExpired(back)) => {
                        assert_eq!(back, item)
                    }
                    Err(_) => panic!("unknown push error"),
                }
            }
            Op::Receive => {
                if let Some(l) = self.q.receive(ts) {
                    self.check_lease(&l);
                    self.check_highest_level(&[l]);
                }
            }
            Op::ReceiveMany(max) => {
                let mut out = Vec::new();
                let n = self.q.receive_many(ts, max as usize % 8, &mut out);
                assert_eq!(n, out.len());
                assert!(n <= max as usize % 8);
                for l in &out {
                    self.check_lease(l);
                }
                self.check_highest_level(&out);
            }
            Op::Ack(i) => {
                if let Some(r) = self.receipt(i) {
                    match self.q.ack(r, ts) {
                        Ok(_) => assert!(self.acked.insert(r.id().get()), "acked twice"),
                        Err(ReceiptError::LeaseExpired(_)) => panic!("ack refused as LeaseExpired"),
                        Err(_) => {}
                    }
                }
            }
            Op::AckMany(is) => {
                let rs: Vec<Receipt> = is.iter().filter_map(|i| self.receipt(*i)).collect();
                let n = self.q.ack_many(&rs, ts);
                assert!(n <= rs.len());
                self.acked_in_batches += n as u64;
            }
            Op::Nack(i, kind, retry) => {
                if let Some(r) = self.receipt(i) {
                    let mut f = match kind {
                        FailKind::Error => Failure::error("e"),
                        FailKind::TimedOut => Failure::timed_out(),
                        FailKind::Dropped => Failure::dropped(),
                        FailKind::Reason(n) => Failure::with_reason(REASONS[n as usize % 7]),
                        FailKind::ReasonAndError(n) => {
                            Failure::with_reason(REASONS[n as usize % 7]).and_error("r")
                        }
                    };
                    if let Some(d) = retry {
                        f = f.retry_after(d.get());
                    }
                    let now_before = self.q.now().max(ts);
                    match self.q.nack(r, ts, f) {
                        Ok(Nacked::Retrying {
                            visible_at,
                            attempts,
                        }) => {
                            assert!(attempts < self.max_attempts);
                            assert!(visible_at >= now_before);
                            if let Some(d) = retry {
                                assert_eq!(visible_at, now_before.saturating_add(d.get()));
                            }
                        }
                        Ok(Nacked::DeadLettered { attempts }) => {
                            assert!(attempts >= 1 && attempts <= self.max_attempts);
                            let d = self.q.get_dead_letter(r.id()).expect("dead-lettered");
                            let (level, key) = &self.meta[&r.id().get()];
                            assert_eq!(d.priority, *level, "a dead letter keeps its level");
                            assert_eq!(d.key.map(|k| k.as_bytes().to_vec()), *key, "and its key");
                        }
                        Ok(_) => panic!("unknown Nacked"),
                        Err(_) => {}
                    }
                }
            }
            Op::Extend(i, d) => {
                if let Some(r) = self.receipt(i) {
                    match self.q.extend(r, ts, d.get()) {
                        Ok(Extended::Until { deadline, capped }) => {
                            let wanted = self.q.now().saturating_add(d.get());
                            assert!(deadline <= wanted);
                            assert_eq!(capped, deadline < wanted);
                        }
                        Ok(_) => assert!(d.get().is_zero()),
                        Err(_) => {}
                    }
                }
            }
            Op::Release(i) => {
                if let Some(r) = self.receipt(i) {
                    if let Ok(Nacked::Retrying { visible_at, .. }) = self.q.release(r, ts) {
                        assert_eq!(visible_at, self.q.now(), "release is visible at once");
                    }
                }
            }
            Op::DeadLetter(i, with_error) => {
                if let Some(r) = self.receipt(i) {
                    let err = with_error.then(|| "poison".to_string());
                    if self.q.dead_letter(r, ts, err.clone()).is_ok() {
                        let d = self.q.get_dead_letter(r.id()).expect("dead-lettered");
                        assert_eq!(d.reason, Reason::Rejected);
                        if err.is_some() {
                            assert_eq!(d.last_error, err);
                        }
                    }
                }
            }
            Op::HandleTimeout => {
                self.q.handle_timeout(ts);
                // Twice does nothing.
                let stats = self.q.stats();
                self.q.handle_timeout(ts);
                assert_eq!(stats, self.q.stats());
            }
            Op::Wake(to_never) => {
                if let Some(at) = self.q.poll_timeout() {
                    if at != Timestamp::MAX || to_never {
                        self.clock = self.clock.max(at.as_nanos());
                    }
                }
                self.q.handle_timeout(Timestamp::from_nanos(self.clock));
            }
            Op::PollTimeout => {
                if let Some(at) = self.q.poll_timeout() {
                    let now = self.q.now();
                    assert!(at > now || now == Timestamp::MAX, "{at:?} due at {now:?}");
                }
            }
            Op::PollEvents(n) => {
                for _ in 0..n % 8 {
                    if let Some(Event::Redelivered { attempt, .. }) = self.q.poll_event() {
                        assert!(attempt >= 2);
                    }
                }
            }
            Op::Redrive(i) => {
                if !self.ids.is_empty() {
                    let id = self.ids[i as usize % self.ids.len()];
                    match self.q.redrive(id, ts) {
                        Ok(back) => {
                            assert_eq!(back, id);
                            assert!(!self.taken.contains(&id.get()));
                        }
                        Err(RedriveError::NotFound(_)) => {}
                        Err(RedriveError::KeyTaken { id, holder }) => {
                            let d = self.q.get_dead_letter(id).expect("stays a dead letter");
                            let key = d.key.expect("a letter with a key");
                            assert_eq!(self.q.key_holder(key.as_bytes()), Some(holder));
                        }
                        Err(_) => assert!(self.q.get_dead_letter(id).is_some()),
                    }
                }
            }
            Op::RedriveAll => {
                let redriven = self.q.stats().redriven;
                let n = self.q.redrive_all(ts);
                assert_eq!(self.q.stats().redriven - redriven, n as u64);
            }
            Op::TakeDeadLetter(i) => {
                if !self.ids.is_empty() {
                    let id = self.ids[i as usize % self.ids.len()];
                    if let Some(d) = self.q.take_dead_letter(id) {
                        assert_eq!(d.id, id);
                        assert!(self.taken.insert(id.get()), "taken twice");
                    }
                }
            }
            Op::TakeDeadLetters => {
                for d in self.q.take_dead_letters() {
                    assert!(self.taken.insert(d.id.get()), "taken twice");
                }
            }
            Op::Foreign => {
                let item = self.next_item;
                self.next_item += 1;
                let _ = self.other.push(item, ts);
                if let Some(l) = self.other.receive(ts) {
                    self.receipts.push(l.receipt);
                }
            }
            Op::PushOpts {
                delay,
                expires_in,
                level,
                key,
                replace,
            } => self.push_opts(t, delay, expires_in, level, key, replace),
            Op::Cancel(i, leased) => {
                let k = i as u64 % (self.ids.len() as u64 + 2);
                let id = MessageId::new(k);
                let state = self.q.items().find(|v| v.id == id).map(|v| v.state);
                let r = if leased {
                    self.q.cancel_leased(id, ts)
                } else {
                    self.q.cancel(id, ts)
                };
                match r {
                    Ok(_) => {
                        assert!(self.cancelled.insert(k), "cancelled twice");
                        assert!(!self.acked.contains(&k) && !self.taken.contains(&k));
                        assert!(self.q.items().all(|v| v.id != id), "still queued");
                        if let Some((_, Some(key))) = self.meta.get(&k) {
                            assert_ne!(self.q.key_holder(key), Some(id), "the key is free");
                        }
                    }
                    Err(CancelError::InFlight(_)) => {
                        assert!(!leased);
                        // In flight before (or become so by the time step: not possible, a
                        // time step only makes items visible or dead).
                        assert!(matches!(state, Some(ItemState::InFlight { .. })));
                    }
                    Err(CancelError::DeadLettered(_)) => {
                        assert!(self.q.get_dead_letter(id).is_some())
                    }
                    Err(CancelError::NotFound(_)) => {
                        assert!(self.q.items().all(|v| v.id != id));
                        assert!(self.q.get_dead_letter(id).is_none());
                    }
                    Err(e) => panic!("unknown cancel error {e}"),
                }
            }
        }
        // Time never runs backwards inside the queue.
        assert!(self.q.now() >= before);
        if let Err(e) = self.q.check_invariants() {
            panic!("{e}");
        }
    }

    /// After a receive: the leases came highest level first, and no level above the last
    /// one leased still has a ready item.
    fn check_highest_level(&self, leases: &[Lease<u32>]) {
        let levels: Vec<u8> = leases.iter().map(|l| self.meta[&l.id.get()].0).collect();
        assert!(levels.windows(2).all(|w| w[0] >= w[1]), "levels {levels:?}");
        if let Some(&last) = levels.last() {
            let ready = self.q.ready_per_level();
            assert!(
                ready[last as usize + 1..].iter().all(|&n| n == 0),
                "a level above {last} has ready items: {ready:?}"
            );
        }
    }

    fn push_opts(
        &mut self,
        t: u64,
        delay: Dur,
        expires_in: Option<i16>,
        level: u8,
        key: Option<u8>,
        replace: bool,
    ) {
        let item = self.next_item;
        self.next_item += 1;
        let key = key.map(key_bytes);
        let mut o = PushOptions::new().delay(delay.get()).priority(level);
        if let Some(e) = expires_in {
            o = o.expires_at(Timestamp::from_nanos(t.saturating_add_signed(e as i64)));
        }
        if let Some(k) = &key {
            o = o.key(k);
        }
        if replace {
            o = o.replace_pending();
        }
        let holder = key.as_ref().and_then(|k| self.q.key_holder(k));
        let holder_state = holder.and_then(|h| self.q.items().find(|v| v.id == h).map(|v| v.state));
        let too_long = key.as_ref().is_some_and(|k| k.len() > UniqueKey::MAX_LEN);
        match self.q.push_take(item, Timestamp::from_nanos(t), o) {
            Ok(p) => {
                assert!(level <= MAX_PRIORITY && !too_long);
                assert_eq!(p.id.get() as usize, self.ids.len(), "ids in push order");
                self.note_id(p.id);
                if let Some(k) = &key {
                    assert_eq!(self.q.key_holder(k), Some(p.id), "the push holds its key");
                }
                match p.replaced {
                    Some((old, _)) => {
                        assert!(replace);
                        assert!(self.cancelled.insert(old.get()), "replaced twice");
                        // The holder before the push (unless the time step moved it).
                        if let Some(h) = holder {
                            assert_eq!(h, old);
                        }
                    }
                    None => {
                        // A holder seen before the push is gone by its time step, or none.
                    }
                }
                self.meta.insert(p.id.get(), (level, key));
            }
            Err(PushError::PriorityOutOfRange {
                item: back,
                level: l,
            }) => {
                assert_eq!((back, l), (item, level));
                assert!(level > MAX_PRIORITY);
            }
            Err(PushError::KeyTooLong { item: back, len }) => {
                assert_eq!(back, item);
                assert!(level <= MAX_PRIORITY && too_long);
                assert_eq!(Some(len), key.as_ref().map(Vec::len));
            }
            Err(PushError::DuplicateKey {
                item: back,
                existing,
            }) => {
                assert_eq!(back, item);
                let k = key.as_ref().expect("a key");
                assert_eq!(self.q.key_holder(k), Some(existing), "names the holder");
                if replace {
                    let st = self.q.items().find(|v| v.id == existing).map(|v| v.state);
                    assert!(matches!(st, Some(ItemState::InFlight { .. })), "{st:?}");
                }
                let _ = holder_state;
            }
            Err(PushError::Full(back)) | Err(PushError::AlreadyExpired(back)) => {
                assert_eq!(back, item)
            }
            Err(_) => panic!("unknown push error"),
        }
    }

    /// Runs the queue dry and checks that every pushed id is in exactly one place.
    fn finish(mut self) {
        let stats = self.q.stats();
        let live_before = stats.live();
        let dead_before: BTreeSet<u64> = self.q.dead_letters().map(|d| d.id.get()).collect();
        assert_eq!(dead_before.len() as u64, stats.dead);
        let mut drained = BTreeSet::new();
        let mut now = self.q.now();
        let mut out = Vec::new();
        let limit = 4 * (stats.pushed + stats.redriven + 2) * (self.max_attempts as u64 + 2);
        let mut rounds = 0;
        loop {
            rounds += 1;
            assert!(rounds < limit, "queue does not run dry");
            out.clear();
            self.q.receive_many(now, usize::MAX, &mut out);
            if out.is_empty() {
                match self.q.poll_timeout() {
                    Some(at) => {
                        now = now.max(at);
                        self.q.handle_timeout(now);
                        continue;
                    }
                    None => break,
                }
            }
            for l in out.drain(..) {
                let id = l.id.get();
                assert!(!self.acked.contains(&id) && !self.taken.contains(&id));
                assert!(!self.cancelled.contains(&id));
                drained.insert(id);
                match self.q.ack(l.receipt, now) {
                    Ok(Acked::OnTime) => {}
                    // At Timestamp::MAX a lease is due as it is handed out.
                    Ok(_) | Err(ReceiptError::DeadLettered(_)) => {
                        assert_eq!(now, Timestamp::MAX)
                    }
                    Err(e) => panic!("drain ack refused: {e}"),
                }
            }
            self.q.check_invariants().unwrap();
        }
        assert!(self.q.is_empty(), "nothing scheduled, yet items left");
        let dead_after: BTreeSet<u64> = self.q.dead_letters().map(|d| d.id.get()).collect();
        assert!(dead_after.is_superset(&dead_before));
        // Still queued at the end of the stream: drained, or dead-lettered while draining.
        let live: BTreeSet<u64> = drained
            .union(&dead_after.difference(&dead_before).copied().collect())
            .copied()
            .collect();
        assert_eq!(live.len() as u64, live_before, "still-queued ids");
        for (a, b, what) in [
            (&live, &dead_before, "queued and dead"),
            (&live, &self.taken, "queued and taken"),
            (&live, &self.acked, "queued and acked"),
            (&live, &self.cancelled, "queued and cancelled"),
            (&dead_before, &self.taken, "dead and taken"),
            (&dead_before, &self.acked, "dead and acked"),
            (&dead_before, &self.cancelled, "dead and cancelled"),
            (&self.taken, &self.acked, "taken and acked"),
            (&self.taken, &self.cancelled, "taken and cancelled"),
            (&self.cancelled, &self.acked, "cancelled and acked"),
        ] {
            assert!(
                a.is_disjoint(b),
                "{what}: {:?}",
                a.intersection(b).collect::<Vec<_>>()
            );
        }
        let places = self.acked.len() as u64
            + self.acked_in_batches
            + live.len() as u64
            + dead_before.len() as u64
            + self.taken.len() as u64
            + self.cancelled.len() as u64;
        assert_eq!(places, stats.pushed, "every pushed id in exactly one place");
        assert_eq!(
            self.acked.len() as u64 + self.acked_in_batches,
            stats.acked,
            "acked"
        );
        assert_eq!(self.taken.len() as u64, stats.taken, "taken");
        assert_eq!(self.cancelled.len() as u64, stats.cancelled, "cancelled");
    }
}

fuzz_target!(|input: Input| {
    let Some(config) = build_config(&input.config) else {
        return;
    };
    let max_attempts = config.max_attempts();
    let visibility = config.visibility();
    let mut d = Driver {
        q: Queue::new(config.clone()).expect("validated"),
        other: Queue::new(config).expect("validated"),
        max_attempts,
        visibility,
        clock: 0,
        receipts: Vec::new(),
        acked: BTreeSet::new(),
        acked_in_batches: 0,
        taken: BTreeSet::new(),
        cancelled: BTreeSet::new(),
        meta: BTreeMap::new(),
        ids: Vec::new(),
        next_item: 0,
    };
    for (time, op) in input.steps {
        d.step(time, op);
    }
    d.finish();
});
