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

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_bench_kit::rng::Rng;
use leaseq_test_kit::runtime::multi_thread;
use leaseq_tokio::{
    Backoff, Config, Delivery, Jitter, LeaseQueue, MessageId, PushError, Reason, ReceiptError,
    SettleError,
};
use tokio::task::JoinHandle;

const PRODUCERS: u32 = 3;
/// Items per producer.
const PER_PRODUCER: u32 = 1000;
const ITEMS: usize = (PRODUCERS * PER_PRODUCER) as usize;
const WORKERS: u64 = 8;
const MAX_ATTEMPTS: u32 = 4;
/// The capacity of the bounded rounds: small enough that the producers fill it.
const CAPACITY: usize = 64;
/// One round per seed, each on a fresh queue; the odd-numbered rounds are bounded.
const SEEDS: [u64; 6] = [0x1ea5_e0f0_2024, 1, 2, 3, 0xdead_beef, 0x5eed];
const VISIBILITY: Duration = Duration::from_millis(40);
/// The payload of the panics this test injects (the panic hook keeps them quiet).
const INJECTED: &str = "stress: injected panic";

/// An item is its index, `producer * PER_PRODUCER + seq`: which producer pushed it and
/// where in that producer's sequence.
fn item(producer: u32, seq: u32) -> u32 {
    producer * PER_PRODUCER + seq
}

fn producer_of(item: u32) -> u32 {
    item / PER_PRODUCER
}

fn seq_of(item: u32) -> u32 {
    item % PER_PRODUCER
}

/// The sequence numbers of producer `p`'s items among `seen` (`(id, item)` pairs, in the
/// order they were seen).
fn seqs_of<I>(seen: &[(I, u32)], p: u32) -> Vec<u32> {
    seen.iter()
        .filter(|&&(_, x)| producer_of(x) == p)
        .map(|&(_, x)| seq_of(x))
        .collect()
}

/// Whether `seen` (`(id, item)` pairs) is in increasing id order.
fn in_id_order<I: Ord>(seen: &[(I, u32)]) -> bool {
    seen.windows(2).all(|w| w[0].0 < w[1].0)
}

/// How a producer pushes.
#[derive(Clone, Copy, Debug)]
enum PushMode {
    /// `try_push`; a refused item is pushed again after a short sleep.
    Try,
    /// `push(..).await`: waits for room.
    Wait,
    /// `try_push` first, `push(..).await` if refused.
    Mixed,
}

const MODES: [PushMode; PRODUCERS as usize] = [PushMode::Try, PushMode::Wait, PushMode::Mixed];

/// Pushes producer `p`'s sequence in order; returns the ids the pushes gave, in order, and
/// how many pushes were refused for want of room.
async fn produce(q: LeaseQueue<u32>, p: u32, mode: PushMode, seed: u64) -> (Vec<MessageId>, u64) {
    let mut rng = Rng::new(seed ^ 0x9e37_79b9 ^ u64::from(p));
    let mut ids = Vec::with_capacity(PER_PRODUCER as usize);
    let mut refused = 0;
    for seq in 0..PER_PRODUCER {
        let mut x = item(p, seq);
        let id = loop {
            let pushed = match mode {
                PushMode::Wait => q.push(x).await,
                PushMode::Try => q.try_push(x),
                PushMode::Mixed if rng.below(2) == 0 => q.push(x).await,
                PushMode::Mixed => match q.try_push(x) {
                    Err(PushError::Full(back)) => {
                        refused += 1;
                        q.push(back).await
                    }
                    other => other,
                },
            };
            match pushed {
                Ok(id) => break id,
                Err(PushError::Full(back)) => {
                    refused += 1;
                    x = back;
                    tokio::time::sleep(Duration::from_micros(200)).await;
                }
                Err(e) => panic!("producer {p}: push {seq} failed: {e}"),
            }
        };
        ids.push(id);
        // Bursts of about 64 pushes, so that a bounded queue fills up.
        if rng.below(64) == 0 {
            tokio::task::yield_now().await;
        }
    }
    (ids, refused)
}

