//! Snooze on the memory store: a delivery or a pool job puts its item back for a while
//! without counting the attempt, within the queue's bound per item. Virtual time.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_async::{Backoff, Config, JobError, Pool, Reason, Runtime, Snoozed};
use leaseq_test_kit::sim;

const SEC: Duration = Duration::from_secs(1);

/// A snoozed delivery comes back after its delay with the same attempt; a settle after
/// the snooze is refused.
#[test]
fn a_delivery_snoozes_without_counting_the_attempt() {
    sim::run(|rt| async move {
        let q = sim::queue(&rt, Config::new(10 * SEC));
        q.try_push(7u32).unwrap();
        let mut d = q.receive().await.unwrap();
        let t0 = rt.now();
        let snoozed = d.snooze(5 * SEC).await.unwrap();
        assert_eq!(
            snoozed,
            Snoozed::Later {
                visible_at: t0.saturating_add(5 * SEC),
                snoozes: 1
            }
        );
        assert!(d.extend(SEC).await.is_err(), "settled by the snooze");
        assert!(q.try_receive().is_none());
        let again = q.receive().await.unwrap();
        assert_eq!(rt.now().saturating_duration_since(t0), 5 * SEC);
        assert_eq!(again.attempt(), 1);
        again.ack().await.unwrap();
        let s = q.stats();
        assert_eq!((s.snoozed, s.nacks, s.acked), (1, 0, 1));
    });
}

/// A pool handler returns `JobError::snooze`: its attempts are not counted, nor is the
/// snooze an outcome of the pool's; past the bound a snooze counts, and an item that only
/// snoozes ends in the dead letters with the reason said.
#[test]
fn a_job_snoozes_within_the_bound_then_counts() {
    sim::run(|rt| async move {
        let config = Config::new(10 * SEC)
            .with_max_attempts(2)
            .with_backoff(Backoff::None)
            .with_max_snoozes(2);
        let q = sim::queue(&rt, config);
        q.try_push(0u32).unwrap(); // snoozes twice, then succeeds
        q.try_push(1u32).unwrap(); // snoozes forever
        let seen = Arc::new(Mutex::new(Vec::new()));
        let pool = Pool::builder(q.clone()).workers(1).spawn({
            let seen = seen.clone();
            move |job| {
                let seen = seen.clone();
                async move {
                    let mut seen = seen.lock().unwrap();
                    seen.push((job.item, job.attempt));
                    let times = seen.iter().filter(|(i, _)| *i == job.item).count();
                    if job.item == 0 && times > 2 {
                        return Ok(());
                    }
                    Err(JobError::snooze(SEC))
                }
            }
        });
        q.wait_empty().await;
        let report = pool.shutdown(SEC).await;
        let seen = seen.lock().unwrap().clone();
        let of = |item| {
            seen.iter()
                .filter(move |(i, _)| *i == item)
                .map(|(_, a)| *a)
        };
        assert_eq!(of(0).collect::<Vec<_>>(), [1, 1, 1]);
        // Two uncounted snoozes, then two counted ones end the item's two attempts.
        assert_eq!(of(1).collect::<Vec<_>>(), [1, 1, 1, 2]);
        assert_eq!((report.stats.ok, report.stats.failed), (1, 0));
        let s = q.stats();
        assert_eq!((s.snoozed, s.nacks, s.dead_lettered), (4, 2, 1));
        let dead = q.store().take_dead_letters();
        assert_eq!(dead[0].reason, Reason::Released);
        assert_eq!(dead[0].last_error.as_deref(), Some("snooze limit reached"));
    });
}
