//! Pushing inside the caller's own transaction (`PgStore::push_in`, `push_batch_in`): the
//! item is seen and delivered only once the transaction commits, never after a rollback;
//! refusals of what needs no round trip (size, priority, key length, time to live) leave
//! the transaction usable; a pool idle on a long poll interval is woken by the commit.
//! Keys and capacities: `tx_limits.rs`; deadpool and sqlx: `tx_clients.rs`.

use leaseq_test_kit::pg as common;

use common::*;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_async::{Config, MessageId, Push};
use leaseq_postgres::{PgQueue, TxPushError};

/// The first id of a transactional push (schema step 6): every store id is below it.
const TX_IDS: u64 = 1 << 62;

async fn open_with(
    url: &str,
    name: &str,
    config: Config,
    options: leaseq_postgres::Options,
) -> PgQueue<Vec<u8>> {
    common::open_bytes(url, name.to_string(), config, options).await
}

/// A fresh queue named after `prefix` (30 s visibility, the tests' options), its name, and
/// a plain client to open transactions on.
async fn queue_and_client(
    url: &str,
    prefix: &str,
) -> (String, PgQueue<Vec<u8>>, tokio_postgres::Client) {
    let (name, q) = fresh_process(url, prefix).await;
    (name, q, sql(url).await)
}

#[test]
fn a_committed_push_is_seen_and_delivered_only_after_the_commit() {
    common::with_server(|url| async move {
        let (name, q, watcher) = queue_and_client(&url, "txp-commit").await;
        let mut db = sql(&url).await;

        let tx = db.transaction().await.expect("begin");
        let id = q
            .store()
            .push_in(&tx, b"job".to_vec(), Push::new())
            .await
            .expect("push_in");
        assert!(id.get() >= TX_IDS, "an id of its own range: {id:?}");
        assert_eq!(
            common::row_count(&watcher, &name).await,
            0,
            "not seen before the commit"
        );
        common::nothing_comes(&q).await;
        tx.commit().await.expect("commit");

        let d = receive(&q).await;
        assert_eq!((d.id(), d.item().as_slice()), (id, &b"job"[..]));
        d.ack().await.expect("ack");
        assert_eq!(q.stats().pushed, 1);
        // A plain push beside it keeps the store's own id range.
        let plain = q.push(b"plain".to_vec()).await.expect("push");
        assert!(plain.get() < TX_IDS);
    });
}

#[test]
fn a_rolled_back_push_is_never_delivered() {
    common::with_server(|url| async move {
        let (name, q, mut db) = queue_and_client(&url, "txp-rollback").await;

        let tx = db.transaction().await.expect("begin");
        q.store()
            .push_in(&tx, b"never".to_vec(), Push::new())
            .await
            .expect("push_in");
        q.store()
            .push_batch_in(&tx, [b"a".to_vec(), b"b".to_vec()], Push::new())
            .await
            .expect("push_batch_in");
        tx.rollback().await.expect("rollback");

        common::nothing_comes(&q).await;
        assert_eq!(common::row_count(&db, &name).await, 0);
        // A dropped transaction rolls back too.
        {
            let tx = db.transaction().await.expect("begin");
            q.store()
                .push_in(&tx, b"dropped".to_vec(), Push::new())
                .await
                .expect("push_in");
        }
        common::nothing_comes(&q).await;
        assert_eq!(common::row_count(&db, &name).await, 0);
    });
}

#[test]
fn a_batch_goes_in_one_statement_in_order_with_its_options() {
    common::with_server(|url| async move {
        let (_, q, mut db) = queue_and_client(&url, "txp-batch").await;

        let tx = db.transaction().await.expect("begin");
        let items: Vec<Vec<u8>> = (0..50_u8).map(|i| vec![i]).collect();
        let ids = q
            .store()
            .push_batch_in(&tx, items.clone(), Push::new())
            .await
            .expect("batch");
        assert_eq!(ids.len(), 50);
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids in order");
        let (store, in_tx) = (q.store(), &tx);
        let push_in =
            move |payload: &[u8], push: Push| store.push_in(in_tx, payload.to_vec(), push);
        let hour = Duration::from_secs(3600);
        let urgent = push_in(b"urgent", Push::new().priority(7))
            .await
            .expect("priority");
        let later = push_in(b"later", Push::new().delay(hour))
            .await
            .expect("delayed");
        let ttl = push_in(b"ttl", Push::new().ttl(hour)).await.expect("ttl");
        tx.commit().await.expect("commit");

        let first = receive(&q).await;
        assert_eq!(first.id(), urgent, "priority 7 first");
        first.ack().await.expect("ack");
        let mut got = Vec::new();
        for _ in 0..50 {
            let d = receive(&q).await;
            got.push(d.id());
            d.ack().await.expect("ack");
        }
        assert_eq!(got, ids, "in push order");
        let d = receive(&q).await;
        assert_eq!(d.id(), ttl);
        assert!(d.expires_at().is_some(), "with its time to live");
        d.ack().await.expect("ack");
        common::nothing_comes(&q).await;
        let row = db
            .query_one(
                &format!(
                    "SELECT visible_at > clock_timestamp() + interval '3500 s'
                     FROM {SCHEMA}.items WHERE id = $1"
                ),
                &[&(later.get() as i64)],
            )
            .await
            .expect("the delayed row");
        assert!(row.get::<_, bool>(0), "delayed by an hour");
    });
}

