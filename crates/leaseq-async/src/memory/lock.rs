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
///   With a record of finished jobs, also when the section made dead letters (the driver
///   records them);
/// - **receivers**, one per item that became visible (a push, a nack without backoff, a
///   lease that ran out, a delay that ended, a redrive);
///   with flow control (`flow.rs`, `rate.rs`), one more when a place frees or an item a rate
///   held back becomes eligible;
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
    /// Decides every wake-up here, and makes the calls out of line, only when one may wake
    /// somebody: nearly every release wakes nobody, and then holds no value across a call
    /// (no registers saved and restored for calls that are not made).
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
        let driver = if at < st.alarm {
            st.alarm = at;
            true
        } else {
            // (With a record of finished jobs, the driver records the dead letters this
            // section made: `record_dead`.)
            s.watches_core.load(std::sync::atomic::Ordering::Relaxed)
                && ((s.traces_events && st.core.has_events()) || st.core.has_noted_dead())
        };
        let more = stats.ready.saturating_sub(self.ready_before);
        // `Stats::live` without its saturation: the core's own counts are of fewer than
        // `u32::MAX` slots and cannot overflow.
        let live = stats.ready + stats.delayed + stats.in_flight;
        let fewer = live < st.live_at_release;
        st.live_at_release = live;
        // A signal nobody listens to is not notified (see `Signal::notify`): skipping its
        // call here is the same decision, read after the change as there.
        if driver
            || (more > 0 && s.available.is_listened())
            || (fewer && (s.space.is_listened() || (live == 0 && s.emptied.is_listened())))
        {
            wake(s, driver, more, fewer, live == 0);
        }
        // With flow control, a place freed may let a held-back item go (see `flow.rs`).
        if st.flow {
            wake_freed(s, st);
        }
    }
}

/// With flow control: wakes a receiver if fewer items are in flight than at the last
/// release, or an item a rate held back became eligible (`rate.rs`), while items are ready
/// (it passes the baton on if it takes one).
#[cold]
#[inline(never)]
fn wake_freed<T, R>(s: &MemoryStore<T, R>, st: &mut State<T>) {
    let stats = st.core.stats();
    let fewer = stats.in_flight < st.in_flight_at_release;
    st.in_flight_at_release = stats.in_flight;
    let rate_wakes = st.core.rate_wakes();
    let eligible = rate_wakes != st.rate_wakes_at_release;
    st.rate_wakes_at_release = rate_wakes;
    if (fewer || eligible) && stats.ready > 0 {
        s.available.notify(1);
    }
}

/// The wake-ups a guard's release decided (see [`Locked`]): the driver; `more` receivers;
/// pushers waiting for room when items left (`fewer`), and `wait_empty` when none are left.
#[cold]
#[inline(never)]
fn wake<T, R>(s: &MemoryStore<T, R>, driver: bool, more: u64, fewer: bool, empty: bool) {
    if driver {
        s.driver_wake.notify(1);
    }
    if more > 0 {
        s.available
            .notify(usize::try_from(more).unwrap_or(usize::MAX));
    }
    if fewer {
        s.space.notify(usize::MAX);
        if empty {
            s.emptied.notify(usize::MAX);
        }
    }
}
