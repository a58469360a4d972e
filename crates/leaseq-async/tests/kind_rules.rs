//! Retry rules per job kind in a pool (`PoolBuilder::kind_policy`) and a handler's own
//! "retry after D" (`JobError::retry_after`), on virtual time: the delay honoured to the
//! nanosecond (jitter or not, kind rules or not), "do not retry" dead-lettered at once, a
//! kind's lower max attempts applied to errors, panics and timeouts alike, a kind's own
//! timeout and backoff.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_async::{
    Backoff, Config, ItemTimeout, Jitter, JobError, KindPolicy, LeaseQueue, Pool, Reason, Runtime,
    Timestamp,
};
use leaseq_test_kit::sim;

/// When each handling of each item started, on the virtual clock, in order.
#[derive(Clone, Default)]
struct Starts(Arc<Mutex<Vec<(&'static str, Timestamp)>>>);

impl Starts {
    fn record(&self, item: &'static str, at: Timestamp) {
        self.0.lock().unwrap().push((item, at));
    }

    fn of(&self, item: &str) -> Vec<Timestamp> {
        let starts = self.0.lock().unwrap();
        starts
            .iter()
            .filter(|(i, _)| *i == item)
            .map(|(_, t)| *t)
            .collect()
    }
}

/// A handler's "retry after D" is exact: the next delivery starts D after the failure, to
/// the nanosecond, though the queue has a 60 s backoff with 50 % jitter; with kind rules
/// (a kind backoff of its own) and without.
#[test]
fn retry_after_is_honoured_to_the_nanosecond() {
    for with_kind_rules in [false, true] {
        sim::run(|rt| async move {
            let config = Config::new(Duration::from_secs(600))
                .with_max_attempts(5)
                .with_backoff(Backoff::Fixed(Duration::from_secs(60)))
                .with_jitter(Jitter::new(50, 7));
            let q = LeaseQueue::with_runtime(rt.clone(), config).unwrap();
            q.push("rate-limited").await.unwrap();
            let delay = Duration::new(1, 234_567_891);
            let starts = Starts::default();
            let builder = Pool::builder(q.clone()).workers(2);
            let builder = if with_kind_rules {
                builder.kind_policy(|_: &&str| {
                    KindPolicy::new().with_backoff(Backoff::Fixed(Duration::from_secs(9)))
                })
            } else {
                builder
            };
            let pool = builder.spawn({
                let (rt, starts) = (rt.clone(), starts.clone());
                move |job| {
                    starts.record(job.item, rt.now());
                    async move {
                        match job.attempt {
                            1..=2 => Err(JobError::retry_after(delay, "429, retry after")),
                            _ => Ok(()),
                        }
                    }
                }
            });
            q.wait_empty().await;
            let report = pool.shutdown(Duration::from_secs(1)).await;
            assert_eq!((report.stats.ok, report.stats.failed), (1, 2));
            let at = starts.of("rate-limited");
            assert_eq!(at.len(), 3, "{with_kind_rules}");
            // The handler fails at once (no virtual time passes), so each delivery
            // starts exactly `delay` after the previous one's failure.
            for pair in at.windows(2) {
                assert_eq!(
                    pair[1].saturating_duration_since(pair[0]),
                    delay,
                    "kind rules: {with_kind_rules}"
                );
            }
        });
    }
}

/// "Do not retry" under kind rules dead-letters at the first attempt, with reason
/// `Rejected` and the handler's message, though the kind and the queue allow 10 attempts;
/// a retry at the kind's last attempt is dead-lettered too, not delayed.
#[test]
fn do_not_retry_dead_letters_at_once() {
    sim::run(|rt| async move {
        let config = Config::new(Duration::from_secs(60)).with_max_attempts(10);
        let q = LeaseQueue::with_runtime(rt.clone(), config).unwrap();
        q.push("poison").await.unwrap();
        q.push("late").await.unwrap();
        let pool = Pool::builder(q.clone())
            .kind_policy(|item: &&str| match *item {
                "late" => KindPolicy::new().with_max_attempts(1),
                _ => KindPolicy::new().with_max_attempts(10),
            })
            .spawn(|job| async move {
                match job.item {
                    "poison" => Err(JobError::permanent("unparseable invoice")),
                    _ => Err(JobError::retry_after(Duration::from_secs(3600), "later")),
                }
            });
        q.wait_empty().await;
        let start = Timestamp::ZERO;
        assert_eq!(rt.now(), start, "nothing waited an hour");
        let report = pool.shutdown(Duration::from_secs(1)).await;
        assert_eq!((report.stats.permanent, report.stats.failed), (1, 1));
        let mut dead: Vec<_> = q
            .store()
            .take_dead_letters()
            .into_iter()
            .map(|d| (d.item, d.attempts, d.reason, d.last_error))
            .collect();
        dead.sort_by_key(|d| d.0);
        assert_eq!(
            dead,
            [
                ("late", 1, Reason::Nacked, Some("later".to_string())),
                (
                    "poison",
                    1,
                    Reason::Rejected,
                    Some("unparseable invoice".to_string())
                ),
            ]
        );
    });
}

/// A kind's lower max attempts holds for every way a handling fails: errors, panics and
/// timeouts of kind "fragile" are dead-lettered after its 2 attempts, each with its own
/// reason, while the same failures of a kind without rules get the queue's 4.
#[test]
fn a_kinds_lower_max_attempts_holds_for_errors_panics_and_timeouts() {
    sim::run(|rt| async move {
        let config = Config::new(Duration::from_secs(60))
            .with_max_attempts(4)
            .with_backoff(Backoff::Fixed(Duration::from_millis(10)));
        let q = LeaseQueue::with_runtime(rt.clone(), config).unwrap();
        for item in [
            "fragile:error",
            "fragile:panic",
            "fragile:hang",
            "sturdy:error",
            "sturdy:panic",
            "sturdy:hang",
        ] {
            q.push(item).await.unwrap();
        }
        let pool = Pool::builder(q.clone())
            .workers(3)
            .item_timeout(ItemTimeout::Fixed(Duration::from_secs(1)))
            .kind_policy(|item: &&str| {
                if item.starts_with("fragile") {
                    KindPolicy::new().with_max_attempts(2)
                } else {
                    KindPolicy::new()
                }
            })
            .spawn(|job| async move {
                match job.item.split(':').nth(1) {
                    Some("error") => Err(JobError::retry("flaky")),
                    Some("panic") => panic!("boom"),
                    _ => std::future::pending().await,
                }
            });
        q.wait_empty().await;
        let report = pool.shutdown(Duration::from_secs(1)).await;
        let s = &report.stats;
        assert_eq!((s.failed, s.panicked, s.timed_out), (6, 6, 6), "{s:?}");
        let mut dead: Vec<_> = q
            .store()
            .take_dead_letters()
            .into_iter()
            .map(|d| (d.item, d.attempts, d.reason))
            .collect();
        dead.sort_by_key(|d| d.0);
        assert_eq!(
            dead,
            [
                ("fragile:error", 2, Reason::Nacked),
                ("fragile:hang", 2, Reason::TimedOut),
                ("fragile:panic", 2, Reason::Panicked),
                ("sturdy:error", 4, Reason::Nacked),
                ("sturdy:hang", 4, Reason::TimedOut),
                ("sturdy:panic", 4, Reason::Panicked),
            ]
        );
    });
}

/// A kind's item timeout replaces the pool's for its items, and its backoff the queue's:
/// a hanging "slow" item is timed out at exactly 250 ms (the pool's limit is a minute) and
/// delivered again exactly 5 s later (the queue's backoff is a minute, without jitter);
/// the other kind keeps the pool's limit.
#[test]
fn a_kinds_timeout_and_backoff_replace_the_pools_and_the_queues() {
    sim::run(|rt| async move {
        let config = Config::new(Duration::from_secs(600))
            .with_max_attempts(2)
            .with_backoff(Backoff::Fixed(Duration::from_secs(60)))
            .without_jitter();
        let q = LeaseQueue::with_runtime(rt.clone(), config).unwrap();
        q.push("slow").await.unwrap();
        let starts = Starts::default();
        let pool = Pool::builder(q.clone())
            .workers(1)
            .item_timeout(ItemTimeout::Fixed(Duration::from_secs(60)))
            .kind_policy(|item: &&str| match *item {
                "slow" => KindPolicy::new()
                    .with_timeout(Duration::from_millis(250))
                    .with_backoff(Backoff::Fixed(Duration::from_secs(5))),
                _ => KindPolicy::new(),
            })
            .spawn({
                let (rt, starts) = (rt.clone(), starts.clone());
                move |job| {
                    starts.record(job.item, rt.now());
                    let rt = rt.clone();
                    async move {
                        if job.item == "slow" {
                            std::future::pending::<()>().await;
                        }
                        // The other kind takes 30 s: within the pool's minute.
                        sim::sleep(&rt, Duration::from_secs(30)).await;
                        Ok(())
                    }
                }
            });
        q.wait_empty().await;
        let ms = |n| Timestamp::ZERO.saturating_add(Duration::from_millis(n));
        assert_eq!(starts.of("slow"), [ms(0), ms(5_250)]);
        assert_eq!(rt.now(), ms(5_500), "dead at its second timeout");
        q.push("patient").await.unwrap();
        q.wait_empty().await;
        let report = pool.shutdown(Duration::from_secs(1)).await;
        let s = &report.stats;
        assert_eq!((s.ok, s.timed_out), (1, 2), "{s:?}");
        let dead = q.store().take_dead_letters();
        assert_eq!(dead.len(), 1);
        assert_eq!(
            (dead[0].reason, dead[0].last_error.as_deref()),
            (Reason::TimedOut, Some("timed out after 250ms"))
        );
    });
}
