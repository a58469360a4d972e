//! Pushing inside the caller's own transaction (`PgStore::push_in`, `push_batch_in`): the
//! item is seen and delivered only once the transaction commits, never after a rollback;
//! refusals (size, priority, key length, time to live, a held key, a full queue) leave
//! the transaction usable; a pool idle on a long poll interval is woken by the commit; the
//! same on deadpool's and sqlx's transactions.

mod common;

use common::*;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_async::{Config, MessageId, Push, ReceiveError};
use leaseq_postgres::{BytesCodec, PgQueue, Postgres, TxPushError};
use tokio_postgres::Client;

/// The first id of a transactional push (schema step 6): every store id is below it.
const TX_IDS: u64 = 1 << 62;

async fn queue(url: &str, name: &str, config: Config) -> PgQueue<Vec<u8>> {
    common::process(url, name, config).await
}

async fn open_with(
    url: &str,
    name: &str,
    config: Config,
    options: leaseq_postgres::Options,
) -> PgQueue<Vec<u8>> {
    leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(config)
        .name(name.to_string())
        .codec(BytesCodec)
        .open(Postgres::url(url).options(options))
        .await
        .expect("open")
}

/// The queue's rows as another session sees them.
async fn rows(db: &Client, queue: &str) -> i64 {
    db.query_one(
        &format!("SELECT count(*) FROM {SCHEMA}.items WHERE queue = $1"),
        &[&queue],
    )
    .await
    .expect("count rows")
    .get(0)
}

async fn nothing_comes(q: &PgQueue<Vec<u8>>) {
    assert!(matches!(
        q.receive_timeout(Duration::from_millis(400)).await,
        Err(ReceiveError::Timeout)
    ));
}

