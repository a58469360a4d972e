//! Randomized stress test on tokio's multi-thread runtime (real time).
//!
//! Concurrent producers, hand-written worker tasks (no pool), and for every delivery an action
//! drawn from a seeded PRNG: ack, nack, panic inside a task holding the delivery, hang past
//! the visibility timeout then ack, drop, or abort of a task holding it. Three producer tasks
//! push their own sequences while the workers run: with `try_push` (retrying a refused item),
//! with `push(..).await` (which waits for room), or a mix; every other round runs on a bounded
//! queue, so that pushes are refused and wait. Once the producers are done and the queue is
//! empty, every item must be acked or dead-lettered (exactly one of the two), conservation
//! must hold, and every run must be accounted for: the runs add up to the deliveries, no item
//! has two accepted acks, the refused acks are the queue's `late_acks_stale` (or unknown
//! receipts, once the item's slot has held two newer items), and every delivery ended in
//! exactly one way (ack, hand-back or lease expiry).
//!
//! Per-producer FIFO: a producer's pushes get increasing ids, and the queue hands out first
//! deliveries (attempt 1) in id order. With several workers the global order of the take
//! operations cannot be observed (two receives may return in either order), but each worker
//! sees its own takes in order, so in each worker's first deliveries the ids, and each
//! producer's sequence numbers, must increase. `first_deliveries_keep_each_producers_order`
//! checks the exact order with a single consumer.

mod stress_world;

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_bench_kit::rng::Rng;
use leaseq_tokio::{Backoff, Config, Jitter, LeaseQueue, MessageId, Reason};
use stress_world::{
    item, produce, producer_of, seq_of, worker, Tally, CAPACITY, INJECTED, ITEMS, MAX_ATTEMPTS,
    MODES, PER_PRODUCER, PRODUCERS, SEEDS, VISIBILITY, WORKERS,
};

#[test]
fn random_actions_lose_nothing() {
    multi_thread().block_on(random_actions_lose_nothing_on_tokio());
}

async fn random_actions_lose_nothing_on_tokio() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if info.payload().downcast_ref::<&str>() != Some(&INJECTED) {
            default_hook(info);
        }
    }));
    for (i, seed) in SEEDS.into_iter().enumerate() {
        round(seed, i % 2 == 1).await;
    }
}

