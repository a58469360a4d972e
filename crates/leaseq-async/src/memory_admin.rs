//! What only the in-memory store can show at once, as methods of a [`LeaseQueue`] on a
//! [`MemoryStore`]: its heartbeats, events and invariants. The operator API every store
//! shares (peek, dead letters, redrive, purge) is in `admin.rs`.

use leaseq_core::{ConservationError, Event};

use crate::memory::MemoryStore;
use crate::queue::LeaseQueue;
use crate::runtime::Runtime;

impl<T, R: Runtime> LeaseQueue<T, R, MemoryStore<T, R>> {
    /// Leases currently kept alive by the heartbeat.
    pub fn heartbeats(&self) -> usize {
        self.store.heartbeats()
    }

    /// The oldest core [`Event`] not yet taken. Only the kinds asked for with
    /// [`QueueBuilder::events`](crate::QueueBuilder::events) are recorded (none by default).
    pub fn poll_event(&self) -> Option<Event> {
        self.store.poll_event()
    }

    /// Recounts every item and checks the core's invariants (the conservation law among
    /// them): for tests and health checks. Costs a pass over every item.
    pub fn check_invariants(&self) -> Result<(), ConservationError> {
        self.store.check_invariants()
    }

    /// Visible items per priority level (index = level), brought up to date.
    pub fn ready_per_level(&self) -> [u64; leaseq_core::PRIORITY_LEVELS] {
        self.store.ready_per_level()
    }
}
