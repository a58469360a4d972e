//! A randomized test of the async layer itself (not the core), on virtual time.
//!
//! Several queues; random pushes (plain, delayed, with a time to live; some items panic when
//! dropped), receives with and without heartbeat (some cancelled mid-way), acks, nacks,
//! dead letters, releases, drops, shortened and lengthened extends, stopped heartbeats,
//! `ack_batch` handed deliveries of other queues, streams that outlive every other handle,
//! worker pools whose handlers succeed, fail, panic or hang holding a guard whose `Drop`
//! panics, pool shutdowns and worker aborts, and time passing.
//!
//! After every step, for every queue: the core's invariants hold; every item in flight is
//! leased to a live delivery (one the test holds, or one a pool handler is running); the
//! heartbeat registrations are exactly the test's live heartbeat deliveries of that queue;
//! and a running pool has all its workers. At the end everything drains: every item pushed
//! is acked or dead-lettered.

mod chaos_world;

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use chaos_world::{
    check, guarded, poll_once, quiet_chaos_panics, start_pool, within, Coverage, Held, Item, Lane,
    Running, BOMBS, LANES, WORKERS,
};
use futures::executor::block_on;
use futures::future::{select, Either};
use futures::StreamExt;
use leaseq_async::Push;
use leaseq_async::{Backoff, Config, LeaseQueue, Receipt, Runtime, SimRuntime};
use leaseq_bench_kit::rng::Rng;

