//! A job service written against `leaseq-tokio` alone, plus a store crate (issue 30, "one
//! import path"): two kinds through the router (one retried once, one that fails for good,
//! with a kind's own rules), a cron schedule whose cursor, kept in the store, makes a
//! second scheduler push nothing twice, the operator API's dead letters filtered by kind,
//! and the deploy path (`shutdown_signal`). Every leaseq name here comes from
//! `leaseq_tokio` (and the store crates, for opening): the file compiles only if they are
//! all reachable there. Run on the
//! memory store, on a SQLite file with the feature `sqlite`, and on Postgres with the feature
//! `postgres` (and a server: `LEASEQ_PG_URL`).
//!
//! The schedule's wall clock is the test's own (no tick waits for real time); the retries'
//! backoff is a few milliseconds of real time, and nothing here is judged by time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_test_kit::core_queue::quick_retries as config;
use leaseq_test_kit::runtime::spawned;
use leaseq_tokio::{
    shutdown_signal, CatchUp, CronCalendar, DeadFilter, Envelope, ErrorChain, InMemory, Job,
    JobError, JobKind, KindPolicy, LeaseQueue, Page, Pool, PoolReport, Reason, Router, Schedule,
    Scheduler, SchedulerStep, Store, Timestamp, TokioRuntime,
};
use serde::{Deserialize, Serialize};

// The rest of what a service may name, reachable from the adapter too.
#[allow(unused_imports)]
use leaseq_tokio::{
    router, schedule, system_clock, Backoff, BytesCodec, Closing, Codec, CodecError, Config,
    EnvelopeCodec, Interval, ItemKind, PostcardCodec, Push, Stopping, WallClock,
};

#[derive(Serialize, Deserialize)]
struct SendEmail {
    to: String,
}
impl JobKind for SendEmail {
    const KIND: &'static str = "send_email";
}

#[derive(Serialize, Deserialize)]
struct Report {
    tick: u64,
}
impl JobKind for Report {
    const KIND: &'static str = "report";
}

/// 2024-01-01T00:00:00Z, in nanoseconds since the epoch: the schedule's start.
const T0: u64 = 1_704_067_200 * 1_000_000_000;
const SECOND: u64 = 1_000_000_000;

/// What the service saw, to compare across stores.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    /// Ticks pushed and refused as duplicates by the first scheduler's step, and by the
    /// other process's.
    first: (usize, usize),
    other_process: (usize, usize),
    reports: Vec<u64>,
    ok: u64,
    failed: u64,
    permanent: u64,
    dead: Vec<(String, Reason, String)>,
}

