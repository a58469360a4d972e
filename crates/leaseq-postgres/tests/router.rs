//! The typed job router on Postgres, on real time: mixed kinds where one kind's handler
//! panics on every call and another's hangs forever, the others all handled; an unknown
//! kind and bad args dead-lettered at once; each dead row's payload the envelope's bytes,
//! its kind first (what the `leaseq` CLI reads with `kind_of`, and SQL with
//! `substr(payload, 2, get_byte(payload, 0))`).

use leaseq_test_kit::pg as common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use leaseq_async::router::{Envelope, Router};
use leaseq_async::{Backoff, Config, Job, Page};
use leaseq_postgres::PgQueue;
use leaseq_test_kit::jobs::{self, Email, Explode, Hang};

const PER_KIND: u32 = 5;

async fn queue(url: &str, name: &str) -> PgQueue<Envelope> {
    let config = Config::new(Duration::from_secs(30))
        .with_max_attempts(5)
        .with_backoff(Backoff::Fixed(Duration::from_millis(20)))
        .without_jitter();
    common::open_envelopes(url, name, config).await
}

#[test]
fn mixed_kinds_on_the_server_a_panicking_and_a_hanging_kind_starve_none() {
    common::with_server(|url| async move {
        let name = unique("router");
        let q = queue(&url, &name).await;
        for n in 0..PER_KIND {
            q.push(Envelope::new(&Hang(n)).unwrap()).await.unwrap();
            q.push(Envelope::new(&Explode(n)).unwrap()).await.unwrap();
            let to = format!("user{n}@example.com");
            q.push(Envelope::new(&Email { to }).unwrap()).await.unwrap();
        }
        for e in jobs::unroutable() {
            q.push(e).await.unwrap();
        }

        let emails = Arc::new(AtomicU32::new(0));
        let router = Router::new().route::<Email, _>({
            let emails = emails.clone();
            move |_job: Job<Email>| {
                emails.fetch_add(1, Ordering::Relaxed);
                async { Ok(()) }
            }
        });
        let router = jobs::with_failing_kinds(router, 2, Duration::from_millis(300));
        // Two workers for three kinds.
        let pool = leaseq_tokio::Pool::builder(q.clone())
            .workers(2)
            .spawn_router(router);
        tokio::time::timeout(Duration::from_secs(60), q.wait_empty())
            .await
            .unwrap_or_else(|_| panic!("not done in 60 s: {:?}", q.stats()));
        let report = pool.shutdown(Duration::from_secs(5)).await;
        let s = &report.stats;
        assert_eq!(emails.load(Ordering::Relaxed), PER_KIND);
        assert_eq!(s.ok, u64::from(PER_KIND), "{s:?}");
        assert_eq!((s.panicked, s.timed_out, s.permanent), (10, 10, 2), "{s:?}");

        let dead = q
            .dead_letters(Page::first(100))
            .await
            .expect("dead letters");
        let want = jobs::dead_kinds_expected(PER_KIND, 2);
        assert_eq!(jobs::dead_kinds(&dead), want);
        jobs::assert_fax_unknown(&dead);

        // The kind, read in SQL from the stored bytes.
        let client = sql(&url).await;
        let rows = client
            .query(
                &format!(
                    "SELECT convert_from(substr(payload, 2, get_byte(payload, 0)), 'UTF8') \
                     FROM {SCHEMA}.items WHERE queue = $1 AND state = 2 ORDER BY 1"
                ),
                &[&name],
            )
            .await
            .expect("select");
        let kinds: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
        let want_kinds: Vec<String> = want.iter().map(|w| w.0.clone()).collect();
        assert_eq!(kinds, want_kinds);
        q.close().await.expect("close");
    });
}
