//! The slot handed over at the ack's commit (issue 32, `handover.rs`): once a queue limit
//! held this store's claims back, an ack claims, in its own transaction, what this process
//! waits for (here a store's `prefetch` of 1, which asks for one lease whatever the claim
//! board holds), so the slot it frees is leased again at its commit, never seen free in
//! between (without the handover it waited for the next receive's claim). A lost commit's
//! reply leaves that lease unhanded (it runs out, its attempt counted) and the ack's
//! outcome unknown; a closed store claims nothing with its acks; a lease claimed with an
//! ack and never taken goes back uncounted.

use leaseq_test_kit::pg as common;

#[path = "faults/proxy.rs"]
mod proxy;

use std::sync::Arc;
use std::time::Duration;

use leaseq_async::Config;
use leaseq_core::LimitScope;
use leaseq_postgres::{BytesCodec, PgQueue, Postgres};

/// The queue's rows: `(payload's first byte, state, attempts)`, by id.
async fn rows(url: &str, queue: &str) -> Vec<(u8, i16, i32)> {
    let db = common::sql(url).await;
    let sql = format!(
        "SELECT payload, state, attempts FROM {}.items WHERE queue = $1 ORDER BY id",
        common::SCHEMA.name()
    );
    db.query(&sql, &[&queue])
        .await
        .expect("rows")
        .iter()
        .map(|r| (r.get::<_, Vec<u8>>(0)[0], r.get(1), r.get(2)))
        .collect()
}

/// A store of queue `name` with a prefetch of one lease, a limit of 1 set and the items
/// `0..n` pushed; optionally through `proxy`. Its limit has not held a claim back yet.
async fn limited(
    url: &str,
    name: &str,
    visibility: Duration,
    n: u8,
    proxy: Option<&proxy::Proxy>,
) -> PgQueue<Vec<u8>> {
    let direct: tokio_postgres::Config = url.parse().expect("url");
    let config = match proxy {
        Some(p) => p.config(&direct),
        None => direct,
    };
    let q = leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(Config::new(visibility))
        .name(name.to_string())
        .codec(BytesCodec)
        .open(Postgres::config(config).options(common::options().prefetch(1)))
        .await
        .expect("open");
    q.set_limit(LimitScope::Queue, Some(1))
        .await
        .expect("limit");
    for i in 0..n {
        q.push(vec![i]).await.expect("push");
    }
    q
}

#[test]
fn an_ack_leases_the_slot_it_frees_in_its_own_transaction() {
    common::with_server(|url| async move {
        let name = common::unique("handover");
        let q = limited(&url, &name, Duration::from_secs(30), 4, None).await;
        // The first receive's claim asks one more for the prefetch: the limit holds it back.
        let mut held = common::receive(&q).await;
        assert_eq!(held.item(), &[0]);
        for next in 1..4u8 {
            held.ack().await.expect("ack");
            // Answered once the ack committed: the next item is leased already, by the
            // ack's own transaction (no receive waited, the claimer claimed nothing).
            let now = rows(&url, &name).await;
            let leased: Vec<u8> = now.iter().filter(|r| r.1 == 1).map(|r| r.0).collect();
            assert_eq!(leased, [next], "leased at the ack's commit: {now:?}");
            held = common::receive(&q).await;
            assert_eq!(held.item(), &[next]);
            assert_eq!(held.attempt(), 1);
        }
        held.ack().await.expect("ack");
        assert!(rows(&url, &name).await.is_empty());
        let stats = q.stats();
        assert_eq!((stats.acked, stats.delivered), (4, 4), "{stats:?}");
    });
}

#[test]
fn a_closed_store_claims_nothing_with_its_acks_and_a_lease_nobody_took_goes_back_uncounted() {
    common::with_server(|url| async move {
        let name = common::unique("handover-closed");
        let q = limited(&url, &name, Duration::from_secs(30), 3, None).await;
        let a = common::receive(&q).await;
        a.ack().await.expect("ack");
        // Item 1 was leased by that ack, ahead: this receive takes it without a claim.
        let b = common::receive(&q).await;
        assert_eq!(b.item(), &[1]);
        q.close().await.expect("close");
        // A closed store's ack claims nothing: item 2 stays waiting.
        b.ack().await.expect("ack");
        assert_eq!(rows(&url, &name).await, [(2, 0, 0)]);
        // Another store: its ack leases item 3 ahead, then it closes: item 3 goes back,
        // its attempt not counted.
        let other = limited(&url, &name, Duration::from_secs(30), 0, None).await;
        let c = common::receive(&other).await;
        assert_eq!(c.item(), &[2]);
        other.push(vec![3]).await.expect("push");
        c.ack().await.expect("ack");
        assert_eq!(rows(&url, &name).await, [(3, 1, 1)]);
        other.close().await.expect("close");
        assert_eq!(rows(&url, &name).await, [(3, 0, 0)]);
    });
}

#[test]
fn an_ack_whose_commit_reply_was_lost_hands_out_nothing_and_is_outcome_unknown() {
    common::with_server(|url| async move {
        let direct: tokio_postgres::Config = url.parse().expect("url");
        let proxy = Arc::new(
            proxy::Proxy::start(
                &proxy::Proxy::upstream(&direct),
                1,
                0,
                1,
                Duration::from_millis(1),
            )
            .await,
        );
        let name = common::unique("handover-lost");
        let q = limited(&url, &name, Duration::from_secs(2), 2, Some(&proxy)).await;
        let a = common::receive(&q).await;
        // The bare ack's transaction (with its claim of item 1): its `COMMIT`'s reply lost.
        proxy.lose_commit_after("i.node IS NULL AND");
        let r = tokio::time::timeout(common::PATIENCE, a.ack())
            .await
            .expect("answered");
        assert!(!proxy.target_pending(), "the ack ran in a transaction");
        assert!(r.as_ref().is_err_and(|e| e.is_outcome_unknown()), "{r:?}");
        // Committed: item 1 leased, its slot held, but not handed out; it comes back once
        // its lease runs out, the attempt counted.
        assert_eq!(rows(&url, &name).await, [(1, 1, 1)]);
        if let Ok(d) = q.receive_timeout(Duration::from_millis(500)).await {
            panic!("{:?} handed out", d.item());
        }
        let b = common::receive(&q).await;
        assert_eq!((b.item().as_slice(), b.attempt()), (&[1u8][..], 2));
        b.ack().await.expect("ack");
    });
}