async fn chaos(rt: SimRuntime, seed: u64, steps: usize, cov: &mut Coverage) {
    let mut rng = Rng::new(seed);
    let config = Config::new(Duration::from_secs(1))
        .with_max_attempts(4)
        .with_backoff(Backoff::Fixed(Duration::from_millis(100)));
    let mut lanes: Vec<Lane> = (0..LANES)
        .map(|_| Lane {
            handle: Some(LeaseQueue::with_runtime(rt.clone(), config.clone()).unwrap()),
            stream: None,
            pool: None,
            pushed: 0,
        })
        .collect();
    let mut held: Vec<Held> = Vec::new();
    let running: Running = Arc::default();
    let mut next_n = 0u64;
    for step in 0..steps {
        let i = rng.below(LANES as u64) as usize;
        let action = rng.below(20);
        if std::env::var_os("CHAOS_TRACE").is_some() {
            eprintln!(
                "seed {seed} step {step} lane {i} action {action} now {:?}",
                rt.now()
            );
        }
        match action {
            0..=3 => {
                let item = Item {
                    n: next_n,
                    bomb: rng.below(8) == 0,
                };
                next_n += 1;
                let q = lanes[i].queue();
                let pushed = match rng.below(3) {
                    0 => q.try_push(item),
                    1 => q.try_push_with(
                        item,
                        Push::new().delay(rng.up_to(Duration::from_millis(500))),
                    ),
                    _ => q.try_push_with(
                        item,
                        Push::new()
                            .delay(rng.up_to(Duration::from_millis(200)))
                            .ttl(rng.up_to(Duration::from_secs(3))),
                    ),
                };
                if let Ok(_id) = pushed {
                    lanes[i].pushed += 1;
                }
            }
            4..=6 => {
                let q = lanes[i].queue();
                let got = if rng.below(2) == 0 {
                    poll_once(q.receive_with_heartbeat()).unwrap_or_else(|| {
                        cov.cancelled_receives += 1;
                        None
                    })
                } else if rng.below(2) == 0 {
                    poll_once(q.receive()).unwrap_or_else(|| {
                        cov.cancelled_receives += 1;
                        None
                    })
                } else {
                    let limit = rng.up_to(Duration::from_millis(300));
                    within(&rt, limit, q.receive()).await.flatten()
                };
                held.extend(got.map(|d| Held { lane: i, d }));
            }
            7 if !held.is_empty() => {
                let h = held.swap_remove(rng.below(held.len() as u64) as usize);
                let d = h.d;
                guarded(|| match rng.below(5) {
                    0 | 1 => drop(block_on(d.ack())),
                    2 => drop(block_on(d.nack("chaos: nack"))),
                    3 => drop(block_on(d.dead_letter("chaos: dead"))),
                    _ => drop(d),
                });
            }
            8 if !held.is_empty() => {
                let k = rng.below(held.len() as u64) as usize;
                let d = &mut held[k].d;
                match rng.below(4) {
                    0 => {
                        cov.shortened_extends += 1;
                        let _ = block_on(d.extend(Duration::from_millis(1 + rng.below(20))));
                    }
                    1 => drop(block_on(d.extend(rng.up_to(Duration::from_secs(20))))),
                    2 => d.stop_heartbeat(),
                    _ => drop(block_on(d.extend(Duration::ZERO))),
                }
            }
            9 if !held.is_empty() => {
                // `ack_batch` on lane `i` with deliveries of any lane.
                let take = 1 + rng.below(held.len().min(4) as u64) as usize;
                let batch: Vec<Held> = (0..take)
                    .map(|_| held.swap_remove(rng.below(held.len() as u64) as usize))
                    .collect();
                let ours = batch.iter().filter(|h| h.lane == i).count();
                // Another lane's deliveries come back in the order given, each with its
                // receipt (`None` for one released already: matched by position, not by it).
                let others: Vec<(Option<Receipt>, usize)> = batch
                    .iter()
                    .filter(|h| h.lane != i)
                    .map(|h| (h.d.receipt(), h.lane))
                    .collect();
                let q = lanes[i].queue();
                let report = guarded(|| block_on(q.ack_batch(batch.into_iter().map(|h| h.d))));
                if let Some(report) = report {
                    assert_eq!(report.accepted() + report.stale().len(), ours);
                    let foreign = report.into_foreign();
                    assert_eq!(
                        foreign.len(),
                        others.len(),
                        "lane {i}: only other lanes' deliveries are refused as foreign, all of them"
                    );
                    for (d, (receipt, lane)) in foreign.into_iter().zip(others) {
                        cov.foreign_refused += 1;
                        assert_eq!(d.receipt(), receipt, "a foreign delivery came back changed");
                        held.push(Held { lane, d });
                    }
                }
            }
            10..=11 => {
                let until = rt.now().saturating_add(rng.up_to(Duration::from_secs(2)));
                rt.sleep_until(until).await;
            }
            12 => {
                let lane = &mut lanes[i];
                match (lane.stream.is_some(), lane.handle.is_some()) {
                    (false, _) => lane.stream = Some(lane.queue().stream()),
                    (true, true) if lane.pool.is_none() => lane.handle = None,
                    (true, false) => lane.handle = Some(lane.queue().clone()),
                    (true, true) => lane.stream = None,
                }
            }
            13 => {
                if let Some(stream) = lanes[i].stream.as_mut() {
                    let got = if rng.below(2) == 0 {
                        poll_once(stream.next()).flatten()
                    } else {
                        let limit = rng.up_to(Duration::from_millis(300));
                        within(&rt, limit, stream.next()).await.flatten()
                    };
                    cov.stream_items += u64::from(got.is_some());
                    held.extend(got.map(|d| Held { lane: i, d }));
                }
            }
            14 => match lanes[i].pool.take() {
                None if lanes[i].handle.is_some() => {
                    lanes[i].pool = Some(start_pool(&rt, i, lanes[i].queue(), &running));
                }
                None => {}
                Some(pool) => {
                    let grace = rng.up_to(Duration::from_millis(100));
                    let report = pool.shutdown(grace).await;
                    assert!(report.handed_back <= WORKERS);
                    cov.pool_shutdowns += 1;
                    cov.worker_panics += report.stats.worker_panics;
                }
            },
            15 => {
                if let Some(pool) = &lanes[i].pool {
                    pool.abort_worker(rng.below(WORKERS as u64) as usize);
                    cov.worker_aborts += 1;
                    // The aborted worker's future is dropped at the executor's next turn.
                    rt.sleep_until(rt.now().saturating_add(Duration::from_nanos(1)))
                        .await;
                }
            }
            _ => {
                let until = rt
                    .now()
                    .saturating_add(rng.up_to(Duration::from_millis(50)));
                rt.sleep_until(until).await;
            }
        }
        check(&lanes, &held, &running, step);
        cov.stream_only_steps += lanes.iter().filter(|l| l.handle.is_none()).count() as u64;
    }

    // Drain: pools down, held deliveries handed back, then everything received and acked
    // (or dead-lettered) in bounded virtual time.
    for lane in &mut lanes {
        if let Some(pool) = lane.pool.take() {
            let report = pool.shutdown(Duration::from_millis(10)).await;
            cov.worker_panics += report.stats.worker_panics;
        }
        if lane.handle.is_none() {
            lane.handle = Some(lane.queue().clone());
        }
        lane.stream = None;
    }
    for h in held.drain(..) {
        guarded(|| drop(h.d));
    }
    for (i, lane) in lanes.iter().enumerate() {
        let q = lane.queue();
        let drained = within(&rt, Duration::from_secs(3600), async {
            loop {
                let waiting = pin!(q.wait_empty());
                match select(waiting, pin!(q.receive())).await {
                    Either::Left(_) => return,
                    Either::Right((Some(d), _)) => {
                        guarded(|| block_on(d.ack()).is_ok());
                    }
                    Either::Right((None, _)) => unreachable!("never closed"),
                }
            }
        });
        assert!(drained.await.is_some(), "seed {seed}, lane {i}: drained");
        let s = q.stats();
        assert_eq!(s.pushed, lane.pushed, "seed {seed}, lane {i}");
        assert_eq!(
            s.acked + s.dead,
            lane.pushed,
            "seed {seed}, lane {i}: {s:?}"
        );
        assert_eq!(q.heartbeats(), 0);
        q.check_invariants().unwrap();
        // The dead letters' bombs go off here, not as the queue is dropped.
        for letter in q.store().take_dead_letters() {
            guarded(|| drop(letter));
        }
    }
    let left = running.lock().unwrap().clone();
    assert!(
        left.is_empty(),
        "seed {seed}: handlers still running: {left:?}"
    );
}

#[test]
fn async_layer_under_random_faults() {
    quiet_chaos_panics();
    let mut cov = Coverage::default();
    for seed in 1..=8 {
        let rt = SimRuntime::new();
        rt.block_on(chaos(rt.clone(), seed, 1500, &mut cov));
    }
    cov.bombs_caught = BOMBS.load(std::sync::atomic::Ordering::Relaxed);
    println!("{cov:#?}");
    let Coverage {
        cancelled_receives,
        foreign_refused,
        shortened_extends,
        stream_only_steps,
        stream_items,
        worker_panics,
        pool_shutdowns,
        worker_aborts,
        bombs_caught,
    } = cov;
    for (what, n) in [
        ("cancelled receives", cancelled_receives),
        ("foreign deliveries refused", foreign_refused),
        ("shortened extends", shortened_extends),
        (
            "steps with a stream as a lane's only handle",
            stream_only_steps,
        ),
        ("items from streams", stream_items),
        ("worker panics caught", worker_panics),
        ("pool shutdowns", pool_shutdowns),
        ("worker aborts", worker_aborts),
        ("item drops that panicked", bombs_caught),
    ] {
        assert!(n > 0, "the run met no {what}");
    }
}
