//! A split child's counters rows taken as slots (schema step 19, `graph_slots.rs`): two
//! transactions telling children of one callback whose places share rows do not wait for
//! each other; the rows' sums stay the parents still waited for, through a dead letter and
//! its redrive; the callback is released once, by the transaction that commits the last
//! child.

use leaseq_test_kit::pg as common;

use leaseq_async::dependencies::BatchOn;
use tokio_postgres::Client;

/// No lock waited for over 2 s, beside the store's own session settings: a statement that
/// would wait for another transaction's rows fails instead of hanging.
const NO_WAITING: &str = "SET lock_timeout = '2s';";

/// The callback's rows: (sum waiting, sum failed, rows waiting, rows failed), and its own
/// counters (waiting, failed), and whether it was released (its items row).
async fn counts(db: &Client, cb: i64) -> ((i64, i64, i64, i64), (i32, i32), bool) {
    let s = common::SCHEMA.name();
    let r = db
        .query_one(
            &format!(
                "SELECT sum(waiting)::bigint, sum(failed)::bigint,
                        count(*) FILTER (WHERE waiting > 0), count(*) FILTER (WHERE failed > 0),
                        (SELECT waiting FROM \"{s}\".graph_nodes WHERE node = $1),
                        (SELECT failed FROM \"{s}\".graph_nodes WHERE node = $1),
                        EXISTS (SELECT 1 FROM \"{s}\".items WHERE node = $1)
                 FROM \"{s}\".graph_shards WHERE node = $1"
            ),
            &[&cb],
        )
        .await
        .unwrap();
    (
        (r.get(0), r.get(1), r.get(2), r.get(3)),
        (r.get(4), r.get(5)),
        r.get(6),
    )
}

#[test]
fn two_open_transactions_tell_one_callback_without_waiting() {
    common::with_server(|url| async move {
        let q = common::open_one_try(&url, "graph_slots_wait").await;
        let (a, b) = (common::sql(&url).await, common::sql(&url).await);
        a.batch_execute(common::STORE_SESSION).await.unwrap();
        a.batch_execute(NO_WAITING).await.unwrap();
        b.batch_execute(common::STORE_SESSION).await.unwrap();
        b.batch_execute(NO_WAITING).await.unwrap();
        // 20 parents a row: no row runs out here, so the callback's own row is not written.
        let (kids, cb) = common::fan_out(&q, &a, 1280, BatchOn::Complete).await;
        // Places 0..8 and 64..72: the same 8 counters rows by place (step 17 waited).
        a.batch_execute("BEGIN").await.unwrap();
        assert_eq!(common::told(&a, &kids[..8], 2).await, 8);
        b.batch_execute("BEGIN").await.unwrap();
        assert_eq!(common::told(&b, &kids[64..72], 2).await, 8);
        b.batch_execute("COMMIT").await.unwrap();
        a.batch_execute("COMMIT").await.unwrap();
        let (sums, own, released) = counts(&a, cb).await;
        assert_eq!((sums.0, sums.1, sums.2), (1264, 0, 64));
        assert_eq!(own, (64, 0), "its own counters count its rows");
        assert!(!released);
        q.close().await.unwrap();
    });
}

#[test]
fn sums_stay_exact_through_a_dead_letter_and_its_redrive() {
    common::with_server(|url| async move {
        let q = common::open_one_try(&url, "graph_slots_sums").await;
        let (a, b) = (common::sql(&url).await, common::sql(&url).await);
        a.batch_execute(common::STORE_SESSION).await.unwrap();
        a.batch_execute(NO_WAITING).await.unwrap();
        b.batch_execute(common::STORE_SESSION).await.unwrap();
        b.batch_execute(NO_WAITING).await.unwrap();
        // On success: a dead child holds the callback (failed), its redrive lets it wait again.
        let (kids, cb) = common::fan_out(&q, &a, 130, BatchOn::Success).await;
        assert_eq!(common::told(&a, &kids[..1], 3).await, 1);
        let (sums, own, _) = counts(&a, cb).await;
        assert_eq!((sums.0, sums.1, sums.3), (130, 1, 1));
        assert_eq!(own, (64, 1));
        // Acks in two transactions, interleaved, every other call open across the other's.
        let rest = &kids[1..];
        for (i, call) in rest.chunks(7).enumerate() {
            let db = if i % 2 == 0 { &a } else { &b };
            db.batch_execute("BEGIN").await.unwrap();
            assert_eq!(common::told(db, call, 2).await as usize, call.len());
            db.batch_execute("COMMIT").await.unwrap();
        }
        let (sums, own, released) = counts(&a, cb).await;
        assert_eq!((sums.0, sums.1, sums.2, sums.3), (1, 1, 1, 1));
        assert_eq!(own, (1, 1));
        assert!(!released, "held by its dead child");
        assert_eq!(common::told(&a, &kids[..1], 1).await, 1, "redriven");
        let (sums, own, released) = counts(&a, cb).await;
        assert_eq!((sums.0, sums.1), (1, 0));
        assert_eq!(own, (1, 0));
        assert!(!released);
        a.batch_execute("BEGIN").await.unwrap();
        assert_eq!(common::told(&a, &kids[..1], 2).await, 1);
        assert!(
            !counts(&b, cb).await.2,
            "not before the last child's commit"
        );
        a.batch_execute("COMMIT").await.unwrap();
        let (sums, own, released) = counts(&a, cb).await;
        assert_eq!((sums.0, sums.1, own), (0, 0, (0, 0)));
        assert!(released, "released at the last child's commit");
        assert_eq!(
            common::told(&a, &kids[..1], 2).await,
            0,
            "told again: nothing moves"
        );
        assert_eq!(common::released_rows(&a, cb).await, 1, "released once");
        q.close().await.unwrap();
    });
}
