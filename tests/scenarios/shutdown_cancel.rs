//! Stopping and cancelling: graceful pool shutdown, cancelled receives.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use leaseq_async::{Backoff, Config, Job, MessageId, Pool, Runtime};

use super::env::*;

// ----- 9. graceful shutdown -----------------------------------------------------------------

/// Shutdown with a grace shorter than the items in flight: they are cut off and put back
/// uncounted (`report.handed_back`, `report.put_back`), and nothing is lost.
pub(crate) async fn shutdown_short_grace_hands_items_back<R: Runtime, K: StoreKind<R>>(
    env: Env<R, K>,
) {
    shutdown_with_items_in_flight(env, false).await;
}

/// Shutdown with a grace longer than the items in flight: they finish and are acked; the
/// workers take no new items; nothing is lost.
pub(crate) async fn shutdown_long_grace_lets_items_finish<R: Runtime, K: StoreKind<R>>(
    env: Env<R, K>,
) {
    shutdown_with_items_in_flight(env, true).await;
}

async fn shutdown_with_items_in_flight<R: Runtime, K: StoreKind<R>>(
    env: Env<R, K>,
    long_grace: bool,
) {
    let u = env.u;
    // (The work is long enough that on real time, under load, the shutdown still begins
    // while the first three items are in flight.)
    let (work, grace) = if long_grace {
        (10 * u, 40 * u)
    } else {
        (20 * u, u)
    };
    // No backoff (the items put back are ready at once anyway).
    let q = env.queue::<u32>(Config::new(100 * u).with_backoff(Backoff::None));
    let ids: Vec<MessageId> = (0..6).map(|n| q.try_push(n).unwrap()).collect();
    let finished = Arc::new(Mutex::new(Vec::new()));
    let started = Arc::new(AtomicUsize::new(0));
    let start = env.now();
    let pool = Pool::builder(q.clone()).workers(3).spawn({
        let (finished, started, rt) = (finished.clone(), started.clone(), env.rt.clone());
        move |job: Job<u32>| {
            started.fetch_add(1, Ordering::SeqCst);
            let finished = finished.clone();
            let slow = sleep(&rt, work);
            async move {
                slow.await;
                finished.lock().unwrap().push(job.id);
                Ok(())
            }
        }
    });
    // Three handlers running (not only three leases taken: a durable store hands a lease
    // to its worker only once the attempt is committed).
    env.until(env.patience(), "three handlers running", || {
        started.load(Ordering::SeqCst) == 3
    })
    .await;
    let t = env.now();
    let report = pool.shutdown(grace).await;
    // Each of the three in flight acked or put back (a shared store commits a put-back a
    // moment after the cut: shutdown does not wait for that, the queue's close does).
    let s = env
        .stats_once(&q, "the three settled", |s| {
            s.in_flight == 0 && s.acked + s.ready == 6
        })
        .await;
    if long_grace {
        assert_eq!(report.handed_back, 0);
        assert_eq!(report.stats.ok, 3);
        assert_eq!((s.acked, s.ready, s.nacks), (3, 3, 0), "{s:#?}");
        env.exactly(env.now(), start.saturating_add(work), "finished at");
    } else {
        assert_eq!(report.handed_back, 3);
        assert_eq!(report.put_back.len(), 3);
        assert_eq!(report.stats.ok, 0);
        // Put back uncounted: no nack (the items leased ahead count in `put_back` too).
        assert_eq!((s.acked, s.ready, s.nacks), (0, 6, 0), "{s:#?}");
        assert!(s.put_back >= 3, "{s:#?}");
        env.exactly(env.now(), t.saturating_add(grace), "stopped at");
    }
    // Nothing in flight once shutdown returns, in its own report too. (A shared store's
    // report has the gauges as last counted, before its hand-backs committed: there the
    // fresh count above says it.)
    assert_eq!(s.in_flight, 0, "{s:#?}");
    if K::VISIBLE_AT_ONCE {
        assert_eq!(report.stats.queue.in_flight, 0, "{:#?}", report.stats.queue);
    }
    assert_eq!((s.lease_expired, s.dead_lettered), (0, 0));
    assert_conserved(&q);

    // Every pushed id is acked, in the queue, or dead-lettered, exactly once.
    let acked = finished.lock().unwrap().clone();
    let waiting = q.try_receive_batch(usize::MAX);
    // The stop cost no attempt.
    assert!(waiting.iter().all(|d| d.attempt() == 1));
    let mut all: Vec<MessageId> = acked
        .iter()
        .copied()
        .chain(waiting.iter().map(|d| d.id()))
        .chain(dead_letters(&q).iter().map(|d| d.id))
        .collect();
    all.sort();
    assert_eq!(all, ids);
    assert_eq!(q.ack_batch(waiting).await.accepted(), 6 - acked.len());
    assert_eq!(q.stats().acked, 6);
    assert_conserved(&q);
}

