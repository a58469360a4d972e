//! What an operator (or a store built on this one) reads and changes on a [`MemoryStore`]:
//! its items, dead letters, events and invariants. Each call is one short critical section
//! (two for a read that copies dead letters: lent, copied outside, returned; see
//! `lend.rs`); no caller's closure runs under the lock (there is no public way to run a
//! closure on the core: a closure that dropped a delivery or called back into the store
//! under the lock would deadlock it), no item is dropped under it, and no item is copied
//! under it. Every operation on dead letters holds the dead-letter gate (`lend.rs`).

use leaseq_core::{
    ConservationError, DeadLetter, Event, ItemState, ItemView, MessageId, RedriveError,
};

use super::graph::Told;
use super::MemoryStore;
use crate::dead_filter::DeadFilter;
use crate::page::Page;
use crate::runtime::Runtime;

impl<T, R: Runtime> MemoryStore<T, R> {
    /// Every live item (ready, delayed or in flight) with its attempts and, in flight, its
    /// lease deadline, brought up to date: one pass over the items under the lock.
    pub fn peek(&self) -> Vec<ItemView> {
        self.with_core(|core, _| core.items().collect())
    }

    /// The live items of `page`, in id order (a pass over every item, then a sort).
    pub fn peek_page(&self, page: Page) -> Vec<ItemView> {
        let mut items: Vec<ItemView> = self
            .peek()
            .into_iter()
            .filter(|v| page.admits(v.id))
            .collect();
        items.sort_unstable_by_key(|v| v.id);
        items.truncate(page.limit);
        items
    }

    /// The dead letters of `page`, in id order, each item cloned (after the lock is
    /// released: see `lend.rs`).
    pub fn dead_letter_page(&self, page: Page) -> Vec<DeadLetter<T>>
    where
        T: Clone,
    {
        self.with_lent(
            |core| {
                let ids = core
                    .dead_letters()
                    .filter(|l| page.admits(l.id))
                    .take(page.limit)
                    .map(|l| l.id)
                    .collect();
                (ids, ())
            },
            |(), letters| letters.to_vec(),
        )
    }

    /// Redrives every dead letter that can go back (see the core's `Queue::redrive_all`);
    /// the ids that went, in id order.
    pub fn redrive_all(&self) -> Vec<MessageId> {
        let _gate = self.dead_gate();
        self.with_core_told(
            |core, now| core.redrive_all_ids(now),
            Vec::as_slice,
            Told::Redriven,
        )
    }

    /// Redrives every dead letter `filter` takes that can go back, in id order, as
    /// [`redrive_all`](Self::redrive_all) does; the ids that went. A kind filter runs the
    /// items' `ItemKind` on a snapshot, outside the lock.
    pub fn redrive_matching(&self, filter: &DeadFilter<T>) -> Vec<MessageId>
    where
        T: Clone,
    {
        if filter.is_all() {
            return self.redrive_all();
        }
        let _gate = self.dead_gate();
        let ids = self.dead_ids(filter);
        let redrive = |core: &mut leaseq_core::Queue<T>, now| {
            let mut went = Vec::new();
            for id in ids {
                match core.redrive(id, now) {
                    Ok(id) => went.push(id),
                    Err(RedriveError::Full(_)) => break,
                    Err(_) => {}
                }
            }
            went
        };
        self.with_core_told(redrive, Vec::as_slice, Told::Redriven)
    }

    /// Removes every dead letter `filter` takes and hands them over, in id order.
    pub fn take_dead_matching(&self, filter: &DeadFilter<T>) -> Vec<DeadLetter<T>>
    where
        T: Clone,
    {
        if filter.is_all() {
            return self.take_dead_letters();
        }
        let _gate = self.dead_gate();
        let ids = self.dead_ids(filter);
        let mut st = self.lock_recorded();
        let letters: Vec<_> = ids
            .into_iter()
            .filter_map(|id| st.core.take_dead_letter(id))
            .collect();
        // Their checkpoints go with them, as with an unfiltered take.
        forget_checkpoints(&mut st.progress, &letters);
        letters
    }

    /// The ids of the dead letters `filter` takes, in id order, the time applied first:
    /// by reason under the lock, by kind on the letters lent out of it (no caller's code
    /// under the lock, no copy: see `lend.rs`).
    fn dead_ids(&self, filter: &DeadFilter<T>) -> Vec<MessageId> {
        let by_reason = |core: &mut leaseq_core::Queue<T>| -> Vec<MessageId> {
            core.dead_letters()
                .filter(|l| filter.admits_reason(l.reason))
                .map(|l| l.id)
                .collect()
        };
        if filter.wanted_kind().is_none() {
            return self.with_core(|core, _| by_reason(core));
        }
        self.with_lent(
            |core| (by_reason(core), ()),
            |(), letters| {
                letters
                    .iter()
                    .filter(|l| filter.admits_item(&l.item))
                    .map(|l| l.id)
                    .collect()
            },
        )
    }

