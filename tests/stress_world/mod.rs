//! The world of `stress_tokio_multi.rs`: its sizes and seeds, the items (which producer
//! pushed each, where in its sequence), the producers and their push modes, the action drawn
//! for each delivery, the workers that carry them out, and the tally of what they saw.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_bench_kit::rng::Rng;
use leaseq_tokio::{Delivery, LeaseQueue, MessageId, PushError, ReceiptError, SettleError};
use tokio::task::JoinHandle;

pub(crate) const PRODUCERS: u32 = 3;
/// Items per producer.
pub(crate) const PER_PRODUCER: u32 = 1000;
pub(crate) const ITEMS: usize = (PRODUCERS * PER_PRODUCER) as usize;
pub(crate) const WORKERS: u64 = 8;
pub(crate) const MAX_ATTEMPTS: u32 = 4;
/// The capacity of the bounded rounds: small enough that the producers fill it.
pub(crate) const CAPACITY: usize = 64;
/// One round per seed, each on a fresh queue; the odd-numbered rounds are bounded.
pub(crate) const SEEDS: [u64; 6] = [0x1ea5_e0f0_2024, 1, 2, 3, 0xdead_beef, 0x5eed];
pub(crate) const VISIBILITY: Duration = Duration::from_millis(40);
/// The payload of the panics this test injects (the panic hook keeps them quiet).
pub(crate) const INJECTED: &str = "stress: injected panic";

/// An item is its index, `producer * PER_PRODUCER + seq`: which producer pushed it and
/// where in that producer's sequence.
pub(crate) fn item(producer: u32, seq: u32) -> u32 {
    producer * PER_PRODUCER + seq
}

pub(crate) fn producer_of(item: u32) -> u32 {
    item / PER_PRODUCER
}

pub(crate) fn seq_of(item: u32) -> u32 {
    item % PER_PRODUCER
}

/// How a producer pushes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum PushMode {
    /// `try_push`; a refused item is pushed again after a short sleep.
    Try,
    /// `push(..).await`: waits for room.
    Wait,
    /// `try_push` first, `push(..).await` if refused.
    Mixed,
}

pub(crate) const MODES: [PushMode; PRODUCERS as usize] =
    [PushMode::Try, PushMode::Wait, PushMode::Mixed];

/// Pushes producer `p`'s sequence in order; returns the ids the pushes gave, in order, and
/// how many pushes were refused for want of room.
pub(crate) async fn produce(
    q: LeaseQueue<u32>,
    p: u32,
    mode: PushMode,
    seed: u64,
) -> (Vec<MessageId>, u64) {
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
pub(crate) enum Action {
    Ack,
    Nack,
    Panic,
    HangThenAck,
    Drop,
    Abort,
}

/// The action for one delivery: a function of the seed, the item and the attempt only, so
/// that a run can be replayed whichever worker gets which delivery.
pub(crate) fn action(seed: u64, id: usize, attempt: u32) -> Action {
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
pub(crate) struct Tally {
    pub(crate) runs: Vec<AtomicU32>,
    pub(crate) accepted: Vec<AtomicU32>,
    pub(crate) rejected: AtomicU64,
    pub(crate) unknown: AtomicU64,
}

impl Tally {
    pub(crate) async fn ack(&self, d: Delivery<u32>) {
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

pub(crate) async fn worker(
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
