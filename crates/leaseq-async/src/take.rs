//! Taking leases out of the core: one item, or a batch, under one lock and one clock read.

use std::sync::Arc;

use leaseq_core::Timestamp;

use crate::delivery::Delivery;
use crate::lease_lost::LeaseSignal;
use crate::runtime::Runtime;
use crate::shared::{Shared, State};

impl<T: Clone, R: Runtime> Shared<T, R> {
    /// Leases one visible item, if any: one clock read, one lock.
    pub(crate) fn take_one(self: &Arc<Self>, heartbeat: bool) -> Option<Delivery<T, R>> {
        if self.is_closed() {
            return None;
        }
        // The delivery's reference to the queue is taken before the lock, not under it.
        let shared = self.clone();
        let mut st = self.lock();
        // Read under the lock: the lease is measured from the moment it is taken, so a
        // wait for the lock never shortens it below the visibility.
        let now = self.rt.now();
        let d = self.lease_locked(&mut st, now, heartbeat, shared)?;
        let more = st.core.stats().ready > 0;
        drop(st);
        if more {
            // Pass the baton: another receiver may take what this one left.
            self.available.notify(1);
        }
        Some(d)
    }

    /// Leases up to `max` visible items into `out` under one lock and one clock read (taken
    /// under the lock, like `take_one`'s).
    pub(crate) fn take_batch(
        self: &Arc<Self>,
        max: usize,
        heartbeat: bool,
        out: &mut Vec<Delivery<T, R>>,
    ) -> usize {
        if self.is_closed() {
            return 0;
        }
        if !heartbeat {
            return self.take_batch_plain(max, out);
        }
        let mut st = self.lock();
        let now = self.rt.now();
        // One allocation for the batch rather than a few regrowths.
        let ready = usize::try_from(st.core.stats().ready).unwrap_or(usize::MAX);
        out.reserve(max.min(ready));
        let mut n = 0;
        while n < max {
            let Some(d) = self.lease_locked(&mut st, now, heartbeat, self.clone()) else {
                break;
            };
            out.push(d);
            n += 1;
        }
        let more = st.core.stats().ready > 0;
        drop(st);
        if n > 0 && more {
            self.available.notify(1);
        }
        n
    }

    /// `take_batch` without heartbeats: only the core's work happens under the lock; the
    /// deliveries (each with its own reference to the queue) are built after it is released.
    fn take_batch_plain(self: &Arc<Self>, max: usize, out: &mut Vec<Delivery<T, R>>) -> usize {
        let mut leases = Vec::with_capacity(max.min(256));
        let mut st = self.lock();
        let now = self.rt.now();
        let n = st.core.receive_many(now, max, &mut leases);
        let more = st.core.stats().ready > 0;
        drop(st);
        if n > 0 && more {
            self.available.notify(1);
        }
        out.reserve(n);
        out.extend(
            leases
                .into_iter()
                .map(|lease| Delivery::new(self.clone(), lease, None)),
        );
        n
    }

    /// Leases the next visible item under the lock the caller holds, registering its
    /// heartbeat if asked.
    fn lease_locked(
        &self,
        st: &mut State<T>,
        now: Timestamp,
        heartbeat: bool,
        shared: Arc<Self>,
    ) -> Option<Delivery<T, R>> {
        let lease = st.core.receive(now)?;
        let beat = heartbeat.then(|| {
            let signal = Arc::new(LeaseSignal::default());
            // (Releasing the lock wakes the driver for this beat if it is the earliest.)
            let first = now.saturating_add(self.heartbeat_every).min(lease.deadline);
            let key = st.beats.register(lease.receipt, signal.clone(), first);
            (key, signal)
        });
        Some(Delivery::new(shared, lease, beat))
    }
}
