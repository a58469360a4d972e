//! The typed job router on the memory store, on virtual time: mixed kinds where one kind's
//! handler panics on every call and another's hangs forever, and every item of the others
//! is still handled, with fewer workers than kinds and with more; an unknown kind, bytes
//! that are no envelope and args that do not decode dead-lettered at once with their
//! reasons; a router's routes refused as they should be.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_async::router::{Envelope, JobKind, RouteError, Router};
use leaseq_async::{
    Backoff, Config, ConfigError, Job, JobError, KindPolicy, LeaseQueue, Pool, Reason, Runtime,
    Timestamp,
};
use leaseq_test_kit::jobs::{self, Email, Explode, Hang};
use leaseq_test_kit::sim;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Resize {
    width: u32,
}
impl JobKind for Resize {
    const KIND: &'static str = "resize";
}

const PER_KIND: u32 = 25;

/// 25 items of each of four kinds, interleaved: "explode" panics on every call (3 attempts,
/// its kind's), "hang" never returns (3 attempts of 2 s each, its kind's timeout), "email"
/// and "resize" succeed. With 2 workers (fewer than the kinds) and with 8 (more), every
/// email and resize is handled once, every bad item is dead-lettered with its own reason
/// after its kind's attempts, and the pool keeps its workers.
#[test]
fn a_panicking_and_a_hanging_kind_do_not_starve_the_others() {
    for workers in [2, 8] {
        sim::run(|rt| async move {
            let config = Config::new(Duration::from_secs(60))
                .with_max_attempts(5)
                .with_backoff(Backoff::Fixed(Duration::from_millis(100)))
                .without_jitter();
            let q = LeaseQueue::with_runtime(rt.clone(), config).unwrap();
            for n in 0..PER_KIND {
                q.push(Envelope::new(&Explode(n)).unwrap()).await.unwrap();
                q.push(Envelope::new(&Hang(n)).unwrap()).await.unwrap();
                let to = format!("user{n}@example.com");
                q.push(Envelope::new(&Email { to }).unwrap()).await.unwrap();
                q.push(Envelope::new(&Resize { width: n }).unwrap())
                    .await
                    .unwrap();
            }
            let (emails, resizes) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
            // When the last healthy item was handled, on the virtual clock.
            let last = Arc::new(Mutex::new(Timestamp::ZERO));
            let done = {
                let (rt, last) = (rt.clone(), last.clone());
                move || *last.lock().unwrap() = rt.now()
            };
            let router = Router::new()
                .route::<Email, _>({
                    let (emails, done) = (emails.clone(), done.clone());
                    move |job: Job<Email>| {
                        assert!(job.item.to.ends_with("@example.com"));
                        emails.fetch_add(1, Ordering::Relaxed);
                        done();
                        async { Ok(()) }
                    }
                })
                .route::<Resize, _>({
                    let resizes = resizes.clone();
                    move |_job: Job<Resize>| {
                        resizes.fetch_add(1, Ordering::Relaxed);
                        done();
                        async { Ok(()) }
                    }
                });
            let router = jobs::with_failing_kinds(router, 3, Duration::from_secs(2));
            let pool = Pool::builder(q.clone())
                .workers(workers)
                .spawn_router(router);
            q.wait_empty().await;
            assert_eq!(pool.live_workers(), workers);
            let report = pool.shutdown(Duration::from_secs(1)).await;
            let s = &report.stats;
            assert_eq!(
                (
                    emails.load(Ordering::Relaxed),
                    resizes.load(Ordering::Relaxed)
                ),
                (PER_KIND, PER_KIND),
                "workers: {workers}"
            );
            // The hanging kind costs at most its attempts x its timeout of worker time
            // per item (25 x 3 x 2 s = 150 s in all), shared by the workers: every
            // healthy item is handled by then (the pool's own limit, the lease's end
            // at 60 minutes, would have held the workers far longer).
            let hung_worker_time = Duration::from_secs(u64::from(PER_KIND) * 3 * 2);
            let bound = hung_worker_time / workers as u32 + Duration::from_secs(2);
            let last = *last.lock().unwrap();
            assert!(
                last <= Timestamp::ZERO.saturating_add(bound),
                "workers {workers}: last healthy item at {last:?}, bound {bound:?}"
            );
            assert_eq!(s.ok, u64::from(2 * PER_KIND));
            assert_eq!(s.panicked, u64::from(3 * PER_KIND));
            assert_eq!(s.timed_out, u64::from(3 * PER_KIND));
            assert_eq!(s.worker_panics, 0, "every panic caught around its handler");
            // The pool's item types are the kinds.
            let types: Vec<&str> = s.types.iter().map(|(t, _)| *t).collect();
            assert_eq!(types, ["email", "explode", "hang", "resize"]);

            let dead = q.store().take_dead_letters();
            assert_eq!(dead.len(), 2 * PER_KIND as usize);
            for d in &dead {
                let want = match d.item.kind() {
                    Some("explode") => Reason::Panicked,
                    Some("hang") => Reason::TimedOut,
                    other => panic!("{other:?} dead-lettered"),
                };
                assert_eq!((d.reason, d.attempts), (want, 3), "{d:?}");
            }
            let hung = dead.iter().find(|d| d.reason == Reason::TimedOut).unwrap();
            assert_eq!(hung.last_error.as_deref(), Some("timed out after 2s"));
            let exploded = dead.iter().find(|d| d.reason == Reason::Panicked).unwrap();
            assert!(
                exploded
                    .last_error
                    .as_deref()
                    .unwrap()
                    .starts_with("explode "),
                "{exploded:?}"
            );
        });
    }
}

