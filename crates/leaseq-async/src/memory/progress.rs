//! Handlers' checkpoints in the memory store: a map from message id to [`Progress`] beside
//! the core, under the same lock, so that the core's slots do not grow and an item nobody
//! checkpoints costs one emptiness check on its ack (a lease looks nothing up; a handler's
//! `progress()` reads one flag, `MemoryStore::has_progress`, until some item has had a
//! checkpoint, and only then takes the lock).
//!
//! An entry is removed where an item leaves for good through this store (ack, cancel,
//! purge, a dead letter purged or taken); the ways an item leaves inside the core (a
//! replacement by key) leave a stale entry that nobody can reach (ids are never reused),
//! pruned once the map has doubled since its last pruning, and before an operator lists it.

use std::collections::HashMap;

use leaseq_core::{MessageId, Queue};

use super::MemoryStore;
use crate::page::Page;
use crate::progress::Progress;
use crate::runtime::Runtime;

/// The checkpoints of the live items and dead letters (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct ProgressMap {
    map: HashMap<MessageId, Progress>,
    /// Pruned when it grows past this.
    prune_at: usize,
}

impl ProgressMap {
    /// The checkpoint of `id`, if any: one emptiness check when nobody checkpoints.
    #[inline]
    pub(crate) fn get(&self, id: MessageId) -> Option<Progress> {
        if self.map.is_empty() {
            None
        } else {
            self.map.get(&id).cloned()
        }
    }

    /// Forgets the checkpoint of `id` (the item left for good).
    #[inline]
    pub(crate) fn remove(&mut self, id: MessageId) {
        if !self.map.is_empty() {
            self.map.remove(&id);
        }
    }

    /// Whether no item has a checkpoint.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    fn insert<T>(&mut self, id: MessageId, progress: Progress, core: &Queue<T>) {
        self.map.insert(id, progress);
        if self.map.len() > self.prune_at {
            self.prune(core);
        }
    }

    /// Drops the entries of items that are neither live nor dead letters.
    fn prune<T>(&mut self, core: &Queue<T>) {
        let live: std::collections::HashSet<MessageId> = core.items().map(|v| v.id).collect();
        self.map
            .retain(|id, _| live.contains(id) || core.is_dead_letter(*id));
        self.prune_at = 2 * self.map.len() + 64;
    }
}

impl<T, R: Runtime> MemoryStore<T, R> {
    /// The checkpoint of `ticket`'s item, looked up under the lock (once some item has had
    /// one: `Store::progress` checks `has_progress` first).
    #[inline(never)]
    pub(super) fn progress_locked(&self, ticket: &super::MemoryTicket) -> Option<Progress> {
        self.lock().progress.get(ticket.receipt.id())
    }

    /// Records `progress` as the checkpoint of `receipt`'s item if its lease is running now;
    /// the lease's [`ReceiptError`](leaseq_core::ReceiptError) otherwise, nothing recorded.
    /// (For a store built on this one, which then records it durably.)
    pub fn checkpoint_lease(
        &self,
        receipt: leaseq_core::Receipt,
        progress: Progress,
    ) -> Result<(), leaseq_core::ReceiptError> {
        let now = self.rt.now();
        let mut guard = self.lock();
        guard.core.check_lease(receipt, now)?;
        self.has_progress
            .store(true, std::sync::atomic::Ordering::Release);
        let st = &mut *guard;
        st.progress.insert(receipt.id(), progress, &st.core);
        Ok(())
    }

    /// [`Store::checkpoint`](crate::Store::checkpoint): `checkpoint_lease` for a lease key
    /// of this store (a receipt); any other key names no lease of it.
    pub(super) fn checkpoint_key(
        &self,
        lease: crate::progress::LeaseKey,
        progress: Progress,
    ) -> Result<(), leaseq_core::ReceiptError> {
        match lease.as_receipt() {
            Some(receipt) => self.checkpoint_lease(receipt, progress),
            None => Err(leaseq_core::ReceiptError::Unknown),
        }
    }

    /// Puts back the checkpoint of a live item or dead letter read from disk (a durable
    /// store's open).
    pub fn restore_progress(&self, id: MessageId, progress: Progress) {
        self.has_progress
            .store(true, std::sync::atomic::Ordering::Release);
        let mut guard = self.lock();
        let st = &mut *guard;
        st.progress.insert(id, progress, &st.core);
    }

    /// The checkpoints of the live items and dead letters of `page` that have one, in id
    /// order.
    pub fn checkpoint_page(&self, page: Page) -> Vec<(MessageId, Progress)> {
        let mut guard = self.lock();
        if guard.progress.is_empty() {
            return Vec::new();
        }
        let st = &mut *guard;
        st.progress.prune(&st.core);
        let mut out: Vec<(MessageId, Progress)> = st
            .progress
            .map
            .iter()
            .filter(|(id, _)| page.admits(**id))
            .map(|(id, p)| (*id, p.clone()))
            .collect();
        drop(guard);
        out.sort_unstable_by_key(|(id, _)| *id);
        out.truncate(page.limit);
        out
    }
}