/// The service, on any store.
async fn service<S: Store<Envelope, Runtime = TokioRuntime>>(
    queue: LeaseQueue<Envelope, S>,
) -> Seen {
    for to in ["ann@example.com", "bob@example.com", "no address"] {
        let email = Envelope::new(&SendEmail { to: to.into() }).unwrap();
        queue.push(email).await.unwrap();
    }

    // Every 2 s, on the test's wall clock; missed ticks all run. Down from T0 until T0 + 5 s:
    // the ticks at 2 s and 4 s are due.
    let clock = Arc::new(AtomicU64::new(T0 + 5 * SECOND));
    let every_2s = || {
        let cron = CronCalendar::new("*/2 * * * * *", "UTC").unwrap();
        let limit = std::num::NonZeroU32::new(10).unwrap();
        Schedule::new("report", cron)
            .unwrap()
            .with_catch_up(CatchUp::All { limit })
    };
    let read = |clock: &Arc<AtomicU64>| {
        let clock = clock.clone();
        move || Timestamp::from_nanos(clock.load(Ordering::Acquire))
    };
    let report = |tick: Timestamp| {
        let job = Report {
            tick: (tick.as_nanos() - T0) / SECOND,
        };
        Envelope::new(&job).unwrap()
    };
    let mut scheduler = Scheduler::new(every_2s())
        .with_clock(read(&clock))
        .starting_at(Timestamp::from_nanos(T0));
    let first = scheduler.run_once(&queue, report).await.unwrap();
    // Another process on the same schedule and queue resumes from the cursor the first one
    // stored: nothing is due again, nothing pushed twice.
    let mut other = Scheduler::new(every_2s())
        .with_clock(read(&clock))
        .starting_at(Timestamp::from_nanos(T0));
    let other_process = other.run_once(&queue, report).await.unwrap();

    let reports = Arc::new(Mutex::new(Vec::new()));
    let handled = reports.clone();
    let router = Router::new()
        .route::<SendEmail, _>(|job: Job<SendEmail>| async move {
            if !job.item.to.contains('@') {
                return Err(JobError::permanent(format!(
                    "not an address: {}",
                    job.item.to
                )));
            }
            if job.item.to.starts_with("bob") && job.attempt == 1 {
                return Err(JobError::retry("smtp: 421 try again later"));
            }
            Ok(())
        })
        .route_with::<Report, _>(
            KindPolicy::new().with_max_attempts(2),
            move |job: Job<Report>| {
                let handled = handled.clone();
                async move {
                    handled.lock().unwrap().push(job.item.tick);
                    Ok(())
                }
            },
        );
    let pool = Pool::builder(queue.clone()).workers(4).spawn_router(router);
    queue.wait_empty().await;
    // The deploy's signal, here at once (`until_sigterm` below is the real one).
    let report = pool
        .shutdown_on(std::future::ready(()), Duration::from_secs(10))
        .await;
    assert!(report.to_string().starts_with("handled 6"), "{report}");
    let mut reports = reports.lock().unwrap().clone();
    reports.sort_unstable();

    let dead = queue.dead_letters(Page::first(10)).await.unwrap();
    let dead = dead
        .iter()
        .map(|d| {
            let kind = d.item.as_ref().ok().and_then(Envelope::kind).unwrap_or("?");
            let error = d.last_error.clone().unwrap_or_default();
            (kind.to_string(), d.reason, error)
        })
        .collect();
    let purged = queue
        .purge_dead_matching(DeadFilter::all().kind(SendEmail::KIND))
        .await
        .unwrap();
    assert_eq!(purged, 1);
    queue.close().await.unwrap();
    let s = &report.stats;
    let counts = |step: SchedulerStep| (step.pushed, step.duplicates);
    Seen {
        first: counts(first),
        other_process: counts(other_process),
        reports,
        ok: s.ok,
        failed: s.failed,
        permanent: s.permanent,
        dead,
    }
}

/// The deploy path as a service writes it: compiled, not run (it waits for a real SIGTERM).
#[allow(dead_code)]
async fn until_sigterm<S: Store<Envelope, Runtime = TokioRuntime>>(
    pool: Pool<Envelope, S>,
) -> PoolReport {
    pool.shutdown_on(shutdown_signal(), Duration::from_secs(10))
        .await
}

/// An open error as an operator reads it, with its causes.
#[allow(dead_code)]
fn explain(e: &(dyn std::error::Error + 'static)) -> String {
    ErrorChain(e).to_string()
}

fn expected() -> Seen {
    Seen {
        first: (2, 0),
        other_process: (0, 0),
        reports: vec![2, 4],
        ok: 4,
        failed: 1,
        permanent: 1,
        dead: vec![(
            "send_email".to_string(),
            Reason::Rejected,
            "not an address: no address".to_string(),
        )],
    }
}

#[test]
fn a_job_service_on_the_memory_store() {
    let queue = LeaseQueue::builder(config()).name("jobs");
    let seen = spawned(async { service(queue.open(InMemory).await.unwrap()).await });
    assert_eq!(seen, expected());
}

#[cfg(feature = "sqlite")]
#[test]
fn a_job_service_on_a_sqlite_file() {
    let path = leaseq_test_kit::sqlite::temp("job-service");
    let queue = LeaseQueue::builder(config())
        .name("jobs")
        .codec(EnvelopeCodec);
    let file = leaseq_sqlite::Sqlite::file(&path);
    let seen = spawned(async { service(queue.open(file).await.unwrap()).await });
    assert_eq!(seen, expected());
    leaseq_test_kit::sqlite::remove(&path);
}

#[cfg(feature = "postgres")]
#[test]
fn a_job_service_on_postgres() {
    // The server (`LEASEQ_PG_URL`, else this machine's), or SKIPPED (a failure with
    // `LEASEQ_PG_REQUIRED=1`).
    let Some(url) = leaseq_test_kit::pg::server() else {
        return;
    };
    let name = leaseq_test_kit::pg::unique("job-service");
    let queue = LeaseQueue::builder(config())
        .name(name)
        .codec(EnvelopeCodec);
    let server = leaseq_postgres::Postgres::url(&url);
    let seen = spawned(async { service(queue.open(server).await.unwrap()).await });
    assert_eq!(seen, expected());
}
