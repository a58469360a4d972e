//! Pipelined work on a store whose commits take time (a memory store behind a seam that
//! answers each settle 5 ms after making it, as a durable store answers once committed):
//! workers and one-at-a-time consumers go on without waiting for their settle's commit,
//! every answer is still counted, and leases taken ahead go back uncounted and are never
//! handed out with less than half their visibility left (virtual time).

mod support;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_async::{
    Acked, Config, LeaseQueue, Pool, PoolReport, ReceiptError, Runtime, SettleError, Timestamp,
};
use leaseq_test_kit::sim;

use support::faulty::{queue, queue_with};

const COMMIT: Duration = Duration::from_millis(5);

/// A pool of 2 on a store whose every settle takes 5 ms to commit works through 100 items
/// in about one commit's time, not 100 x 5 ms / 2 = 250 ms as workers waiting on their
/// acks would; the shutdown waits for the last answers, and the report counts them all.
/// Two workers (no watchdog) ack every item of `q` until it is empty, then stop; the
/// pool's report.
async fn drained(q: &support::faulty::Q) -> PoolReport {
    let pool = Pool::builder(q.clone())
        .workers(2)
        .no_watchdog()
        .spawn(|_job| async { Ok(()) });
    q.wait_empty().await;
    pool.shutdown(Duration::from_secs(1)).await
}

#[test]
fn pool_workers_do_not_wait_for_their_commits() {
    sim::run(|rt| async move {
        let (q, store) = queue_with(&rt, COMMIT);
        for n in 0..100 {
            q.try_push(n).unwrap();
        }
        let start = rt.now();
        let report = drained(&q).await;
        let took = rt.now().saturating_duration_since(start);
        assert_eq!(store.answered.load(Ordering::SeqCst), 100);
        assert_eq!((report.stats.ok, report.stats.queue.acked), (100, 100));
        assert_eq!(report.stats.stale_settles + report.stats.failed_settles, 0);
        assert!(
            took <= COMMIT * 4,
            "took {took:?}: the workers waited on commits"
        );
    });
}

/// A store that claims its settles are ready at once but is not: a pool worker polls each
/// settle once, as it does on the memory store, and counts every one still pending as a
/// failed settle (its answer never comes), not as done. The acks were made before their
/// commits, so the queue empties; nothing is counted `Ok` that the store did not answer.
#[test]
fn a_settle_still_pending_after_its_one_poll_is_counted_failed() {
    sim::run(|rt| async move {
        let (q, store) = queue_with(&rt, COMMIT);
        store.claims_at_once.store(true, Ordering::SeqCst);
        for n in 0..10 {
            q.try_push(n).unwrap();
        }
        let report = drained(&q).await;
        let s = &report.stats;
        assert_eq!((s.ok, s.queue.acked), (10, 10), "{s:?}");
        assert_eq!(s.failed_settles, 10, "every pending settle counted: {s:?}");
        assert_eq!(store.answered.load(Ordering::SeqCst), 0, "no answer came");
    });
}

/// `ack_nowait` makes the ack at the call (the queue counts it at once) and answers as
/// `ack` would once the commit is done; a one-at-a-time consumer using it is not held up
/// by commits. A stale receipt's answer is the same typed refusal.
#[test]
fn ack_nowait_answers_as_ack_does_without_holding_the_consumer() {
    sim::run(|rt| async move {
        let (q, store) = queue_with(&rt, COMMIT);
        q.try_push(1).unwrap();
        let mut settling = q.receive().await.unwrap().ack_nowait();
        assert_eq!(q.stats().acked, 1, "made at the call");
        assert!(!settling.is_done(), "the commit takes 5 ms");
        assert!(settling.try_result().is_none());
        assert_eq!(settling.await, Ok(Acked::OnTime));

        // One at a time: 50 items, each acked without waiting.
        let start = rt.now();
        for n in 0..50 {
            q.try_push(n).unwrap();
        }
        let mut answers = Vec::new();
        for _ in 0..50 {
            answers.push(q.receive().await.unwrap().ack_nowait());
        }
        assert!(rt.now().saturating_duration_since(start) < COMMIT);
        for a in answers {
            assert_eq!(a.await, Ok(Acked::OnTime));
        }
        assert_eq!(store.answered.load(Ordering::SeqCst), 51);

        // The lease ran out and the item went to someone else: refused, typed.
        let id = q.try_push(7).unwrap();
        let old = q.receive().await.unwrap();
        rt.sleep_until(old.deadline()).await;
        let new = q.receive().await.unwrap();
        assert_eq!(
            old.ack_nowait().await,
            Err(SettleError::Stale(ReceiptError::Redelivered(id)))
        );
        assert_eq!(new.ack_nowait().await, Ok(Acked::OnTime));
    });
}

