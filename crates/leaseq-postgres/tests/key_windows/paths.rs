//! The windows on the other push paths (a batch, `push_in`, `push_item` from SQL), on the
//! database's clock, and the upkeep's pruning.

use super::*;

#[test]
fn a_batch_a_push_in_a_transaction_and_sql_honour_windows() {
    common::with_server(|url| async move {
        let name = common::unique("key-window-paths");
        let q = common::process(&url, &name, config()).await;
        let mut db = common::sql(&url).await;
        let period = |key: &str| Push::new().key(key).key_window(KeyWindow::Period(MIN));
        // A batch: the first item takes the key for the period, the second is refused.
        let mut items = vec![b"1".to_vec(), b"2".to_vec()].into_iter();
        let r = q.store().try_push_batch(&mut items, &period("b"));
        let first = match r {
            Err((ids, PushError::DuplicateKey { existing, .. })) if ids.len() == 1 => {
                assert_eq!(existing, ids[0]);
                existing
            }
            other => panic!("expected one in and a duplicate, got {other:?}"),
        };
        common::receive(&q).await.ack().await.expect("ack");
        assert!(
            common::kept_key(&db, &name, "b").await,
            "the acked item's key is kept"
        );
        // In the caller's transaction: held by the item that left.
        let tx = db.transaction().await.expect("begin");
        let r = q
            .store()
            .push_in(&tx, b"3".to_vec(), Push::new().key("b"))
            .await;
        assert!(
            matches!(&r, Err(leaseq_postgres::TxPushError::DuplicateKey { existing, .. }) if *existing == first),
            "{r:?}"
        );
        // A window given in the transaction: `Queued`, let go once leased.
        let queued = Push::new().key("t").key_window(KeyWindow::Queued);
        let t = q
            .store()
            .push_in(&tx, b"4".to_vec(), queued)
            .await
            .expect("push_in");
        tx.commit().await.expect("commit");
        let r = q.try_push_with(b"5".to_vec(), Push::new().key("t"));
        assert!(
            matches!(&r, Err(PushError::DuplicateKey { existing, .. }) if *existing == t),
            "{r:?}"
        );
        let d = common::receive(&q).await;
        assert_eq!(d.id(), t);
        let six = q
            .try_push_with(b"6".to_vec(), Push::new().key("t"))
            .expect("the leased Queued holder let the key go");
        d.ack().await.expect("ack");
        let d = common::receive(&q).await;
        assert_eq!(d.id(), six);
        d.ack().await.expect("ack");
        // From SQL: `push_item` with a window, and one refused by it.
        let push_item = format!("SELECT {SCHEMA}.push_item($1, '\\x07'::bytea, key => 's', key_window => $2::text, key_period => $3::text::interval)");
        let s: i64 = db
            .query_one(&push_item, &[&name, &"live_then", &"1 hour"])
            .await
            .expect("push_item with a window")
            .get(0);
        let d = common::receive(&q).await;
        assert_eq!(d.id().get() as i64, s);
        d.ack().await.expect("ack");
        let again = db.query_one(&push_item, &[&name, &"live", &"0"]).await;
        let e = again.expect_err("held for an hour after it left");
        assert_eq!(
            e.code(),
            Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION),
            "{e}"
        );
        let bad = db.query_one(&push_item, &[&name, &"forever", &"0"]).await;
        let e = bad.expect_err("an unknown window");
        assert_eq!(
            e.code(),
            Some(&tokio_postgres::error::SqlState::INVALID_PARAMETER_VALUE),
            "{e}"
        );
    });
}

#[test]
fn a_period_ends_on_the_database_clock_and_the_upkeep_prunes_its_key() {
    common::with_server(|url| async move {
        let name = common::unique("key-window-clock");
        let q = common::process(&url, &name, config()).await;
        let db = common::sql(&url).await;
        let throttle = Push::new()
            .key("c")
            .key_window(KeyWindow::Period(Duration::from_secs(2)));
        let a = q
            .try_push_with(b"a".to_vec(), throttle.clone())
            .expect("push");
        common::receive(&q).await.ack().await.expect("ack");
        let held = db
            .query_opt(
                &format!(
                    "SELECT until > clock_timestamp() FROM {SCHEMA}.gone_keys
                     WHERE queue = $1 AND key = 'c'"
                ),
                &[&name],
            )
            .await
            .expect("read the kept key")
            .is_some_and(|r| r.get::<_, bool>(0));
        let r = q.try_push_with(b"b".to_vec(), throttle.clone());
        if held {
            // Still within the period by the database's clock: refused.
            assert!(
                matches!(&r, Err(PushError::DuplicateKey { existing, .. }) if *existing == a),
                "{r:?}"
            );
        }
        // Once the database's clock is past the period's end, the key is free.
        common::eventually("the period ends", || async {
            (!common::kept_key(&db, &name, "c").await).then_some(())
        })
        .await;
        q.try_push_with(b"c".to_vec(), throttle)
            .expect("free after the period");
        q.store().run_upkeep().await.expect("upkeep");
        let left = common::kept_keys(&db, &name).await;
        assert_eq!(left, 0, "the ended key was pruned");
    });
}

#[test]
fn a_push_refused_in_an_open_transaction_does_not_hold_up_the_holder() {
    common::with_server(|url| async move {
        let name = common::unique("key-window-open-tx");
        let q = common::process(&url, &name, config()).await;
        let mut db = common::sql(&url).await;
        let holder = q
            .try_push_with(b"a".to_vec(), Push::new().key("h"))
            .expect("push");
        let d = common::receive(&q).await;
        let tx = db.transaction().await.expect("begin");
        let r = q
            .store()
            .push_in(&tx, b"b".to_vec(), Push::new().key("h"))
            .await;
        assert!(
            matches!(&r, Err(leaseq_postgres::TxPushError::DuplicateKey { existing, .. }) if *existing == holder),
            "{r:?}"
        );
        // The transaction is still open: the holder's ack is not kept waiting on it.
        let acked = tokio::time::timeout(PATIENCE, d.ack()).await;
        assert!(matches!(acked, Ok(Ok(_))), "{acked:?}");
        tx.rollback().await.expect("rollback");
    });
}
