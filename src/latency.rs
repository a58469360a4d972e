//! Redelivery latency: from a lease's deadline to the moment a waiting receiver has the item
//! again.

use std::time::Duration;

use leaseq_async::{Backoff, Config, LeaseQueue, Runtime};

/// Leases an item, lets the lease run out, and measures how long after the deadline a
/// receiver already waiting gets it back; `samples` times, one after the other, with a
/// visibility of `visibility`. Returns the latencies, sorted.
pub async fn redelivery_latencies<R: Runtime>(
    rt: R,
    samples: usize,
    visibility: Duration,
) -> Vec<Duration> {
    // No backoff: what is measured is the redelivery at the deadline itself.
    let config = Config::new(visibility)
        .with_max_attempts(2)
        .with_backoff(Backoff::None);
    let queue: LeaseQueue<u64, R> = LeaseQueue::with_runtime(rt.clone(), config).expect("valid");
    let mut out = Vec::with_capacity(samples);
    for i in 0..samples as u64 {
        queue.try_push(i).expect("open");
        let first = queue.receive().await.expect("open");
        let again = queue.receive().await.expect("open");
        out.push(rt.now().saturating_duration_since(first.deadline()));
        again.ack().await.expect("fresh lease");
        // The first holder's late ack is refused (stale): nothing to do with it.
        let _ = first.ack().await;
    }
    out.sort();
    out
}

/// The `q` quantile (0..=1) of sorted `values`.
pub fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

/// The floor under [`redelivery_latencies`] on this machine and runtime, measured the same
/// way without a queue: a spawned task sleeps on the runtime's timer until a deadline
/// `delay` ahead and then wakes the caller, which is waiting on a channel (as a redelivery
/// is a timer wake-up in the queue's driver task followed by a wake-up of the waiting
/// receiver). Returns the latencies from the deadline to the caller running, sorted.
///
/// On a shared machine both figures move with the load; their difference is what the queue
/// adds.
pub async fn wakeup_latencies<R: Runtime>(rt: R, samples: usize, delay: Duration) -> Vec<Duration> {
    let (tx, rx) = flume::bounded::<()>(1);
    let mut out = Vec::with_capacity(samples);
    for _ in 0..samples {
        let deadline = rt.now().saturating_add(delay);
        let (rt2, tx) = (rt.clone(), tx.clone());
        let task = rt.spawn(Box::pin(async move {
            rt2.sleep_until(deadline).await;
            let _ = tx.send(());
        }));
        rx.recv_async().await.expect("the sleeper sends");
        out.push(rt.now().saturating_duration_since(deadline));
        task.await;
    }
    out.sort();
    out
}
