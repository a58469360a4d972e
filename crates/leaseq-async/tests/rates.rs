//! Rate limits on the memory store (`MemoryStore::set_rate`): a pool starts a limited
//! partition's items no faster than its rate while the others run at once, a waiting
//! receive returns exactly at the instant the next start is allowed, and a rate raised at
//! runtime wakes a waiting receiver at once. Virtual time (`SimRuntime`): a receiver that
//! spun instead of sleeping until the instant would keep the clock from moving and hang.

use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_async::core::{FlowKey, FlowKeys, LimitScope, Rate, Timestamp};
use leaseq_async::{Config, Pool, Push, Runtime};
use leaseq_test_kit::sim;

const SEC: Duration = Duration::from_secs(1);

fn nz(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n).unwrap()
}

#[test]
fn a_pool_starts_a_limited_partition_at_its_rate_and_the_rest_at_once() {
    sim::run(|rt| async move {
        let q = sim::queue(&rt, Config::new(60 * SEC));
        let acme = FlowKey::named("acme");
        // 5 a second, evenly: one start every 200 ms.
        let rate = Rate::per_second(nz(5)).burst(nz(1));
        q.store().set_rate(LimitScope::Partition(acme), Some(rate));
        let keys = FlowKeys::new().partition(acme);
        for n in 0..10u32 {
            q.store().try_push_flow(n, &Push::new(), keys).unwrap();
        }
        for n in 100..104u32 {
            q.try_push(n).unwrap();
        }
        let t0 = rt.now();
        let starts = Arc::new(Mutex::new(Vec::new()));
        let pool = Pool::builder(q.clone()).workers(4).spawn({
            let (starts, rt) = (starts.clone(), rt.clone());
            move |job| {
                let (starts, rt) = (starts.clone(), rt.clone());
                async move {
                    starts.lock().unwrap().push((job.item, rt.now()));
                    rt.sleep_until(rt.now().saturating_add(Duration::from_millis(50)))
                        .await;
                    Ok(())
                }
            }
        });
        q.wait_empty().await;
        let report = pool.shutdown(SEC).await;
        assert_eq!(report.stats.ok, 14);
        let starts = starts.lock().unwrap().clone();
        let since = |t: Timestamp| t.saturating_duration_since(t0);
        let limited: Vec<Duration> = starts
            .iter()
            .filter(|(n, _)| *n < 100)
            .map(|&(_, t)| since(t))
            .collect();
        let expected: Vec<Duration> = (0..10).map(|i| i * Duration::from_millis(200)).collect();
        assert_eq!(
            limited, expected,
            "each start exactly one interval after the last"
        );
        // The unlimited items did not wait behind the limited ones.
        assert!(starts
            .iter()
            .filter(|(n, _)| *n >= 100)
            .all(|&(_, t)| since(t) <= Duration::from_millis(50)));
        assert_eq!(q.store().waiting_on_rates(), 0);
    });
}

#[test]
fn a_waiting_receive_returns_at_the_eligible_instant_and_a_raise_wakes_it() {
    sim::run(|rt| async move {
        let q = sim::queue(&rt, Config::new(60 * SEC));
        let kind = FlowKey::named("sms");
        let scope = LimitScope::Kind(kind);
        let keys = FlowKeys::new().kind(kind);
        // One a minute, burst 2.
        q.store()
            .set_rate(scope, Some(Rate::per(nz(1), 60 * SEC).burst(nz(2))));
        for n in 0..4u32 {
            q.store().try_push_flow(n, &Push::new(), keys).unwrap();
        }
        let t0 = rt.now();
        for _ in 0..2 {
            q.receive().await.unwrap().ack().await.unwrap();
        }
        assert!(q.try_receive().is_none());
        assert_eq!(q.store().waiting_on_rates(), 2);
        let third = q.receive().await.unwrap();
        assert_eq!(rt.now().saturating_duration_since(t0), 60 * SEC);
        third.ack().await.unwrap();
        // The next is a minute away; raised to 10 a second halfway, it goes at once.
        let (got, ()) = futures::future::join(
            async { q.receive().await.map(|d| (*d.item(), rt.now())) },
            async {
                rt.sleep_until(rt.now().saturating_add(30 * SEC)).await;
                q.store()
                    .set_rate(scope, Some(Rate::per_second(nz(10)).burst(nz(1))));
            },
        )
        .await;
        let (item, at) = got.unwrap();
        assert_eq!(item, 3);
        // The old rate's lead at the change (90 s: one and a half intervals) carried over
        // at the new interval: 150 ms.
        let waited = at.saturating_duration_since(t0);
        assert_eq!(waited, 90 * SEC + Duration::from_millis(150));
        q.store().set_rate(scope, None);
        assert_eq!(q.store().rate(scope), None);
    });
}
