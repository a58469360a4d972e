//! Schema step 14 (`plain_sql.rs`): what a plain queue no longer pays, and that the
//! features it does not use still work without it. A windowed key (`LiveThen`) is kept by
//! every path that takes its item out of the live ones (ack, a batch's ack, `ack_in`, a nack
//! to the dead letters, a poison dead letter, a lease or time to live run out, cancel,
//! purge), in the statement that does it (no trigger on `items` is left for it); a nack
//! that retries, and a plain key, keep nothing. The claim's two flags (paused, flow
//! control) follow pause, resume and a queue's limits in `claim_flags`, which a migration
//! fills from the two tables.

use leaseq_test_kit::pg as common;

use std::time::Duration;

use leaseq_async::core::KeyWindow;
use leaseq_async::core::LimitScope;
use leaseq_async::{Config, Nacked, Push};
use leaseq_postgres::{migrate, BytesCodec, PgQueue, Postgres};

use common::{receive, PATIENCE, SCHEMA};

/// A `LiveThen` window of an hour on `key`.
fn windowed(key: &str) -> Push {
    Push::new()
        .key(key)
        .key_window(KeyWindow::LiveThen(Duration::from_secs(3600)))
}

/// Waits until `gone_keys` keeps `key` of `queue` (a keeper's statement made it).
async fn until_kept(db: &tokio_postgres::Client, queue: &str, key: &str) {
    let start = std::time::Instant::now();
    while !common::kept_key(db, queue, key).await {
        assert!(start.elapsed() < PATIENCE, "key {key} never kept");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The claim flags of `queue`: (paused, flowed), `None` without a row.
async fn flags(db: &tokio_postgres::Client, queue: &str) -> Option<(bool, bool)> {
    db.query_opt(
        &format!("SELECT paused, flowed FROM {SCHEMA}.claim_flags WHERE queue = $1"),
        &[&queue],
    )
    .await
    .expect("read claim_flags")
    .map(|r| (r.get(0), r.get(1)))
}

#[test]
fn no_trigger_on_items_keeps_keys() {
    common::with_server(|url| async move {
        let (_, _q) = common::fresh_process(&url, "plain-triggers").await;
        let db = common::sql(&url).await;
        let names: Vec<String> = db
            .query(
                "SELECT tgname::text FROM pg_trigger
                 WHERE tgrelid = to_regclass($1) AND NOT tgisinternal",
                &[&format!("{SCHEMA}.items")],
            )
            .await
            .expect("read triggers")
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert!(
            !names.iter().any(|n| n.starts_with("items_key")),
            "{names:?}"
        );
    });
}

#[test]
fn every_settle_that_takes_a_windowed_item_out_keeps_its_key() {
    common::with_server(|url| async move {
        let name = common::unique("plain-kept");
        let q = common::process(
            &url,
            &name,
            Config::new(Duration::from_secs(30)).with_max_attempts(1),
        )
        .await;
        let mut db = common::sql(&url).await;
        let push = |key: &'static str, push: Push| {
            let q = &q;
            async move {
                q.push_with(key.as_bytes().to_vec(), push)
                    .await
                    .expect("push")
            }
        };
        // An ack.
        push("ack", windowed("ack")).await;
        receive(&q).await.ack().await.expect("ack");
        assert!(common::kept_key(&db, &name, "ack").await, "ack");
        // A batch's ack (the settler's statement).
        push("b1", windowed("b1")).await;
        push("b2", windowed("b2")).await;
        let mut got = Vec::new();
        while got.len() < 2 {
            got.extend(q.receive_batch(2).await);
        }
        let r = q.ack_batch(got).await;
        assert_eq!(r.accepted(), 2);
        assert!(
            common::kept_key(&db, &name, "b1").await && common::kept_key(&db, &name, "b2").await,
            "batch"
        );
        // An ack in the caller's transaction: kept only if it commits.
        push("in0", windowed("in0")).await;
        push("in", windowed("in")).await;
        let d = receive(&q).await;
        let tx = db.transaction().await.expect("begin");
        q.store().ack_in(&tx, d).await.expect("ack in");
        tx.rollback().await.expect("rollback");
        assert!(
            !common::kept_key(&db, &name, "in0").await,
            "a rolled-back ack keeps nothing"
        );
        let d = receive(&q).await;
        let tx = db.transaction().await.expect("begin");
        q.store().ack_in(&tx, d).await.expect("ack in");
        tx.commit().await.expect("commit");
        assert!(common::kept_key(&db, &name, "in").await, "ack_in");
        // A nack on the last attempt: a dead letter.
        push("nack", windowed("nack")).await;
        let r = receive(&q).await.nack("no").await.expect("nack");
        assert!(matches!(r, Nacked::DeadLettered { .. }), "{r:?}");
        assert!(
            common::kept_key(&db, &name, "nack").await,
            "nack to the dead letters"
        );
        // Poison.
        push("poison", windowed("poison")).await;
        receive(&q)
            .await
            .dead_letter("bad")
            .await
            .expect("dead letter");
        assert!(common::kept_key(&db, &name, "poison").await, "dead letter");
        // A cancel of a waiting item, and a purge.
        let later = |key| windowed(key).delay(Duration::from_secs(600));
        let id = push("cancel", later("cancel")).await;
        q.cancel(id).await.expect("cancel");
        assert!(common::kept_key(&db, &name, "cancel").await, "cancel");
        push("purge", later("purge")).await;
        assert_eq!(q.purge().await.expect("purge"), 1);
        assert!(common::kept_key(&db, &name, "purge").await, "purge");
        // A plain key keeps nothing, whatever takes it out.
        push("plain", Push::new().key("plain")).await;
        receive(&q).await.ack().await.expect("ack");
        assert!(!common::kept_key(&db, &name, "plain").await, "a plain key");
        let n = common::kept_keys(&db, &name).await;
        assert_eq!(n, 8, "one kept key per windowed item, none else");
    });
}

#[test]
fn a_retry_keeps_nothing_and_the_keeper_keeps_what_runs_out() {
    common::with_server(|url| async move {
        let db = common::sql(&url).await;
        // A nack that retries: the item is still live, its key held in its row.
        let (name, q) = common::fresh_process(&url, "plain-retry").await;
        q.push_with(b"r".to_vec(), windowed("retry"))
            .await
            .expect("push");
        let d = receive(&q).await;
        let r = d
            .nack_with(leaseq_async::Failure::error("again").retry_after(Duration::from_secs(600)))
            .await
            .expect("nack");
        assert!(matches!(r, Nacked::Retrying { .. }), "{r:?}");
        assert!(
            !common::kept_key(&db, &name, "retry").await,
            "a retry keeps nothing"
        );
        // Leases of 300 ms that the heartbeat hardly ever renews, one attempt each.
        let name = common::unique("plain-keeper");
        let q: PgQueue<Vec<u8>> = leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(
            Config::new(Duration::from_millis(300)).with_max_attempts(1),
        )
        .name(name.clone())
        .codec(BytesCodec)
        .open(
            Postgres::url(&url)
                .options(common::options().heartbeat_every(Duration::from_secs(3600))),
        )
        .await
        .expect("open");
        // A lease run out on the last attempt: the rescuer's dead letter.
        q.push_with(b"l".to_vec(), windowed("lease"))
            .await
            .expect("push");
        let d = receive(&q).await;
        until_kept(&db, &name, "lease").await;
        drop(d);
        // A time to live run out while waiting: the keeper's expiry.
        let short = windowed("ttl")
            .delay(Duration::from_millis(100))
            .ttl(Duration::from_millis(200));
        q.push_with(b"t".to_vec(), short).await.expect("push");
        until_kept(&db, &name, "ttl").await;
    });
}

#[test]
fn the_claim_flags_follow_pause_resume_and_limits() {
    common::with_server(|url| async move {
        let (name, q) = common::fresh_process(&url, "plain-flags").await;
        let db = common::sql(&url).await;
        assert_eq!(flags(&db, &name).await, None);
        q.pause().await.expect("pause");
        assert_eq!(flags(&db, &name).await, Some((true, false)));
        q.push(b"x".to_vec()).await.expect("push");
        assert!(
            q.receive_timeout(Duration::from_millis(300)).await.is_err(),
            "a paused queue hands out nothing"
        );
        q.set_limit(LimitScope::Queue, Some(5))
            .await
            .expect("limit");
        assert_eq!(flags(&db, &name).await, Some((true, true)));
        q.resume().await.expect("resume");
        assert_eq!(flags(&db, &name).await, Some((false, true)));
        receive(&q).await.ack().await.expect("ack (the flow claim)");
        q.set_limit(LimitScope::Queue, None)
            .await
            .expect("no limit");
        assert_eq!(flags(&db, &name).await, Some((false, false)));
        q.push(b"y".to_vec()).await.expect("push");
        receive(&q)
            .await
            .ack()
            .await
            .expect("ack (the plain claim)");
    });
}

#[test]
fn the_migration_fills_the_flags_from_both_tables() {
    common::with_server(|url| async move {
        let (s, mut db) = common::migrated_scratch(&url, "plainfill").await;
        // Back to step 10 by hand: no flags' table, its triggers gone; a queue paused, one
        // with flow control, one both.
        db.batch_execute(&format!(
            "DROP TABLE \"{s}\".claim_flags;
             DROP TRIGGER claim_paused ON \"{s}\".queue_pauses;
             DROP TRIGGER claim_flowed ON \"{s}\".flow_queues;
             INSERT INTO \"{s}\".queue_pauses (queue) VALUES ('p'), ('pf');
             INSERT INTO \"{s}\".flow_queues (queue) VALUES ('f'), ('pf');
             UPDATE \"{s}\".leaseq_meta SET value = 10 WHERE key = 'schema_version';"
        ))
        .await
        .expect("set back");
        migrate(&mut db, &s).await.expect("migrate");
        let flags = |q: &'static str| {
            let (db, s) = (&db, &s);
            async move {
                db.query_opt(
                    &format!("SELECT paused, flowed FROM \"{s}\".claim_flags WHERE queue = $1"),
                    &[&q],
                )
                .await
                .expect("read claim_flags")
                .map(|r| (r.get::<_, bool>(0), r.get::<_, bool>(1)))
            }
        };
        assert_eq!(flags("p").await, Some((true, false)));
        assert_eq!(flags("f").await, Some((false, true)));
        assert_eq!(flags("pf").await, Some((true, true)));
        // The triggers are back: a resume clears its flag only.
        db.execute(
            &format!("DELETE FROM \"{s}\".queue_pauses WHERE queue = 'pf'"),
            &[],
        )
        .await
        .expect("resume");
        assert_eq!(flags("pf").await, Some((false, true)));
        // Step 11 ran again (its window triggers made again), and step 14 dropped them.
        let n: i64 = db
            .query_one(
                "SELECT count(*) FROM pg_trigger WHERE tgrelid = to_regclass($1)
                 AND tgname::text LIKE 'items_key%'",
                &[&format!("\"{s}\".items")],
            )
            .await
            .expect("read triggers")
            .get(0);
        assert_eq!(n, 0);
        common::drop_schema(&url, &s).await;
    });
}
