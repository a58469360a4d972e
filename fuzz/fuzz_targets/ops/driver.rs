//! The driver: the queue under test, a second queue (receipts from elsewhere), and what
//! the run has seen so far; one step (a time move and an operation) and what its result
//! promises, checked at once.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use leaseq_core::{
    CancelError, Config, Event, Extended, Failure, ItemState, Lease, MessageId, Nacked, PushError,
    PushOptions, Queue, Reason, Receipt, ReceiptError, RedriveError, Timestamp,
};

use crate::input::{FailKind, Op, Time, REASONS};

pub(crate) struct Driver {
    pub(crate) q: Queue<u32>,
    pub(crate) other: Queue<u32>,
    pub(crate) max_attempts: u32,
    pub(crate) visibility: Duration,
    pub(crate) clock: u64,
    pub(crate) receipts: Vec<Receipt>,
    /// Ids `ack` accepted (one by one).
    pub(crate) acked: BTreeSet<u64>,
    /// How many receipts `ack_many` accepted (it does not say which).
    pub(crate) acked_in_batches: u64,
    /// Ids whose dead letter was taken.
    pub(crate) taken: BTreeSet<u64>,
    /// Ids cancelled or replaced.
    pub(crate) cancelled: BTreeSet<u64>,
    /// Level and key of every id pushed.
    pub(crate) meta: BTreeMap<u64, (u8, Option<Vec<u8>>)>,
    pub(crate) ids: Vec<MessageId>,
    pub(crate) next_item: u32,
}

impl Driver {
    /// A driver of a queue made with `config` (validated), and a second one for foreign
    /// receipts.
    pub(crate) fn new(config: Config) -> Self {
        let max_attempts = config.max_attempts();
        let visibility = config.visibility();
        Driver {
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
        }
    }

    pub(crate) fn note_id(&mut self, id: MessageId) {
        if id.get() as usize == self.ids.len() {
            self.ids.push(id);
        }
    }

    pub(crate) fn receipt(&self, i: u16) -> Option<Receipt> {
        (!self.receipts.is_empty()).then(|| self.receipts[i as usize % self.receipts.len()])
    }

    /// What every lease promises.
    pub(crate) fn check_lease(&mut self, l: &Lease<u32>) {
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

    /// One step: the clock moved, the operation run, its result checked, then the
    /// queue's invariants.
    pub(crate) fn step(&mut self, time: Time, op: Op) {
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
}