#[derive(Clone, Copy, Debug)]
enum Action {
    Ack,
    Nack,
    Panic,
    HangThenAck,
    Drop,
    Abort,
}

/// The action for one delivery: a function of the seed, the item and the attempt only, so
/// that a run can be replayed whichever worker gets which delivery.
fn action(seed: u64, id: usize, attempt: u32) -> Action {
    let mut rng = Rng::new(
        seed ^ (id as u64).wrapping_mul(0x2545_F491_4F6C_DD1D) ^ (u64::from(attempt) << 56),
    );
    match rng.below(100) {
        0..50 => Action::Ack,
        50..62 => Action::Nack,
        62..72 => Action::Panic,
        72..80 => Action::HangThenAck,
        80..90 => Action::Drop,
        _ => Action::Abort,
    }
}

/// What the workers saw, per item.
struct Tally {
    runs: Vec<AtomicU32>,
    accepted: Vec<AtomicU32>,
    rejected: AtomicU64,
    unknown: AtomicU64,
}

impl Tally {
    async fn ack(&self, d: Delivery<u32>) {
        let id = *d.item() as usize;
        match d.ack().await {
            Ok(_) => {
                self.accepted[id].fetch_add(1, Ordering::SeqCst);
            }
            // The slot has held two newer items since: the queue no longer knows the
            // receipt (slots are reused as items leave).
            Err(SettleError::Stale(ReceiptError::Unknown)) => {
                self.unknown.fetch_add(1, Ordering::SeqCst);
            }
            Err(_) => {
                self.rejected.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
}

async fn worker(
    q: LeaseQueue<u32>,
    tally: Arc<Tally>,
    children: Arc<Mutex<Vec<JoinHandle<()>>>>,
    seed: u64,
    index: u64,
) -> Vec<(MessageId, u32)> {
    let mut rng = Rng::new(seed ^ index);
    // This worker's first deliveries (id, item), in the order of its receives.
    let mut firsts = Vec::new();
    loop {
        let d = if rng.below(4) == 0 {
            q.receive_with_heartbeat().await
        } else {
            q.receive().await
        };
        let Some(d) = d else { return firsts };
        let id = *d.item() as usize;
        if d.attempt() == 1 {
            firsts.push((d.id(), *d.item()));
        }
        tally.runs[id].fetch_add(1, Ordering::SeqCst);
        match action(seed, id, d.attempt()) {
            Action::Ack => tally.ack(d).await,
            Action::Nack => {
                // Refused only if the lease ran out meanwhile: then the expiry ended it.
                let _ = d.nack("stress: nack").await;
            }
            Action::Panic => {
                let child = tokio::spawn(async move {
                    let _held = d;
                    tokio::task::yield_now().await;
                    std::panic::panic_any(INJECTED);
                });
                children.lock().unwrap().push(child);
            }
            Action::HangThenAck => {
                let tally = tally.clone();
                let pause = VISIBILITY + Duration::from_millis(rng.below(20));
                let child = tokio::spawn(async move {
                    tokio::time::sleep(pause).await;
                    tally.ack(d).await;
                });
                children.lock().unwrap().push(child);
            }
            Action::Drop => drop(d),
            Action::Abort => {
                let child = tokio::spawn(async move {
                    let _held = d;
                    std::future::pending::<()>().await;
                });
                tokio::task::yield_now().await;
                child.abort();
                children.lock().unwrap().push(child);
            }
        }
        if rng.below(8) == 0 {
            tokio::task::yield_now().await;
        }
    }
}

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
            in_id_order(seen),
            "worker {w}: first deliveries out of id order ({at})"
        );
        for p in 0..PRODUCERS {
            let seqs = seqs_of(seen, p);
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
            in_id_order(&firsts),
            "first deliveries out of id order ({at})"
        );
        for p in 0..PRODUCERS {
            let seqs = seqs_of(&firsts, p);
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
