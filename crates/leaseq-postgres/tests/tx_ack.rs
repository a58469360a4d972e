//! Acking inside the caller's own transaction (`PgStore::ack_in`): the work's result and
//! the ack commit together, or neither does; a stale delivery is refused, typed.

use leaseq_test_kit::pg as common;

use common::*;

use std::time::Duration;

use leaseq_async::{Acked, Config, MessageId, ReceiptError, ReceiveError};
use leaseq_postgres::{PgDelivery, PgQueue, TxAckError};
use tokio_postgres::Client;

async fn process_with(url: &str, queue: &str, visibility: Duration) -> PgQueue<Vec<u8>> {
    common::process(url, queue, Config::new(visibility)).await
}

/// A results table of the test's own (the user's table in real life).
async fn results_table(db: &Client, queue: &str) -> String {
    let table = format!("\"{SCHEMA}\".\"results-{queue}\"");
    db.batch_execute(&format!(
        "CREATE TABLE {table} (id bigint PRIMARY KEY, result bytea NOT NULL)"
    ))
    .await
    .expect("create results table");
    table
}

/// The work's result, written in the caller's transaction `tx`.
async fn write_result(tx: &tokio_postgres::Transaction<'_>, table: &str, id: MessageId) {
    tx.execute(
        &format!("INSERT INTO {table} (id, result) VALUES ($1, $2)"),
        &[&(id.get() as i64), &b"done".as_slice()],
    )
    .await
    .expect("write result");
}

async fn drop_table(db: &Client, table: &str) {
    db.batch_execute(&format!("DROP TABLE {table}"))
        .await
        .expect("drop results table");
}

async fn results(db: &Client, table: &str, id: MessageId) -> i64 {
    db.query_one(
        &format!("SELECT count(*) FROM {table} WHERE id = $1"),
        &[&(id.get() as i64)],
    )
    .await
    .expect("count results")
    .get(0)
}

/// `(state, lease, attempts)` of the item's row, `None` once it is gone.
async fn item(db: &Client, id: MessageId) -> Option<(i16, i64, i32)> {
    db.query_opt(
        &format!("SELECT state, lease, attempts FROM {SCHEMA}.items WHERE id = $1"),
        &[&(id.get() as i64)],
    )
    .await
    .expect("read item")
    .map(|r| (r.get(0), r.get(1), r.get(2)))
}

/// One item of `queue` pushed and leased, and a results table beside it: a client that
/// watches (and made the table), the client whose transaction settles the delivery, the
/// table's name, the item's id and its delivery.
async fn leased(
    url: &str,
    q: &PgQueue<Vec<u8>>,
    queue: &str,
) -> (Client, Client, String, MessageId, PgDelivery<Vec<u8>>) {
    let watcher = sql(url).await;
    let db = sql(url).await;
    let table = results_table(&watcher, queue).await;
    let id = q.push(b"work".to_vec()).await.expect("push");
    let d = receive(q).await;
    (watcher, db, table, id, d)
}

#[test]
fn commit_removes_the_item_with_the_result_written() {
    common::with_server(|url| async move {
        let name = common::unique("tx-commit");
        let q = process_with(&url, &name, Duration::from_secs(30)).await;
        let (watcher, mut db, table, id, d) = leased(&url, &q, &name).await;

        let tx = db.transaction().await.expect("begin");
        write_result(&tx, &table, id).await;
        assert_eq!(
            q.store().ack_in(&tx, d).await.expect("ack_in"),
            Acked::OnTime
        );
        // Not committed yet: other sessions still see the item leased and no result.
        assert_eq!(item(&watcher, id).await, Some((1, 1, 1)));
        assert_eq!(results(&watcher, &table, id).await, 0);
        tx.commit().await.expect("commit");

        assert_eq!(item(&watcher, id).await, None, "acked: the item is gone");
        assert_eq!(
            results(&watcher, &table, id).await,
            1,
            "and the result is there"
        );
        assert!(matches!(
            q.receive_timeout(Duration::from_millis(300)).await,
            Err(ReceiveError::Timeout)
        ));
        assert_eq!(q.stats().acked, 1);
        drop_table(&watcher, &table).await;
    });
}

#[test]
fn rollback_leaves_the_item_leased_until_it_comes_back() {
    common::with_server(|url| async move {
        let name = common::unique("tx-rollback");
        let vis = Duration::from_millis(400);
        let q = process_with(&url, &name, vis).await;
        let (watcher, mut db, table, id, d) = leased(&url, &q, &name).await;

        let tx = db.transaction().await.expect("begin");
        write_result(&tx, &table, id).await;
        q.store().ack_in(&tx, d).await.expect("ack_in");
        tx.rollback().await.expect("rollback");

        assert_eq!(item(&watcher, id).await, Some((1, 1, 1)), "still leased");
        assert_eq!(results(&watcher, &table, id).await, 0);
        let again = receive(&q).await;
        assert_eq!((again.id(), again.attempt()), (id, 2), "redelivered");
        let s = q.stats();
        assert_eq!(
            (s.lease_expired, s.nacks),
            (1, 0),
            "back because its lease ran out, not handed back by the rollback"
        );
        assert_eq!(results(&watcher, &table, id).await, 0, "no result row");
        assert!(again.ack().await.is_ok());
        drop_table(&watcher, &table).await;
    });
}

#[test]
fn stale_delivery_is_refused_and_changes_nothing() {
    common::with_server(|url| async move {
        let name = common::unique("tx-stale");
        let a = process_with(&url, &name, Duration::from_millis(300)).await;
        let b = process_with(&url, &name, Duration::from_secs(60)).await;
        let mut db = sql(&url).await;
        let id = a.push(b"work".to_vec()).await.expect("push");
        let stale = receive(&a).await;
        let fresh = receive(&b).await; // after A's lease ran out and the rescuer ran
        assert_eq!((fresh.id(), fresh.attempt()), (id, 2));

        let tx = db.transaction().await.expect("begin");
        match a.store().ack_in(&tx, stale).await {
            Err(TxAckError::Stale(ReceiptError::Redelivered(got))) => assert_eq!(got, id),
            other => panic!("expected a stale refusal, got {other:?}"),
        }
        tx.commit().await.expect("the transaction is still usable");
        assert_eq!(item(&db, id).await, Some((1, 2, 2)), "B's lease untouched");

        // A delivery released already has no lease left to ack.
        b.push(b"other".to_vec()).await.expect("push");
        let mut released = receive(&b).await;
        released.extend(Duration::ZERO).await.expect("release");
        let tx = db.transaction().await.expect("begin");
        let r = b.store().ack_in(&tx, released).await;
        assert!(
            matches!(r, Err(TxAckError::Stale(ReceiptError::Released(_)))),
            "{r:?}"
        );
        tx.rollback().await.expect("rollback");

        let tx = db.transaction().await.expect("begin");
        assert_eq!(
            b.store().ack_in(&tx, fresh).await.expect("ack_in"),
            Acked::OnTime
        );
        tx.commit().await.expect("commit");
        assert_eq!(item(&db, id).await, None);
    });
}
