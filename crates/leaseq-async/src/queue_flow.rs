//! Flow control on a [`LeaseQueue`]: its calls forward to the store's [`FlowControl`], the
//! same on every store.

use leaseq_core::{LimitScope, Rate};

use crate::flow_control::{FlowControl, FlowSettings, FlowWaiting};
use crate::queue::LeaseQueue;
use crate::runtime::Runtime;
use crate::store::Store;
use crate::store_error::StoreError;

/// Flow control on a queue whose store offers it, the same calls on every store.
impl<T, R: Runtime, S: Store<T, Runtime = R> + FlowControl> LeaseQueue<T, R, S> {
    /// Sets (`Some`) or removes (`None`) the concurrency limit of `scope` for every process
    /// of the queue ([`FlowControl::set_limit`]); effect at once.
    ///
    /// ```
    /// use std::time::Duration;
    /// use leaseq_async::core::LimitScope;
    /// use leaseq_async::{Config, LeaseQueue, SimRuntime};
    ///
    /// let rt = SimRuntime::new();
    /// rt.block_on({
    ///     let rt = rt.clone();
    ///     async move {
    ///         let q = LeaseQueue::with_runtime(rt, Config::new(Duration::from_secs(30))).unwrap();
    ///         q.set_limit(LimitScope::Queue, Some(1)).await.unwrap();
    ///         q.try_push("a").unwrap();
    ///         q.try_push("b").unwrap();
    ///         let a = q.receive().await.unwrap();
    ///         assert!(q.try_receive().is_none(), "one in flight at most");
    ///         assert_eq!(q.flow_waiting().await.unwrap().on_limits, 1);
    ///         assert_eq!(q.flow_settings().await.unwrap().limit(LimitScope::Queue), Some(1));
    ///         a.ack().await.unwrap();
    ///         assert_eq!(*q.receive().await.unwrap().item(), "b");
    ///     }
    /// });
    /// ```
    pub async fn set_limit(&self, scope: LimitScope, max: Option<u32>) -> Result<(), StoreError> {
        FlowControl::set_limit(&*self.store, scope, max).await
    }

    /// Sets (`Some`) or removes (`None`) the rate limit of `scope`
    /// ([`FlowControl::set_rate`]); effect at once.
    pub async fn set_rate(&self, scope: LimitScope, rate: Option<Rate>) -> Result<(), StoreError> {
        FlowControl::set_rate(&*self.store, scope, rate).await
    }

    /// The limits and rates set now ([`FlowControl::flow_settings`]).
    pub async fn flow_settings(&self) -> Result<FlowSettings, StoreError> {
        FlowControl::flow_settings(&*self.store).await
    }

    /// Ready items held back now by a limit, a rate or a group's turn
    /// ([`FlowControl::flow_waiting`]).
    pub async fn flow_waiting(&self) -> Result<FlowWaiting, StoreError> {
        FlowControl::flow_waiting(&*self.store).await
    }
}
