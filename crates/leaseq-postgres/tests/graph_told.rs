//! The graph told by the statements themselves (schema step 13, `graph_told.rs`): no trigger
//! on `items` any more, and each path that deletes a tracked row or moves it to or from the
//! dead letters still tells the graph in its own statement: an ack and a nack to the dead
//! letters with the record of finished jobs on (the statements `recorded` rewrote), a cancel,
//! a purge of waiting rows, a time to live's expiry, a keyed push's replacement, `ack_in`.

use leaseq_test_kit::pg as common;

use std::time::Duration;

use leaseq_async::dependencies::{DependencyStore, NodeId, OnFailedParent, Parent, StepState};
use leaseq_async::{Config, MessageId, Push};
use leaseq_postgres::{Options, PgDelivery, PgQueue};

async fn open(url: &str, name: &str, options: Options) -> PgQueue<Vec<u8>> {
    common::open_bytes(
        url,
        common::unique(name),
        Config::new(Duration::from_secs(30)).with_max_attempts(1),
        options.schema(common::SCHEMA),
    )
    .await
}

async fn next(q: &PgQueue<Vec<u8>>) -> PgDelivery<Vec<u8>> {
    match q.receive_timeout(Duration::from_secs(10)).await {
        Ok(d) => d,
        Err(e) => panic!(
            "no delivery ({e:?}); last error {:?}",
            q.store().last_error()
        ),
    }
}

/// A child of plain message `parent` with `policy`.
async fn child_of(q: &PgQueue<Vec<u8>>, parent: MessageId, policy: OnFailedParent) -> NodeId {
    q.store()
        .push_after(b"child".to_vec(), &[Parent::Message(parent)], policy)
        .await
        .expect("push_after")
}

async fn state(q: &PgQueue<Vec<u8>>, node: NodeId) -> Option<StepState> {
    q.store().job_state(node).await.expect("job_state")
}

#[test]
fn no_trigger_is_left_on_items() {
    common::with_server(|url| async move {
        let q = open(&url, "graph_told_triggers", Options::new()).await;
        let db = common::sql(&url).await;
        let names: Vec<String> = db
            .query(
                "SELECT t.tgname::text FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
                 JOIN pg_namespace n ON n.oid = c.relnamespace
                 WHERE n.nspname = $1 AND c.relname = 'items' AND t.tgname LIKE 'graph%'",
                &[&common::SCHEMA.name()],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert!(names.is_empty(), "graph triggers left: {names:?}");
        q.close().await.unwrap();
    });
}

/// With the record of finished jobs on, the ack and the dead letter are rewritten twice
/// (history, then the graph): both still tell.
#[test]
fn recorded_acks_and_dead_letters_tell_the_graph() {
    common::with_server(|url| async move {
        let q = open(
            &url,
            "graph_told_recorded",
            Options::new().retention(Duration::from_secs(3600)),
        )
        .await;
        let a = q.push(b"a".to_vec()).await.unwrap();
        let after_a = child_of(&q, a, OnFailedParent::Cancel).await;
        let d = next(&q).await;
        assert_eq!(d.item(), b"a");
        d.ack().await.unwrap();
        let c = next(&q).await;
        assert_eq!(c.item(), b"child");
        assert!(matches!(
            state(&q, after_a).await,
            Some(StepState::Queued(_))
        ));
        // A nack on the last attempt: to the dead letters, and its node with it.
        c.nack("no").await.unwrap();
        assert!(matches!(
            state(&q, after_a).await,
            Some(StepState::DeadLettered(_))
        ));
        let b = q.push(b"b".to_vec()).await.unwrap();
        let after_b = child_of(&q, b, OnFailedParent::Run).await;
        let d = next(&q).await;
        d.nack("no").await.unwrap();
        let kid = next(&q).await;
        assert_eq!(kid.item(), b"child", "Run: released by the dead letter");
        let s = state(&q, after_b).await;
        assert!(matches!(s, Some(StepState::Queued(_))), "{s:?}");
        kid.ack().await.unwrap();
        assert!(matches!(
            state(&q, after_b).await,
            Some(StepState::Acked(_))
        ));
        let history: Vec<(i64, i16)> = common::sql(&url)
            .await
            .query(
                &format!(
                    "SELECT id, outcome FROM \"{}\".history WHERE queue = $1 ORDER BY seq",
                    common::SCHEMA
                ),
                &[&q.store().queue_name()],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        let outcomes: Vec<i16> = history.iter().map(|h| h.1).collect();
        assert_eq!(outcomes, [0, 1, 1, 0], "the record kept too: {history:?}");
        q.close().await.unwrap();
    });
}

/// A cancel, a purge, a replacement and an expiry of a parent: each cancels (or fails) it
/// in the graph, so a `Cancel` child is cancelled and a `Run` child released.
#[test]
fn cancels_purges_replacements_and_expiries_tell_the_graph() {
    common::with_server(|url| async move {
        let q = open(&url, "graph_told_cancels", Options::new()).await;
        // A cancel.
        let p = q.push(b"p".to_vec()).await.unwrap();
        let kid = child_of(&q, p, OnFailedParent::Cancel).await;
        q.cancel(p).await.expect("cancel");
        assert_eq!(state(&q, kid).await, Some(StepState::Cancelled));
        // A purge of the waiting rows.
        let p = q.push(b"p".to_vec()).await.unwrap();
        let kid = child_of(&q, p, OnFailedParent::Cancel).await;
        assert_eq!(q.purge().await.unwrap(), 1);
        assert_eq!(state(&q, kid).await, Some(StepState::Cancelled));
        // A keyed push replacing a waiting parent.
        let p = q
            .push_with(b"p".to_vec(), Push::new().key("k"))
            .await
            .unwrap();
        let kid = child_of(&q, p, OnFailedParent::Cancel).await;
        q.push_with(b"new".to_vec(), Push::new().key("k").replace_pending())
            .await
            .unwrap();
        assert_eq!(state(&q, kid).await, Some(StepState::Cancelled));
        let d = next(&q).await;
        assert_eq!(d.item(), b"new");
        d.ack().await.unwrap();
        // A time to live passing: the parent a dead letter, a `Run` child released.
        let p = q
            .push_with(b"p".to_vec(), Push::new().ttl(Duration::from_millis(300)))
            .await
            .unwrap();
        let kid = child_of(&q, p, OnFailedParent::Run).await;
        common::dead_letters_reach(&q, 1, "the parent expires").await;
        let d = next(&q).await;
        assert_eq!(d.item(), b"child");
        assert!(matches!(state(&q, kid).await, Some(StepState::Queued(_))));
        q.close().await.unwrap();
    });
}

/// `ack_in` in the caller's transaction: the child is released at the commit, not before,
/// and not at all if it rolls back.
#[test]
fn an_ack_in_a_transaction_releases_at_its_commit() {
    common::with_server(|url| async move {
        let q = open(&url, "graph_told_ack_in", Options::new()).await;
        let p = q.push(b"p".to_vec()).await.unwrap();
        let kid = child_of(&q, p, OnFailedParent::Cancel).await;
        let mut db = common::sql(&url).await;
        let d = next(&q).await;
        let tx = db.transaction().await.unwrap();
        q.store().ack_in(&tx, d).await.unwrap();
        assert_eq!(
            state(&q, kid).await,
            Some(StepState::Pending),
            "not committed yet"
        );
        tx.commit().await.unwrap();
        assert!(matches!(state(&q, kid).await, Some(StepState::Queued(_))));
        let d = next(&q).await;
        assert_eq!(d.item(), b"child");
        d.ack().await.unwrap();
        q.close().await.unwrap();
    });
}
