//! A pool handler's heartbeat, started when the handler first waits.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use leaseq_core::Timestamp;

use crate::delivery::Delivery;
use crate::runtime::Runtime;
use crate::store::Store;

/// A handler's future that starts its lease's heartbeat the first time it waits
/// ([`Delivery::start_heartbeat`]): an item handled within its first poll, as most quick
/// ones are, never registers a beat, while one that waits has its heartbeat from then on,
/// its first beat due as if it had started at the take. (Only a handler that computes for
/// longer than a beat's interval before it first waits would see a beat later than at the
/// take; it holds its worker's thread that long, and its item timeout cannot fire either.)
pub(crate) struct BeatOnWait<'a, F, T, R: Runtime, S: Store<T, Runtime = R>> {
    pub(crate) fut: F,
    /// The delivery whose heartbeat to start, until it is started (`None` without one).
    pub(crate) delivery: Option<&'a mut Delivery<T, R, S>>,
    pub(crate) leased_at: Timestamp,
}

impl<F, T, R, S> Future for BeatOnWait<'_, F, T, R, S>
where
    F: Future + Unpin,
    R: Runtime,
    S: Store<T, Runtime = R>,
{
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.fut).poll(cx);
        if polled.is_pending() {
            if let Some(delivery) = this.delivery.take() {
                delivery.start_heartbeat(this.leased_at);
            }
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use leaseq_core::Config;

    use crate::{Job, LeaseQueue, Pool, Runtime, SimRuntime};

    /// A handler done within its first poll never registers a beat; one that waits has its
    /// heartbeat from its first wait, which keeps its lease past the visibility timeout.
    #[test]
    fn the_heartbeat_starts_when_the_handler_first_waits() {
        let rt = SimRuntime::new();
        rt.block_on({
            let rt = rt.clone();
            async move {
                let vis = Duration::from_secs(3);
                let q = LeaseQueue::with_runtime(rt.clone(), Config::new(vis)).unwrap();
                q.try_push(0u32).unwrap();
                q.try_push(1).unwrap();
                let seen = Arc::new(Mutex::new(Vec::new()));
                let pool = Pool::builder(q.clone())
                    .workers(1)
                    .item_timeout(crate::ItemTimeout::Fixed(Duration::from_secs(60)))
                    .spawn({
                        let (q, rt, seen) = (q.clone(), rt.clone(), seen.clone());
                        move |job: Job<u32>| {
                            let (q, rt, seen) = (q.clone(), rt.clone(), seen.clone());
                            // Before the handler's future is first polled.
                            let at_call = q.heartbeats();
                            async move {
                                if job.item == 1 {
                                    // Past the visibility: only the heartbeat keeps the lease.
                                    let until = rt.now().saturating_add(3 * vis);
                                    rt.timer(until).await;
                                }
                                seen.lock()
                                    .unwrap()
                                    .push((job.item, at_call, q.heartbeats()));
                                Ok(())
                            }
                        }
                    });
                q.wait_empty().await;
                let s = pool.stats();
                assert_eq!((s.ok, s.queue.acked, s.queue.redelivered), (2, 2, 0));
                assert_eq!(*seen.lock().unwrap(), vec![(0, 0, 0), (1, 0, 1)]);
                pool.shutdown(Duration::from_secs(1)).await;
            }
        });
    }
}
