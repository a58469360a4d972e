//! One step of a case on both sides, and the comparison of their observable state.

use super::*;

impl Harness {
    pub(super) fn step(&mut self, time: &Time, op: &Op) {
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

    pub(super) fn compare(&mut self, poll: bool) {
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
