//! Concurrency limits on the memory store: the core's (`Queue::set_limit`), with pushes
//! that carry flow keys and the wake-ups a limit needs. Offered by the memory store alone
//! for now (not through the `Store` seam): a durable store would have to keep the flow keys
//! and count across processes.
//!
//! A limit holds ready items back, so a place freed (a lease leaving flight) or a limit
//! raised can make an item leasable without any item becoming visible: the lock's release
//! (`lock.rs`) then wakes a receiver when the queue has flow control and fewer items are
//! in flight than at the last release, and `set_limit` wakes every receiver.

use leaseq_core::{FlowKeys, LimitScope, MessageId};

use super::MemoryStore;
use crate::error::PushError;
use crate::push::Push;
use crate::runtime::Runtime;

impl<T: Clone + Send + 'static, R: Runtime> MemoryStore<T, R> {
    /// Sets (`Some`) or removes (`None`) the concurrency limit of `scope`: at most `max`
    /// items of it in flight ([`Queue::set_limit`](leaseq_core::Queue::set_limit)); takes
    /// effect at once, waking every waiting receiver.
    pub fn set_limit(&self, scope: LimitScope, max: Option<u32>) {
        let mut st = self.lock();
        st.core.set_limit(scope, max);
        st.flow = true;
        drop(st);
        self.available.notify(usize::MAX);
    }

    /// The concurrency limit of `scope`, if one is set.
    pub fn limit(&self, scope: LimitScope) -> Option<u32> {
        self.lock().core.limit(scope)
    }

    /// Items of `scope` in flight now.
    pub fn in_flight_of(&self, scope: LimitScope) -> u64 {
        self.lock().core.in_flight_of(scope)
    }

    /// Ready items a full limit holds back now (a pass over the ready items).
    pub fn waiting_on_limits(&self) -> u64 {
        self.lock().core.waiting_on_limits()
    }

    /// [`try_push`](crate::Store::try_push) with flow keys: the item counts against the
    /// limits of its kind and partition, and goes in its ordered group's turn, for life
    /// ([`Queue::push_flow`](leaseq_core::Queue::push_flow)). For a queue whose store is
    /// this memory store: a durable store's memory store inside would not journal it. A key
    /// window ([`Push::key_window`]) is not offered with flow keys: refused with
    /// [`PushError::Unsupported`], the item handed back.
    pub fn try_push_flow(
        &self,
        item: T,
        push: &Push,
        keys: FlowKeys,
    ) -> Result<MessageId, PushError<T>> {
        if self.closed() {
            return Err(PushError::Closed(item));
        }
        if push.has_key_window() {
            let what = "a key window with flow keys (Push::key_window in try_push_flow)";
            return Err(PushError::Unsupported { item, what });
        }
        let now = self.rt.now();
        let mut st = self.lock();
        st.flow = true;
        let options = push.options_at(now);
        let mut replaced = None;
        let pushed = self.inbox.push_direct(&mut st.core, |core, id| {
            core.push_flow_with_id_take(id, item, now, options, keys)
                .map(|p| {
                    replaced = p.replaced;
                    p.id
                })
        });
        drop(st);
        drop(replaced);
        pushed.map_err(PushError::from_core)
    }
}