/// One round: the producers push the items while the workers work them to the end; then
/// checks the books and the order.
async fn round(seed: u64, bounded: bool) {
    let mut config = Config::new(VISIBILITY)
        .with_max_attempts(MAX_ATTEMPTS)
        .with_backoff(Backoff::exponential(
            Duration::from_millis(1),
            Duration::from_millis(8),
        ))
        .with_jitter(Jitter::new(50, seed));
    if bounded {
        config = config.with_capacity(CAPACITY);
    }
    let q: LeaseQueue<u32> = LeaseQueue::<u32>::builder(config)
        .heartbeat_every(Duration::from_millis(10))
        .build()
        .unwrap();

    let tally = Arc::new(Tally {
        runs: (0..ITEMS).map(|_| AtomicU32::new(0)).collect(),
        accepted: (0..ITEMS).map(|_| AtomicU32::new(0)).collect(),
        rejected: AtomicU64::new(0),
        unknown: AtomicU64::new(0),
    });
    let children = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..WORKERS)
        .map(|i| tokio::spawn(worker(q.clone(), tally.clone(), children.clone(), seed, i)))
        .collect();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| tokio::spawn(produce(q.clone(), p, MODES[p as usize], seed)))
        .collect();

    // The ids each item got at its push, and the refusals for want of room.
    let mut pushed_id: Vec<Option<MessageId>> = vec![None; ITEMS];
    let mut refused = 0;
    for (p, producer) in (0..PRODUCERS).zip(producers) {
        let (ids, r) = tokio::time::timeout(Duration::from_secs(15), producer)
            .await
            .unwrap_or_else(|_| panic!("seed {seed:#x}: producer {p} never finished"))
            .expect("a producer panicked");
        assert_eq!(ids.len(), PER_PRODUCER as usize);
        // A producer's pushes got increasing ids.
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "seed {seed:#x}: producer {p}'s ids do not increase"
        );
        for (seq, id) in (0..PER_PRODUCER).zip(ids) {
            pushed_id[item(p, seq) as usize] = Some(id);
        }
        refused += r;
    }
    // Only now can an empty queue mean the end.
    tokio::time::timeout(Duration::from_secs(15), q.wait_empty())
        .await
        .unwrap_or_else(|_| panic!("seed {seed:#x}: the queue never emptied: {:#?}", q.stats()));
    q.close();
    let mut firsts_by_worker = Vec::new();
    for w in workers {
        firsts_by_worker.push(
            tokio::time::timeout(Duration::from_secs(5), w)
                .await
                .expect("a worker did not end")
                .expect("a worker panicked"),
        );
    }
    // Tasks still hanging on a stale delivery ack it late: wait for all of them.
    let children = std::mem::take(&mut *children.lock().unwrap());
    for c in children {
        // Err for the injected panics and the aborts.
        let _ = tokio::time::timeout(Duration::from_secs(5), c)
            .await
            .expect("a child task did not end");
    }

    let s = q.stats();
    let runs: Vec<u32> = tally
        .runs
        .iter()
        .map(|r| r.load(Ordering::SeqCst))
        .collect();
    let accepted: Vec<u32> = tally
        .accepted
        .iter()
        .map(|a| a.load(Ordering::SeqCst))
        .collect();
    let rejected = tally.rejected.load(Ordering::SeqCst);
    let unknown = tally.unknown.load(Ordering::SeqCst);
    let dead: Vec<(u64, u32, Reason)> = q
        .store()
        .dead_letters()
        .iter()
        .map(|d| (u64::from(d.item), d.attempts, d.reason))
        .collect();

    // Nothing left, and the books balance.
    let at = format!("seed {seed:#x} (bounded: {bounded}): {s:#?}");
    assert_eq!((s.ready, s.delayed, s.in_flight), (0, 0, 0), "{at}");
    assert_eq!(q.heartbeats(), 0, "{at}");
    if let Err(e) = q.check_invariants() {
        panic!("{e} ({at})");
    }

    // Every run was a delivery, and every delivery ended in exactly one way.
    let total_runs: u64 = runs.iter().map(|&r| u64::from(r)).sum();
    assert_eq!(total_runs, s.delivered, "{at}");
    assert_eq!(
        s.delivered + s.late_acks_unclaimed,
        s.acked + s.nacks + s.lease_expired,
        "{at}"
    );
    // At most one accepted ack per item; the refused ones are the stale late acks.
    let doubled: Vec<usize> = (0..ITEMS).filter(|&i| accepted[i] > 1).collect();
    assert!(doubled.is_empty(), "acked twice: {doubled:?} ({at})");
    let total_accepted: u64 = accepted.iter().map(|&a| u64::from(a)).sum();
    assert_eq!(total_accepted, s.acked, "{at}");
    assert_eq!(rejected, s.late_acks_stale, "{at}");
    assert!(unknown <= s.unknown_receipts, "{at}");

    // The ids partition into acked and dead-lettered; every dead letter used up its
    // attempts, each of them a run.
    let mut place: Vec<u32> = accepted.clone();
    for &(id, attempts, reason) in &dead {
        place[id as usize] += 1;
        assert_eq!(attempts, MAX_ATTEMPTS, "item {id}: {reason:?} ({at})");
        assert_eq!(attempts, runs[id as usize], "item {id} ({at})");
        assert!(
            matches!(
                reason,
                Reason::Nacked | Reason::Dropped | Reason::LeaseExpired
            ),
            "item {id}: {reason:?} ({at})"
        );
    }
    let misplaced: Vec<usize> = (0..ITEMS).filter(|&i| place[i] != 1).collect();
    assert!(
        misplaced.is_empty(),
        "lost or doubled: {misplaced:?} ({at})"
    );
    assert_eq!(s.dead_lettered, dead.len() as u64, "{at}");
    assert_eq!(s.acked + s.dead_lettered, ITEMS as u64, "{at}");
    let overrun: Vec<usize> = (0..ITEMS)
        .filter(|&i| !(1..=MAX_ATTEMPTS).contains(&runs[i]))
        .collect();
    assert!(
        overrun.is_empty(),
        "ran 0 or too many times: {overrun:?} ({at})"
    );

    // Per-producer FIFO. Every item had exactly one first delivery, under the id its push
    // returned; each worker took its first deliveries in id order, so in each producer's
    // order.
    let mut firsts = vec![0u32; ITEMS];
    for (w, seen) in firsts_by_worker.iter().enumerate() {
        for &(id, x) in seen {
            firsts[x as usize] += 1;
            assert_eq!(Some(id), pushed_id[x as usize], "item {x} ({at})");
        }
        assert!(
            seen.windows(2).all(|p| p[0].0 < p[1].0),
            "worker {w}: first deliveries out of id order ({at})"
        );
        for p in 0..PRODUCERS {
            let seqs: Vec<u32> = seen
                .iter()
                .filter(|&&(_, x)| producer_of(x) == p)
                .map(|&(_, x)| seq_of(x))
                .collect();
            assert!(
                seqs.windows(2).all(|s| s[0] < s[1]),
                "worker {w}: producer {p}'s items out of order: {seqs:?} ({at})"
            );
        }
    }
    let unfirst: Vec<usize> = (0..ITEMS).filter(|&i| firsts[i] != 1).collect();
    assert!(
        unfirst.is_empty(),
        "not exactly one first delivery: {unfirst:?} ({at})"
    );

    // The round did exercise the paths it is about.
    assert!(s.lease_expired > 0 && s.late_acks_stale > 0, "{at}");
    if bounded {
        assert!(refused > 0, "no push found the queue full ({at})");
    } else {
        assert_eq!(refused, 0, "{at}");
    }
    for reason in [Reason::Nacked, Reason::Dropped, Reason::LeaseExpired] {
        assert!(
            dead.iter().any(|d| d.2 == reason),
            "no dead letter with reason {reason:?} ({at})"
        );
    }
}

