//! The reference model's bookkeeping: construction, stats, slots, the time step and due
//! processing, failed attempts, burying, `poll_timeout`.

use super::*;

impl Model {
    pub(super) fn new(cfg: MConfig) -> Self {
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

    pub(super) fn stats(&self) -> Stats {
        let mut s = self.totals;
        let count = |st| self.items.iter().filter(|i| i.state == st).count() as u64;
        s.ready = count(St::Ready);
        s.delayed = count(St::Delayed);
        s.in_flight = count(St::InFlight);
        s.dead = self.dead.len() as u64;
        s
    }

    pub(super) fn live(&self) -> usize {
        self.items.iter().filter(|i| i.state != St::Gone).count()
    }

    pub(super) fn ready_per_level(&self) -> [u64; 8] {
        let mut r = [0; 8];
        for it in self.items.iter().filter(|i| i.state == St::Ready) {
            r[it.level as usize] += 1;
        }
        r
    }

    /// The live item that holds `key`.
    pub(super) fn key_holder(&self, key: &[u8]) -> Option<u64> {
        self.items
            .iter()
            .find(|i| i.state != St::Gone && i.key.as_deref() == Some(key))
            .map(|i| i.id)
    }

    pub(super) fn record(&mut self, e: Event) {
        if self.events.len() >= self.cfg.event_capacity {
            self.totals.events_dropped += 1;
            if self.events.pop_front().is_none() {
                return;
            }
        }
        self.events.push_back(e);
    }

    pub(super) fn alloc_slot(&mut self) -> u32 {
        match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(MSlot::default());
                (self.slots.len() - 1) as u32
            }
        }
    }

    pub(super) fn free_slot(&mut self, idx: usize, fate: Fate) {
        let it = &self.items[idx];
        self.slots[it.slot as usize].prev = Some((it.id, fate));
        self.free.push(it.slot);
    }

    pub(super) fn set_ready(&mut self, idx: usize) {
        self.items[idx].state = St::Ready;
        self.items[idx].ready_seq = self.ready_seq;
        self.ready_seq += 1;
    }

    /// Visible at `at`: ready now if `at <= instant`, else delayed until `at`.
    pub(super) fn make_visible(&mut self, idx: usize, at: u64, instant: u64) {
        if at <= instant {
            self.set_ready(idx);
        } else {
            self.items[idx].state = St::Delayed;
            self.items[idx].visible_at = at;
        }
    }

    // ----- time ---------------------------------------------------------------------

    pub(super) fn advance(&mut self, t: u64) -> u64 {
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
    pub(super) fn fail_attempt(
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

    pub(super) fn bury(&mut self, idx: usize, at: u64, reason: Reason) {
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

    pub(super) fn poll_timeout(&self) -> Option<u64> {
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
}
