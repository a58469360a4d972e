//! Flow control as every store offers it: [`FlowControl`] (concurrency and rate limits set
//! at runtime, what they hold back), [`FlowSettings`], [`FlowWaiting`], and
//! [`LeaseQueue`]'s calls forwarding to it. The flow keys an item counts by are given at
//! push ([`Push::kind`](crate::Push::kind), [`partition`](crate::Push::partition),
//! [`group`](crate::Push::group)).

use std::future::Future;

use leaseq_core::{LimitScope, Rate};

use crate::queue::LeaseQueue;
use crate::runtime::Runtime;
use crate::store::Store;
use crate::store_error::StoreError;

/// Concurrency and rate limits on a store, for every process of the queue: implemented by
/// the memory store ([`MemoryStore`](crate::MemoryStore), one process), the SQLite store
/// (kept in its file) and the Postgres store (in tables every process reads). Called
/// through a [`LeaseQueue`] (`queue.set_limit(scope, max).await`).
///
/// A limit or a rate holds ready items back in their place: a receive leases past them the
/// first item no rule holds. A limit of 0 leases none of its scope.
pub trait FlowControl {
    /// Sets (`Some`) or removes (`None`) the concurrency limit of `scope` for every process
    /// of the queue: at most `max` of its items in flight. Takes effect at once: a limit
    /// lowered below what is in flight takes no lease back, none of it is leased until fewer
    /// are in flight.
    fn set_limit(
        &self,
        scope: LimitScope,
        max: Option<u32>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Sets (`Some`) or removes (`None`) the rate limit of `scope`: leases of its items
    /// start at most as often as `rate` allows (GCRA, [`Rate`]'s burst). A receiver that
    /// finds only items a rate holds back sleeps until the first may start.
    fn set_rate(
        &self,
        scope: LimitScope,
        rate: Option<Rate>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The limits and rates set now.
    fn flow_settings(&self) -> impl Future<Output = Result<FlowSettings, StoreError>> + Send;

    /// Ready items held back now: by a full concurrency limit, by a rate, by their group's
    /// turn.
    fn flow_waiting(&self) -> impl Future<Output = Result<FlowWaiting, StoreError>> + Send;
}

/// The limits and rates set on a queue ([`FlowControl::flow_settings`]): the queue's
/// first, then by scope.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FlowSettings {
    /// Each concurrency limit: its scope and its most items in flight.
    pub limits: Vec<(LimitScope, u32)>,
    /// Each rate limit: its scope and its rate.
    pub rates: Vec<(LimitScope, Rate)>,
}

impl FlowSettings {
    /// These limits and rates (for a store's answer).
    pub fn new(limits: Vec<(LimitScope, u32)>, rates: Vec<(LimitScope, Rate)>) -> Self {
        FlowSettings { limits, rates }
    }

    /// The concurrency limit of `scope`, if one is set.
    pub fn limit(&self, scope: LimitScope) -> Option<u32> {
        self.limits
            .iter()
            .find(|(s, _)| *s == scope)
            .map(|&(_, m)| m)
    }

    /// The rate limit of `scope`, if one is set.
    pub fn rate(&self, scope: LimitScope) -> Option<Rate> {
        self.rates
            .iter()
            .find(|(s, _)| *s == scope)
            .map(|&(_, r)| r)
    }
}

/// Ready items flow control holds back now ([`FlowControl::flow_waiting`]); an item held
/// back by more than one rule counts in each. All are part of the ready gauge.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FlowWaiting {
    /// Held back by a full concurrency limit (every ready item while the queue's is
    /// reached).
    pub on_limits: u64,
    /// Held back by a rate limit (every ready item while the queue's holds).
    pub on_rates: u64,
    /// Waiting for their ordered group's turn (behind its head, or the head while one of
    /// the group is in flight).
    pub on_groups: u64,
}

impl FlowWaiting {
    /// These counts (for a store's answer).
    pub fn new(on_limits: u64, on_rates: u64, on_groups: u64) -> Self {
        FlowWaiting {
            on_limits,
            on_rates,
            on_groups,
        }
    }
}

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
