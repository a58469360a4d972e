//! The fan-out's told statement (schema step 17, `graph_fanout.rs`): a batch child's
//! callback counters rows are found by their key, not by a walk of every callback's rows,
//! and two fan-outs told in the same calls each release their callback once, when their
//! last child is acked.

use leaseq_test_kit::pg as common;

use leaseq_async::dependencies::BatchOn;

#[test]
fn a_childs_counters_row_is_found_by_its_key() {
    common::with_server(|url| async move {
        let q = common::open_one_try(&url, "graph_fanout_key").await;
        let db = common::sql(&url).await;
        db.batch_execute(common::STORE_SESSION).await.unwrap();
        // Three callbacks of 100 children: 192 counters rows in the schema.
        let mut last = Vec::new();
        for _ in 0..3 {
            last = common::fan_out(&q, &db, 100, BatchOn::Complete).await.0;
        }
        let s = common::SCHEMA.name();
        db.batch_execute("BEGIN").await.unwrap();
        let fetched = "SELECT coalesce(idx_tup_fetch, 0) FROM pg_stat_xact_user_tables
                       WHERE schemaname = $1 AND relname = 'graph_shards'";
        let before: i64 = db.query_one(fetched, &[&s]).await.unwrap().get(0);
        assert_eq!(common::told(&db, &last[..4], 2).await, 4);
        let after: i64 = db.query_one(fetched, &[&s]).await.unwrap().get(0);
        db.batch_execute("ROLLBACK").await.unwrap();
        // Step 13's lock read every row of the schema's graph_shards (192 here) per call.
        assert!(
            after - before <= 16,
            "{} counters rows fetched for 4 children",
            after - before
        );
        q.close().await.unwrap();
    });
}

#[test]
fn two_fan_outs_told_together_call_back_once_each_at_their_last_child() {
    common::with_server(|url| async move {
        let q = common::open_one_try(&url, "graph_fanout_two").await;
        let db = common::sql(&url).await;
        db.batch_execute(common::STORE_SESSION).await.unwrap();
        let (a, cb_a) = common::fan_out(&q, &db, 130, BatchOn::Complete).await;
        let (b, cb_b) = common::fan_out(&q, &db, 70, BatchOn::Complete).await;
        // Calls of up to 3 of a's children and 2 of b's, until b's are all told.
        let (mut ia, mut ib) = (0, 0);
        while ib < b.len() {
            let mut call: Vec<i64> = a[ia..(ia + 3).min(a.len())].to_vec();
            call.extend_from_slice(&b[ib..(ib + 2).min(b.len())]);
            ia = (ia + 3).min(a.len());
            ib = (ib + 2).min(b.len());
            assert_eq!(common::told(&db, &call, 2).await as usize, call.len());
            if ib < b.len() {
                assert_eq!(
                    common::released_rows(&db, cb_b).await,
                    0,
                    "b released early"
                );
            }
            assert_eq!(
                common::released_rows(&db, cb_a).await,
                0,
                "a released early"
            );
        }
        assert_eq!(
            common::released_rows(&db, cb_b).await,
            1,
            "b released once at its last child"
        );
        // Told again (a lost reply's retry): nothing moves, nothing released twice.
        assert_eq!(common::told(&db, &b[b.len() - 2..], 2).await, 0);
        assert_eq!(common::released_rows(&db, cb_b).await, 1);
        while ia < a.len() {
            assert_eq!(
                common::released_rows(&db, cb_a).await,
                0,
                "a released early"
            );
            let end = (ia + 4).min(a.len());
            assert_eq!(common::told(&db, &a[ia..end], 2).await as usize, end - ia);
            ia = end;
        }
        assert_eq!(
            common::released_rows(&db, cb_a).await,
            1,
            "a released once at its last child"
        );
        q.close().await.unwrap();
    });
}
