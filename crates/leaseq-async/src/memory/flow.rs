//! Flow control on the memory store: concurrency limits (the core's `Queue::set_limit`),
//! the wake-ups a limit needs, and [`FlowControl`] (limits here, rates in `rate.rs`).
//! Pushes with flow keys (`Push::kind`, ...) go through `push.rs` to the core's
//! `push_flow`.
//!
//! A limit holds ready items back, so a place freed (a lease leaving flight) or a limit
//! raised can make an item leasable without any item becoming visible: the lock's release
//! (`lock.rs`) then wakes a receiver when the queue has flow control and fewer items are
//! in flight than at the last release, and `set_limit` wakes every receiver.

use std::future::{ready, Future};

use leaseq_core::{FlowKeys, LimitScope, MessageId, Rate};

use super::MemoryStore;
use crate::error::PushError;
use crate::flow_control::{FlowControl, FlowSettings, FlowWaiting};
use crate::push::Push;
use crate::runtime::Runtime;
use crate::store_error::StoreError;

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

    /// [`try_push`](crate::Store::try_push) with flow keys: the same as
    /// [`Push::flow_keys`]`(keys)` on `push` (a key window beside them refused with
    /// [`PushError::Unsupported`], the item handed back).
    pub fn try_push_flow(
        &self,
        item: T,
        push: &Push,
        keys: FlowKeys,
    ) -> Result<MessageId, PushError<T>> {
        self.push_one(item, &push.clone().flow_keys(keys))
    }
}

/// Every future ready at once: the settings are this process's.
impl<T: Clone + Send + 'static, R: Runtime> FlowControl for MemoryStore<T, R> {
    fn set_limit(
        &self,
        scope: LimitScope,
        max: Option<u32>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        MemoryStore::set_limit(self, scope, max);
        ready(Ok(()))
    }

    fn set_rate(
        &self,
        scope: LimitScope,
        rate: Option<Rate>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        MemoryStore::set_rate(self, scope, rate);
        ready(Ok(()))
    }

    fn flow_settings(&self) -> impl Future<Output = Result<FlowSettings, StoreError>> + Send {
        let st = self.lock();
        let settings = FlowSettings::new(st.core.limits(), st.core.rates());
        drop(st);
        ready(Ok(settings))
    }

    fn flow_waiting(&self) -> impl Future<Output = Result<FlowWaiting, StoreError>> + Send {
        let mut st = self.lock();
        let now = self.rt.now();
        st.core.handle_timeout(now);
        let core = &st.core;
        let waiting = FlowWaiting::new(
            core.waiting_on_concurrency(),
            core.waiting_on_rates(),
            core.waiting_on_groups(),
        );
        drop(st);
        ready(Ok(waiting))
    }
}