/// A kind with no route and bytes that are no envelope are dead-lettered at their first
/// attempt (the queue allows 5), with reason `Rejected` and the cause, and counted as
/// permanent failures of type "unknown"; a known kind on the same queue is handled.
#[test]
fn an_unknown_kind_is_dead_lettered_at_once_with_its_reason() {
    sim::run(|rt| async move {
        let config = Config::new(Duration::from_secs(60)).with_max_attempts(5);
        let q = LeaseQueue::with_runtime(rt.clone(), config).unwrap();
        let fax = q
            .push(Envelope::from_parts("fax", b"{\"to\":\"+1 555\"}").unwrap())
            .await
            .unwrap();
        let junk = q.push(Envelope::from_bytes(vec![0, 1, 2])).await.unwrap();
        q.push(Envelope::new(&Email { to: "a@b".into() }).unwrap())
            .await
            .unwrap();
        let router = Router::new().route::<Email, _>(|_job: Job<Email>| async { Ok(()) });
        let pool = Pool::builder(q.clone()).spawn_router(router);
        q.wait_empty().await;
        let report = pool.shutdown(Duration::from_secs(1)).await;
        let s = &report.stats;
        assert_eq!((s.ok, s.permanent, s.failed), (1, 2, 0), "{s:?}");
        let unknown = s.types.iter().find(|(t, _)| *t == "unknown").unwrap();
        assert_eq!(unknown.1.failed, 2);

        let mut dead = q.store().take_dead_letters();
        dead.sort_by_key(|d| d.id);
        let seen: Vec<_> = dead
            .iter()
            .map(|d| (d.id, d.attempts, d.reason, d.last_error.clone().unwrap()))
            .collect();
        assert_eq!(
            seen,
            [
                (
                    fax,
                    1,
                    Reason::Rejected,
                    "unknown job kind `fax`: no handler registered".to_string()
                ),
                (
                    junk,
                    1,
                    Reason::Rejected,
                    "not a job envelope (3 bytes that do not start with a kind)".to_string()
                ),
            ]
        );
        // The item is kept whole: an operator can redrive it once a handler exists.
        assert_eq!(dead[0].item.kind(), Some("fax"));
        assert_eq!(dead[0].item.args(), Some(&b"{\"to\":\"+1 555\"}"[..]));
    });
}