#[test]
fn refusals_hand_the_item_back_and_leave_the_transaction_usable() {
    common::with_server(|url| async move {
        let name = unique("txp-refuse");
        let options = common::options().max_item_size(16);
        let q = open_with(&url, &name, Config::new(Duration::from_secs(30)), options).await;
        let mut db = sql(&url).await;
        let store = q.store();

        let tx = db.transaction().await.expect("begin");
        match store.push_in(&tx, vec![0; 17], Push::new()).await {
            Err(TxPushError::TooLarge { item, size, max }) => {
                assert_eq!((item.len(), size, max), (17, 17, 16));
            }
            other => panic!("expected TooLarge, got {other:?}"),
        }
        let r = store
            .push_in(&tx, b"x".to_vec(), Push::new().priority(8))
            .await;
        assert!(
            matches!(&r, Err(TxPushError::PriorityOutOfRange { level: 8, .. })),
            "{r:?}"
        );
        let r = store
            .push_in(&tx, b"x".to_vec(), Push::new().key([b'k'; 65]))
            .await;
        assert!(matches!(&r, Err(TxPushError::KeyTooLong { .. })), "{r:?}");
        let expired = Push::new()
            .delay(Duration::from_secs(10))
            .ttl(Duration::from_secs(5));
        let r = store.push_in(&tx, b"x".to_vec(), expired).await;
        assert!(matches!(&r, Err(TxPushError::AlreadyExpired(_))), "{r:?}");
        let e = r.unwrap_err();
        assert!(e.transaction_intact());
        assert_eq!(e.into_item(), b"x".to_vec());

        // A batch stops at its first oversized item: those before it are in.
        let err = store
            .push_batch_in(
                &tx,
                [b"ok".to_vec(), vec![1; 40], b"after".to_vec()],
                Push::new(),
            )
            .await
            .expect_err("stops at the oversized item");
        assert_eq!(err.accepted.len(), 1);
        assert!(matches!(err.error, TxPushError::TooLarge { size: 40, .. }));
        assert_eq!(err.into_items(), vec![vec![1; 40], b"after".to_vec()]);

        let id = store
            .push_in(&tx, b"fine".to_vec(), Push::new())
            .await
            .expect("the transaction still takes pushes");
        tx.commit().await.expect("and commits");
        let mut seen = Vec::new();
        for _ in 0..2 {
            let d = receive(&q).await;
            seen.push(d.item().clone());
            d.ack().await.expect("ack");
        }
        seen.sort();
        assert_eq!(seen, vec![b"fine".to_vec(), b"ok".to_vec()]);
        let _ = id;
        common::nothing_comes(&q).await;

        // A closed queue takes no transactional push either.
        q.close().await.expect("close");
        let tx = db.transaction().await.expect("begin");
        let r = q.store().push_in(&tx, b"x".to_vec(), Push::new()).await;
        assert!(matches!(r, Err(TxPushError::Closed(_))), "{r:?}");
    });
}

/// The commit wakes a pool idle on a poll interval far longer than the test's patience: no
/// poll could have delivered it.
#[test]
fn an_idle_pool_in_another_process_is_woken_by_the_commit() {
    common::with_server(|url| async move {
        let name = unique("txp-wake");
        let long = common::options().poll_interval(Duration::from_secs(600));
        let config = Config::new(Duration::from_secs(30));
        let producer = process(&url, &name, config.clone()).await;
        let workers = open_with(&url, &name, config, long).await;
        let seen: Arc<Mutex<Vec<MessageId>>> = Arc::default();
        let (tx_seen, mut rx_seen) = tokio::sync::mpsc::unbounded_channel();
        let pool = leaseq_tokio::Pool::builder(workers.clone())
            .workers(2)
            .spawn({
                let seen = seen.clone();
                move |job: leaseq_async::Job<Vec<u8>>| {
                    seen.lock().unwrap().push(job.id);
                    let _ = tx_seen.send(job.id);
                    async { Ok(()) }
                }
            });
        // Idle: its fetcher claimed nothing and waits.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut db = sql(&url).await;
        for round in 0..3 {
            let tx = db.transaction().await.expect("begin");
            let id = producer
                .store()
                .push_in(&tx, vec![round], Push::new())
                .await
                .expect("push_in");
            tx.commit().await.expect("commit");
            let got = tokio::time::timeout(PATIENCE, rx_seen.recv())
                .await
                .unwrap_or_else(|_| panic!("round {round}: not delivered within {PATIENCE:?}"));
            assert_eq!(got, Some(id));
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        pool.shutdown(Duration::from_secs(5)).await;
        assert_eq!(seen.lock().unwrap().len(), 3);
    });
}
