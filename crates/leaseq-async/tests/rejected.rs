//! `Stats::rejected` counts refusals returned to the caller: an awaited push that waits for
//! room in a full bounded queue counts nothing while it waits; a `try_push` into a full queue
//! and an awaited push finally refused count one each. Virtual time.

use std::time::Duration;

use leaseq_async::{Config, LeaseQueue, Push, PushError, Runtime, SimRuntime};
use leaseq_test_kit::sim::{self, sleep};

fn bounded(rt: &SimRuntime, capacity: usize) -> LeaseQueue<u32, SimRuntime> {
    let config = Config::new(Duration::from_secs(10)).with_capacity(capacity);
    LeaseQueue::with_runtime(rt.clone(), config).unwrap()
}

/// Five producers await 10 pushes each into a queue of capacity 1 while one consumer drains
/// it, a millisecond per item: every push waits for room (found full again and again) and
/// succeeds, so nothing was refused to anyone: `rejected` stays 0.
#[test]
fn awaited_pushes_that_wait_for_room_are_not_rejections() {
    sim::run(|rt| async move {
        let q = bounded(&rt, 1);
        let producers: Vec<_> = (0..5u32)
            .map(|p| {
                let q = q.clone();
                rt.spawn(Box::pin(async move {
                    for i in 0..10 {
                        q.push(p * 100 + i).await.unwrap();
                    }
                }))
            })
            .collect();
        for _ in 0..50 {
            let d = q.receive().await.unwrap();
            sleep(&rt, Duration::from_millis(1)).await;
            d.ack().await.unwrap();
        }
        for producer in producers {
            producer.await;
        }
        let s = q.stats();
        assert_eq!((s.pushed, s.acked, s.live()), (50, 50, 0), "{s:?}");
        assert_eq!(s.rejected, 0, "{s:?}");
    });
}

/// `try_push` into a full queue is refused to its caller: counted once per refusal; the
/// same queue's awaited push that waits out the full queue adds nothing.
#[test]
fn a_try_push_into_a_full_queue_counts_one() {
    sim::run(|rt| async move {
        let q = bounded(&rt, 1);
        q.try_push(1).unwrap();
        assert!(matches!(q.try_push(2), Err(PushError::Full(2))));
        assert_eq!(q.stats().rejected, 1);
        let waiting = rt.spawn(Box::pin({
            let q = q.clone();
            async move {
                q.push(3).await.unwrap();
            }
        }));
        sleep(&rt, Duration::from_millis(5)).await;
        assert_eq!(
            q.stats().rejected,
            1,
            "a push waiting for room is not refused"
        );
        q.receive().await.unwrap().ack().await.unwrap();
        waiting.await;
        let s = q.stats();
        assert_eq!((s.pushed, s.ready, s.rejected), (2, 1, 1), "{s:?}");
    });
}

/// An awaited push refused for a reason it does not wait out is returned to its caller and
/// counted: a held unique key (counted in `duplicates` too) on a bounded queue, and a keyed
/// push that waited for room, then found its key held.
#[test]
fn an_awaited_push_finally_refused_counts_one() {
    sim::run(|rt| async move {
        let q = bounded(&rt, 2);
        let holder = q.push_with(1, Push::new().key("k")).await.unwrap();
        let refused = q.push_with(2, Push::new().key("k")).await;
        assert!(
            matches!(refused, Err(PushError::DuplicateKey { item: 2, existing }) if existing == holder)
        );
        let s = q.stats();
        assert_eq!((s.rejected, s.duplicates), (1, 1), "{s:?}");

        // Full: the keyed push waits (not counted); room comes, but its key is held now.
        q.try_push(3).unwrap();
        let waiting = rt.spawn(Box::pin({
            let q = q.clone();
            async move {
                let r = q.push_with(4, Push::new().key("j")).await;
                assert!(matches!(r, Err(PushError::DuplicateKey { item: 4, .. })));
            }
        }));
        sleep(&rt, Duration::from_millis(5)).await;
        assert_eq!(q.stats().rejected, 1, "waiting for room is not a refusal");
        // Free one place (item 1 acked), and take it with an item holding key "j".
        let first = q.receive().await.unwrap();
        assert_eq!(first.id(), holder);
        first.ack().await.unwrap();
        // (The waiting push, woken by that ack, runs only once this task waits.)
        q.try_push_with(5, Push::new().key("j")).unwrap();
        let next = q.receive().await.unwrap();
        next.ack().await.unwrap();
        waiting.await;
        let s = q.stats();
        assert_eq!((s.rejected, s.duplicates), (2, 2), "{s:?}");
    });
}
