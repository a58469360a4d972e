//! A split child's counters rows taken as slots (schema step 19, `graph_slots.rs`): two
//! transactions telling children of one callback whose places share rows do not wait for
//! each other; the rows' sums stay the parents still waited for, through a dead letter and
//! its redrive; the callback is released once, by the transaction that commits the last
//! child; a change whose only row to take from is held by another transaction below the
//! rows it holds itself sleeps and looks again (`graph_slot`'s last resort) until that
//! transaction commits, then takes it, the sums exact.

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

/// How long the test waits for a backend to be seen in `graph_slot`'s sleep (a bound on a
/// condition, not a timing: it is reached within milliseconds).
const SEEN_SLEEPING: std::time::Duration = std::time::Duration::from_secs(60);

#[test]
fn a_change_sleeps_while_its_only_row_is_held_below_its_own_then_takes_it() {
    common::with_server(|url| async move {
        let q = common::open_one_try(&url, "graph_slots_sleep").await;
        let (a, b, c, watch) = (
            common::sql(&url).await,
            common::sql(&url).await,
            common::sql(&url).await,
            common::sql(&url).await,
        );
        for db in [&a, &b, &c] {
            db.batch_execute(common::STORE_SESSION).await.unwrap();
            db.batch_execute(NO_WAITING).await.unwrap();
        }
        // On success, three children a row; A holds the first row (its child's ack taken
        // from it, not committed) while C's acks drain every other row.
        let (kids, cb) = common::fan_out(&q, &a, 192, BatchOn::Success).await;
        a.batch_execute("BEGIN").await.unwrap();
        assert_eq!(common::told(&a, &kids[..1], 2).await, 1);
        assert_eq!(common::told(&c, &kids[1..190], 2).await, 189);
        let (sums, _, _) = counts(&c, cb).await;
        assert_eq!((sums.0, sums.2), (3, 1), "only A's row waits, as committed");
        // B, in one statement, one child dead (a failure added: the first row A does not
        // hold) and one acked (a waiting parent taken: only A's row, below B's own, has
        // any). Neither skipped nor waited for (lock_timeout would fail it): it sleeps and
        // looks again.
        let pid: i32 = b
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .unwrap()
            .get(0);
        b.batch_execute("BEGIN").await.unwrap();
        let last = kids[190..].to_vec();
        let b_task = tokio::spawn(async move {
            let s = common::SCHEMA.name();
            let states: Vec<i16> = vec![3, 2];
            let payloads: Vec<Option<Vec<u8>>> = vec![None, None];
            let moved: i32 = b
                .query_one(
                    &format!("SELECT \"{s}\".graph_told($1, $2, $3)"),
                    &[&last, &states, &payloads],
                )
                .await
                .unwrap()
                .get(0);
            b.batch_execute("COMMIT").await.unwrap();
            moved
        });
        let start = std::time::Instant::now();
        loop {
            let row = watch
                .query_one(
                    "SELECT wait_event IS NOT DISTINCT FROM 'PgSleep' FROM pg_stat_activity
                     WHERE pid = $1",
                    &[&pid],
                )
                .await
                .unwrap();
            if row.get::<_, bool>(0) {
                break;
            }
            assert!(
                !b_task.is_finished(),
                "B must not finish while A holds the row"
            );
            assert!(start.elapsed() < SEEN_SLEEPING, "B never seen sleeping");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert!(!b_task.is_finished(), "sleeping, not done");
        a.batch_execute("COMMIT").await.unwrap();
        assert_eq!(
            b_task.await.unwrap(),
            2,
            "B's two children moved once A committed"
        );
        let (sums, own, released) = counts(&c, cb).await;
        // 192 waited for, 191 acked; the dead one still waited for, and failed.
        assert_eq!((sums.0, sums.1), (1, 1));
        assert_eq!(own, (1, 1));
        assert!(!released, "held by its dead child");
        q.close().await.unwrap();
    });
}
