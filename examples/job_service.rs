//! A job service, as the README's quick start: two kinds of job through the router (emails,
//! one retried, one that fails for good; and a report pushed by a cron schedule every 2 s),
//! stopped by SIGTERM / Ctrl-C, or by itself after a few seconds. Nothing of leaseq but
//! `leaseq-tokio` (and, for a durable queue, one store crate).
//!
//! ```sh
//! cargo run --release --example job_service                  # in memory, stops after 5 s
//! cargo run --release --example job_service -- --seconds 30
//! cargo run --release --example job_service --features sqlite -- --sqlite jobs.db
//! ```
//!
//! The service is one function, generic over the store: the SQLite run differs only in the
//! line that opens the queue (`.codec(EnvelopeCodec)`, the codec of a router's queue), as a
//! Postgres one would (`.open(leaseq_postgres::Postgres::url(url))`).

use std::error::Error;
use std::time::Duration;

use futures::future::{select, Either};
use leaseq_tokio::{
    shutdown_signal, Backoff, Config, CronCalendar, Envelope, InMemory, Job, JobError, JobKind,
    KindPolicy, LeaseQueue, Page, Pool, Router, Schedule, Scheduler, Store, TokioRuntime,
};
use serde::{Deserialize, Serialize};

type Result<T, E = Box<dyn Error + Send + Sync>> = std::result::Result<T, E>;

/// Send an email.
#[derive(Serialize, Deserialize)]
struct SendEmail {
    to: String,
}
impl JobKind for SendEmail {
    const KIND: &'static str = "send_email";
}

/// The report of one tick of the schedule (seconds since the UNIX epoch).
#[derive(Serialize, Deserialize)]
struct Report {
    tick: u64,
}
impl JobKind for Report {
    const KIND: &'static str = "report";
}

#[tokio::main]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |name: &str| {
        let at = args.iter().position(|a| a == name)?;
        args.get(at + 1).cloned()
    };
    let seconds = match arg("--seconds") {
        Some(s) => s.parse()?,
        None => 5,
    };
    // Failed jobs come back after 0.2 s, 0.4 s, ... (at most 2 s); 3 attempts each.
    let config = Config::new(Duration::from_secs(30))
        .with_max_attempts(3)
        .with_backoff(Backoff::exponential(
            Duration::from_millis(200),
            Duration::from_secs(2),
        ));
    let builder = LeaseQueue::builder(config).name("jobs");
    #[cfg(feature = "sqlite")]
    if let Some(path) = arg("--sqlite") {
        use leaseq_tokio::EnvelopeCodec;
        let file = leaseq_sqlite::Sqlite::file(&path);
        let queue = builder.codec(EnvelopeCodec).open(file).await?;
        return serve(queue, seconds).await;
    }
    if arg("--sqlite").is_some() {
        return Err("--sqlite needs `--features sqlite`".into());
    }
    let queue = builder.open(InMemory).await?;
    serve(queue, seconds).await
}

/// The service, on any store: pushes three emails, runs a report every 2 s, and handles
/// both kinds until SIGTERM / Ctrl-C or `seconds` have passed.
async fn serve<S: Store<Envelope, Runtime = TokioRuntime>>(
    queue: LeaseQueue<Envelope, S>,
    seconds: u64,
) -> Result<()> {
    for to in ["ann@example.com", "bob@example.com", "no address"] {
        queue
            .push(Envelope::new(&SendEmail { to: to.into() })?)
            .await?;
    }
    // Every 2 s (six fields: seconds first), each tick pushed 1 s ahead under its unique
    // key, so that processes sharing the queue push it once.
    let every_2s = Schedule::new("report", CronCalendar::new("*/2 * * * * *", "UTC")?)?
        .with_lead(Duration::from_secs(1));
    let report = |tick: leaseq_tokio::Timestamp| {
        let job = Report {
            tick: tick.as_nanos() / 1_000_000_000,
        };
        Envelope::new(&job).expect("a report's args are a number")
    };
    let scheduler = tokio::spawn(Scheduler::new(every_2s).run(queue.clone(), report));

    let router = Router::new()
        .route::<SendEmail, _>(|job: Job<SendEmail>| async move {
            if !job.item.to.contains('@') {
                // Dead-lettered at once, with this as its last error.
                return Err(JobError::permanent(format!(
                    "not an address: {}",
                    job.item.to
                )));
            }
            if job.item.to.starts_with("bob") && job.attempt == 1 {
                // Retried after the backoff (so would any error returned with `?`).
                return Err(JobError::retry("smtp: 421 try again later"));
            }
            println!("email to {} sent (attempt {})", job.item.to, job.attempt);
            Ok(())
        })
        .route_with::<Report, _>(
            KindPolicy::new().with_timeout(Duration::from_secs(10)),
            |job: Job<Report>| async move {
                let t = job.item.tick % 86_400;
                let (h, m, s) = (t / 3600, t / 60 % 60, t % 60);
                println!("report for {h:02}:{m:02}:{s:02} UTC");
                Ok(())
            },
        );
    let pool = Pool::builder(queue.clone()).workers(4).spawn_router(router);
    println!("running for {seconds} s (SIGTERM or Ctrl-C stops it sooner)");

    let timer = tokio::time::sleep(Duration::from_secs(seconds));
    let stop = async {
        match select(std::pin::pin!(shutdown_signal()), std::pin::pin!(timer)).await {
            Either::Left(_) => println!("stop signal: shutting down"),
            Either::Right(_) => println!("{seconds} s passed: shutting down"),
        }
    };
    let report = pool.shutdown_on(stop, Duration::from_secs(10)).await;
    scheduler.abort();
    println!("{report}");
    for dead in queue.dead_letters(Page::first(10)).await? {
        let kind = dead
            .item
            .as_ref()
            .ok()
            .and_then(Envelope::kind)
            .unwrap_or("?");
        let error = dead.last_error.as_deref().unwrap_or("-");
        println!("dead letter {}: {kind}, {}: {error}", dead.id, dead.reason);
    }
    // A durable store commits what is in flight (put-backs included) before this returns.
    queue.close().await?;
    Ok(())
}
