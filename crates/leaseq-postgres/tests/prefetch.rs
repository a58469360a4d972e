//! `Options::prefetch`: leases claimed ahead serve the next receives, never stale, and go
//! back (their attempt not counted) when the queue closes.

use leaseq_test_kit::pg as common;

use std::time::Duration;

use common::*;
use leaseq_async::{Config, Runtime, Store};
use leaseq_postgres::PgQueue;

async fn queue(url: &str, name: &str, visibility: Duration, prefetch: usize) -> PgQueue<Vec<u8>> {
    let options = options().prefetch(prefetch);
    common::open_bytes(url, name.to_string(), Config::new(visibility), options).await
}

#[test]
fn prefetched_leases_serve_receives_and_go_back_on_close() {
    common::with_server(|url| async move {
        let name = unique("prefetch");
        let a = queue(&url, &name, Duration::from_secs(30), 8).await;
        for i in 0..20u8 {
            a.push(vec![i]).await.expect("push");
        }
        // Every item once, in order, through the prefetched leases.
        let mut seen = Vec::new();
        for _ in 0..12 {
            let d = a.receive_timeout(PATIENCE).await.expect("delivery");
            assert_eq!(d.attempt(), 1);
            seen.push(d.item()[0]);
            d.ack().await.expect("ack");
        }
        assert_eq!(seen, (0..12).collect::<Vec<u8>>());
        // Up to 8 more are held ahead by `a`; closing puts them back, attempt not counted.
        a.close();
        let b = queue(&url, &name, Duration::from_secs(30), 0).await;
        let mut rest = Vec::new();
        for _ in 0..8 {
            let d = b.receive_timeout(PATIENCE).await.expect("delivery");
            assert_eq!(
                d.attempt(),
                1,
                "a lease claimed ahead and put back is not an attempt"
            );
            rest.push(d.item()[0]);
            d.ack().await.expect("ack");
        }
        rest.sort();
        assert_eq!(rest, (12..20).collect::<Vec<u8>>());
        assert!(b.try_receive().is_none());
    });
}

#[test]
fn stale_prefetched_leases_are_put_back_not_handed_out() {
    common::with_server(|url| async move {
        let visibility = Duration::from_millis(600);
        let q = queue(&url, &unique("prefetch-stale"), visibility, 4).await;
        for i in 0..5u8 {
            q.push(vec![i]).await.expect("push");
        }
        let first = q.receive_timeout(PATIENCE).await.expect("delivery");
        first.ack().await.expect("ack");
        // The 4 claimed ahead pass half their visibility before the next receive.
        tokio::time::sleep(visibility * 3 / 4).await;
        // Read before the receive: however slow the receive, a lease claimed for it ends
        // past this + visibility; one of the stale four ended before this + visibility / 4.
        let before = Runtime::now(Store::<Vec<u8>>::runtime(&**q.store()));
        let d = q.receive_timeout(PATIENCE).await.expect("delivery");
        assert!(
            d.deadline() >= before.saturating_add(visibility / 2),
            "a stale lease was handed out (deadline {:?}, asked at {before:?})",
            d.deadline()
        );
        d.ack().await.expect("ack");
    });
}

#[test]
fn a_put_back_lease_comes_back_with_the_same_attempt_at_once() {
    common::with_server(|url| async move {
        let q = queue(&url, &unique("put-back"), Duration::from_secs(30), 0).await;
        q.push(vec![7]).await.expect("push");
        let first = q.receive_timeout(PATIENCE).await.expect("delivery");
        assert_eq!(first.attempt(), 1);
        let id = first.id();
        // Taken ahead and never started: back uncounted (a hand-back would count the
        // attempt, and its backoff would keep the item away).
        first.put_back();
        let again = q
            .receive_timeout(Duration::from_secs(5))
            .await
            .expect("the put-back item is visible again at once");
        assert_eq!(again.id(), id);
        assert_eq!(
            again.attempt(),
            1,
            "a lease put back is not an attempt: same attempt number"
        );
        again.ack().await.expect("ack");
        let stats = q.refresh_stats().await.expect("stats");
        assert_eq!(
            (stats.delivered, stats.put_back, stats.acked, stats.nacks),
            (2, 1, 1, 0),
            "both deliveries counted, one put back, none failed"
        );
    });
}
