//! What a leveled, keyed push promises, the levels a receive hands out, and the end of a
//! run: the queue run dry and every pushed id found in exactly one place.

use std::collections::BTreeSet;

use leaseq_core::{
    Acked, ItemState, Lease, PushError, PushOptions, ReceiptError, Timestamp, UniqueKey,
    MAX_PRIORITY,
};

use crate::driver::Driver;
use crate::input::{key_bytes, Dur};

impl Driver {
    /// After a receive: the leases came highest level first, and no level above the last
    /// one leased still has a ready item.
    pub(crate) fn check_highest_level(&self, leases: &[Lease<u32>]) {
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

    pub(crate) fn push_opts(
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
    pub(crate) fn finish(mut self) {
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
