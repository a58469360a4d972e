//! Handlers' checkpoints on the Postgres store (issue 19, part 4; schema step 5): committed
//! once `Ok`, handed out by the next claim in any process, kept across nack, lease expiry,
//! dead letter and redrive, gone with the ack, refused (fenced) for a stale lease and past
//! the size limit, shown to the operator and in the `dead_letters` view; a version-4 schema
//! migrated; a job killed with -9 at 60 % resumes from its checkpoint in another process; a
//! checkpoint whose reply is lost or whose server is gone never answers a wrong `Ok`.

use leaseq_test_kit::child;
use leaseq_test_kit::pg as common;

#[path = "faults/proxy.rs"]
mod proxy;

use std::time::Duration;

use leaseq_async::{CheckpointError, Config, Page, ReceiptError, MAX_PROGRESS_BYTES};
use leaseq_postgres::{schema_version, BytesCodec, Postgres, SCHEMA_VERSION};

use common::{process, receive, sql, unique, PATIENCE, SCHEMA};

/// The row's `progress` column (`None`: no row; `Some(None)`: no checkpoint).
async fn progress_of(url: &str, id: leaseq_async::MessageId) -> Option<Option<Vec<u8>>> {
    sql(url)
        .await
        .query_opt(
            &format!("SELECT progress FROM {SCHEMA}.items WHERE id = $1"),
            &[&(id.get() as i64)],
        )
        .await
        .expect("read the row")
        .map(|r| r.get(0))
}

fn config(visibility: Duration) -> Config {
    Config::new(visibility)
        .with_max_attempts(10)
        .with_backoff(leaseq_async::Backoff::None)
}

#[test]
fn a_checkpoint_is_fenced_committed_and_kept_until_the_ack_across_processes() {
    common::with_server(|url| async move {
        let queue = unique("progress");
        let a = process(&url, &queue, config(Duration::from_secs(1))).await;
        let b = process(&url, &queue, config(Duration::from_secs(1))).await;
        let id = a.push(b"job".to_vec()).await.expect("push");
        let mut d = receive(&a).await;
        assert!(d.progress().is_none());
        d.checkpoint(b"step 1".to_vec()).await.expect("checkpoint");
        assert_eq!(progress_of(&url, id).await, Some(Some(b"step 1".to_vec())));
        let r = d.checkpoint(vec![0; MAX_PROGRESS_BYTES + 1]).await;
        assert!(matches!(r, Err(CheckpointError::TooLarge { .. })), "{r:?}");
        d.nack("flaky").await.expect("nack");

        // Another process's claim hands it out.
        let mut d = receive(&b).await;
        assert_eq!(
            d.progress().map(|p| p.as_bytes().to_vec()),
            Some(b"step 1".to_vec())
        );
        d.checkpoint(b"step 2".to_vec()).await.expect("checkpoint");
        // Its lease runs out (no heartbeat); the next holder sees step 2, the old one is
        // refused by the fencing token and writes nothing.
        let d2 = receive(&a).await;
        assert_eq!(d2.attempt(), 3);
        assert_eq!(
            d2.progress().map(|p| p.as_bytes().to_vec()),
            Some(b"step 2".to_vec())
        );
        match d.checkpoint(b"stale".to_vec()).await {
            Err(CheckpointError::Stale(ReceiptError::Redelivered(got))) => assert_eq!(got, id),
            other => panic!("a stale checkpoint: {other:?}"),
        }
        assert_eq!(progress_of(&url, id).await, Some(Some(b"step 2".to_vec())));

        // A dead letter keeps it: shown by the operator call and the SQL view.
        d2.dead_letter("poison").await.expect("dead letter");
        let shown = b.checkpoints(Page::ALL).await.expect("checkpoints");
        assert_eq!(shown.len(), 1);
        assert_eq!((shown[0].0, shown[0].1.as_bytes()), (id, &b"step 2"[..]));
        let view: Option<Vec<u8>> = sql(&url)
            .await
            .query_one(
                &format!("SELECT progress FROM {SCHEMA}.dead_letters WHERE id = $1"),
                &[&(id.get() as i64)],
            )
            .await
            .expect("the view")
            .get(0);
        assert_eq!(view.as_deref(), Some(&b"step 2"[..]));

        // A redrive keeps it; the ack removes the row with it.
        b.redrive(id).await.expect("redrive");
        let d = receive(&b).await;
        assert_eq!(
            d.progress().map(|p| p.as_bytes().to_vec()),
            Some(b"step 2".to_vec())
        );
        d.ack().await.expect("ack");
        assert_eq!(progress_of(&url, id).await, None);
        assert!(a
            .checkpoints(Page::ALL)
            .await
            .expect("checkpoints")
            .is_empty());
    });
}

