//! The told statement's fixed work cut (schema step 20, `graph_told_lean.rs`): a call's
//! acked children of one callback are taken from its first counters row with some left, in
//! one statement when that row has enough and from there on when not; a node moved by a
//! transaction that has not committed yet is moved by a second one from the state the first
//! committed (the move reads the row's newest version, without a locking read before it);
//! a node told its own state moves nothing.

use std::time::Duration;

use leaseq_test_kit::pg as common;

use leaseq_async::dependencies::BatchOn;
use tokio_postgres::Client;

/// No lock waited for over 10 s: a statement that would wait for a transaction that never
/// ends fails instead of hanging.
const LOCK_LIMIT: &str = "SET lock_timeout = '10s';";

/// The callback's rows' sums (waiting, failed), its rows with parents waited for, its own
/// counters (waiting, failed).
async fn counts(db: &Client, cb: i64) -> ((i64, i64), i64, (i32, i32)) {
    let s = common::SCHEMA.name();
    let r = db
        .query_one(
            &format!(
                "SELECT sum(waiting)::bigint, sum(failed)::bigint, count(*) FILTER (WHERE waiting > 0),
                        (SELECT waiting FROM \"{s}\".graph_nodes WHERE node = $1),
                        (SELECT failed FROM \"{s}\".graph_nodes WHERE node = $1)
                 FROM \"{s}\".graph_shards WHERE node = $1"
            ),
            &[&cb],
        )
        .await
        .unwrap();
    ((r.get(0), r.get(1)), r.get(2), (r.get(3), r.get(4)))
}

/// Whether the backend `pid` waits for a lock.
async fn waits_for_a_lock(db: &Client, pid: i32) -> bool {
    db.query_one(
        "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = $1 AND NOT granted)",
        &[&pid],
    )
    .await
    .unwrap()
    .get(0)
}

/// The callback's counters row `shard`: parents waited for.
async fn row(db: &Client, cb: i64, shard: i16) -> i32 {
    let s = common::SCHEMA.name();
    db.query_one(
        &format!("SELECT waiting FROM \"{s}\".graph_shards WHERE node = $1 AND shard = $2"),
        &[&cb, &shard],
    )
    .await
    .unwrap()
    .get(0)
}

#[test]
fn a_calls_children_are_taken_from_the_first_row_left_and_on_from_there() {
    common::with_server(|url| async move {
        let q = common::open_one_try(&url, "graph_lean_rows").await;
        let db = common::sql(&url).await;
        db.batch_execute(common::STORE_SESSION).await.unwrap();
        // 20 parents a row.
        let (kids, cb) = common::fan_out(&q, &db, 1280, BatchOn::Complete).await;
        // 6 acked in one call: all from row 0, nothing else written.
        assert_eq!(common::told(&db, &kids[..6], 2).await, 6);
        assert_eq!((row(&db, cb, 0).await, row(&db, cb, 1).await), (14, 20));
        assert_eq!(counts(&db, cb).await, ((1274, 0), 64, (64, 0)));
        // 16 more: row 0 has 14 (the one statement does not fit), so 14 from it (emptied,
        // the callback's own counters told) and 2 from row 1.
        assert_eq!(common::told(&db, &kids[6..22], 2).await, 16);
        assert_eq!((row(&db, cb, 0).await, row(&db, cb, 1).await), (0, 18));
        assert_eq!(counts(&db, cb).await, ((1258, 0), 63, (63, 0)));
        // The rest, 9 a call: released once, at the last.
        for call in kids[22..].chunks(9) {
            assert_eq!(common::told(&db, call, 2).await as usize, call.len());
        }
        assert_eq!(counts(&db, cb).await, ((0, 0), 0, (0, 0)));
        assert_eq!(common::released_rows(&db, cb).await, 1, "released once");
        q.close().await.unwrap();
    });
}

#[test]
fn a_node_moved_by_an_open_transaction_is_moved_again_from_its_committed_state() {
    common::with_server(|url| async move {
        let q = common::open_one_try(&url, "graph_lean_newest").await;
        let (a, b) = (common::sql(&url).await, common::sql(&url).await);
        for db in [&a, &b] {
            db.batch_execute(common::STORE_SESSION).await.unwrap();
            db.batch_execute(LOCK_LIMIT).await.unwrap();
        }
        // On success: a dead child holds the callback (waited for and failed); acked from
        // there it is neither. Read from a stale state (queued), its ack would leave the
        // failure counted for ever.
        let (kids, cb) = common::fan_out(&q, &a, 130, BatchOn::Success).await;
        let b_pid: i32 = b
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .unwrap()
            .get(0);
        a.batch_execute("BEGIN").await.unwrap();
        assert_eq!(
            common::told(&a, &kids[..1], 3).await,
            1,
            "dead, not committed"
        );
        let kid = kids[0];
        let acked = tokio::spawn(async move {
            b.batch_execute("BEGIN").await.unwrap();
            let moved = common::told(&b, &[kid], 2).await;
            b.batch_execute("COMMIT").await.unwrap();
            moved
        });
        let mut waited = false;
        for _ in 0..300 {
            if waits_for_a_lock(&a, b_pid).await {
                waited = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(waited, "the second move waits for the first's row");
        a.batch_execute("COMMIT").await.unwrap();
        assert_eq!(acked.await.unwrap(), 1, "moved from dead to acked");
        let (sums, _, own) = counts(&a, cb).await;
        assert_eq!(sums, (129, 0), "the failure taken back with the wait");
        assert_eq!(own.1, 0);
        // Told its own state: nothing moves, nothing changes.
        assert_eq!(common::told(&a, &[kid], 2).await, 0);
        assert_eq!(counts(&a, cb).await.0, (129, 0));
        // The rest acked, in calls of 9: released once, at the last.
        for call in kids[1..].chunks(9) {
            assert_eq!(common::told(&a, call, 2).await as usize, call.len());
        }
        let (sums, waiting_rows, own) = counts(&a, cb).await;
        assert_eq!((sums, waiting_rows, own), ((0, 0), 0, (0, 0)));
        assert_eq!(common::released_rows(&a, cb).await, 1, "released once");
        q.close().await.unwrap();
    });
}
