//! Checks: the full recount behind `check_invariants`, and the index sizes.

use super::{timer_live, Queue, State};
use crate::stats::ConservationError;

impl<T> Queue<T> {
    /// Checks conservation and recounts every gauge from the items themselves; also checks
    /// that no index has grown past its bound. O(n): for tests and debugging.
    pub fn check_invariants(&self) -> Result<(), ConservationError> {
        self.stats.check_conservation()?;
        let fail = |law| {
            Err(ConservationError {
                stats: alloc::boxed::Box::new(self.stats),
                law,
            })
        };
        let count = |st| self.slots.iter().filter(|s| s.state == st).count() as u64;
        if count(State::Ready) != self.stats.ready
            || count(State::Delayed) != self.stats.delayed
            || count(State::InFlight) != self.stats.in_flight
        {
            return fail("gauges match the items' states");
        }
        if self.dead.len() as u64 != self.stats.dead {
            return fail("dead gauge matches the dead letters");
        }
        let live_ready = self
            .ready
            .iter()
            .filter(|&&(i, e)| self.slots[i as usize].epoch == e)
            .count() as u64;
        if live_ready != self.stats.ready {
            return fail("every ready item is in the ready list once");
        }
        let live_leases = self
            .leases
            .iter()
            .filter(|t| timer_live(&self.slots, t, State::InFlight))
            .count() as u64;
        if live_leases != self.stats.in_flight {
            return fail("every lease has one live deadline");
        }
        if self.leases.len() as u64 > 2 * self.stats.in_flight + 64 + 1
            || self.delays.len() as u64 > 2 * self.stats.delayed + 64 + 1
            || self.expiries.len() as u64 > 2 * self.expiring + 64 + 1
            || self.ready.len() as u64 > 2 * self.stats.ready + 64 + 1
        {
            return fail("indexes stay within 2 x live + 65");
        }
        if self.free.len() + self.stats.live() as usize != self.slots.len() {
            return fail("every slot is either free or holds a live item");
        }
        Ok(())
    }

    /// Sizes of the internal indexes (lease deadlines, delays, expiries, ready list),
    /// including stale entries not yet compacted. For benchmarks and memory checks.
    pub fn index_sizes(&self) -> IndexSizes {
        IndexSizes {
            leases: self.leases.len(),
            delays: self.delays.len(),
            expiries: self.expiries.len(),
            ready: self.ready.len(),
            slots: self.slots.len(),
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
    /// Ready list entries.
    pub ready: usize,
    /// Allocated item slots (live plus free).
    pub slots: usize,
}
