//! What flow control shows of itself: the limits and rates set, and the ready items each
//! kind of rule holds back (a store's `flow_settings` and `flow_waiting`, and a durable
//! store that writes the settings down to restore them).

use alloc::vec::Vec;

use super::tags::{Scoped, KIND, PARTITION};
use super::{Queue, TAGGED};
use crate::flow::LimitScope;
use crate::rate::Rate;

/// A limit's key as the scope it is.
fn scope_of((what, key): Scoped) -> Option<LimitScope> {
    match what {
        KIND => Some(LimitScope::Kind(key)),
        PARTITION => Some(LimitScope::Partition(key)),
        _ => None,
    }
}

impl<T> Queue<T> {
    /// Every concurrency limit set: the queue's first, then kinds' and partitions' in key
    /// order.
    ///
    /// ```
    /// use core::time::Duration;
    /// use leaseq_core::{Config, FlowKey, LimitScope, Queue};
    ///
    /// let mut q = Queue::<u32>::new(Config::new(Duration::from_secs(30))).unwrap();
    /// q.set_limit(LimitScope::Kind(FlowKey::new(7)), Some(2));
    /// q.set_limit(LimitScope::Queue, Some(10));
    /// assert_eq!(
    ///     q.limits(),
    ///     vec![(LimitScope::Queue, 10), (LimitScope::Kind(FlowKey::new(7)), 2)]
    /// );
    /// ```
    pub fn limits(&self) -> Vec<(LimitScope, u32)> {
        let Some(flow) = self.flow.as_deref() else {
            return Vec::new();
        };
        let queue = flow.queue_max.map(|m| (LimitScope::Queue, m));
        let scoped = flow
            .limits
            .iter()
            .filter_map(|(&k, &m)| scope_of(k).map(|s| (s, m)));
        queue.into_iter().chain(scoped).collect()
    }

    /// Every rate limit set: the queue's first, then kinds' and partitions' in key order.
    pub fn rates(&self) -> Vec<(LimitScope, Rate)> {
        let Some(flow) = self.flow.as_deref() else {
            return Vec::new();
        };
        let queue = flow.rates.queue.map(|g| (LimitScope::Queue, g.rate));
        let scoped = flow
            .rates
            .scoped
            .iter()
            .filter_map(|(&k, g)| scope_of(k).map(|s| (s, g.rate)));
        queue.into_iter().chain(scoped).collect()
    }

    /// Ready items a full concurrency limit holds back now (the queue's, their kind's or
    /// their partition's; all of them while the queue-wide limit is reached), whatever
    /// their group's turn: [`waiting_on_limits`](Self::waiting_on_limits) without the items
    /// held back by their group alone. A pass over the ready items; 0 at once without flow
    /// control.
    pub fn waiting_on_concurrency(&self) -> u64 {
        let Some(flow) = self.flow.as_deref() else {
            return 0;
        };
        if flow
            .queue_max
            .is_some_and(|m| self.stats.in_flight >= u64::from(m))
        {
            return self.stats.ready;
        }
        self.ready_in_order()
            .filter(|&slot| {
                let s = &self.slots[slot];
                s.meta & TAGGED != 0 && flow.tags.get(&s.id).is_some_and(|t| !flow.limits_allow(t))
            })
            .count() as u64
    }

    /// Ready items of ordered groups that wait for their group's turn now: not the group's
    /// head, or the head while an item of the group is in flight (see
    /// [`FlowKeys::group`](crate::FlowKeys::group)). A pass over the ready items; 0 at once
    /// without flow control.
    ///
    /// ```
    /// use core::time::Duration;
    /// use leaseq_core::{Config, FlowKey, FlowKeys, PushOptions, Queue, Timestamp};
    ///
    /// let mut q = Queue::new(Config::new(Duration::from_secs(30))).unwrap();
    /// let t = Timestamp::ZERO;
    /// let order = FlowKeys::new().group(FlowKey::named("order-17"));
    /// for step in ["paid", "packed", "shipped"] {
    ///     q.push_flow(step, t, PushOptions::new(), order).unwrap();
    /// }
    /// assert_eq!(q.waiting_on_groups(), 2); // behind the head
    /// let paid = q.receive(t).unwrap();
    /// assert_eq!(q.waiting_on_groups(), 2); // the head is in flight
    /// q.ack(paid.receipt, t).unwrap();
    /// assert_eq!(q.waiting_on_groups(), 1);
    /// ```
    pub fn waiting_on_groups(&self) -> u64 {
        let Some(flow) = self.flow.as_deref() else {
            return 0;
        };
        self.ready_in_order()
            .filter(|&slot| {
                let s = &self.slots[slot];
                s.meta & TAGGED != 0
                    && flow
                        .tags
                        .get(&s.id)
                        .is_some_and(|t| !flow.group_allows(s.id, t))
            })
            .count() as u64
    }
}
