//! The queue lock's guard, where every wake-up is decided.

use parking_lot::MutexGuard;

use super::{MemoryStore, State};

/// The queue lock's guard. When it is released it looks at what the critical section
/// changed and wakes whoever must know, so that no operation has to remember to:
///
/// - the **driver**, if the core's [`next_timeout_bound`](leaseq_core::Queue::next_timeout_bound)
///   or the next heartbeat is now earlier than its alarm (an extend or heartbeat that
///   shortened a lease, a delayed push, a nack with backoff, a receive, a new or
///   brought-forward beat), or, with events traced, if events wait to be drained;
/// - **receivers**, one per item that became visible (a push, a nack without backoff, a
///   lease that ran out, a delay that ended, a redrive);
/// - **pushers** waiting for room, when items left the queue;
/// - **`wait_empty`**, when nothing is ready, delayed or in flight;
/// - with the `metrics` feature, the **driver** again when the stats changed and no
///   publication of them is scheduled (see [`crate::metrics`]).
///
/// (A missed wake-up call after one operation once left a shortened lease to come back only
/// at its old deadline; here there is one place to get it right.)
pub(crate) struct Locked<'a, T, R> {
    guard: MutexGuard<'a, State<T>>,
    store: &'a MemoryStore<T, R>,
    /// Visible items when the lock was taken.
    ready_before: u64,
}

impl<'a, T, R> Locked<'a, T, R> {
    #[inline]
    pub(super) fn new(guard: MutexGuard<'a, State<T>>, store: &'a MemoryStore<T, R>) -> Self {
        let ready_before = guard.core.stats().ready;
        Locked {
            guard,
            store,
            ready_before,
        }
    }
}

impl<T, R> std::ops::Deref for Locked<'_, T, R> {
    type Target = State<T>;
    #[inline]
    fn deref(&self) -> &State<T> {
        &self.guard
    }
}

impl<T, R> std::ops::DerefMut for Locked<'_, T, R> {
    #[inline]
    fn deref_mut(&mut self) -> &mut State<T> {
        &mut self.guard
    }
}

impl<T, R> Drop for Locked<'_, T, R> {
    #[inline]
    fn drop(&mut self) {
        let st = &mut *self.guard;
        let s = self.store;
        let stats = st.core.stats();
        let at = st.core.next_timeout_bound().min(st.beats.next_due());
        // Changed stats are published by the driver, at most `PUBLISH_EVERY` later.
        #[cfg(feature = "metrics")]
        let at = {
            st.publish.note(&stats);
            at.min(st.publish.at)
        };
        if at < st.alarm {
            st.alarm = at;
            s.driver_wake.notify(1);
        } else if s.traces_events && st.core.has_events() {
            s.driver_wake.notify(1);
        }
        if stats.ready > self.ready_before {
            let more = usize::try_from(stats.ready - self.ready_before).unwrap_or(usize::MAX);
            s.available.notify(more);
        }
        // `Stats::live` without its saturation: the core's own counts are of fewer than
        // `u32::MAX` slots and cannot overflow.
        let live = stats.ready + stats.delayed + stats.in_flight;
        if live < st.live_at_release {
            s.space.notify(usize::MAX);
            if live == 0 {
                s.emptied.notify(usize::MAX);
            }
        }
        st.live_at_release = live;
    }
}
