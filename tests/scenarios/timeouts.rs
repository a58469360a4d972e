//! The handler-time scenarios: a hung handler under an item timeout, a slow one with and
//! without a heartbeat.

use leaseq_async::{
    Backoff, Config, FindingKind, ItemTimeout, Job, MessageId, Pool, Reason, Runtime, Timestamp,
};

use super::env::*;

// ----- 1. hung handler ----------------------------------------------------------------------

/// A handler that never finishes, under an item timeout: the item is handed back at each
/// time-out (never waiting for its lease), redelivered, and dead-lettered after its last
/// attempt with reason `TimedOut`, its attempt count and the "timed out after ..." error.
/// The other items are not held up, and the pool counts the time-outs.
pub(crate) async fn hung_handler_times_out<R: Runtime, K: StoreKind<R>>(env: Env<R, K>) {
    let u = env.u;
    let limit = 2 * u;
    // No backoff: the attempts are timed to the time-outs themselves.
    let config = Config::new(50 * u)
        .with_max_attempts(3)
        .with_backoff(Backoff::None);
    let q = env.queue::<u32>(config);
    let hung = q.try_push(0).unwrap();
    for n in 1..=4 {
        q.try_push(n).unwrap();
    }
    let runs = Runs::default();
    let start = env.now();
    let pool = Pool::builder(q.clone())
        .workers(2)
        .item_timeout(ItemTimeout::Fixed(limit))
        .item_type(|n: &u32| if *n == 0 { "hung" } else { "quick" })
        .spawn({
            let (runs, rt) = (runs.clone(), env.rt.clone());
            move |job: Job<u32>| {
                runs.record(&job, rt.now());
                let pause = sleep(&rt, u / 10);
                async move {
                    if job.item == 0 {
                        std::future::pending::<()>().await;
                    }
                    pause.await;
                    Ok(())
                }
            }
        });
    env.within(env.patience(), "the queue to empty", q.wait_empty())
        .await;

    // Three attempts, each handed back at its time-out, then the dead letters.
    assert_eq!(runs.attempts(hung), [1, 2, 3]);
    let at: Vec<Timestamp> = runs.of(hung).iter().map(|r| r.at).collect();
    if env.virtual_time {
        assert_eq!(
            at,
            [
                start,
                start.saturating_add(limit),
                start.saturating_add(2 * limit)
            ]
        );
    }
    let dead = dead_letters(&q);
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0].id, hung);
    assert_eq!(dead[0].reason, Reason::TimedOut);
    assert_eq!(dead[0].attempts, 3);
    assert_eq!(
        dead[0].last_error.as_deref(),
        Some(format!("timed out after {limit:?}").as_str())
    );
    env.exactly(dead[0].at, start.saturating_add(3 * limit), "dead at");
    env.exactly(env.now(), start.saturating_add(3 * limit), "empty at");

    let s = pool.stats();
    assert_eq!(s.timed_out, 3, "{s:#?}");
    assert_eq!((s.ok, s.failed, s.panicked, s.permanent), (4, 0, 0, 0));
    assert_eq!(s.stale_settles, 0);
    assert_eq!(s.handled(), 7);
    let hung_type = s.types.iter().find(|(t, _)| *t == "hung").expect("type").1;
    assert_eq!((hung_type.handled, hung_type.timed_out), (3, 3));
    assert_eq!(hung_type.timeout_ppm, 1_000_000);
    let quick_type = s.types.iter().find(|(t, _)| *t == "quick").expect("type").1;
    assert_eq!((quick_type.ok, quick_type.timed_out), (4, 0));
    // Handed back by the time-out, not by the lease: no lease ever expired.
    let qs = s.queue;
    assert_eq!(qs.lease_expired, 0, "{qs:#?}");
    assert_eq!((qs.nacks, qs.delivered, qs.redelivered), (3, 7, 2));
    assert_eq!((qs.acked, qs.dead_lettered, qs.in_flight), (4, 1, 0));

    let report = pool.shutdown(u).await;
    assert_eq!(report.handed_back, 0);
    assert_eq!(report.stats.timed_out, 3);
    assert!(kinds(&report.diagnosis).contains(&FindingKind::ItemTimeoutTooShort));
    assert_conserved(&q);
}

// ----- 2. slow handler with heartbeat -------------------------------------------------------

