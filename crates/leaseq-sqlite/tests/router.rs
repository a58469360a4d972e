//! The typed job router on a SQLite file, on real time: mixed kinds where one kind's
//! handler panics on every call and another's hangs forever, the others all handled; an
//! unknown kind and bad args dead-lettered at once. The dead letters are on disk after a
//! reopen, each row's payload the envelope's bytes, its kind first (what the `leaseq` CLI
//! reads with `kind_of`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use leaseq_async::router::{kind_of, Envelope, EnvelopeCodec, JobKind, Router};
use leaseq_async::{Backoff, Config, Job, KindPolicy, Page, Pool, Reason};
use leaseq_smol::SmolRuntime;
use leaseq_sqlite::{Options, Sqlite, SqliteQueue};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}
impl JobKind for Email {
    const KIND: &'static str = "email";
}

#[derive(Serialize, Deserialize)]
struct Resize(u32);
impl JobKind for Resize {
    const KIND: &'static str = "resize";
}

#[derive(Serialize, Deserialize)]
struct Explode(u32);
impl JobKind for Explode {
    const KIND: &'static str = "explode";
}

#[derive(Serialize, Deserialize)]
struct Hang(u32);
impl JobKind for Hang {
    const KIND: &'static str = "hang";
}

const PER_KIND: u32 = 5;

fn temp(name: &str) -> PathBuf {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    std::env::temp_dir().join(format!("leaseq-{name}-{}-{n}.db", std::process::id()))
}

/// Removes a queue file and its sidecars (WAL, shared memory, owner lock).
fn remove_all(p: &Path) {
    for suffix in ["", "-wal", "-shm", "-lock"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", p.display()));
    }
}

fn open(path: &Path) -> SqliteQueue<Envelope, SmolRuntime, EnvelopeCodec> {
    let config = Config::new(Duration::from_secs(30))
        .with_max_attempts(5)
        .with_backoff(Backoff::Fixed(Duration::from_millis(20)))
        .without_jitter();
    smol::block_on(
        leaseq_async::LeaseQueue::builder(config)
            .runtime(SmolRuntime::global())
            .codec(EnvelopeCodec)
            .open(Sqlite::file(path).options(Options::default())),
    )
    .unwrap()
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
        q.push(Envelope::from_parts("fax", b"{}").unwrap())
            .await
            .unwrap();
        q.push(Envelope::from_parts("email", b"{\"to\":7}").unwrap())
            .await
            .unwrap();

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
            })
            .route_with::<Explode, _>(
                KindPolicy::new().with_max_attempts(2),
                |job: Job<Explode>| async move { panic!("explode {}", job.item.0) },
            )
            .route_with::<Hang, _>(
                KindPolicy::new()
                    .with_max_attempts(2)
                    .with_timeout(Duration::from_millis(300)),
                |_job: Job<Hang>| std::future::pending(),
            );
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
        let mut seen: Vec<(String, Reason, u32)> = dead
            .iter()
            .map(|d| {
                let e = d.item.as_ref().expect("decodes");
                (e.kind().unwrap().to_string(), d.reason, d.attempts)
            })
            .collect();
        seen.sort_by(|a, b| a.0.cmp(&b.0));
        let mut want = vec![
            ("email".to_string(), Reason::Rejected, 1),
            ("fax".to_string(), Reason::Rejected, 1),
        ];
        want.extend((0..PER_KIND).map(|_| ("explode".to_string(), Reason::Panicked, 2)));
        want.extend((0..PER_KIND).map(|_| ("hang".to_string(), Reason::TimedOut, 2)));
        want.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(seen, want);
        let fax = dead
            .iter()
            .find(|d| d.item.as_ref().unwrap().kind() == Some("fax"))
            .unwrap();
        assert_eq!(
            fax.last_error.as_deref(),
            Some("unknown job kind `fax`: no handler registered")
        );
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
    remove_all(&path);
}
