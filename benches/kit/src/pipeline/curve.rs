//! The worker curve: a [`Pool`](leaseq_async::Pool) whose handler sleeps [`WORK`] (1 ms on
//! tokio's timer) per item, at a number of workers, beside the same handler run by as many
//! flume consumers (no queue: what the runtime's timer allows, since tokio rounds a 1 ms
//! sleep up to its next millisecond tick). The ideal is `workers x 1,000` items/s.

use std::time::{Duration, Instant};

use leaseq_async::{JobError, Runtime, Store};

use super::runs::{pool_with, BytesQueue, Outcome};
use super::{payload, BenchError};

/// The handler's work per item.
pub const WORK: Duration = Duration::from_millis(1);

/// The worker counts of the curve.
pub const WORKERS: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];

/// Items for one point: about `secs` seconds of the ideal rate, at least 200.
pub fn items_for(workers: usize, secs: f64) -> u64 {
    ((workers as f64 * 1_000.0 * secs) as u64).max(200)
}

/// A pool of `workers` workers sleeping [`WORK`] per item over `q` (empty), fed `items` by
/// one producer, timed until every item is handled and the pool shut down.
pub async fn pool_sleeping<R, S>(
    q: BytesQueue<R, S>,
    items: u64,
    workers: usize,
) -> Result<Outcome, BenchError>
where
    R: Runtime,
    S: Store<Vec<u8>, Runtime = R>,
{
    pool_with(q, items, workers, None, |_| async {
        tokio::time::sleep(WORK).await;
        Ok::<(), JobError>(())
    })
    .await
}

/// `workers` flume consumers sleeping [`WORK`] per item, fed `items` by one producer.
/// Returns the time until the last is handled.
pub async fn flume_sleeping(items: u64, workers: usize) -> Duration {
    let (tx, rx) = flume::unbounded::<Vec<u8>>();
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(workers);
    for _ in 0..workers {
        let rx = rx.clone();
        tasks.push(tokio::spawn(async move {
            while let Ok(x) = rx.recv_async().await {
                std::hint::black_box(x);
                tokio::time::sleep(WORK).await;
            }
        }));
    }
    for i in 0..items {
        let _ = tx.send(payload(i));
    }
    drop(tx);
    for t in tasks {
        let _ = t.await;
    }
    start.elapsed()
}