/// The exact order, with a single consumer: three producers push concurrently (unbounded,
/// then bounded so that pushes wait), one consumer takes single items and batches, nacks some
/// first deliveries so that redeliveries interleave, and records every first delivery. Each
/// producer's items must come out first in exactly its push order, and all first deliveries
/// in id order.
#[test]
fn first_deliveries_keep_each_producers_order() {
    multi_thread().block_on(first_deliveries_keep_each_producers_order_on_tokio());
}

async fn first_deliveries_keep_each_producers_order_on_tokio() {
    for (seed, bounded) in [(7, false), (8, true)] {
        let mut config = Config::new(Duration::from_secs(5))
            .with_max_attempts(MAX_ATTEMPTS)
            .with_backoff(Backoff::Fixed(Duration::from_millis(1)));
        if bounded {
            config = config.with_capacity(CAPACITY);
        }
        let q: LeaseQueue<u32> = LeaseQueue::new(config).unwrap();
        let consumer = tokio::spawn({
            let q = q.clone();
            async move {
                let mut rng = Rng::new(seed);
                let mut firsts: Vec<(MessageId, u32)> = Vec::with_capacity(ITEMS);
                loop {
                    let batch = if rng.below(2) == 0 {
                        q.receive().await.into_iter().collect()
                    } else {
                        q.receive_batch(1 + rng.below(16) as usize).await
                    };
                    if batch.is_empty() {
                        return firsts;
                    }
                    let mut acks = Vec::new();
                    for d in batch {
                        if d.attempt() == 1 {
                            firsts.push((d.id(), *d.item()));
                            if rng.below(5) == 0 {
                                d.nack("fifo: nack").await.unwrap();
                                continue;
                            }
                        }
                        acks.push(d);
                    }
                    let n = acks.len();
                    assert_eq!(q.ack_batch(acks).await.accepted(), n);
                }
            }
        });
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| tokio::spawn(produce(q.clone(), p, MODES[p as usize], seed)))
            .collect();
        let mut refused = 0;
        for p in producers {
            refused += p.await.expect("a producer panicked").1;
        }
        tokio::time::timeout(Duration::from_secs(10), q.wait_empty())
            .await
            .unwrap_or_else(|_| panic!("the queue never emptied: {:#?}", q.stats()));
        q.close();
        let firsts = consumer.await.expect("the consumer panicked");

        let at = format!("bounded: {bounded}: {:#?}", q.stats());
        assert_eq!(firsts.len(), ITEMS, "{at}");
        assert!(
            firsts.windows(2).all(|w| w[0].0 < w[1].0),
            "first deliveries out of id order ({at})"
        );
        for p in 0..PRODUCERS {
            let seqs: Vec<u32> = firsts
                .iter()
                .filter(|&&(_, x)| producer_of(x) == p)
                .map(|&(_, x)| seq_of(x))
                .collect();
            assert!(
                seqs.iter().copied().eq(0..PER_PRODUCER),
                "producer {p}'s items out of order: {seqs:?} ({at})"
            );
        }
        // The producers did interleave.
        assert!(
            firsts
                .windows(2)
                .any(|w| producer_of(w[0].1) != producer_of(w[1].1)),
            "{at}"
        );
        let s = q.stats();
        assert_eq!((s.acked, s.dead_lettered), (ITEMS as u64, 0), "{at}");
        assert!(s.redelivered > 0, "{at}");
        if let Err(e) = q.check_invariants() {
            panic!("{e} ({at})");
        }
        if bounded {
            assert!(refused > 0, "no push found the queue full ({at})");
        }
    }
}

/// A tokio runtime of two worker threads, as `#[tokio::test(flavor = "multi_thread",
/// worker_threads = 2)]` builds (written out: the suite's tokio has no `macros` feature, which
/// would put syn into every example's build).
fn multi_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("build a tokio runtime")
}