// ----- 10. cancelled receives ---------------------------------------------------------------

/// Counts wake-ups.
#[derive(Default)]
struct Wakes(AtomicUsize);

impl Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Receives cancelled at every point lose nothing. First, deterministically: a receiver
/// woken for an item and dropped before it took it passes the wake-up to the next waiting
/// receiver. Then many iterations where a receive races a timer and
/// another receive, with items pushed at random moments: afterwards every item was received
/// exactly once and nothing is left in flight.
pub(crate) async fn cancelled_receive_loses_nothing<R: Runtime, K: StoreKind<R>>(env: Env<R, K>) {
    let u = env.u;
    let q = env.queue::<u32>(Config::new(1000 * u));

    // The baton: the receiver woken for the item is cancelled, and the wake-up passes on.
    let w1 = Arc::new(Wakes::default());
    let w2 = Arc::new(Wakes::default());
    let (waker1, waker2) = (Waker::from(w1.clone()), Waker::from(w2.clone()));
    let mut r1 = Box::pin(q.receive());
    let mut r2 = Box::pin(q.receive());
    assert!(r1
        .as_mut()
        .poll(&mut Context::from_waker(&waker1))
        .is_pending());
    assert!(r2
        .as_mut()
        .poll(&mut Context::from_waker(&waker2))
        .is_pending());
    let id = q.try_push(1).unwrap();
    let woken = |w: &Wakes| w.0.load(Ordering::SeqCst);
    if !K::VISIBLE_AT_ONCE {
        // Woken once the store committed the push and claimed the item for a receiver.
        env.until(env.patience(), "a receiver woken", || {
            woken(&w1) + woken(&w2) > 0
        })
        .await;
    }
    // The first to wait is served first where one claim serves both (the memory store).
    // A durable store may run a claim for each: the second one's claim can see the push
    // and finish before the first one's, which came back short, so either is woken.
    let (first, mut second, w_second, waker_second) = if woken(&w1) > 0 {
        (r1, r2, w2, waker2)
    } else {
        assert!(!K::VISIBLE_AT_ONCE, "the first waiting receiver is woken");
        (r2, r1, w1, waker1)
    };
    assert_eq!(woken(&w_second), 0, "one receiver woken for one item");
    drop(first);
    if !K::VISIBLE_AT_ONCE {
        // The cancelled receiver's claim goes back (its attempt not counted) and is claimed
        // for the other once the store committed that.
        env.until(env.patience(), "the wake-up to pass on", || {
            woken(&w_second) > 0
        })
        .await;
    }
    assert_eq!(woken(&w_second), 1, "the wake-up passes on");
    match second
        .as_mut()
        .poll(&mut Context::from_waker(&waker_second))
    {
        Poll::Ready(Some(d)) => {
            assert_eq!((d.id(), d.attempt()), (id, 1));
            d.ack().await.unwrap();
        }
        // A durable store commits the attempt first: the item comes once that is done.
        Poll::Pending if !K::RECEIVES_AT_ONCE => {
            let d = env
                .within(env.patience(), "the commit", second.as_mut())
                .await
                .expect("queue open");
            assert_eq!((d.id(), d.attempt()), (id, 1));
            d.ack().await.unwrap();
        }
        other => panic!("expected the item, got {other:?}"),
    }
    drop(second);
    assert_eq!(q.stats().delivered, 1);

    // The races.
    const ITEMS: u64 = 400;
    const CONSUMERS: u64 = 3;
    // Receptions by item (item `n` at `n + 1`: the baton is at 0); the ids by item.
    let counts: Arc<Vec<AtomicU32>> = Arc::new((0..=ITEMS).map(|_| AtomicU32::new(0)).collect());
    let pushed = Arc::new(Mutex::new(Vec::<MessageId>::new()));
    // The baton item above counts as received.
    let received = Arc::new(AtomicUsize::new(1));
    let cancelled = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let producer = env.spawn({
        let (q, rt, pushed) = (q.clone(), env.rt.clone(), pushed.clone());
        async move {
            let mut rng = Rng::new(0x5eed);
            for n in 0..ITEMS as u32 {
                let id = q.try_push(n).unwrap();
                pushed.lock().unwrap().push(id);
                if rng.below(4) == 0 {
                    sleep(&rt, rng.up_to(u / 20)).await;
                }
            }
        }
    });
    let consumers: Vec<R::Task> = (0..CONSUMERS)
        .map(|k| {
            let (q, rt) = (q.clone(), env.rt.clone());
            let (counts, received, cancelled, failures) = (
                counts.clone(),
                received.clone(),
                cancelled.clone(),
                failures.clone(),
            );
            env.spawn(async move {
                let mut rng = Rng::new(k);
                // (Items dead-lettered count as done: only a durable store makes any here.)
                let done = || received.load(Ordering::SeqCst) + q.stats().dead_lettered as usize;
                while done() < (ITEMS + 1) as usize {
                    let mut timer = pin!(sleep(&rt, rng.up_to(u / 20)));
                    let mut a = pin!(q.receive());
                    let mut b = pin!(q.receive());
                    // The first of the three to finish, polled from a random one on, as
                    // `futures::select!` does; the other two are dropped.
                    let first = rng.below(3);
                    let got = std::future::poll_fn(|cx| {
                        for i in 0..3 {
                            let ready = match (first + i) % 3 {
                                0 => a.as_mut().poll(cx).map(Some),
                                1 => b.as_mut().poll(cx).map(Some),
                                _ => timer.as_mut().poll(cx).map(|()| None),
                            };
                            if ready.is_ready() {
                                return ready;
                            }
                        }
                        Poll::Pending
                    })
                    .await;
                    if got.is_none() {
                        cancelled.fetch_add(1, Ordering::SeqCst);
                    }
                    // Settled with the other receive still pending, awaited (a database
                    // store's ack is answered by a task of this runtime: blocking this
                    // thread on it could starve that task).
                    match got {
                        Some(Some(d)) => {
                            counts[*d.item() as usize + 1].fetch_add(1, Ordering::SeqCst);
                            received.fetch_add(1, Ordering::SeqCst);
                            if let Err(e) = d.ack().await {
                                failures.lock().unwrap().push(format!("ack refused: {e}"));
                            }
                        }
                        Some(None) => failures.lock().unwrap().push("queue closed".into()),
                        None => {}
                    }
                }
            })
        })
        .collect();
    env.within(env.patience(), "the producer", producer).await;
    for c in consumers {
        env.within(env.patience(), "a consumer to finish", c).await;
    }

    let failures = failures.lock().unwrap().clone();
    assert!(failures.is_empty(), "{failures:?}");
    let dead: Vec<MessageId> = dead_letters(&q).iter().map(|d| d.id).collect();
    let pushed = pushed.lock().unwrap().clone();
    for (n, c) in counts.iter().enumerate().skip(1) {
        let expected = u32::from(!dead.contains(&pushed[n - 1]));
        assert_eq!(
            c.load(Ordering::SeqCst),
            expected,
            "item {n} received that many times"
        );
    }
    assert!(
        cancelled.load(Ordering::SeqCst) > 0,
        "no receive was ever cancelled"
    );
    // (A shared store commits the hand-backs of cancelled receives a moment later.)
    let s = env
        .stats_once(&q, "nothing in flight", |s| s.in_flight == 0)
        .await;
    if K::RECEIVES_AT_ONCE {
        assert_eq!((s.delivered, s.redelivered), (ITEMS + 1, 0), "{s:#?}");
        assert_eq!((s.acked, s.in_flight, s.ready), (ITEMS + 1, 0, 0));
    } else {
        // A durable store: a receive cancelled while its lease's attempt was being
        // committed (SQLite), or whose claim came back after it went away (Postgres), puts
        // the lease back uncounted, as if never delivered: no item is redelivered or
        // dead-lettered for it, and every delivery not acked is such a put-back.
        assert_eq!(
            (s.nacks, s.redelivered, s.dead_lettered),
            (0, 0, 0),
            "{s:#?}"
        );
        assert_eq!(s.delivered, s.acked + s.put_back, "{s:#?}");
        assert_eq!(s.acked, ITEMS + 1, "{s:#?}");
        assert_eq!((s.in_flight, s.ready), (0, 0), "{s:#?}");
        assert!(!dead.contains(&id), "the baton was acked");
    }
    assert_conserved(&q);
}
