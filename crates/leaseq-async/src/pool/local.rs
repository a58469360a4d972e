//! What a worker keeps from one item to the next: its item-timeout timer and its view of
//! the advised limits.

use std::time::Duration;

use leaseq_core::{LatencyAdvisor, Timestamp};

use crate::pool::shards::TypeName;
use crate::pool::{ItemTimeout, PoolShared};
use crate::runtime::Runtime;

/// At most this many of a worker's items get their advised limit from one look at every
/// worker's records...
const ADVICE_ITEMS: u32 = 256;
/// ... and for at most this long.
pub(crate) const ADVICE_AGE: Duration = Duration::from_millis(10);

/// What a worker keeps from one item to the next.
pub(crate) struct Local<R: Runtime> {
    /// The queue's visibility timeout, to tell when a lease was taken.
    pub(crate) visibility: Duration,
    /// The item-timeout timer: made for the first item with a limit, then moved for each.
    timer: Option<R::Timer>,
    /// [`ItemTimeout::Advised`] limits per item type, from the last look at every shard.
    advised: Vec<(&'static str, Duration)>,
    /// Every shard merged, at the last look (made on the first need after it).
    merged: Option<LatencyAdvisor<TypeName>>,
    /// Items handed an advised limit since the last look, and when it was (`None` before
    /// the first).
    advice_items: u32,
    advice_at: Option<Timestamp>,
    /// This worker's handles on the pool metrics.
    #[cfg(feature = "metrics")]
    pub(crate) metrics: crate::metrics::PoolMetrics,
}

impl<R: Runtime> Local<R> {
    /// A worker's state, for a pool on the queue named `queue`.
    pub(crate) fn new(visibility: Duration, queue: &'static str) -> Self {
        #[cfg(not(feature = "metrics"))]
        let _ = queue;
        Local {
            visibility,
            timer: None,
            advised: Vec::new(),
            merged: None,
            advice_items: 0,
            advice_at: None,
            #[cfg(feature = "metrics")]
            metrics: crate::metrics::PoolMetrics::new(queue),
        }
    }

    /// The time limit for `item`, of type `item_type`, handled from `now` on.
    pub(crate) fn limit_for<T>(
        &mut self,
        pool: &PoolShared<T>,
        item: &T,
        item_type: &'static str,
        now: Timestamp,
    ) -> Option<Duration> {
        match &pool.timeout {
            ItemTimeout::None => None,
            ItemTimeout::Fixed(d) => Some(*d),
            ItemTimeout::PerItem(f) => Some(f(item)),
            ItemTimeout::Advised {
                initial,
                min_samples,
            } => Some(self.advised(pool, item_type, now, *initial, *min_samples)),
        }
    }

    /// The advised limit for `item_type`: the advisor's suggestion from every worker's
    /// records once `min_samples` runs of the type have finished, `initial` before that.
    ///
    /// Merging every shard costs a lock on each and a pass over each histogram, so a worker
    /// looks at them again only after [`ADVICE_ITEMS`] items or [`ADVICE_AGE`]; in between it
    /// reuses the limits of its last look (per type, computed on the first item of that type
    /// after it). The suggestion moves slowly (a p99), and the switch from `initial` comes
    /// at most that much late.
    fn advised<T>(
        &mut self,
        pool: &PoolShared<T>,
        item_type: &'static str,
        now: Timestamp,
        initial: Duration,
        min_samples: u64,
    ) -> Duration {
        self.advice_items += 1;
        let stale = self.advice_at.is_none_or(|at| {
            self.advice_items > ADVICE_ITEMS || now.saturating_duration_since(at) >= ADVICE_AGE
        });
        if stale {
            self.advised.clear();
            self.merged = None;
            self.advice_items = 1;
            self.advice_at = Some(now);
        }
        if let Some(&(_, limit)) = self.advised.iter().find(|(t, _)| *t == item_type) {
            return limit;
        }
        let merged = self
            .merged
            .get_or_insert_with(|| pool.shards.merged().records.advisor);
        let measured = merged
            .histogram(&TypeName(item_type))
            .map_or(0, |h| h.count());
        let limit = if measured >= min_samples {
            merged
                .suggested_timeout(&TypeName(item_type))
                .unwrap_or(initial)
        } else {
            initial
        };
        self.advised.push((item_type, limit));
        limit
    }

    /// The timer, set to complete at `at`.
    pub(crate) fn timer_at(&mut self, rt: &R, at: Timestamp) -> &mut R::Timer {
        if let Some(timer) = self.timer.as_mut() {
            rt.reset_timer(timer, at);
        }
        self.timer.get_or_insert_with(|| rt.timer(at))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use leaseq_core::Config;

    use crate::{ItemTimeout, LeaseQueue, Pool, Runtime, SimRuntime};

    /// `ItemTimeout::Advised`: `initial` until `min_samples` runs finished across the
    /// workers, then the advisor's suggestion (here 100 ms, the floor), seen by each worker
    /// within `ADVICE_AGE`.
    #[test]
    fn advised_limits_follow_every_workers_runs() {
        let rt = SimRuntime::new();
        rt.block_on({
            let rt = rt.clone();
            async move {
                let config = Config::new(Duration::from_secs(60)).with_max_attempts(1);
                let q = LeaseQueue::with_runtime(rt.clone(), config).unwrap();
                // 40 quick runs (1 ms each), about 20 per worker: enough only together.
                // Then one of 500 ms.
                for n in 0..40u32 {
                    q.try_push(n).unwrap();
                }
                let pool = Pool::builder(q.clone())
                    .workers(2)
                    .item_timeout(ItemTimeout::Advised {
                        initial: Duration::from_secs(1),
                        min_samples: 30,
                    })
                    .spawn({
                        let rt = rt.clone();
                        move |job: crate::Job<u32>| {
                            let took = if job.item == 99 { 500 } else { 1 };
                            let sleep =
                                rt.timer(rt.now().saturating_add(Duration::from_millis(took)));
                            async move {
                                sleep.await;
                                Ok(())
                            }
                        }
                    });
                q.wait_empty().await;
                let before = pool.stats();
                assert_eq!((before.ok, before.timed_out), (40, 0));
                let suggested = before.types[0].1.suggested_timeout;
                assert_eq!(suggested, Some(Duration::from_millis(100)));
                // Past `ADVICE_AGE`, every worker has looked again.
                rt.sleep_until(rt.now().saturating_add(crate::pool::local::ADVICE_AGE))
                    .await;
                let start = rt.now();
                q.try_push(99).unwrap();
                q.wait_empty().await;
                let s = pool.stats();
                assert_eq!((s.ok, s.timed_out, s.queue.dead), (40, 1, 1));
                assert_eq!(
                    rt.now(),
                    start.saturating_add(Duration::from_millis(100)),
                    "timed out at the advised limit"
                );
                pool.shutdown(Duration::from_secs(1)).await;
            }
        });
    }
}
