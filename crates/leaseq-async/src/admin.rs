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
        self.store.peek()
    }

    /// Leases currently kept alive by the heartbeat.
    pub fn heartbeats(&self) -> usize {
        self.store.heartbeats()
    }

    /// The oldest core [`Event`] not yet taken. Only the kinds asked for with
    /// [`QueueBuilder::events`](crate::QueueBuilder::events) are recorded (none by default).
    pub fn poll_event(&self) -> Option<Event> {
        self.store.poll_event()
    }

    /// The dead letters, oldest first: a snapshot (each item cloned).
    pub fn dead_letters(&self) -> Vec<DeadLetter<T>>
    where
        T: Clone,
    {
        self.store.dead_letters()
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
        self.store.take_dead_letters()
    }

    /// Puts a dead letter back, visible at once, attempts reset.
    pub fn redrive(&self, id: MessageId) -> Result<MessageId, RedriveError> {
        self.store.redrive(id)
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