    /// Removes every ready and delayed item (one lock); the ids removed, in id order.
    /// Items in flight stay with their holders. The items removed are dropped after the
    /// lock is released (an item's `Drop` may use the queue).
    pub fn purge(&self) -> Vec<MessageId> {
        let purge = |core: &mut leaseq_core::Queue<T>, now| {
            let mut ids: Vec<MessageId> = core
                .items()
                .filter(|v| matches!(v.state, ItemState::Ready | ItemState::Delayed))
                .map(|v| v.id)
                .collect();
            ids.sort_unstable();
            let mut items = Vec::with_capacity(ids.len());
            ids.retain(|&id| match core.cancel(id, now) {
                Ok(item) => {
                    items.push(item);
                    true
                }
                Err(_) => false,
            });
            (ids, items)
        };
        let (ids, items) = self.with_core_told(purge, |(ids, _)| ids.as_slice(), Told::Cancelled);
        drop(items);
        self.forget_progress(&ids);
        ids
    }

    /// Pauses (`true`) or resumes (`false`) the queue (the core's
    /// [`Queue::pause`](leaseq_core::Queue::pause)): while paused, receives wait and lease
    /// nothing; pushes are accepted. A resume wakes one waiting receiver per ready item.
    /// Returns whether the flag changed.
    pub fn set_paused(&self, paused: bool) -> bool {
        let (changed, ready) = self.with_core(|core, now| {
            let changed = if paused {
                core.pause(now)
            } else {
                core.resume(now)
            };
            (changed, core.stats().ready)
        });
        if changed && !paused && ready > 0 {
            // The guard wakes receivers for items that became ready; a resume makes none
            // ready, it lets the ready ones be leased.
            self.available
                .notify(usize::try_from(ready).unwrap_or(usize::MAX));
        }
        changed
    }

    /// Leases currently kept alive by the heartbeat.
    pub fn heartbeats(&self) -> usize {
        self.lock().beats.len()
    }

    /// The dead letters, oldest first: a snapshot (each item cloned after the lock is
    /// released: see `lend.rs`).
    pub fn dead_letters(&self) -> Vec<DeadLetter<T>>
    where
        T: Clone,
    {
        self.with_lent(
            |core| (core.dead_letters().map(|l| l.id).collect(), ()),
            |(), letters| letters.to_vec(),
        )
    }

    /// Removes every dead letter and hands them over.
    pub fn take_dead_letters(&self) -> Vec<DeadLetter<T>> {
        let _gate = self.dead_gate();
        let mut st = self.lock_recorded();
        let letters = st.core.take_dead_letters();
        forget_checkpoints(&mut st.progress, &letters);
        letters
    }

    /// Forgets the checkpoints of `ids` (items gone for good).
    fn forget_progress(&self, ids: &[MessageId]) {
        let mut st = self.lock();
        if !st.progress.is_empty() {
            for &id in ids {
                st.progress.remove(id);
            }
        }
    }

    /// Puts a dead letter back, visible at once, attempts reset.
    pub fn redrive(&self, id: MessageId) -> Result<MessageId, RedriveError> {
        let _gate = self.dead_gate();
        // (Releasing the lock wakes a receiver for it.)
        let now = self.rt.now();
        let mut st = self.lock();
        st.core.handle_timeout(now);
        if st.core.has_noted_dead() {
            self.record_dead(&mut st);
        }
        let r = st.core.redrive(id, now);
        if r.is_ok() && st.graph.graph.tracks(id) {
            st.graph_redriven(id, &self.inbox);
        }
        r
    }

    /// Takes every core event not yet taken, oldest first, each with a copy of the dead
    /// letter it made when it made one that is still there: for stores that journal what
    /// the queue did by itself (leases and items that ran out, items replaced). The copies
    /// are made after the lock is released (see `lend.rs`).
    pub fn take_events(&self) -> Vec<(Event, Option<DeadLetter<T>>)>
    where
        T: Clone,
    {
        self.with_lent(
            |core| {
                let mut events = Vec::new();
                let mut ids = Vec::new();
                while let Some(event) = core.poll_event() {
                    if let Event::DeadLettered { id, .. } = event {
                        ids.push(id);
                    }
                    events.push(event);
                }
                // Lent in id order, once each (an item buried, redriven and buried again
                // has two events and one letter), to be found by id.
                ids.sort_unstable();
                ids.dedup();
                (ids, events)
            },
            |events, letters| {
                let copy = |id| {
                    let at = letters.binary_search_by_key(&id, |l| l.id).ok()?;
                    Some(letters[at].clone())
                };
                events
                    .into_iter()
                    .map(|event| match event {
                        Event::DeadLettered { id, .. } => (event, copy(id)),
                        _ => (event, None),
                    })
                    .collect()
            },
        )
    }

    /// Recounts every item and checks the core's invariants (the conservation law among
    /// them), the time applied first: for tests and health checks. A pass over every item.
    pub fn check_invariants(&self) -> Result<(), ConservationError> {
        self.with_core(|core, _| core.check_invariants())
    }

    /// Visible items per priority level (index = level), brought up to date.
    pub fn ready_per_level(&self) -> [u64; leaseq_core::PRIORITY_LEVELS] {
        self.with_core(|core, _| core.ready_per_level())
    }
}

/// Forgets the checkpoints of dead letters taken for good (nothing to do, and no lookup,
/// while no item has one).
fn forget_checkpoints<T>(progress: &mut super::progress::ProgressMap, letters: &[DeadLetter<T>]) {
    if !progress.is_empty() {
        for l in letters {
            progress.remove(l.id);
        }
    }
}
