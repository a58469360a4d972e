//! Rate limits on the memory store: the core's (`Queue::set_rate`), with the wake-ups a
//! rate needs (through [`FlowControl`](crate::FlowControl) too, `flow.rs`).
//!
//! A rate holds ready items back until an instant the core knows: a receive that finds
//! only held items makes the core note it, which lowers its next timeout, so the lock's
//! release re-arms the driver for it (`lock.rs`: an earlier timeout bound). The driver
//! wakes exactly then, and the core counts the instant reached
//! ([`rate_wakes`](leaseq_core::Queue::rate_wakes)); the lock's release sees the count
//! grow and wakes one receiver, which passes the baton on if it leases and more is ready.
//! Waiting receivers never poll: they sleep until that instant.

use leaseq_core::{LimitScope, Rate};

use super::MemoryStore;
use crate::runtime::Runtime;

impl<T: Clone + Send + 'static, R: Runtime> MemoryStore<T, R> {
    /// Sets (`Some`) or removes (`None`) the rate limit of `scope`: leases of its items
    /// start at most as often as `rate` allows ([`Queue::set_rate`](leaseq_core::Queue::set_rate),
    /// GCRA with the burst [`Rate`] says), measured on the runtime's clock. Takes effect at
    /// once, waking every waiting receiver. A receiver that finds only items a rate holds
    /// back sleeps until the first of them may start, and is woken then.
    ///
    /// ```
    /// use std::num::NonZeroU32;
    /// use std::time::Duration;
    /// use leaseq_async::core::{LimitScope, Rate};
    /// use leaseq_async::{Config, LeaseQueue, Runtime, SimRuntime};
    ///
    /// let rt = SimRuntime::new();
    /// rt.block_on({
    ///     let rt = rt.clone();
    ///     async move {
    ///         let q = LeaseQueue::with_runtime(rt.clone(), Config::new(Duration::from_secs(30)))
    ///             .unwrap();
    ///         let ten = NonZeroU32::new(10).unwrap();
    ///         let rate = Rate::per_second(ten).burst(NonZeroU32::MIN);
    ///         q.store().set_rate(LimitScope::Queue, Some(rate));
    ///         q.try_push("a").unwrap();
    ///         q.try_push("b").unwrap();
    ///         let t0 = rt.now();
    ///         q.receive().await.unwrap().ack().await.unwrap();
    ///         // The next start is 100 ms away: the receive sleeps until then, exactly.
    ///         let b = q.receive().await.unwrap();
    ///         assert_eq!(*b.item(), "b");
    ///         assert_eq!(rt.now().saturating_duration_since(t0), Duration::from_millis(100));
    ///         assert_eq!(q.store().rate(LimitScope::Queue), Some(rate));
    ///     }
    /// });
    /// ```
    pub fn set_rate(&self, scope: LimitScope, rate: Option<Rate>) {
        let mut st = self.lock();
        let now = self.rt.now();
        st.core.set_rate(scope, rate, now);
        st.flow = true;
        drop(st);
        self.available.notify(usize::MAX);
    }

    /// The rate limit of `scope`, if one is set.
    pub fn rate(&self, scope: LimitScope) -> Option<Rate> {
        self.lock().core.rate(scope)
    }

    /// Ready items a rate limit holds back now (a pass over the ready items; 0 at once
    /// without rates).
    pub fn waiting_on_rates(&self) -> u64 {
        let mut st = self.lock();
        let now = self.rt.now();
        st.core.handle_timeout(now);
        st.core.waiting_on_rates()
    }
}
