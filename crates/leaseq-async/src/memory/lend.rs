//! Dead letters copied, and their kinds read, outside the queue's lock.
//!
//! An item's `Clone` (and its `ItemKind`) is user code, and user code must not run under
//! the lock: a `Clone` that drops a delivery of its own queue or reads the queue would
//! wait for the lock its caller holds. So a read of dead letters does not copy them under
//! the lock: it lends them out of the core (`Queue::lend_dead_letter`, a move), releases the
//! lock, copies them (or reads their kinds), and returns them under the lock again. Moved,
//! the letters are this thread's alone while they are copied, so the item needs no `Sync`.
//!
//! While letters are lent the core's reads, takes and redrives do not see them, so every
//! operation on dead letters holds the dead-letter gate (`MemoryStore::dead_gate`) around
//! its lock: one such operation at a time, and none while letters are out. The gate is
//! reentrant, so a `Clone` that calls back into dead letters of its own queue does not wait
//! for itself (it sees the letters being copied as absent). Nothing else waits on the gate:
//! pushes, receives, settles and stats do not take it.

use leaseq_core::{DeadLetter, MessageId, Queue};
use parking_lot::ReentrantMutexGuard;

use super::MemoryStore;
use crate::runtime::Runtime;

impl<T, R: Runtime> MemoryStore<T, R> {
    /// The dead-letter gate (see the module's header): held by every operation that reads,
    /// takes or redrives dead letters, before the lock.
    pub(super) fn dead_gate(&self) -> ReentrantMutexGuard<'_, ()> {
        self.dead_gate.lock()
    }

    /// Lends the dead letters `select` picks (their ids, in the order wanted, with whatever
    /// else `select` reads under the same lock), runs `f` on them after the lock is
    /// released, and returns them under the lock (also if `f` panics). The time is applied
    /// first, then the letters noted for the record of finished jobs are recorded (as
    /// `with_core` does), so none is lent before its entry is written.
    pub(super) fn with_lent<S, U>(
        &self,
        select: impl FnOnce(&mut Queue<T>) -> (Vec<MessageId>, S),
        f: impl FnOnce(S, &[DeadLetter<T>]) -> U,
    ) -> U {
        let _gate = self.dead_gate();
        let mut lent = Lent {
            store: self,
            letters: Vec::new(),
        };
        let picked = {
            let now = self.rt.now();
            let mut st = self.lock();
            st.core.handle_timeout(now);
            if st.core.has_noted_dead() {
                self.record_dead(&mut st);
            }
            let (ids, picked) = select(&mut st.core);
            lent.letters.reserve(ids.len());
            for id in ids {
                lent.letters.extend(st.core.lend_dead_letter(id));
            }
            picked
        };
        f(picked, &lent.letters)
    }
}

/// Letters lent out of the core, returned to it when dropped.
struct Lent<'a, T, R: Runtime> {
    store: &'a MemoryStore<T, R>,
    letters: Vec<DeadLetter<T>>,
}

impl<T, R: Runtime> Drop for Lent<'_, T, R> {
    fn drop(&mut self) {
        if self.letters.is_empty() {
            return;
        }
        let mut refused = Vec::new();
        {
            let mut st = self.store.lock();
            for letter in self.letters.drain(..) {
                if let Err(letter) = st.core.return_dead_letter(letter) {
                    refused.push(letter);
                }
            }
        }
        // Each was lent by this store under the gate it still holds: none is refused.
        debug_assert!(refused.is_empty(), "a lent dead letter was refused back");
    }
}
