//! The failing-worker scenarios: a dropped delivery, a panicking handler, an aborted worker.

use leaseq_async::{Backoff, Config, Job, MessageId, Pool, Reason, Runtime, Watchdog};

use super::env::*;

// ----- 4. dropped delivery ------------------------------------------------------------------

/// A delivery dropped unsettled is back at once (no time passes: the next receive needs no
/// await), as attempt 2, counted as a nack; dropped on its last attempt it is dead-lettered
/// with `Reason::Dropped`. A receiver already waiting is woken by the drop.
pub(crate) async fn dropped_delivery_comes_back_at_once<R: Runtime, K: StoreKind<R>>(
    env: Env<R, K>,
) {
    let u = env.u;
    // No backoff: this scenario times the retries to the failures themselves.
    let config = Config::new(50 * u)
        .with_max_attempts(2)
        .with_backoff(Backoff::None);
    let q = env.queue::<u32>(config);
    let id = q.try_push(7).unwrap();
    let first = env
        .within(env.patience(), "a delivery", q.receive())
        .await
        .expect("queue open");
    assert_eq!((first.id(), first.attempt()), (id, 1));
    let t = env.now();
    drop(first);
    let again = if K::VISIBLE_AT_ONCE {
        // No await since the drop: the item must be receivable right now.
        let mut again = q.try_receive_batch(1);
        assert_eq!(again.len(), 1, "the dropped item is not back at once");
        again.pop().unwrap()
    } else {
        // Back once the store committed the hand-back (a lease that ran out instead would
        // show in `lease_expired` below).
        env.within(env.patience(), "the dropped item", q.receive())
            .await
            .expect("queue open")
    };
    assert_eq!((again.id(), again.attempt(), *again.item()), (id, 2, 7));
    env.exactly(env.now(), t, "no time passes");
    let s = q.stats();
    assert_eq!(
        (s.nacks, s.lease_expired, s.redelivered),
        (1, 0, 1),
        "{s:#?}"
    );

    // Dropped on its last attempt: to the dead letters.
    drop(again);
    if !K::VISIBLE_AT_ONCE {
        env.until(
            env.patience(),
            "the dropped item in the dead letters",
            || !dead_letters(&q).is_empty(),
        )
        .await;
    }
    let dead = dead_letters(&q);
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(
        (dead[0].id, dead[0].reason, dead[0].attempts),
        (id, Reason::Dropped, 2)
    );
    assert_eq!(dead[0].last_error, None);
    let s = env
        .stats_once(&q, "the dead letter counted", |s| s.dead_lettered > 0)
        .await;
    assert_eq!(
        (s.nacks, s.dead_lettered, s.in_flight, s.ready),
        (2, 1, 0, 0)
    );

    // A receiver already waiting gets the item when its holder drops it, not at its lease.
    let (tx, rx) = futures::channel::oneshot::channel();
    let holder = env.spawn({
        let (q, rt) = (q.clone(), env.rt.clone());
        async move {
            let d = q.receive().await.expect("queue open");
            let _ = tx.send((d.id(), d.attempt()));
            sleep(&rt, u).await;
            drop(d);
        }
    });
    let id2 = q.try_push(8).unwrap();
    let held = env
        .within(env.patience(), "the holder", rx)
        .await
        .expect("holder ran");
    assert_eq!(held, (id2, 1));
    let t = env.now();
    let d = env
        .within(env.patience(), "the dropped item", q.receive())
        .await
        .expect("queue open");
    assert_eq!((d.id(), d.attempt()), (id2, 2));
    env.exactly(env.now(), t.saturating_add(u), "received at the drop");
    d.ack().await.unwrap();
    env.within(env.patience(), "the holder to end", holder)
        .await;
    let s = q.stats();
    assert_eq!((s.nacks, s.lease_expired, s.acked), (3, 0, 1), "{s:#?}");
    assert_conserved(&q);
}

// ----- 5. panicking handler -----------------------------------------------------------------

