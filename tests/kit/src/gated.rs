//! A pool whose handlers stop at a gate: the pause tests' way of keeping a pool running
//! (its workers held, the queue not drained) until the pause they check is committed,
//! however long that takes.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use leaseq_async::{Job, LeaseQueue, Store};
use leaseq_tokio::{Pool, TokioRuntime};
use tokio::sync::watch;

/// A [`gated_pool`]: the pool, the ids its handlers ran (in order), and the gate.
pub struct Gated<S: Store<Vec<u8>, Runtime = TokioRuntime>> {
    /// The pool.
    pub pool: Pool<Vec<u8>, S>,
    /// The ids of the jobs handled so far.
    pub ran: Arc<Mutex<Vec<u64>>>,
    /// Sending `true` opens the gate: the held handlers and all later ones run on.
    pub gate: watch::Sender<bool>,
}

/// A pool of `workers` on `q` whose handlers record each job's id and, once `open_after`
/// jobs have run, wait for the gate before they do.
pub fn gated_pool<S>(
    q: &LeaseQueue<Vec<u8>, TokioRuntime, S>,
    workers: usize,
    open_after: usize,
) -> Gated<S>
where
    S: Store<Vec<u8>, Runtime = TokioRuntime>,
{
    let ran: Arc<Mutex<Vec<u64>>> = Arc::default();
    let (gate, gated) = watch::channel(false);
    let pool = leaseq_tokio::Pool::builder(q.clone())
        .workers(workers)
        .spawn({
            let ran = ran.clone();
            move |job: Job<Vec<u8>>| {
                let (ran, mut gated) = (ran.clone(), gated.clone());
                async move {
                    if ran.lock().unwrap().len() >= open_after {
                        let _ = gated.wait_for(|open| *open).await;
                    }
                    ran.lock().unwrap().push(job.id.get());
                    Ok(())
                }
            }
        });
    Gated { pool, ran, gate }
}

/// Waits until `ran` holds `n` ids or more; fails after `patience`.
pub async fn until_ran(ran: &Mutex<Vec<u64>>, n: usize, patience: Duration) {
    let until = Instant::now() + patience;
    while ran.lock().unwrap().len() < n {
        assert!(Instant::now() < until, "the pool runs");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Once a pause of `q` is committed: opens `gate`, asserts that in the next 1.5 s (several
/// of a claimer's poll intervals) `q` leases at most `claim_round` more (the claims
/// already running), then waits (up to `patience`) until every lease out is handled.
/// Returns the leases counted after the 1.5 s and the jobs handled.
pub async fn open_after_the_pause<S>(
    (gate, ran): (&watch::Sender<bool>, &Mutex<Vec<u64>>),
    q: &LeaseQueue<Vec<u8>, TokioRuntime, S>,
    claim_round: u64,
    patience: Duration,
) -> (u64, u64)
where
    S: Store<Vec<u8>, Runtime = TokioRuntime>,
{
    gate.send_replace(true);
    let delivered = q.stats().delivered;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let after = q.stats().delivered;
    assert!(
        after <= delivered + claim_round,
        "leased {delivered} at the pause, {after} after"
    );
    let until = Instant::now() + patience;
    while (ran.lock().unwrap().len() as u64) < q.stats().delivered {
        assert!(Instant::now() < until, "the leases out are handled");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (after, ran.lock().unwrap().len() as u64)
}
