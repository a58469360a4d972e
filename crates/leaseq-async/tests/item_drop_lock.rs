//! An item's `Drop` never runs under the in-memory store's lock: an item whose `Drop` uses
//! its own queue does not deadlock a purge (it did: the purged items were dropped inside
//! the critical section). Run on a thread of its own with a time limit, so that a
//! regression fails instead of hanging the suite.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_async::{Config, LeaseQueue, SimRuntime};

type Queue = LeaseQueue<Touchy, SimRuntime>;

/// The queue an item's `Drop` reads (set once the queue exists).
type Handle = Arc<Mutex<Option<Queue>>>;

/// An item whose `Drop` reads its queue's stats (which takes the queue's lock).
#[derive(Clone)]
struct Touchy(Handle);

impl Drop for Touchy {
    fn drop(&mut self) {
        let q = self.0.lock().unwrap().clone();
        if let Some(q) = q {
            let _ = q.stats();
        }
    }
}

/// Runs `f` on a thread of its own; fails if it has not returned within a minute (a
/// deadlock: the thread is left behind).
fn within_a_minute(f: impl FnOnce() + Send + 'static) {
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        f();
        let _ = done.send(());
    });
    finished
        .recv_timeout(Duration::from_secs(60))
        .expect("deadlocked: an item's Drop ran under the queue's lock");
}

#[test]
fn a_purge_drops_the_items_after_the_lock() {
    within_a_minute(|| {
        let rt = SimRuntime::new();
        rt.block_on(async {
            let handle: Handle = Arc::default();
            let q: Queue =
                LeaseQueue::with_runtime(rt.clone(), Config::new(Duration::from_secs(5))).unwrap();
            *handle.lock().unwrap() = Some(q.clone());
            for _ in 0..3 {
                q.push(Touchy(handle.clone())).await.unwrap();
            }
            assert_eq!(q.purge().await.unwrap(), 3);
            assert_eq!(q.stats().live(), 0);
            // The queue no longer holds itself.
            handle.lock().unwrap().take();
        });
    });
}
