//! The reference model's pushes, cancels and receives.

use super::*;

impl Model {
    // ----- operations ---------------------------------------------------------------

    #[allow(clippy::too_many_arguments)]
    pub(super) fn push(
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
    pub(super) fn cancel(&mut self, id: u64, t: u64, leased: bool) -> Result<Item, CancelError> {
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

    pub(super) fn receive_one(&mut self) -> Option<MLease> {
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
}
