//! Randomized stress test on tokio's multi-thread runtime (real time).
//!
//! Thousands of items, hand-written worker tasks (no pool), and for every delivery an action
//! drawn from a seeded PRNG: ack, nack, panic inside a task holding the delivery, hang past
//! the visibility timeout then ack, drop, or abort of a task holding it. Once the queue is
//! empty, every item must be acked or dead-lettered (exactly one of the two), conservation
//! must hold, and every run must be accounted for: the runs add up to the deliveries, no item
//! has two accepted acks, the refused acks are the queue's `late_acks_stale`, and every
//! delivery ended in exactly one way (ack, hand-back or lease expiry).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_suite::rng::Rng;
use leaseq_tokio::{Backoff, Config, Delivery, Jitter, LeaseQueue, Reason};
use tokio::task::JoinHandle;

const ITEMS: usize = 3000;
const WORKERS: u64 = 8;
const MAX_ATTEMPTS: u32 = 4;
/// One round per seed, each on a fresh queue.
const SEEDS: [u64; 6] = [0x1ea5_e0f0_2024, 1, 2, 3, 0xdead_beef, 0x5eed];
const VISIBILITY: Duration = Duration::from_millis(40);
/// The payload of the panics this test injects (the panic hook keeps them quiet).
const INJECTED: &str = "stress: injected panic";

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
}

impl Tally {
    async fn ack(&self, d: Delivery<u32>) {
        let id = d.id().get() as usize;
        match d.ack().await {
            Ok(_) => {
                self.accepted[id].fetch_add(1, Ordering::SeqCst);
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
) {
    let mut rng = Rng::new(seed ^ index);
    loop {
        let d = if rng.below(4) == 0 {
            q.receive_with_heartbeat().await
        } else {
            q.receive().await
        };
        let Some(d) = d else { return };
        let id = d.id().get() as usize;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_actions_lose_nothing() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if info.payload().downcast_ref::<&str>() != Some(&INJECTED) {
            default_hook(info);
        }
    }));
    for seed in SEEDS {
        round(seed).await;
    }
}

/// One round: pushes the items, works them to the end, checks the books.
async fn round(seed: u64) {
    let config = Config::new(VISIBILITY)
        .with_max_attempts(MAX_ATTEMPTS)
        .with_backoff(Backoff::exponential(
            Duration::from_millis(1),
            Duration::from_millis(8),
        ))
        .with_jitter(Jitter::new(50, seed));
    let q: LeaseQueue<u32> = LeaseQueue::<u32>::builder(config)
        .heartbeat_every(Duration::from_millis(10))
        .build()
        .unwrap();
    let ids = q.try_push_batch(0..ITEMS as u32).unwrap();
    assert!(ids.iter().enumerate().all(|(i, id)| id.get() == i as u64));

    let tally = Arc::new(Tally {
        runs: (0..ITEMS).map(|_| AtomicU32::new(0)).collect(),
        accepted: (0..ITEMS).map(|_| AtomicU32::new(0)).collect(),
        rejected: AtomicU64::new(0),
    });
    let children = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..WORKERS)
        .map(|i| tokio::spawn(worker(q.clone(), tally.clone(), children.clone(), seed, i)))
        .collect();

    tokio::time::timeout(Duration::from_secs(15), q.wait_empty())
        .await
        .unwrap_or_else(|_| panic!("seed {seed:#x}: the queue never emptied: {:#?}", q.stats()));
    q.close();
    for w in workers {
        tokio::time::timeout(Duration::from_secs(5), w)
            .await
            .expect("a worker did not end")
            .expect("a worker panicked");
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
    let dead: Vec<(u64, u32, Reason)> = q.inspect_dead_letters(|letters| {
        letters
            .map(|d| (d.id.get(), d.attempts, d.reason))
            .collect()
    });

    // Nothing left, and the books balance.
    let at = format!("seed {seed:#x}: {s:#?}");
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

    // The round did exercise the paths it is about.
    assert!(s.lease_expired > 0 && s.late_acks_stale > 0, "{at}");
    for reason in [Reason::Nacked, Reason::Dropped, Reason::LeaseExpired] {
        assert!(
            dead.iter().any(|d| d.2 == reason),
            "no dead letter with reason {reason:?} ({at})"
        );
    }
}
