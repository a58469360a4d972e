//! The reaper: one task per queue that applies lease deadlines and ends of delays on time.
//!
//! It sleeps exactly until the core's `poll_timeout`, applies what is due, wakes receivers
//! for the items that came back, and sleeps again. An operation that creates an earlier
//! deadline than the one it sleeps to re-arms it (see `Shared::rearm`). There is no polling
//! loop: with nothing scheduled it sleeps until notified. It ends when the queue is closed or
//! its last handle is dropped.

use std::sync::atomic::Ordering;
use std::sync::Weak;

use leaseq_core::Timestamp;

use crate::runtime::{sleep_or_wake, Runtime};
use crate::shared::Shared;

pub(crate) async fn run<T, R: Runtime>(shared: Weak<Shared<T, R>>) {
    loop {
        let Some(s) = shared.upgrade() else { return };
        if s.is_closed() || s.handles.load(Ordering::Acquire) == 0 {
            return;
        }
        let listener = s.reaper_wake.listen();
        let (next, ready, empty) = {
            let now = s.rt.now();
            let mut st = s.lock();
            st.core.handle_timeout(now);
            let next = st.core.poll_timeout();
            st.reaper_at = next.unwrap_or(Timestamp::MAX);
            (next, st.core.stats().ready, st.core.is_empty())
        };
        if empty {
            s.emptied.notify(usize::MAX);
        }
        if ready > 0 {
            s.available.notify(ready.min(usize::MAX as u64) as usize);
        }
        let rt = s.rt.clone();
        // Sleep without holding the queue alive, so that its last handle can go.
        drop(s);
        sleep_or_wake(&rt, next, listener).await;
    }
}
