//! The reference model's receipt checks and settles: ack, nack, release, extend, dead
//! letter, redrive, taking dead letters.

use super::*;

impl Model {
    pub(super) fn check(&mut self, r: &RRec) -> MCheck {
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

    pub(super) fn held(&mut self, r: &RRec) -> Result<usize, ReceiptError> {
        match self.check(r) {
            MCheck::Held(i) => Ok(i),
            MCheck::Unclaimed(_) => Err(ReceiptError::LeaseExpired(r.receipt.id())),
            MCheck::Stale(e) => Err(e),
        }
    }

    pub(super) fn ack(&mut self, r: &RRec, t: u64) -> Result<Acked, ReceiptError> {
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

    pub(super) fn nack(
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

    pub(super) fn release(&mut self, r: &RRec, t: u64) -> Result<Nacked, ReceiptError> {
        self.nack(r, t, Reason::Released, None, Some(Duration::ZERO))
    }

    pub(super) fn extend(
        &mut self,
        r: &RRec,
        t: u64,
        vis: Duration,
    ) -> Result<Extended, ReceiptError> {
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

    pub(super) fn dead_letter(
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

    pub(super) fn redrive(&mut self, id: u64, t: u64) -> Result<u64, RedriveError> {
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

    pub(super) fn redrive_all(&mut self, t: u64) -> usize {
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

    pub(super) fn take_dead_letter(&mut self, id: u64) -> Option<MDead> {
        let d = self.dead.remove(&id)?;
        self.totals.taken += 1;
        Some(d)
    }
}