/// A schema at version 4 (before checkpoints) gets the column and the view's new column at
/// its next open; its rows stay.
#[test]
fn a_version_4_schema_gets_the_progress_column_when_opened() {
    common::with_server(|url| async move {
        let (s, db) = common::migrated_scratch(&url, "v4").await;
        db.batch_execute(&format!(
            "DROP VIEW \"{s}\".dead_letters;
             ALTER TABLE \"{s}\".items DROP COLUMN progress;
             CREATE VIEW \"{s}\".dead_letters AS
                 SELECT i.id, i.queue, i.priority, i.attempts, i.reason,
                        r.name AS reason_name, i.last_error, i.dead_at, i.payload
                 FROM \"{s}\".items i LEFT JOIN \"{s}\".reasons r ON r.code = i.reason
                 WHERE i.state = 2;
             UPDATE \"{s}\".leaseq_meta SET value = 4 WHERE key = 'schema_version';"
        ))
        .await
        .expect("set up version 4");
        assert_eq!(schema_version(&db, &s).await.expect("version"), Some(4));
        let queue = unique("progress-v4");
        let q = common::try_open::<Vec<u8>, _>(
            &url,
            queue,
            config(Duration::from_secs(30)),
            BytesCodec,
            common::options().schema(s.clone()),
        )
        .await
        .expect("open migrates");
        assert_eq!(
            schema_version(&db, &s).await.expect("version"),
            Some(SCHEMA_VERSION)
        );
        q.push(b"x".to_vec()).await.expect("push");
        let mut d = receive(&q).await;
        d.checkpoint(b"half".to_vec()).await.expect("checkpoint");
        d.dead_letter("stop").await.expect("dead letter");
        let row = db
            .query_one(&format!("SELECT progress FROM \"{s}\".dead_letters"), &[])
            .await
            .expect("the view has the column");
        assert_eq!(
            row.get::<_, Option<Vec<u8>>>(0).as_deref(),
            Some(&b"half"[..])
        );
        drop(q);
        common::drop_schema(&url, &s).await;
    });
}

/// The child of the kill -9 test: works through its item in 10 steps, checkpointing after
/// each; after step 6 it says so on stdout and hangs until killed.
#[test]
fn progress_kill9_child() {
    let Some([url, schema, queue]) = child::vars("LEASEQ_PROGRESS_", ["URL", "SCHEMA", "QUEUE"])
    else {
        return;
    };
    common::runtime().block_on(async {
        let q = common::open_bytes(
            &url,
            queue,
            config(Duration::from_secs(1)),
            common::options().schema(schema),
        )
        .await;
        let mut d = q.receive_with_heartbeat().await.expect("a delivery");
        let from = d.progress().map_or(0, |p| p.as_bytes()[0]);
        for step in from..10 {
            d.checkpoint(vec![step + 1]).await.expect("checkpoint");
            if step + 1 == 6 {
                println!("AT60");
                std::thread::sleep(Duration::from_secs(600));
            }
        }
    });
}

/// Issue 19: "a job killed with -9 at 60 % resumes from its checkpoint on redelivery", here
/// in another process once the killed one's lease ran out (its heartbeat stopped).
#[test]
fn a_job_killed_with_sigkill_at_60_percent_resumes_from_its_checkpoint() {
    let Some(url) = common::server() else { return };
    let queue = unique("progress-kill9");
    let rt = common::runtime();
    let (q, id) = rt.block_on(async {
        let q = process(&url, &queue, config(Duration::from_secs(1))).await;
        let id = q.push(b"job".to_vec()).await.expect("push");
        (q, id)
    });
    let env = [
        ("LEASEQ_PROGRESS_URL", url.as_str()),
        ("LEASEQ_PROGRESS_SCHEMA", SCHEMA.name()),
        ("LEASEQ_PROGRESS_QUEUE", &queue),
    ];
    // Killed once it checkpointed step 6.
    leaseq_test_kit::child::kill_at("progress_kill9_child", &env, "AT60");
    rt.block_on(async {
        let d = receive(&q).await;
        // At 60 %.
        leaseq_test_kit::steps::assert_resumes(&d, id, 2, &[6]);
        d.ack().await.expect("ack");
    });
}

/// Through the fault proxy: a checkpoint whose reply is lost is run again, fenced, and
/// answers `Ok` only as its row holds it; with the server out of reach it is never `Ok`
/// and the row keeps the checkpoint before.
#[test]
fn a_checkpoint_whose_reply_is_lost_or_whose_server_is_gone_is_never_a_wrong_ok() {
    common::with_server(|url| async move {
        let direct: tokio_postgres::Config = url.parse().expect("url");
        let proxy = proxy::Proxy::without_faults(&direct).await;
        let q = leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(config(Duration::from_secs(30)))
            .name(unique("progress-faults"))
            .codec(BytesCodec)
            .open(Postgres::config(proxy.config(&direct)).options(common::options()))
            .await
            .expect("open");
        let id = q.push(b"job".to_vec()).await.expect("push");
        let mut d = receive(&q).await;
        proxy.lose_next_reply("SET progress = $3");
        let r = tokio::time::timeout(PATIENCE, d.checkpoint(b"one".to_vec()))
            .await
            .expect("answered");
        assert!(!proxy.target_pending(), "the checkpoint's reply was lost");
        assert_eq!(r, Ok(()));
        assert_eq!(progress_of(&url, id).await, Some(Some(b"one".to_vec())));

        proxy
            .blocked
            .store(true, std::sync::atomic::Ordering::Release);
        let r = tokio::time::timeout(PATIENCE, d.checkpoint(b"two".to_vec()))
            .await
            .expect("answered");
        match &r {
            Err(CheckpointError::Store(_)) => {}
            other => panic!("a checkpoint with the server gone: {other:?}"),
        }
        assert_eq!(
            progress_of(&url, id).await,
            Some(Some(b"one".to_vec())),
            "not written"
        );
        proxy
            .blocked
            .store(false, std::sync::atomic::Ordering::Release);
        d.checkpoint(b"three".to_vec()).await.expect("back");
        assert_eq!(progress_of(&url, id).await, Some(Some(b"three".to_vec())));
        d.ack().await.expect("ack");
    });
}