/// A handler slower than the visibility timeout, with the heartbeat on: the leases are kept
/// alive, so no item runs twice (runs counted per message id, with idle workers ready to
/// take any redelivery) and no ack is late.
pub(crate) async fn slow_handler_with_heartbeat_runs_once<R: Runtime, K: StoreKind<R>>(
    env: Env<R, K>,
) {
    let u = env.u;
    let work = 5 * u;
    // Visibility 2u, a beat every u/4: a beat may come 1.75u late before a lease is lost.
    let q = env.queue_with_heartbeat::<u32>(Config::new(2 * u), u / 4);
    let ids: Vec<MessageId> = (0..3).map(|n| q.try_push(n).unwrap()).collect();
    let runs = Runs::default();
    let start = env.now();
    let pool = Pool::builder(q.clone()).workers(4).heartbeat(true).spawn({
        let (runs, rt) = (runs.clone(), env.rt.clone());
        move |job: Job<u32>| {
            runs.record(&job, rt.now());
            let slow = sleep(&rt, work);
            async move {
                slow.await;
                Ok(())
            }
        }
    });
    env.within(env.patience(), "the queue to empty", q.wait_empty())
        .await;
    env.exactly(env.now(), start.saturating_add(work), "empty at");

    for id in &ids {
        assert_eq!(runs.attempts(*id), [1], "item {id} ran more than once");
    }
    assert_eq!(runs.total(), 3);
    let s = pool.stats();
    assert_eq!((s.ok, s.stale_settles, s.timed_out), (3, 0, 0), "{s:#?}");
    let qs = s.queue;
    assert_eq!(qs.late_acks_stale, 0, "{qs:#?}");
    assert_eq!(qs.late_acks_unclaimed, 0);
    assert_eq!(qs.redelivered, 0);
    assert_eq!(qs.lease_expired, 0);
    assert_eq!((qs.delivered, qs.acked), (3, 3));
    // The heartbeat did the work: every item was extended, about every u/4.
    assert!(qs.extends > 0, "{qs:#?}");
    if env.virtual_time {
        // 20 beats fit in 5u; the last one coincides with the ack and may come first.
        assert!((3 * 19..=3 * 20).contains(&qs.extends), "{qs:#?}");
    }
    if let Some(beats) = q.heartbeat_count() {
        assert_eq!(beats, 0, "settled deliveries leave the heartbeat");
    }

    let report = pool.shutdown(u).await;
    assert_eq!(report.handed_back, 0);
    assert_conserved(&q);
}

// ----- 3. slow handler without heartbeat ----------------------------------------------------

/// The same slow first run without the heartbeat: its lease runs out, an idle worker runs the
/// item again and acks it, and the first run's ack comes late and is refused. Every extra run
/// is accounted for: `late_acks_stale` == the pool's `stale_settles` == runs - items.
pub(crate) async fn slow_handler_without_heartbeat_acks_late<R: Runtime, K: StoreKind<R>>(
    env: Env<R, K>,
) {
    let u = env.u;
    let visibility = 2 * u;
    let first_run = 6 * u;
    // No backoff: the reruns are timed to the lease's end.
    let q = env.queue::<u32>(Config::new(visibility).with_backoff(Backoff::None));
    let ids: Vec<MessageId> = (0..3).map(|n| q.try_push(n).unwrap()).collect();
    let runs = Runs::default();
    let start = env.now();
    // Without heartbeat and without an item timeout (the defaults are a heartbeat and a
    // limit at the lease's end): the first runs go on past their leases.
    let pool = Pool::builder(q.clone())
        .workers(6)
        .heartbeat(false)
        .item_timeout(ItemTimeout::None)
        .spawn({
            let (runs, rt) = (runs.clone(), env.rt.clone());
            move |job: Job<u32>| {
                runs.record(&job, rt.now());
                // Only the first run is slow; the second acks at once, 4u before the first ends.
                let slow = (job.attempt == 1).then(|| sleep(&rt, first_run));
                async move {
                    if let Some(slow) = slow {
                        slow.await;
                    }
                    Ok(())
                }
            }
        });
    // The second runs empty the queue at 2u; the first runs finish (and ack, too late) at 6u.
    env.within(env.patience(), "the queue to empty", q.wait_empty())
        .await;
    env.exactly(env.now(), start.saturating_add(visibility), "empty at");
    let report = pool.shutdown(20 * u).await;
    assert_eq!(
        report.handed_back, 0,
        "the first runs finish within the grace"
    );
    env.exactly(env.now(), start.saturating_add(first_run), "shut down at");

    for id in &ids {
        let r = runs.of(*id);
        assert_eq!(r.iter().map(|r| r.attempt).collect::<Vec<_>>(), [1, 2]);
        env.exactly(r[1].at, start.saturating_add(visibility), "rerun at");
    }
    let extra_runs = (runs.total() - ids.len()) as u64;
    assert_eq!(extra_runs, 3);
    let s = report.stats;
    let qs = s.queue;
    assert_eq!(qs.late_acks_stale, extra_runs, "{s:#?}");
    assert_eq!(s.stale_settles, extra_runs);
    assert_eq!(qs.late_acks_unclaimed, 0);
    assert_eq!((qs.lease_expired, qs.redelivered, qs.delivered), (3, 3, 6));
    assert_eq!((qs.acked, qs.dead_lettered, qs.nacks), (3, 0, 0));
    assert_eq!(s.ok, 6, "both runs of each item finished");
    assert!(kinds(&report.diagnosis).contains(&FindingKind::VisibilityTooShort));
    assert_conserved(&q);
}