/// Args that do not decode as their kind's (a wrong type, a missing field, not JSON) are
/// dead-lettered at once with the decode error, the handler never called.
#[test]
fn bad_args_are_dead_lettered_with_the_decode_error() {
    sim::run(|rt| async move {
        let config = Config::new(Duration::from_secs(60)).with_max_attempts(5);
        let q = LeaseQueue::with_runtime(rt.clone(), config).unwrap();
        for args in [&b"{\"to\":7}"[..], b"{}", b"not json"] {
            q.push(Envelope::from_parts("email", args).unwrap())
                .await
                .unwrap();
        }
        let called = Arc::new(AtomicU32::new(0));
        let router =
            Router::new().route_with::<Email, _>(KindPolicy::new().with_max_attempts(4), {
                let called = called.clone();
                move |_job: Job<Email>| {
                    called.fetch_add(1, Ordering::Relaxed);
                    async { Ok(()) }
                }
            });
        let pool = Pool::builder(q.clone()).spawn_router(router);
        q.wait_empty().await;
        let report = pool.shutdown(Duration::from_secs(1)).await;
        assert_eq!(report.stats.permanent, 3);
        assert_eq!(called.load(Ordering::Relaxed), 0);
        let mut dead = q.store().take_dead_letters();
        dead.sort_by_key(|d| d.id);
        let errors: Vec<String> = dead
            .iter()
            .map(|d| {
                assert_eq!((d.attempts, d.reason), (1, Reason::Rejected));
                d.last_error.clone().unwrap()
            })
            .collect();
        assert!(
            errors[0].starts_with("bad args for job kind `email`: invalid type: integer `7`"),
            "{errors:?}"
        );
        assert!(
            errors[1].starts_with("bad args for job kind `email`: missing field `to`"),
            "{errors:?}"
        );
        assert!(
            errors[2].starts_with("bad args for job kind `email`: expected"),
            "{errors:?}"
        );
    });
}

/// A handler's "retry after" works through the router, and the kind's max attempts too:
/// an email failing with a 3 s delay is delivered 3 s later exactly, and dead after the
/// kind's 2 attempts (the queue allows 10).
#[test]
fn a_routed_handlers_retry_after_and_its_kinds_attempts() {
    sim::run(|rt| async move {
        let config = Config::new(Duration::from_secs(60)).with_max_attempts(10);
        let q = LeaseQueue::with_runtime(rt.clone(), config).unwrap();
        q.push(Envelope::new(&Email { to: "a@b".into() }).unwrap())
            .await
            .unwrap();
        let router = Router::new().route_with::<Email, _>(
            KindPolicy::new().with_max_attempts(2),
            |_job: Job<Email>| async {
                Err(JobError::retry_after(Duration::from_secs(3), "greylisted"))
            },
        );
        let pool = Pool::builder(q.clone()).spawn_router(router);
        q.wait_empty().await;
        assert_eq!(
            rt.now(),
            leaseq_async::Timestamp::ZERO.saturating_add(Duration::from_secs(3))
        );
        pool.shutdown(Duration::from_secs(1)).await;
        let dead = q.store().take_dead_letters();
        assert_eq!((dead[0].attempts, dead[0].reason), (2, Reason::Nacked));
    });
}

/// A kind routed twice, or with an invalid policy, is refused and the router unchanged;
/// `route` panics on it, naming the kind.
#[test]
fn a_duplicate_kind_or_a_bad_policy_is_refused() {
    let mut router = Router::new().route::<Email, _>(|_job: Job<Email>| async { Ok(()) });
    let again = router.try_route_with(KindPolicy::new(), |_job: Job<Email>| async { Ok(()) });
    assert_eq!(again, Err(RouteError::Duplicate { kind: "email" }));
    let zero = KindPolicy::new().with_max_attempts(0);
    let bad = router.try_route_with(zero, |_job: Job<Resize>| async { Ok(()) });
    assert_eq!(
        bad,
        Err(RouteError::Policy {
            kind: "resize",
            error: ConfigError::ZeroAttempts
        })
    );
    let kinds: Vec<_> = router.kinds().map(|(k, _)| k).collect();
    assert_eq!(kinds, ["email"]);

    let panicked = std::panic::catch_unwind(|| {
        Router::new()
            .route::<Email, _>(|_job: Job<Email>| async { Ok(()) })
            .route::<Email, _>(|_job: Job<Email>| async { Ok(()) })
    });
    let message = panicked.err().unwrap();
    let message = message.downcast_ref::<String>().unwrap();
    assert_eq!(message, "job kind `email` has a route already");
}
