//! Checks: the full recount behind `check_invariants`, and the index sizes.

use super::{timer_live, List, Queue, State, NIL, SLOW};
use crate::stats::ConservationError;

impl<T> Queue<T> {
    /// Checks conservation and recounts every gauge from the items themselves; also checks
    /// that no index has grown past its bound. O(n): for tests and debugging.
    pub fn check_invariants(&self) -> Result<(), ConservationError> {
        let stats = self.stats();
        stats.check_conservation()?;
        let fail = |law| {
            Err(ConservationError {
                stats: alloc::boxed::Box::new(stats),
                law,
            })
        };
        let count = |st| self.slots.iter().filter(|s| s.state == st).count() as u64;
        if count(State::Ready) != stats.ready
            || count(State::Delayed) != self.stats.delayed
            || count(State::InFlight) != self.stats.in_flight
        {
            return fail("gauges match the items' states");
        }
        if (self.dead.len() + self.lent.len()) as u64 != self.stats.dead {
            return fail("dead gauge matches the dead letters");
        }
        if self.ready_count[0] != 0 {
            return fail("level 0 has no count of its own");
        }
        if self.stats.paused && self.ready_mask & SLOW == 0 {
            return fail("a paused queue keeps the mask's bit 0");
        }
        if !self.flow_check() {
            return fail("flow control counts exactly the tagged items in flight");
        }
        let per_level = self.ready_per_level();
        for (level, (list, &count)) in self.ready.iter().zip(&per_level).enumerate() {
            let listed = list.check(&self.slots);
            if listed.is_none_or(|n| n as u64 != count)
                || list.iter(&self.slots).any(|i| {
                    let s = &self.slots[i];
                    s.state != State::Ready || s.level() != level
                })
            {
                return fail("every ready item is in its level's ready list once");
            }
            if level > 0 && (self.ready_mask >> level) & 1 != u8::from(count > 0) {
                return fail("a level's mask bit is set exactly while it has ready items");
            }
            let recount = self
                .slots
                .iter()
                .filter(|s| s.state == State::Ready && s.level() == level)
                .count() as u64;
            if recount != count {
                return fail("ready per level matches the items' levels");
            }
        }

        let keyed = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.state != State::Free && s.keyed())
            .map(|(i, _)| i as u32);
        if !self.keys.check(keyed) {
            return fail("the key table holds exactly the live items' keys, each findable");
        }
        let live_leases = self
            .leases
            .iter()
            .filter(|t| timer_live(&self.slots, t, State::InFlight))
            .count() as u64;
        let Some(listed) = self.flight_list_check() else {
            return fail("the in-flight list is linked, in deadline order, of leases in flight");
        };
        if live_leases + listed as u64 != self.stats.in_flight || live_leases != self.indexed {
            return fail("every lease has one live deadline");
        }
        if self.leases.len() as u64 > 2 * self.stats.in_flight + 64 + 1
            || self.delays.len() as u64 > 2 * self.stats.delayed + 64 + 1
            || self.expiries.len() as u64 > 2 * self.expiring + 64 + 1
        {
            return fail("indexes stay within 2 x live + 65");
        }
        let free = List {
            head: self.free,
            tail: NIL,
        };
        let free_slots = free.iter(&self.slots).collect::<alloc::vec::Vec<_>>();
        if free_slots.len() + stats.live() as usize != self.slots.len()
            || free_slots
                .iter()
                .any(|&i| self.slots[i].state != State::Free)
        {
            return fail("every slot is either free or holds a live item");
        }
        Ok(())
    }

    /// Sizes of the internal indexes (lease deadlines, delays, expiries, ready lists, key
    /// table), including stale entries not yet compacted. For benchmarks and memory checks.
    pub fn index_sizes(&self) -> IndexSizes {
        IndexSizes {
            // Every lease in flight is either listed or `indexed`: O(1), no walk of the list.
            leases: self.leases.len() + self.stats.in_flight.saturating_sub(self.indexed) as usize,
            delays: self.delays.len(),
            expiries: self.expiries.len(),
            // The ready lists hold exactly the ready items.
            ready: self.stats.ready as usize,
            slots: self.slots.len(),
            keys: self.keys.sizes().0,
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
    /// Ready list entries, all levels together.
    pub ready: usize,
    /// Key table entries (capacity; at most half are used), 0 until a key is pushed.
    pub keys: usize,
    /// Allocated item slots (live plus free).
    pub slots: usize,
}
