//! Concurrency limits on the memory store (`MemoryStore::set_limit`, `try_push_flow`): a
//! pool never runs more of a limited kind at once than its limit, the others pass, and a
//! receiver waiting on a held-back item is woken when a place frees. Virtual time.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use leaseq_async::core::{FlowKey, FlowKeys, LimitScope};
use leaseq_async::{Config, Pool, Push, Runtime};
use leaseq_test_kit::sim;

const SEC: Duration = Duration::from_secs(1);

#[test]
fn a_pool_never_exceeds_a_kind_limit_and_runs_the_rest() {
    sim::run(|rt| async move {
        let q = sim::queue(&rt, Config::new(60 * SEC));
        let email = FlowKey::named("email");
        q.store().set_limit(LimitScope::Kind(email), Some(2));
        let keys = FlowKeys::new().kind(email);
        for n in 0..12u32 {
            q.store().try_push_flow(n, &Push::new(), keys).unwrap();
            q.try_push(100 + n).unwrap();
        }
        let (pool, peak) = sim::pool_with_peak(&rt, &q, 6, SEC, |n: &u32| *n < 100);
        q.wait_empty().await;
        let report = pool.shutdown(SEC).await;
        assert_eq!(report.stats.ok, 24);
        assert_eq!(peak.load(Ordering::SeqCst), 2);
        assert_eq!(q.store().in_flight_of(LimitScope::Kind(email)), 0);
    });
}

#[test]
fn a_waiting_receiver_gets_the_held_back_item_when_a_place_frees() {
    sim::run(|rt| async move {
        let q = sim::queue(&rt, Config::new(60 * SEC));
        let acme = FlowKeys::new().partition(FlowKey::new(7));
        q.store()
            .set_limit(LimitScope::Partition(FlowKey::new(7)), Some(1));
        q.store().try_push_flow(1u32, &Push::new(), acme).unwrap();
        q.store().try_push_flow(2u32, &Push::new(), acme).unwrap();
        let first = q.receive().await.unwrap();
        assert!(q.try_receive().is_none());
        assert_eq!(q.store().waiting_on_limits(), 1);
        let (got, acked) =
            futures::future::join(async { q.receive().await.map(|d| *d.item()) }, async {
                rt.sleep_until(rt.now().saturating_add(SEC)).await;
                first.ack().await
            })
            .await;
        acked.unwrap();
        assert_eq!(got, Some(2));
        // Raised at runtime: takes effect at once.
        q.store()
            .set_limit(LimitScope::Partition(FlowKey::new(7)), None);
        assert_eq!(
            q.store().limit(LimitScope::Partition(FlowKey::new(7))),
            None
        );
    });
}

/// An ordered group on a pool of 4: its items run one at a time, in push order, while an
/// ungrouped item runs beside them.
#[test]
fn an_ordered_group_runs_one_at_a_time_in_push_order() {
    sim::run(|rt| async move {
        let q = sim::queue(&rt, Config::new(60 * SEC));
        let order = FlowKeys::new().group(FlowKey::named("order-17"));
        for n in 0..6u32 {
            q.store().try_push_flow(n, &Push::new(), order).unwrap();
        }
        q.try_push(100u32).unwrap();
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let running = Arc::new(AtomicUsize::new(0));
        let pool = Pool::builder(q.clone()).workers(4).spawn({
            let (seen, running, rt) = (seen.clone(), running.clone(), rt.clone());
            move |job| {
                let (seen, running, rt) = (seen.clone(), running.clone(), rt.clone());
                async move {
                    if job.item < 100 {
                        assert_eq!(running.fetch_add(1, Ordering::SeqCst), 0);
                        seen.lock().unwrap().push(job.item);
                    }
                    rt.sleep_until(rt.now().saturating_add(SEC)).await;
                    if job.item < 100 {
                        running.fetch_sub(1, Ordering::SeqCst);
                    }
                    Ok(())
                }
            }
        });
        q.wait_empty().await;
        let report = pool.shutdown(SEC).await;
        assert_eq!((report.stats.ok, report.stats.panicked), (7, 0));
        assert_eq!(*seen.lock().unwrap(), [0, 1, 2, 3, 4, 5]);
    });
}
