//! The fan-out's told statement (schema step 17, `graph_fanout.rs`): a batch child's
//! callback counters rows are found by their key, not by a walk of every callback's rows,
//! and two fan-outs told in the same calls each release their callback once, when their
//! last child is acked.

use leaseq_test_kit::pg as common;

use std::time::Duration;

use leaseq_async::dependencies::{BatchOn, DependencyStore};
use leaseq_async::Config;
use leaseq_postgres::{Options, PgQueue};

/// The store's own session settings (`open.rs`): the plans `graph_told` runs with there.
const SESSION: &str = "SET jit = off; SET enable_bitmapscan = off; SET enable_sort = off;
     SET enable_seqscan = off; SET plan_cache_mode = force_generic_plan;";

async fn open(url: &str, name: &str) -> PgQueue<Vec<u8>> {
    common::open_bytes(
        url,
        common::unique(name),
        Config::new(Duration::from_secs(30)).with_max_attempts(1),
        Options::new().schema(common::SCHEMA),
    )
    .await
}

/// A batch of `n` children (over 64: the callback's counters split) and one callback:
/// the children's nodes in order, and the callback's node.
async fn fan(q: &PgQueue<Vec<u8>>, db: &tokio_postgres::Client, n: u32) -> (Vec<i64>, i64) {
    let kids: Vec<Vec<u8>> = (0..n).map(|i| i.to_le_bytes().to_vec()).collect();
    let batch = q
        .store()
        .push_batch(kids, b"callback".to_vec(), BatchOn::Complete)
        .await
        .unwrap();
    let s = common::SCHEMA.name();
    let id = i64::try_from(batch.get()).unwrap();
    let kids: Vec<i64> = db
        .query(
            &format!("SELECT node FROM \"{s}\".graph_nodes WHERE batch = $1 ORDER BY node"),
            &[&id],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let cb: i64 = db
        .query_one(
            &format!("SELECT callback FROM \"{s}\".graph_batches WHERE batch = $1"),
            &[&id],
        )
        .await
        .unwrap()
        .get(0);
    let cb_kids: Vec<i64> = kids.into_iter().filter(|k| *k != cb).collect();
    assert_eq!(cb_kids.len(), n as usize);
    (cb_kids, cb)
}

/// `graph_told` of `nodes` acked, in the caller's transaction.
async fn told(db: &tokio_postgres::Client, nodes: &[i64]) -> i32 {
    let s = common::SCHEMA.name();
    let states = vec![2_i16; nodes.len()];
    let payloads: Vec<Option<Vec<u8>>> = vec![None; nodes.len()];
    db.query_one(
        &format!("SELECT \"{s}\".graph_told($1, $2, $3)"),
        &[&nodes, &states, &payloads],
    )
    .await
    .unwrap()
    .get(0)
}

#[test]
fn a_childs_counters_row_is_found_by_its_key() {
    common::with_server(|url| async move {
        let q = open(&url, "graph_fanout_key").await;
        let db = common::sql(&url).await;
        db.batch_execute(SESSION).await.unwrap();
        // Three callbacks of 100 children: 192 counters rows in the schema.
        let mut last = Vec::new();
        for _ in 0..3 {
            last = fan(&q, &db, 100).await.0;
        }
        let s = common::SCHEMA.name();
        db.batch_execute("BEGIN").await.unwrap();
        let fetched = "SELECT coalesce(idx_tup_fetch, 0) FROM pg_stat_xact_user_tables
                       WHERE schemaname = $1 AND relname = 'graph_shards'";
        let before: i64 = db.query_one(fetched, &[&s]).await.unwrap().get(0);
        assert_eq!(told(&db, &last[..4]).await, 4);
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
        let q = open(&url, "graph_fanout_two").await;
        let db = common::sql(&url).await;
        db.batch_execute(SESSION).await.unwrap();
        let (a, cb_a) = fan(&q, &db, 130).await;
        let (b, cb_b) = fan(&q, &db, 70).await;
        let s = common::SCHEMA.name();
        let released = |cb: i64| {
            let db = &db;
            async move {
                let n: i64 = db
                    .query_one(
                        &format!("SELECT count(*) FROM \"{s}\".items WHERE node = $1"),
                        &[&cb],
                    )
                    .await
                    .unwrap()
                    .get(0);
                n
            }
        };
        // Calls of up to 3 of a's children and 2 of b's, until b's are all told.
        let (mut ia, mut ib) = (0, 0);
        while ib < b.len() {
            let mut call: Vec<i64> = a[ia..(ia + 3).min(a.len())].to_vec();
            call.extend_from_slice(&b[ib..(ib + 2).min(b.len())]);
            ia = (ia + 3).min(a.len());
            ib = (ib + 2).min(b.len());
            assert_eq!(told(&db, &call).await as usize, call.len());
            if ib < b.len() {
                assert_eq!(released(cb_b).await, 0, "b released early");
            }
            assert_eq!(released(cb_a).await, 0, "a released early");
        }
        assert_eq!(released(cb_b).await, 1, "b released once at its last child");
        // Told again (a lost reply's retry): nothing moves, nothing released twice.
        assert_eq!(told(&db, &b[b.len() - 2..]).await, 0);
        assert_eq!(released(cb_b).await, 1);
        while ia < a.len() {
            assert_eq!(released(cb_a).await, 0, "a released early");
            let end = (ia + 4).min(a.len());
            assert_eq!(told(&db, &a[ia..end]).await as usize, end - ia);
            ia = end;
        }
        assert_eq!(released(cb_a).await, 1, "a released once at its last child");
        q.close().await.unwrap();
    });
}
