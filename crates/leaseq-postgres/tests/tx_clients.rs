//! Pushes inside transactions of each client library a Rust service uses: deadpool's
//! transaction and pooled client, and sqlx's connection and transaction (feature `sqlx`,
//! with a failed statement's SQLSTATE and source).

use leaseq_test_kit::pg as common;

use common::*;

use leaseq_async::Push;
#[cfg(feature = "sqlx")]
use leaseq_postgres::TxPushError;

/// A deadpool of two connections on `url`'s server.
fn deadpool(url: &str) -> deadpool_postgres::Pool {
    let config: tokio_postgres::Config = plain(url).parse().expect("config");
    let manager = deadpool_postgres::Manager::new(config, tokio_postgres::NoTls);
    deadpool_postgres::Pool::builder(manager)
        .max_size(2)
        .build()
        .expect("pool")
}

/// sqlx's options for `url`'s server (host, port, user, database and password as it says).
#[cfg(feature = "sqlx")]
fn sqlx_options(url: &str) -> sqlx::postgres::PgConnectOptions {
    let pg: tokio_postgres::Config = plain(url).parse().expect("config");
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
    options
}

#[test]
fn deadpool_transactions_and_clients_push_too() {
    common::with_server(|url| async move {
        let (_, q) = fresh_process(&url, "txp-deadpool").await;
        let pool = deadpool(&url);
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

    common::with_server(|url| async move {
        let (_, q) = fresh_process(&url, "txp-sqlx").await;
        let options = sqlx_options(&url);
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
        common::nothing_comes(&q).await;

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
