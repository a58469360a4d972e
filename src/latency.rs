//! Redelivery latency: from a lease's deadline to the moment a waiting receiver has the item
//! again.

use std::time::Duration;

use leaseq_async::{Config, LeaseQueue, Runtime};

/// Leases an item, lets the lease run out, and measures how long after the deadline a
/// receiver already waiting gets it back; `samples` times, one after the other, with a
/// visibility of `visibility`. Returns the latencies, sorted.
pub async fn redelivery_latencies<R: Runtime>(
    rt: R,
    samples: usize,
    visibility: Duration,
) -> Vec<Duration> {
    let config = Config::new(visibility).with_max_attempts(2);
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
