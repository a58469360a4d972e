//! Cancelling one item: taken out of the core under the lock, its finish recorded (when a
//! record is kept) after the lock, where the item's kind is read.

use leaseq_core::{CancelError, MessageId};

use super::MemoryStore;
use crate::runtime::Runtime;

impl<T, R: Runtime> MemoryStore<T, R> {
    /// [`Store::cancel`](crate::Store::cancel): removes item `id` (a held one with
    /// `leased`, else a ready or delayed one) and hands it over, its checkpoint forgotten.
    /// The item leaves by value: its `Drop` runs in the caller, after the lock.
    pub(super) fn cancel_now(&self, id: MessageId, leased: bool) -> Result<T, CancelError> {
        let now = self.rt.now();
        let mut st = self.lock();
        let attempts = if self.records() {
            st.core.attempts_of(id).unwrap_or(0)
        } else {
            0
        };
        let r = if leased {
            st.core.cancel_leased(id, now)
        } else {
            st.core.cancel(id, now)
        };
        if r.is_ok() {
            st.progress.remove(id);
            if st.graph.graph.tracks(id) {
                st.graph_settle(id, leaseq_core::graph::Fate::Cancelled, &self.inbox);
            }
        }
        drop(st);
        if let (Ok(item), true) = (&r, self.records()) {
            self.record_cancel(id, attempts, item, now);
        }
        r
    }
}
