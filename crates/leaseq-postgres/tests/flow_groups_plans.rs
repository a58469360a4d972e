//! The grouped claim (`flow_claim_groups`, schema step 22: `flow_groups_plans.rs`) reads
//! only the rows it works on whatever the statistics say: in the store's sessions (one
//! generic plan per statement, made from the statistics of the moment) it leases through
//! the primary key and never reads `flow_groups` again by its primary key, even when the
//! statistics make the claim index look cheaper (many small queues beside the grouped one:
//! `queue = $1` then looks like a row or two). Step 18's claim read every waiting row of
//! the queue through `items_claim` for its leases under those statistics, and looked up
//! each locked group's row again (BENCHMARKS.md, round 12).
//!
//! Since schema step 25 (`flow_groups_lean.rs`) a claim locks, and reads the heads of, two
//! groups more than it still wants (step 22 took eight more): a claim of 36 from groups
//! that are all ready reads 38 entries of the turn index and 38 heads, not 44.
//!
//! **How the test sees it.** The backend's counters for the current transaction
//! (`pg_stat_get_xact_tuples_returned` of each index) taken right after one claim.

use leaseq_test_kit::pg as common;

/// Groups, and items in each, of the grouped queue; single-row queues beside it.
const GROUPS: i64 = 50;
const PER: i64 = 40;
const OTHERS: i64 = 3000;

/// A connection to `schema`, migrated and [`fill`]ed, with the store's session settings.
async fn filled(url: &str, schema: &str) -> tokio_postgres::Client {
    let mut db = common::sql(url).await;
    leaseq_postgres::migrate(&mut db, schema)
        .await
        .expect("migrate");
    fill(&db, schema).await;
    db.batch_execute(common::STORE_SESSION).await.unwrap();
    db
}

/// Fills `schema` (migrated) with a grouped queue `gq` as the writer leaves one (rows held
/// at `HOLD`, each group's row in `flow_groups`, the queue's flag) and `OTHERS` queues of
/// one ready row each, then gathers the statistics.
async fn fill(db: &tokio_postgres::Client, schema: &str) {
    db.batch_execute(&format!(
        r#"INSERT INTO "{schema}".items (id, queue, priority, visible_at, payload, fgroup, fseq, fdue)
               SELECT (1::bigint << 40) + g * 1000 + i, 'gq', 0,
                      '9999-01-01 00:00:00+00'::timestamptz, int8send(g * 1000 + i),
                      7000000 + g, g * 1000 + i, now()
               FROM generate_series(0, {groups}) g, generate_series(0, {per}) i
               ORDER BY g, i;
           INSERT INTO "{schema}".items (id, queue, priority, visible_at, payload)
               SELECT (2::bigint << 40) + k, 'other' || k, 0, now(), '\x00'
               FROM generate_series(1, {OTHERS}) k;
           INSERT INTO "{schema}".flow_groups (queue, grp, turn, last)
               SELECT 'gq', 7000000 + g, clock_timestamp(), g * 1000 + {per}
               FROM generate_series(0, {groups}) g;
           INSERT INTO "{schema}".flow_queues (queue, grouped) VALUES ('gq', true);
           ANALYZE "{schema}".items; ANALYZE "{schema}".flow_groups;"#,
        groups = GROUPS - 1,
        per = PER - 1,
    ))
    .await
    .expect("fill");
}

/// Index entries the current transaction's scans returned from `index` of `schema`.
async fn returned(tx: &tokio_postgres::Transaction<'_>, schema: &str, index: &str) -> i64 {
    let index = format!(r#""{schema}".{index}"#);
    tx.query_one(
        "SELECT pg_stat_get_xact_tuples_returned($1::text::regclass)",
        &[&index],
    )
    .await
    .expect("counter")
    .get(0)
}

#[test]
fn a_grouped_claim_locks_two_groups_more_than_it_wants() {
    common::with_scratch_schema("groupslean", |url, schema| {
        common::runtime().block_on(async {
            let mut db = filled(url, schema).await;
            for (n, want) in [(36i32, 38i64), (10, 12)] {
                let tx = db.transaction().await.unwrap();
                // The counters may still hold the previous transaction's (not yet flushed).
                let turns_before = returned(&tx, schema, "flow_groups_turn").await;
                let heads_before = returned(&tx, schema, "items_group").await;
                let claimed = tx
                    .query(
                        &format!(
                            r#"SELECT r_id FROM "{schema}".flow_claim('gq', $1, 30000000,
                                   false, 1048576, false, 1036) WHERE r_id IS NOT NULL"#
                        ),
                        &[&n],
                    )
                    .await
                    .expect("claim")
                    .len();
                let turns = returned(&tx, schema, "flow_groups_turn").await - turns_before;
                let heads = returned(&tx, schema, "items_group").await - heads_before;
                tx.rollback().await.unwrap();
                assert_eq!(claimed, n as usize);
                // Step 22 locked n + 8 groups and read their heads.
                assert_eq!(turns, want, "groups locked for a claim of {n}");
                assert_eq!(heads, want, "heads read for a claim of {n}");
            }
        });
    });
}

#[test]
fn a_grouped_claim_reads_only_its_rows_whatever_the_statistics_say() {
    common::with_scratch_schema("groupsplans", |url, schema| {
        common::runtime().block_on(async {
            let mut db = filled(url, schema).await;
            let tx = db.transaction().await.unwrap();
            let claimed: Vec<i64> = tx
                .query(
                    &format!(
                        r#"SELECT r_id FROM "{schema}".flow_claim('gq', 36, 30000000, false,
                               1048576, false, 1036) WHERE r_id IS NOT NULL ORDER BY r_rank"#
                    ),
                    &[],
                )
                .await
                .expect("claim")
                .iter()
                .map(|r| r.get(0))
                .collect();
            let read = |index: &str| {
                let tx = &tx;
                let index = format!(r#""{schema}".{index}"#);
                async move {
                    let row = tx
                        .query_one(
                            "SELECT pg_stat_get_xact_tuples_returned($1::text::regclass)",
                            &[&index],
                        )
                        .await
                        .expect("counter");
                    row.get::<_, i64>(0)
                }
            };
            let (claim_index, groups_key, items_key) = (
                read("items_claim").await,
                read("flow_groups_pkey").await,
                read("items_pkey").await,
            );
            tx.commit().await.unwrap();
            // Each of the first 36 groups' head, in turn order (the groups made in order).
            let heads: Vec<i64> = (0..36).map(|g| (1i64 << 40) + g * 1000).collect();
            assert_eq!(claimed, heads);
            assert_eq!(claim_index, 0, "items_claim read for a grouped claim");
            assert_eq!(groups_key, 0, "flow_groups read again by its primary key");
            assert_eq!(items_key, 36, "the leases not taken by their ids");
        });
    });
}
