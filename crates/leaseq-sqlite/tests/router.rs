//! The typed job router on a SQLite file, on real time: mixed kinds where one kind's
//! handler panics on every call and another's hangs forever, the others all handled; an
//! unknown kind and bad args dead-lettered at once. The dead letters are on disk after a
//! reopen, each row's payload the envelope's bytes, its kind first (what the `leaseq` CLI
//! reads with `kind_of`).

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use leaseq_async::router::{kind_of, Envelope, EnvelopeCodec, JobKind, Router};
use leaseq_async::{Backoff, Config, Job, Page, Pool};
use leaseq_smol::SmolRuntime;
use leaseq_sqlite::SqliteQueue;
use leaseq_test_kit::jobs::{self, Email, Explode, Hang};
use leaseq_test_kit::sqlite::{self, remove, temp};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Resize(u32);
impl JobKind for Resize {
    const KIND: &'static str = "resize";
}

const PER_KIND: u32 = 5;

fn open(path: &Path) -> SqliteQueue<Envelope, SmolRuntime, EnvelopeCodec> {
    let config = Config::new(Duration::from_secs(30))
        .with_max_attempts(5)
        .with_backoff(Backoff::Fixed(Duration::from_millis(20)))
        .without_jitter();
    sqlite::open(path, config, EnvelopeCodec)
}

#[test]
fn mixed_kinds_on_a_file_a_panicking_and_a_hanging_kind_starve_none() {
    let path = temp("router");
    smol::block_on(async {
        let q = open(&path);
        for n in 0..PER_KIND {
            q.push(Envelope::new(&Hang(n)).unwrap()).await.unwrap();
            q.push(Envelope::new(&Explode(n)).unwrap()).await.unwrap();
            let to = format!("user{n}@example.com");
            q.push(Envelope::new(&Email { to }).unwrap()).await.unwrap();
            q.push(Envelope::new(&Resize(n)).unwrap()).await.unwrap();
        }
        for e in jobs::unroutable() {
            q.push(e).await.unwrap();
        }

        let handled = Arc::new(AtomicU32::new(0));
        let ok = |handled: &Arc<AtomicU32>| {
            let handled = handled.clone();
            move || {
                handled.fetch_add(1, Ordering::Relaxed);
            }
        };
        let (email_done, resize_done) = (ok(&handled), ok(&handled));
        let router = Router::new()
            .route::<Email, _>(move |_job: Job<Email>| {
                email_done();
                async { Ok(()) }
            })
            .route::<Resize, _>(move |_job: Job<Resize>| {
                resize_done();
                async { Ok(()) }
            });
        let router = jobs::with_failing_kinds(router, 2, Duration::from_millis(300));
        // Two workers for four kinds.
        let pool = Pool::builder(q.clone()).workers(2).spawn_router(router);
        let limit = async {
            smol::Timer::after(Duration::from_secs(60)).await;
            panic!("not done in 60 s: {:?}", q.stats());
        };
        smol::future::or(q.wait_empty(), limit).await;
        let report = pool.shutdown(Duration::from_secs(5)).await;
        let s = &report.stats;
        assert_eq!(handled.load(Ordering::Relaxed), 2 * PER_KIND);
        assert_eq!(s.ok, u64::from(2 * PER_KIND), "{s:?}");
        assert_eq!((s.panicked, s.timed_out, s.permanent), (10, 10, 2), "{s:?}");
        q.close().await.unwrap();
    });

    // After a reopen: the dead letters, each with its kind's reason and attempts.
    smol::block_on(async {
        let q = open(&path);
        let dead = q.dead_letters(Page::first(100)).await.unwrap();
        assert_eq!(
            jobs::dead_kinds(&dead),
            jobs::dead_kinds_expected(PER_KIND, 2)
        );
        jobs::assert_fax_unknown(&dead);
        q.close().await.unwrap();
    });

    // The rows' payloads are the envelopes' bytes: the kind first.
    let db = rusqlite::Connection::open(&path).unwrap();
    let mut rows = db
        .prepare("SELECT payload FROM items WHERE dead = 1")
        .unwrap();
    let kinds: Vec<String> = rows
        .query_map([], |r| r.get::<_, Vec<u8>>(0))
        .unwrap()
        .map(|p| kind_of(&p.unwrap()).unwrap().to_string())
        .collect();
    assert_eq!(kinds.len(), 12);
    assert!(kinds
        .iter()
        .all(|k| ["email", "fax", "explode", "hang"].contains(&k.as_str())));
    drop(rows);
    drop(db);
    remove(&path);
}
