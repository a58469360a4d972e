//! The flow claims lease the rows they picked by primary key whatever the items table's
//! statistics say: the slot claim of a queue limit (schema step 23, `flow_slots_pk_sql.rs`)
//! and the walking claim of rates and kind or partition limits (step 24,
//! `flow_walk_pk_sql.rs`). Statistics taken while no row of the table waited made the
//! store's generic plans lease through the claim index, reading every waiting row of the
//! queue in each claim (BENCHMARKS.md, round 12: the limit's slow mode). The grouped
//! claim's plans have their own test (`flow_groups_plans.rs`).

use leaseq_test_kit::pg as common;

use std::future::Future;
use std::num::NonZeroU32;
use std::time::Duration;

use leaseq_async::Config;
use leaseq_core::{LimitScope, Rate};
use leaseq_postgres::{BytesCodec, Options, PgQueue};

/// Waiting rows of the queue; a claim that reads the claim index whole reads them all.
const BACKLOG: usize = 2_000;

/// Opens queue `q` in `schema`, sets its flow control with `flow`, pushes the backlog,
/// rigs the statistics (taken while every row was leased), and returns how many entries of
/// the claim index one flow claim of 16 read, with the store's session settings.
async fn claim_index_read<F, Fut>(url: &str, schema: &str, flow: F) -> i64
where
    F: FnOnce(PgQueue<Vec<u8>>) -> Fut,
    Fut: Future<Output = ()>,
{
    let options = Options::new().schema(schema).pool_size(2);
    let config = Config::new(Duration::from_secs(30));
    let q = common::open(url, "q", config, BytesCodec, options).await;
    flow(q.clone()).await;
    let items: Vec<Vec<u8>> = (0..BACKLOG as u32)
        .map(|i| i.to_le_bytes().to_vec())
        .collect();
    q.push_batch(items).await.expect("push");
    let db = common::sql(url).await;
    // The statistics of a table whose rows were all leased (no autovacuum to refresh them
    // behind the test's back), then every row waiting again.
    let items = format!("\"{schema}\".items");
    db.batch_execute(&format!(
        "ALTER TABLE {items} SET (autovacuum_enabled = false);
         UPDATE {items} SET state = 1;"
    ))
    .await
    .expect("lease all");
    db.batch_execute(&format!("ANALYZE {items}"))
        .await
        .expect("analyze");
    db.batch_execute(&format!("UPDATE {items} SET state = 0"))
        .await
        .expect("wait all");
    db.batch_execute(&format!("VACUUM {items}"))
        .await
        .expect("vacuum");
    // One flow claim of 16 with the store's session settings (its generic plans), and
    // what it read of the claim index, in its own transaction.
    db.batch_execute(common::STORE_SESSION)
        .await
        .expect("session");
    db.batch_execute("BEGIN").await.expect("begin");
    let claimed = db
        .query(
            &format!(
                "SELECT r_id FROM \"{schema}\".flow_claim('q', 16, 30000000, false, \
                 1048576, false, 1016) WHERE r_id IS NOT NULL"
            ),
            &[],
        )
        .await
        .expect("flow claim");
    assert_eq!(claimed.len(), 16);
    let read: i64 = db
        .query_one(
            "SELECT pg_stat_get_xact_tuples_returned(
                 format('%I.items_claim', $1::text)::regclass)",
            &[&schema],
        )
        .await
        .expect("index counters")
        .get(0);
    db.batch_execute("ROLLBACK").await.expect("rollback");
    q.close().await.expect("close");
    read
}

#[test]
fn a_slot_claim_reads_no_more_of_the_claim_index_than_it_picks_whatever_the_statistics() {
    common::with_scratch_schema("slotstats", |url, schema| {
        common::runtime().block_on(async {
            let read = claim_index_read(url, schema, |q| async move {
                q.set_limit(LimitScope::Queue, Some(64))
                    .await
                    .expect("limit");
            })
            .await;
            // The pick reads its 16 entries (and a few more); leasing them through the
            // claim index read all 2,000.
            assert!(
                read < (BACKLOG / 4) as i64,
                "the claim read {read} entries of the claim index for 16 rows"
            );
        });
    });
}

#[test]
fn a_walking_claim_reads_no_more_of_the_claim_index_than_it_walks_whatever_the_statistics() {
    common::with_scratch_schema("walkstats", |url, schema| {
        common::runtime().block_on(async {
            // A rate alone is claimed by the walk (a queue limit alone takes the slots);
            // its burst lets the 16 through.
            let rate = Rate::per_second(NonZeroU32::new(1_000).unwrap())
                .burst(NonZeroU32::new(100).unwrap());
            let read = claim_index_read(url, schema, |q| async move {
                q.set_rate(LimitScope::Queue, Some(rate))
                    .await
                    .expect("rate");
            })
            .await;
            // The walk reads what it passes (its 16, and its look-ahead of at most a
            // thousand in a level); leasing through the claim index read all 2,000 again.
            assert!(
                read < BACKLOG as i64 * 3 / 4,
                "the walking claim read {read} entries of the claim index for 16 rows"
            );
        });
    });
}
