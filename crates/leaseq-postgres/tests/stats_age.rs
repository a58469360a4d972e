//! `stats()` on Postgres is never older than `Options::stats_max_age` (plus a rescue
//! period) while the database answers: the driver counts the rows again by itself, with
//! nobody reading the stats, and `PgStore::stats_age` says how old the counts are.

use leaseq_test_kit::pg as common;

use std::time::{Duration, Instant};

use leaseq_async::Config;
use leaseq_postgres::{BytesCodec, Options, PgQueue, Postgres};

async fn open(url: &str, queue: &str, options: Options) -> PgQueue<Vec<u8>> {
    leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(Config::new(Duration::from_secs(30)))
        .name(queue.to_string())
        .codec(BytesCodec)
        .open(Postgres::url(url).options(options))
        .await
        .expect("open")
}

/// Waits (at most `common::PATIENCE`) until `q`'s row counts were made after `since`.
async fn counted_after(q: &PgQueue<Vec<u8>>, since: Instant) {
    let fresh = |age: Duration| age < since.elapsed();
    while !q.store().stats_age().is_some_and(fresh) {
        assert!(
            since.elapsed() < common::PATIENCE,
            "no count since; age {:?}, last error {:?}",
            q.store().stats_age(),
            q.store().last_error()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[test]
fn the_driver_recounts_stale_stats_with_nobody_reading_them() {
    common::with_server(|url| async move {
        let queue = common::unique("cli-stats-age");
        // Counts for a reader at most once an hour: only the age bound recounts here.
        let a = open(
            &url,
            &queue,
            common::options()
                .stats_every(Duration::from_secs(3600))
                .stats_max_age(Some(Duration::from_millis(300))),
        )
        .await;
        // The first count (at the driver's first tick), then a count that is only the
        // bound's: no reader asked for it.
        counted_after(&a, Instant::now()).await;
        assert_eq!(a.stats().live(), 0);

        // Another process pushes three items; `a` is not asked to count.
        let b = open(&url, &queue, common::options().stats_max_age(None)).await;
        for i in 0..3u8 {
            b.push(vec![i]).await.expect("push");
        }
        b.close().await.expect("close");
        let pushed = Instant::now();
        counted_after(&a, pushed).await;
        let s = a.stats();
        assert_eq!((s.ready, s.delayed, s.in_flight), (3, 0, 0));
        let age = a.store().stats_age().expect("counted");
        assert!(age < pushed.elapsed(), "{age:?}");
        a.close().await.expect("close");
    });
}

#[test]
fn the_bound_is_a_setting_with_a_default() {
    assert_eq!(
        Options::new().stats_max_age,
        Some(Duration::from_secs(10)),
        "the documented default"
    );
    assert_eq!(Options::new().stats_max_age(None).stats_max_age, None);
}
