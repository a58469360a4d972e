//! The driver: one task per queue, with one timer, that applies deadlines, runs the
//! heartbeat and drains the core's events.
//!
//! It sleeps until the earlier of the core's next deadline (`poll_timeout`: a lease running
//! out, a delay ending, an item expiring) and the next heartbeat, applies what is due, wakes
//! receivers for the items that came back, and sleeps again. Its one timer is reset to the
//! next alarm, never rebuilt. Any operation that creates an earlier deadline or beat wakes
//! it as it releases the queue lock (see [`Locked`](crate::shared::Locked)). There is no
//! polling loop: with nothing scheduled it sleeps until woken. It ends when the last queue
//! handle is gone and no lease is kept alive by the heartbeat.

use std::sync::atomic::Ordering;
use std::sync::Weak;

use futures::future::select;
use leaseq_core::Timestamp;

use crate::runtime::Runtime;
use crate::shared::Shared;

pub(crate) async fn run<T: Send + 'static, R: Runtime>(shared: Weak<Shared<T, R>>) {
    let Some(rt) = shared.upgrade().map(|s| s.rt.clone()) else {
        return;
    };
    let mut timer = rt.timer(Timestamp::MAX);
    loop {
        let Some(s) = shared.upgrade() else { return };
        let listener = s.driver_wake.listen();
        let (next, ready, empty) = {
            let mut guard = s.lock();
            let st = &mut *guard;
            let now = s.rt.now();
            st.core.handle_timeout(now);
            let beat = st
                .beats
                .run_due(&mut st.core, now, s.heartbeat_every, s.visibility)
                .unwrap_or(Timestamp::MAX);
            #[cfg(feature = "tracing")]
            if s.traces_events {
                while let Some(event) = st.core.poll_event() {
                    crate::trace::event(&event);
                }
            }
            if st.beats.len() == 0 && s.handles.load(Ordering::Acquire) == 0 {
                return;
            }
            let next = st.core.poll_timeout().unwrap_or(Timestamp::MAX).min(beat);
            st.alarm = next;
            (next, st.core.stats().ready, st.core.is_empty())
        };
        if empty {
            s.emptied.notify(usize::MAX);
        }
        if ready > 0 && !s.is_closed() {
            s.available
                .notify(usize::try_from(ready).unwrap_or(usize::MAX));
        }
        // Sleep without holding the queue alive, so that its last handle can go.
        drop(s);
        rt.reset_timer(&mut timer, next);
        let _ = select(&mut timer, listener).await;
    }
}
