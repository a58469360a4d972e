//! An item's `Clone` never runs under the in-memory store's lock when dead letters are
//! read: an item whose `Clone` uses its own queue (reads it, or drops a delivery of it)
//! does not deadlock a read of the dead letters, a kind filter's look at them, or take a
//! letter away if it panics. (It did deadlock: the letters were copied inside the critical
//! section; now they are lent out of it, copied, and returned.) Each test runs on a thread
//! of its own with a time limit, so that a regression fails instead of hanging the suite;
//! the time limit is a watchdog only, nothing is timed.
//!
//! A receive still copies the item under the lock (RELIABILITY.md, "known limits"): the
//! items below use the queue from their `Clone` only once `armed`, after they were received.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_async::{Config, DeadFilter, ItemKind, LeaseQueue, Page, SimRuntime};

type Queue = LeaseQueue<Touchy, SimRuntime>;

/// What an armed item's `Clone` does with its queue.
#[derive(Default)]
struct Shared {
    queue: Mutex<Option<Queue>>,
    /// Whether `Clone` (and `item_kind`) use the queue.
    armed: AtomicBool,
    /// Whether `Clone` panics (after using the queue).
    panics: AtomicBool,
    /// A delivery of the same queue, parked for `Clone` to drop (its drop hands the item
    /// back, under the queue's lock).
    parked: Mutex<Option<Box<dyn Any + Send>>>,
    /// Clones that used the queue.
    touched: AtomicUsize,
}

/// An item whose `Clone`, once armed, reads its queue's stats and drops the parked
/// delivery; its kind is read the same way.
struct Touchy {
    kind: &'static str,
    shared: Arc<Shared>,
}

impl Touchy {
    fn touch(&self) {
        if !self.shared.armed.load(Ordering::SeqCst) {
            return;
        }
        let q = self.shared.queue.lock().unwrap().clone();
        if let Some(q) = q {
            let _ = q.stats();
        }
        let parked = self.shared.parked.lock().unwrap().take();
        drop(parked);
        self.shared.touched.fetch_add(1, Ordering::SeqCst);
    }
}

impl Clone for Touchy {
    fn clone(&self) -> Self {
        self.touch();
        if self.shared.armed.load(Ordering::SeqCst) && self.shared.panics.load(Ordering::SeqCst) {
            panic!("a Clone that panics");
        }
        Touchy {
            kind: self.kind,
            shared: self.shared.clone(),
        }
    }
}

impl ItemKind for Touchy {
    fn item_kind(&self) -> Option<&str> {
        self.touch();
        Some(self.kind)
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
    match finished.recv_timeout(Duration::from_secs(60)) {
        Ok(()) => {}
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("deadlocked: an item's Clone ran under the queue's lock")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("failed on its thread (above)"),
    }
}

/// A queue on `rt` with three dead letters (kinds `a`, `b`, `a`) and one item in flight,
/// its delivery parked; nothing armed yet.
async fn dead_three(rt: &SimRuntime, shared: &Arc<Shared>) -> Queue {
    let q: Queue =
        LeaseQueue::with_runtime(rt.clone(), Config::new(Duration::from_secs(5))).unwrap();
    *shared.queue.lock().unwrap() = Some(q.clone());
    for kind in ["a", "b", "a", "parked"] {
        let item = Touchy {
            kind,
            shared: shared.clone(),
        };
        q.push(item).await.unwrap();
    }
    for _ in 0..3 {
        q.receive().await.unwrap().dead_letter("no").await.unwrap();
    }
    let parked = q.receive().await.unwrap();
    *shared.parked.lock().unwrap() = Some(Box::new(parked));
    let stats = q.stats();
    assert_eq!((stats.dead, stats.in_flight), (3, 1));
    q
}

/// Lets the queue go (it holds itself through its items).
fn release(shared: &Shared) {
    shared.armed.store(false, Ordering::SeqCst);
    shared.parked.lock().unwrap().take();
    shared.queue.lock().unwrap().take();
}

#[test]
fn a_dead_letter_page_copies_the_items_after_the_lock() {
    within_a_minute(|| {
        let rt = SimRuntime::new();
        rt.block_on(async {
            let shared = Arc::new(Shared::default());
            let q = dead_three(&rt, &shared).await;
            shared.armed.store(true, Ordering::SeqCst);

            let page = q.dead_letters(Page::ALL).await.unwrap();
            let kinds: Vec<_> = page.iter().map(|l| l.item.as_ref().unwrap().kind).collect();
            assert_eq!(kinds, ["a", "b", "a"]);
            assert!(shared.touched.load(Ordering::SeqCst) >= 3);
            // The parked delivery was dropped by a `Clone`: its item is back (after the
            // backoff of a failed attempt).
            let stats = q.stats();
            assert_eq!((stats.dead, stats.in_flight, stats.live()), (3, 0, 1));
            // The letters are back where they were: a second read sees them all.
            assert_eq!(q.dead_letters(Page::first(2)).await.unwrap().len(), 2);
            release(&shared);
        });
    });
}

#[test]
fn a_kind_filter_reads_the_kinds_after_the_lock() {
    within_a_minute(|| {
        let rt = SimRuntime::new();
        rt.block_on(async {
            let shared = Arc::new(Shared::default());
            let q = dead_three(&rt, &shared).await;
            shared.armed.store(true, Ordering::SeqCst);

            assert_eq!(
                q.purge_dead_matching(DeadFilter::all().kind("a"))
                    .await
                    .unwrap(),
                2
            );
            assert!(shared.touched.load(Ordering::SeqCst) >= 3);
            let stats = q.stats();
            assert_eq!((stats.dead, stats.in_flight, stats.live()), (1, 0, 1));
            assert_eq!(
                q.redrive_matching(DeadFilter::all().kind("b"))
                    .await
                    .unwrap(),
                1
            );
            let stats = q.stats();
            assert_eq!((stats.dead, stats.live()), (0, 2));
            release(&shared);
        });
    });
}

#[test]
fn a_clone_that_panics_takes_no_dead_letter_away() {
    within_a_minute(|| {
        let rt = SimRuntime::new();
        let shared = Arc::new(Shared::default());
        let letters = |q: &Queue| {
            rt.block_on(q.dead_letters(Page::ALL))
                .unwrap()
                .into_iter()
                .map(|l| (l.id, l.attempts, l.reason, l.last_error))
                .collect::<Vec<_>>()
        };
        let q = rt.block_on(dead_three(&rt, &shared));
        let before = letters(&q);
        shared.panics.store(true, Ordering::SeqCst);
        shared.armed.store(true, Ordering::SeqCst);

        let read = std::panic::catch_unwind(AssertUnwindSafe(|| letters(&q)));
        assert!(read.is_err(), "the Clone panicked");
        shared.panics.store(false, Ordering::SeqCst);
        shared.armed.store(false, Ordering::SeqCst);

        assert_eq!(letters(&q), before, "every letter is back, as it was");
        assert_eq!(q.stats().dead, 3);
        assert_eq!(
            rt.block_on(q.purge_dead_letters()).unwrap(),
            3,
            "and can be taken"
        );
        release(&shared);
    });
}