#[test]
fn a_committed_push_is_seen_and_delivered_only_after_the_commit() {
    let Some(url) = server() else { return };
    runtime().block_on(async {
        let name = unique("txp-commit");
        let q = queue(&url, &name, Config::new(Duration::from_secs(30))).await;
        let watcher = sql(&url).await;
        let mut db = sql(&url).await;

        let tx = db.transaction().await.expect("begin");
        let id = q
            .store()
            .push_in(&tx, b"job".to_vec(), Push::new())
            .await
            .expect("push_in");
        assert!(id.get() >= TX_IDS, "an id of its own range: {id:?}");
        assert_eq!(rows(&watcher, &name).await, 0, "not seen before the commit");
        nothing_comes(&q).await;
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
    let Some(url) = server() else { return };
    runtime().block_on(async {
        let name = unique("txp-rollback");
        let q = queue(&url, &name, Config::new(Duration::from_secs(30))).await;
        let mut db = sql(&url).await;

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

        nothing_comes(&q).await;
        assert_eq!(rows(&db, &name).await, 0);
        // A dropped transaction rolls back too.
        {
            let tx = db.transaction().await.expect("begin");
            q.store()
                .push_in(&tx, b"dropped".to_vec(), Push::new())
                .await
                .expect("push_in");
        }
        nothing_comes(&q).await;
        assert_eq!(rows(&db, &name).await, 0);
    });
}

#[test]
fn a_batch_goes_in_one_statement_in_order_with_its_options() {
    let Some(url) = server() else { return };
    runtime().block_on(async {
        let name = unique("txp-batch");
        let q = queue(&url, &name, Config::new(Duration::from_secs(30))).await;
        let mut db = sql(&url).await;

        let tx = db.transaction().await.expect("begin");
        let items: Vec<Vec<u8>> = (0..50_u8).map(|i| vec![i]).collect();
        let ids = q
            .store()
            .push_batch_in(&tx, items.clone(), Push::new())
            .await
            .expect("batch");
        assert_eq!(ids.len(), 50);
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids in order");
        let urgent = q
            .store()
            .push_in(&tx, b"urgent".to_vec(), Push::new().priority(7))
            .await
            .expect("priority");
        let later = q
            .store()
            .push_in(
                &tx,
                b"later".to_vec(),
                Push::new().delay(Duration::from_secs(3600)),
            )
            .await
            .expect("delayed");
        let ttl = q
            .store()
            .push_in(
                &tx,
                b"ttl".to_vec(),
                Push::new().ttl(Duration::from_secs(3600)),
            )
            .await
            .expect("ttl");
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
        nothing_comes(&q).await;
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
    let Some(url) = server() else { return };
    runtime().block_on(async {
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
        nothing_comes(&q).await;

        // A closed queue takes no transactional push either.
        q.close().await.expect("close");
        let tx = db.transaction().await.expect("begin");
        let r = q.store().push_in(&tx, b"x".to_vec(), Push::new()).await;
        assert!(matches!(r, Err(TxPushError::Closed(_))), "{r:?}");
    });
}

#[test]
fn a_held_key_is_refused_with_its_holder_and_the_transaction_goes_on() {
    let Some(url) = server() else { return };
    runtime().block_on(async {
        let name = unique("txp-key");
        let q = queue(&url, &name, Config::new(Duration::from_secs(30))).await;
        let mut db = sql(&url).await;
        let store = q.store();
        let committed = q
            .push_with(b"held".to_vec(), Push::new().key("k1"))
            .await
            .expect("keyed push");

        let tx = db.transaction().await.expect("begin");
        match store
            .push_in(&tx, b"dup".to_vec(), Push::new().key("k1"))
            .await
        {
            Err(TxPushError::DuplicateKey { item, existing }) => {
                assert_eq!((item, existing), (b"dup".to_vec(), committed));
            }
            other => panic!("expected DuplicateKey, got {other:?}"),
        }
        // A key taken earlier in the same transaction is held too.
        let mine = store
            .push_in(&tx, b"mine".to_vec(), Push::new().key("k2"))
            .await
            .expect("a free key");
        let r = store
            .push_in(&tx, b"again".to_vec(), Push::new().key("k2"))
            .await;
        assert!(
            matches!(&r, Err(TxPushError::DuplicateKey { existing, .. }) if *existing == mine),
            "{r:?}"
        );
        // A keyed batch: the first item takes the key, the second is refused.
        let err = store
            .push_batch_in(&tx, [b"b1".to_vec(), b"b2".to_vec()], Push::new().key("k3"))
            .await
            .expect_err("one key, two items");
        assert_eq!(err.accepted.len(), 1);
        assert!(
            matches!(err.error, TxPushError::DuplicateKey { existing, .. } if existing == err.accepted[0])
        );
        // replace_pending takes over the waiting committed item's key.
        let replacing = store
            .push_in(
                &tx,
                b"replacing".to_vec(),
                Push::new().key("k1").replace_pending(),
            )
            .await
            .expect("replaces the waiting item");
        tx.commit().await.expect("commit");

        let mut got = Vec::new();
        for _ in 0..3 {
            let d = receive(&q).await;
            got.push((d.id(), d.item().clone()));
            d.ack().await.expect("ack");
        }
        got.sort();
        let mut want = vec![
            (mine, b"mine".to_vec()),
            (err.accepted[0], b"b1".to_vec()),
            (replacing, b"replacing".to_vec()),
        ];
        want.sort();
        assert_eq!(got, want, "the replaced item is gone");
        nothing_comes(&q).await;

        // A key held by an uncommitted transaction: the second waits for it, then is
        // refused once it commits.
        let mut other = sql(&url).await;
        let tx = db.transaction().await.expect("begin");
        let first = store
            .push_in(&tx, b"first".to_vec(), Push::new().key("k4"))
            .await
            .expect("push");
        let second = {
            let store = q.clone();
            tokio::spawn(async move {
                let tx = other.transaction().await.expect("begin");
                let r = store
                    .store()
                    .push_in(&tx, b"second".to_vec(), Push::new().key("k4"))
                    .await;
                tx.commit().await.expect("commit");
                r.map_err(|e| e.to_string())
            })
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!second.is_finished(), "waits on the first transaction's key");
        tx.commit().await.expect("commit");
        let r = second.await.expect("task");
        assert_eq!(
            r,
            Err(format!("the unique key is held by item {}", first.get()))
        );
    });
}

#[test]
fn capacity_is_counted_under_the_queue_lock_with_the_transaction_rows() {
    let Some(url) = server() else { return };
    runtime().block_on(async {
        let name = unique("txp-cap");
        let config = Config::new(Duration::from_secs(30)).with_capacity(3);
        let q = queue(&url, &name, config).await;
        let mut db = sql(&url).await;
        let store = q.store();
        q.push(b"one".to_vec()).await.expect("push");

        let tx = db.transaction().await.expect("begin");
        let err = store
            .push_batch_in(
                &tx,
                [b"a".to_vec(), b"b".to_vec(), b"c".to_vec()],
                Push::new(),
            )
            .await
            .expect_err("room for two");
        assert_eq!(err.accepted.len(), 2);
        assert!(matches!(&err.error, TxPushError::Full(item) if item == b"c"));
        let r = store.push_in(&tx, b"d".to_vec(), Push::new()).await;
        assert!(matches!(r, Err(TxPushError::Full(_))), "its own rows count");
        // The lock is held until the commit: a writer's push waits for it.
        let pushing = {
            let q = q.clone();
            tokio::spawn(async move { q.push(b"late".to_vec()).await.map_err(|e| e.to_string()) })
        };
        tx.commit().await.expect("commit");
        assert_eq!(rows(&db, &name).await, 3);
        for _ in 0..3 {
            receive(&q).await.ack().await.expect("ack");
        }
        tokio::time::timeout(PATIENCE, pushing)
            .await
            .expect("the waiting push goes once there is room")
            .expect("task")
            .expect("pushed");

        // A bounded queue refuses a transaction that is not READ COMMITTED.
        let tx = db
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .start()
            .await
            .expect("begin");
        let r = store.push_in(&tx, b"rr".to_vec(), Push::new()).await;
        assert!(matches!(r, Err(TxPushError::Unsupported { .. })), "{r:?}");
        tx.rollback().await.expect("rollback");
    });
}

/// The commit wakes a pool idle on a poll interval far longer than the test's patience: no
/// poll could have delivered it.
#[test]
fn an_idle_pool_in_another_process_is_woken_by_the_commit() {
    let Some(url) = server() else { return };
    runtime().block_on(async {
        let name = unique("txp-wake");
        let long = common::options().poll_interval(Duration::from_secs(600));
        let config = Config::new(Duration::from_secs(30));
        let producer = queue(&url, &name, config.clone()).await;
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

#[test]
fn deadpool_transactions_and_clients_push_too() {
    let Some(url) = server() else { return };
    runtime().block_on(async {
        let name = unique("txp-deadpool");
        let q = queue(&url, &name, Config::new(Duration::from_secs(30))).await;
        let config: tokio_postgres::Config = plain(&url).parse().expect("config");
        let manager = deadpool_postgres::Manager::new(config, tokio_postgres::NoTls);
        let pool = deadpool_postgres::Pool::builder(manager)
            .max_size(2)
            .build()
            .expect("pool");
        let mut object = pool.get().await.expect("connection");
        let tx = object.transaction().await.expect("begin");
        let in_tx = q
            .store()
            .push_in(&tx, b"deadpool tx".to_vec(), Push::new())
            .await
            .expect("push_in");
        tx.commit().await.expect("commit");
        // On a client outside a transaction, the push commits by itself.
        let alone = q
            .store()
            .push_in(&object, b"deadpool client".to_vec(), Push::new())
            .await
            .expect("push_in");
        let mut got = vec![receive(&q).await, receive(&q).await];
        got.sort_by_key(|d| d.id());
        assert_eq!((got[0].id(), got[1].id()), (in_tx, alone));
        for d in got {
            d.ack().await.expect("ack");
        }
    });
}

#[cfg(feature = "sqlx")]
#[test]
fn sqlx_connections_and_transactions_push_too() {
    use sqlx::Connection;

    let Some(url) = server() else { return };
    runtime().block_on(async {
        let name = unique("txp-sqlx");
        let q = queue(&url, &name, Config::new(Duration::from_secs(30))).await;
        let pg: tokio_postgres::Config = plain(&url).parse().expect("config");
        let host = match pg.get_hosts().first() {
            Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
            _ => "127.0.0.1".to_string(),
        };
        let mut options = sqlx::postgres::PgConnectOptions::new()
            .host(&host)
            .port(pg.get_ports().first().copied().unwrap_or(5432))
            .username(pg.get_user().unwrap_or("postgres"))
            .database(pg.get_dbname().unwrap_or("postgres"));
        if let Some(password) = pg.get_password() {
            options = options.password(&String::from_utf8_lossy(password));
        }
        let mut conn = sqlx::PgConnection::connect_with(&options)
            .await
            .expect("sqlx connect");

        let mut tx = conn.begin().await.expect("begin");
        let id = q
            .store()
            .push_in(&mut tx, b"sqlx".to_vec(), Push::new().priority(3))
            .await
            .expect("push_in");
        let held = q
            .store()
            .push_in(&mut tx, b"k".to_vec(), Push::new().key("sqlx-key"))
            .await
            .expect("keyed");
        let r = q
            .store()
            .push_in(&mut tx, b"k2".to_vec(), Push::new().key("sqlx-key"))
            .await;
        assert!(
            matches!(&r, Err(TxPushError::DuplicateKey { existing, .. }) if *existing == held),
            "{r:?}"
        );
        tx.commit().await.expect("commit");
        let d = receive(&q).await;
        assert_eq!(d.id(), id, "priority 3 first");
        d.ack().await.expect("ack");
        receive(&q).await.ack().await.expect("ack");

        let mut tx = conn.begin().await.expect("begin");
        q.store()
            .push_batch_in(&mut *tx, [b"r1".to_vec(), b"r2".to_vec()], Push::new())
            .await
            .expect("batch");
        tx.rollback().await.expect("rollback");
        nothing_comes(&q).await;

        // A failed statement: its error has the server's SQLSTATE and a source.
        let mut tx = conn.begin().await.expect("begin");
        sqlx::query("SELECT 1/0")
            .execute(&mut *tx)
            .await
            .expect_err("division by zero");
        let err = q
            .store()
            .push_in(&mut tx, b"x".to_vec(), Push::new())
            .await
            .expect_err("the transaction is aborted");
        match &err {
            TxPushError::Db { error, .. } => assert_eq!(error.code(), Some("25P02")),
            other => panic!("expected Db, got {other:?}"),
        }
        assert!(std::error::Error::source(&err).is_some());
        assert!(!err.transaction_intact());
    });
}
