//! The driver: one task per queue, with one timer, that runs its store's due work.
//!
//! It sleeps until the store's next alarm (for the memory store: the earlier of the core's
//! next deadline and the next heartbeat), runs one [`Store::drive`] step (leases running
//! out, delays ending, heartbeats, events drained), and sleeps again. Its one timer is
//! reset to the next alarm, never rebuilt. An operation that creates an earlier deadline or
//! beat wakes it (the memory store does so as it releases its lock). There is no polling
//! loop: with nothing scheduled it sleeps until woken. It ends when the store says it is
//! done: the last queue handle is gone and no lease is kept alive by the heartbeat.

use std::sync::Weak;

use futures::future::select;
use leaseq_core::Timestamp;

use crate::runtime::Runtime;
use crate::store::Store;

pub(crate) async fn run<T, S: Store<T>>(store: Weak<S>) {
    let Some(rt) = store.upgrade().map(|s| s.runtime().clone()) else {
        return;
    };
    let mut timer = rt.timer(Timestamp::MAX);
    loop {
        let Some(s) = store.upgrade() else { return };
        let listener = s.listen_driver();
        let step = s.drive().await;
        if step.done {
            return;
        }
        // Sleep without holding the store alive, so that its last handle can go.
        drop(s);
        rt.reset_timer(&mut timer, step.next);
        let _ = select(&mut timer, listener).await;
    }
}