/// A handler that panics (inside its future, or before returning one): the panic is caught,
/// recorded with its own reason (`Reason::Panicked`) and its message as the item's last
/// error, and the one worker goes on with the next items.
pub(crate) async fn panicking_handler_is_caught<R: Runtime, K: StoreKind<R>>(env: Env<R, K>) {
    let u = env.u;
    // No backoff: this scenario times the retries to the failures themselves.
    let config = Config::new(50 * u)
        .with_max_attempts(2)
        .with_backoff(Backoff::None);
    let q = env.queue::<u32>(config);
    let ids: Vec<MessageId> = (0..6).map(|n| q.try_push(n).unwrap()).collect();
    let runs = Runs::default();
    let pool = Pool::builder(q.clone()).workers(1).spawn({
        let (runs, rt) = (runs.clone(), env.rt.clone());
        move |job: Job<u32>| {
            runs.record(&job, rt.now());
            let n = job.item;
            if n == 4 {
                panic!("sync boom {n}");
            }
            let pause = sleep(&rt, u / 10);
            async move {
                pause.await;
                if n == 2 {
                    panic!("boom {n}");
                }
                Ok(())
            }
        }
    });
    env.within(env.patience(), "the queue to empty", q.wait_empty())
        .await;

    // One worker, FIFO, no backoff: the panicking items go to the back and are retried once.
    // (By push order: a store's ids need not count from 0.)
    let order: Vec<usize> = runs
        .order()
        .iter()
        .map(|id| ids.iter().position(|i| i == id).expect("a pushed id"))
        .collect();
    assert_eq!(order, [0, 1, 2, 3, 4, 5, 2, 4]);
    let mut dead = dead_letters(&q);
    dead.sort_by_key(|d| d.id);
    assert_eq!(dead.len(), 2, "{dead:?}");
    for (d, (id, error)) in dead
        .iter()
        .zip([(ids[2], "boom 2"), (ids[4], "sync boom 4")])
    {
        assert_eq!((d.id, d.reason, d.attempts), (id, Reason::Panicked, 2));
        assert_eq!(d.last_error.as_deref(), Some(error));
    }
    let s = pool.stats();
    assert_eq!(
        (s.panicked, s.ok, s.failed, s.timed_out),
        (4, 4, 0, 0),
        "{s:#?}"
    );
    let item = s.types.iter().find(|(t, _)| *t == "item").expect("type").1;
    assert_eq!((item.panicked, item.ok), (4, 4));
    assert_eq!(
        (s.queue.acked, s.queue.dead_lettered, s.queue.nacks),
        (4, 2, 4)
    );

    let report = pool.shutdown(u).await;
    assert_eq!(report.handed_back, 0, "the worker is alive and idle");
    assert_conserved(&q);
}

// ----- 6. aborted worker --------------------------------------------------------------------

/// `pool.abort_worker(i)` while worker `i` holds an item: the item comes back to the queue at
/// once (a drop, not a lease expiry), another worker runs it, and the other workers go on
/// with new items. The watchdog names the worker holding the item.
pub(crate) async fn aborted_worker_hands_its_item_back<R: Runtime, K: StoreKind<R>>(
    env: Env<R, K>,
) {
    let u = env.u;
    // No backoff: the rerun is timed to the abort.
    let q = env.queue::<u32>(Config::new(50 * u).with_backoff(Backoff::None));
    let held = q.try_push(0).unwrap();
    let runs = Runs::default();
    let pool = Pool::builder(q.clone())
        .workers(3)
        .watchdog(Watchdog::new(u / 2, u))
        .spawn({
            let (runs, rt) = (runs.clone(), env.rt.clone());
            move |job: Job<u32>| {
                runs.record(&job, rt.now());
                let hang = job.item == 0 && job.attempt == 1;
                let pause = sleep(&rt, u / 10);
                async move {
                    if hang {
                        std::future::pending::<()>().await;
                    }
                    pause.await;
                    Ok(())
                }
            }
        });
    env.until(env.patience(), "the watchdog to name the holder", || {
        !pool.stuck_workers().is_empty()
    })
    .await;
    let stuck = pool.stuck_workers();
    assert_eq!(stuck.len(), 1, "{stuck:?}");
    assert_eq!(stuck[0].holding.id, held);
    let t = env.now();
    pool.abort_worker(stuck[0].worker);
    env.within(env.patience(), "the queue to empty", q.wait_empty())
        .await;
    let r = runs.of(held);
    assert_eq!(r.iter().map(|r| r.attempt).collect::<Vec<_>>(), [1, 2]);
    env.exactly(r[1].at, t, "rerun at the abort");
    env.exactly(env.now(), t.saturating_add(u / 10), "empty at");

    // The other workers go on with new items.
    for n in 1..=9 {
        q.try_push(n).unwrap();
    }
    env.within(env.patience(), "the queue to empty", q.wait_empty())
        .await;
    assert_eq!(runs.total(), 11);
    let s = pool.stats();
    assert_eq!(s.ok, 10, "{s:#?}");
    let qs = s.queue;
    assert_eq!(
        (qs.nacks, qs.lease_expired, qs.redelivered),
        (1, 0, 1),
        "{qs:#?}"
    );
    assert_eq!((qs.acked, qs.dead_lettered, qs.in_flight), (10, 0, 0));

    let report = pool.shutdown(u).await;
    assert_eq!(report.handed_back, 0, "the aborted worker counts as ended");
    assert_conserved(&q);
}
