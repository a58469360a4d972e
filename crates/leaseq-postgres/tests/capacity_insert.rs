//! A bounded queue's batch insert in one statement (`insert_bounded`, issue 32): the bound
//! holds with two processes pushing at once while a consumer takes items, and an insert
//! whose reply was lost is retried without a second row.

use leaseq_test_kit::pg as common;

#[path = "faults/proxy.rs"]
mod proxy;

use std::time::Duration;

use leaseq_async::Config;
use leaseq_postgres::{BytesCodec, Postgres};

use common::{PATIENCE, SCHEMA};

const CAP: usize = 20;

/// Live (waiting and leased) rows of `queue`.
async fn live(db: &tokio_postgres::Client, queue: &str) -> i64 {
    db.query_one(
        &format!("SELECT count(*) FROM {SCHEMA}.items WHERE queue = $1 AND state IN (0, 1)"),
        &[&queue],
    )
    .await
    .expect("count")
    .get(0)
}

#[test]
fn two_processes_pushing_at_once_never_pass_the_bound() {
    common::with_server(|url| async move {
        let name = common::unique("cap-insert");
        let config = Config::new(Duration::from_secs(30)).with_capacity(CAP);
        let a = common::process(&url, &name, config.clone()).await;
        let b = common::process(&url, &name, config).await;
        let db = common::sql(&url).await;
        let push_all = |q: leaseq_postgres::PgQueue<Vec<u8>>, tag: u8| async move {
            for i in 0..60u8 {
                q.push_batch(vec![vec![tag, i], vec![tag, i, 1]])
                    .await
                    .expect("push");
            }
        };
        let pushers = tokio::spawn(futures_join(push_all(a.clone(), 0), push_all(b.clone(), 1)));
        let mut taken = 0;
        let mut most = 0;
        while taken < 240 {
            most = most.max(live(&db, &name).await);
            let d = tokio::time::timeout(PATIENCE, a.receive())
                .await
                .expect("an item")
                .expect("open");
            d.ack().await.expect("ack");
            taken += 1;
        }
        pushers.await.expect("pushers");
        assert!(
            most <= CAP as i64,
            "{most} live rows, over the capacity {CAP}"
        );
        assert_eq!(live(&db, &name).await, 0);
    });
}

/// Both futures to completion.
async fn futures_join(
    x: impl std::future::Future<Output = ()>,
    y: impl std::future::Future<Output = ()>,
) {
    tokio::join!(x, y);
}

#[test]
fn a_bounded_insert_whose_reply_was_lost_makes_one_row() {
    common::with_server(|url| async move {
        let direct: tokio_postgres::Config = url.parse().expect("url");
        let proxy = proxy::Proxy::without_faults(&direct).await;
        let name = common::unique("cap-insert-lost");
        let q = leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(
            Config::new(Duration::from_secs(30)).with_capacity(CAP),
        )
        .name(name.clone())
        .codec(BytesCodec)
        .open(Postgres::config(proxy.config(&direct)).options(common::options()))
        .await
        .expect("open");
        proxy.lose_next_reply("insert_bounded");
        let id = tokio::time::timeout(PATIENCE, q.push(b"x".to_vec()))
            .await
            .expect("answered")
            .expect("committed");
        assert!(!proxy.target_pending(), "the reply was lost");
        let db = common::sql(&url).await;
        assert_eq!(live(&db, &name).await, 1, "one row");
        let d = common::receive(&q).await;
        assert_eq!(d.id(), id);
        d.ack().await.expect("ack");
    });
}
