//! Pushes inside the caller's transaction meeting the queue's limits: a unique key held
//! by a committed item, by an earlier push of the same transaction or by an uncommitted
//! one (named, the transaction going on), `replace_pending`; a capacity counted under the
//! queue's lock with the transaction's own rows, the lock held until the commit, another
//! isolation level refused.

use leaseq_test_kit::pg as common;

use common::*;

use std::time::Duration;

use leaseq_async::{Config, Push};
use leaseq_postgres::TxPushError;

#[test]
fn a_held_key_is_refused_with_its_holder_and_the_transaction_goes_on() {
    common::with_server(|url| async move {
        let name = unique("txp-key");
        let q = process(&url, &name, Config::new(Duration::from_secs(30))).await;
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
        common::nothing_comes(&q).await;

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
        assert!(
            !second.is_finished(),
            "waits on the first transaction's key"
        );
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
    common::with_server(|url| async move {
        let name = unique("txp-cap");
        let config = Config::new(Duration::from_secs(30)).with_capacity(3);
        let q = process(&url, &name, config).await;
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
        assert_eq!(common::row_count(&db, &name).await, 3);
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
