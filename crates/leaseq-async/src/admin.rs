//! What only the in-memory store can show at once (a `LeaseQueue` on a [`MemoryStore`]): its items, dead letters, events and
//! invariants, as methods of a [`LeaseQueue`] on it.

use leaseq_core::{ConservationError, DeadLetter, Event, ItemView, MessageId, RedriveError};

use crate::memory::MemoryStore;
use crate::queue::LeaseQueue;
use crate::runtime::Runtime;

impl<T, R: Runtime> LeaseQueue<T, R, MemoryStore<T, R>> {
    /// Every live item (ready, delayed or in flight) with its attempts and, in flight, its
    /// lease deadline, brought up to date: for admin tools and checks. A snapshot taken
    /// under the lock in one pass over the items.
    pub fn peek(&self) -> Vec<ItemView> {
        let now = self.store.rt.now();
        let mut st = self.store.lock();
        st.core.handle_timeout(now);
        st.core.items().collect()
    }

    /// Leases currently kept alive by the heartbeat.
    pub fn heartbeats(&self) -> usize {
        self.store.lock().beats.len()
    }

    /// The oldest core [`Event`] not yet taken. Only the kinds asked for with
    /// [`QueueBuilder::events`](crate::QueueBuilder::events) are recorded (none by default).
    pub fn poll_event(&self) -> Option<Event> {
        self.store.lock().core.poll_event()
    }

    /// The dead letters, oldest first: a snapshot (each item cloned).
    pub fn dead_letters(&self) -> Vec<DeadLetter<T>>
    where
        T: Clone,
    {
        self.store.lock().core.dead_letters().cloned().collect()
    }

    /// Runs `f` over a snapshot of the dead letters, oldest first.
    ///
    /// `f` runs after the queue's lock is released, so it may use the queue freely (settle
    /// or drop a delivery, push, read stats): nothing it does can deadlock.
    pub fn inspect_dead_letters<U>(
        &self,
        f: impl FnOnce(&mut dyn Iterator<Item = &DeadLetter<T>>) -> U,
    ) -> U
    where
        T: Clone,
    {
        let letters = self.dead_letters();
        f(&mut letters.iter())
    }

    /// Removes every dead letter and hands them over.
    pub fn take_dead_letters(&self) -> Vec<DeadLetter<T>> {
        self.store.lock().core.take_dead_letters()
    }

    /// Puts a dead letter back, visible at once, attempts reset.
    pub fn redrive(&self, id: MessageId) -> Result<MessageId, RedriveError> {
        let now = self.store.rt.now();
        // (Releasing the lock wakes a receiver for it.)
        self.store.lock().core.redrive(id, now)
    }

    /// Recounts every item and checks the core's invariants (the conservation law among
    /// them): for tests and health checks. Costs a pass over every item.
    pub fn check_invariants(&self) -> Result<(), ConservationError> {
        self.store.lock().core.check_invariants()
    }

    /// Visible items per priority level (index = level), brought up to date.
    pub fn ready_per_level(&self) -> [u64; leaseq_core::PRIORITY_LEVELS] {
        let now = self.store.rt.now();
        let mut st = self.store.lock();
        st.core.handle_timeout(now);
        st.core.ready_per_level()
    }
}