/// On the memory store (which settles at once) the answer is there when the call returns.
#[test]
fn ack_nowait_on_a_store_that_settles_at_once_is_answered_at_once() {
    sim::run(|rt| async move {
        let q = LeaseQueue::with_runtime(rt, Config::new(Duration::from_secs(5))).unwrap();
        q.try_push(1u32).unwrap();
        let mut settling = q.receive().await.unwrap().ack_nowait();
        assert!(settling.is_done());
        assert_eq!(settling.try_result(), Some(Ok(Acked::OnTime)));
        assert_eq!(q.stats().acked, 1);
    });
}

/// A pool whose worker hangs holds one item and others leased ahead; at shutdown the
/// prefetched ones go back uncounted, and so does the hung item, cut off at the end of the
/// grace (attempt 1 next time for all).
#[test]
fn prefetched_leases_go_back_uncounted_at_shutdown() {
    sim::run(|rt| async move {
        let (q, _store) = queue(&rt);
        for n in 0..5 {
            q.try_push(n).unwrap();
        }
        let started = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let pool = Pool::builder(q.clone())
            .workers(1)
            .prefetch(4)
            .no_watchdog()
            .spawn({
                let started = started.clone();
                move |_job| {
                    started.store(true, Ordering::SeqCst);
                    futures::future::pending()
                }
            });
        // The worker holds one; the fetcher took 3 or 4 more (as the first fetch came
        // before or after the worker waited), and refills only below half its prefetch.
        while !started.load(Ordering::SeqCst) {
            sim::sleep(&rt, Duration::from_millis(1)).await;
        }
        sim::sleep(&rt, Duration::from_millis(10)).await;
        let held = q.stats().in_flight;
        assert!((4..=5).contains(&held), "{:?}", q.stats());
        let report = pool.shutdown(Duration::from_millis(100)).await;
        assert_eq!(report.handed_back, 1);
        assert_eq!(report.put_back.len(), 1);
        let s = q.stats();
        // The hung item, cut off at the end of the grace, is put back too.
        assert_eq!(
            (s.put_back, s.nacks, s.ready, s.delayed),
            (held, 0, 5, 0),
            "{s:?}"
        );
        let attempts: Vec<u32> = q
            .try_receive_batch(10)
            .iter()
            .map(|d| d.attempt())
            .collect();
        assert_eq!(attempts, [1, 1, 1, 1, 1]);
    });
}

/// One worker busy for 8 s (its lease kept by the heartbeat) while two items wait in the
/// prefetch, visibility 10 s: they are put back at 5 s (half the visibility) and leased
/// again, so every handler starts with at least half the visibility left, on its first
/// attempt.
#[test]
fn prefetched_leases_never_go_out_with_less_than_half_their_visibility() {
    sim::run(|rt| async move {
        let (q, _store) = queue(&rt);
        for n in 0..3 {
            q.try_push(n).unwrap();
        }
        let seen: Arc<Mutex<Vec<(u32, u32, Duration)>>> = Arc::default();
        let pool = Pool::builder(q.clone())
            .workers(1)
            .prefetch(2)
            .heartbeat(true)
            .no_watchdog()
            .spawn({
                let (rt, seen) = (rt.clone(), seen.clone());
                move |job| {
                    let (rt, seen) = (rt.clone(), seen.clone());
                    async move {
                        let left = job.deadline.saturating_duration_since(rt.now());
                        seen.lock().unwrap().push((job.item, job.attempt, left));
                        if job.item == 0 {
                            sim::sleep(&rt, Duration::from_secs(8)).await;
                        }
                        Ok(())
                    }
                }
            });
        q.wait_empty().await;
        pool.shutdown(Duration::from_secs(1)).await;
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 3, "{seen:?}");
        for (item, attempt, left) in &seen {
            assert_eq!(*attempt, 1, "item {item}: {seen:?}");
            assert!(*left >= Duration::from_secs(5), "item {item}: {seen:?}");
        }
        assert!(q.stats().put_back >= 2, "{:?}", q.stats());
        assert_eq!(
            rt.now(),
            Timestamp::ZERO.saturating_add(Duration::from_secs(8))
        );
    });
}

/// A store failure reaches whoever awaits a non-waiting settle, typed as for `ack`: a lost
/// reply is "outcome unknown", never `Ok`.
#[test]
fn ack_nowait_reports_a_lost_reply_as_outcome_unknown() {
    sim::run(|rt| async move {
        let (q, store) = queue_with(&rt, COMMIT);
        store.faults.settle_reply_lost.store(1, Ordering::Release);
        q.try_push(1).unwrap();
        let answer = q.receive().await.unwrap().ack_nowait().await;
        match answer {
            Err(SettleError::Store(e)) => assert!(e.is_outcome_unknown(), "{e}"),
            other => panic!("expected outcome unknown, got {other:?}"),
        }
    });
}
