//! Latency at low load: one producer pushes one item every `1 / per_sec` seconds (each
//! push awaited, paced on an absolute schedule so a slow push does not slow the rate) into
//! a [`Pool`] of [`CONSUMERS`] workers; each item carries the time it was pushed, and the
//! handler records push -> handler start. The first [`WARMUP`] items are not recorded.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use leaseq_async::{Job, Pool, Runtime, Store};
use tokio::sync::Notify;

use super::runs::BytesQueue;
use super::{BenchError, CONSUMERS, PAYLOAD_BYTES};

/// Items pushed first and not recorded (connections and caches warming up).
pub const WARMUP: u64 = 10;

/// Pushes `WARMUP + samples` items at `per_sec` into a pool over `q` (empty) and returns
/// the push -> handler start latencies of the last `samples`, sorted.
pub async fn latencies<R, S>(
    q: BytesQueue<R, S>,
    per_sec: u32,
    samples: u64,
) -> Result<Vec<Duration>, BenchError>
where
    R: Runtime,
    S: Store<Vec<u8>, Runtime = R>,
{
    let epoch = Instant::now();
    let total = WARMUP + samples;
    let seen = Arc::new(Mutex::new(Vec::with_capacity(samples as usize)));
    let handled = Arc::new(AtomicU64::new(0));
    let all = Arc::new(Notify::new());
    let pool = Pool::builder(q.clone()).workers(CONSUMERS).spawn({
        let (seen, handled, all) = (seen.clone(), handled.clone(), all.clone());
        move |job: Job<Vec<u8>>| {
            let now = epoch.elapsed();
            let mut b = [0u8; 8];
            b.copy_from_slice(&job.item[..8]);
            let index = u64::from_le_bytes(b);
            b.copy_from_slice(&job.item[8..]);
            let pushed = Duration::from_nanos(u64::from_le_bytes(b));
            if index >= WARMUP {
                seen.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(now.saturating_sub(pushed));
            }
            if handled.fetch_add(1, Ordering::AcqRel) + 1 == total {
                all.notify_one();
            }
            async { Ok(()) }
        }
    });
    let every = Duration::from_secs(1) / per_sec.max(1);
    let start = tokio::time::Instant::now();
    for i in 0..total {
        tokio::time::sleep_until(start + every * i as u32).await;
        let mut item = vec![0u8; PAYLOAD_BYTES];
        item[..8].copy_from_slice(&i.to_le_bytes());
        let at = epoch.elapsed().as_nanos() as u64;
        item[8..].copy_from_slice(&at.to_le_bytes());
        q.push(item).await.map_err(|e| format!("push: {e:?}"))?;
    }
    tokio::time::timeout(Duration::from_secs(60), all.notified())
        .await
        .map_err(|_| "low load: not every item was handled within 60 s")?;
    let report = pool.shutdown(Duration::from_secs(30)).await;
    if report.stats.ok != total {
        return Err(format!("low load: pool handled {} of {total}", report.stats.ok).into());
    }
    let mut v = std::mem::take(&mut *seen.lock().unwrap_or_else(|e| e.into_inner()));
    v.sort();
    Ok(v)
}
