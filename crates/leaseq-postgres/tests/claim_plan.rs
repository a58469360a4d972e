//! The claim's plan never sorts the backlog, whatever the statistics say: on a fresh table
//! (never analyzed) and after a `VACUUM ANALYZE` of a drained queue (`reltuples = 0`, the
//! state in which every claim once sorted the whole backlog, BENCHMARKS.md) then refilled,
//! the claim reads the claim index in its order and only the rows it takes, with a custom
//! plan and with the generic plan the store's connections keep. One test: the table is
//! this process's alone (its own schema), and the states follow each other.

use leaseq_test_kit::pg as common;

use std::time::Duration;

use common::*;
use leaseq_async::Config;
use leaseq_postgres::PgQueue;

const BACKLOG: u32 = 20_000;
const CLAIM: usize = 16;

/// Pushes `n` items in batches.
async fn fill(q: &PgQueue<Vec<u8>>, n: u32) {
    for start in (0..n).step_by(1000) {
        let batch: Vec<Vec<u8>> = (start..(start + 1000).min(n))
            .map(|i| i.to_le_bytes().to_vec())
            .collect();
        q.push_batch(batch).await.expect("push");
    }
}

/// Receives and acks `n` items.
async fn drain(q: &PgQueue<Vec<u8>>, n: u32) {
    let mut left = n as usize;
    while left > 0 {
        let batch = q.receive_batch(left.min(256)).await;
        assert!(!batch.is_empty(), "the queue closed while draining");
        left -= batch.len();
        let r = q.ack_batch(batch).await;
        assert!(r.all_accepted(), "acks refused or failed");
    }
}

/// Fails unless `plan` reads the claim index and no more rows than it takes, and sorts
/// nothing.
fn assert_reads_only_what_it_takes(state: &str, plan: &str) {
    let context = format!("{state}: the claim's plan was\n{plan}");
    assert!(!plan.contains("Sort"), "a sort in the claim: {context}");
    assert!(
        !plan.contains("Bitmap"),
        "a bitmap scan in the claim: {context}"
    );
    let scan = plan
        .lines()
        .find(|l| l.contains("Index Scan using items_claim"))
        .unwrap_or_else(|| panic!("the claim does not read the claim index: {context}"));
    assert!(
        scan.contains(&format!("rows={CLAIM} loops=1)")),
        "the claim index scan read more rows than the claim takes: {context}"
    );
}

async fn check(q: &PgQueue<Vec<u8>>, state: &str) {
    for generic in [false, true] {
        let plan = q
            .store()
            .explain_claim(CLAIM, generic)
            .await
            .expect("explain");
        let state = format!(
            "{state}, {} plan",
            if generic { "generic" } else { "custom" }
        );
        assert_reads_only_what_it_takes(&state, &plan);
    }
}

#[test]
fn the_claim_reads_only_the_rows_it_takes_whatever_the_statistics() {
    common::with_server(|url| async move {
        let options = options().vacuum_after_rows(0);
        let config = Config::new(Duration::from_secs(30));
        let q = common::open_bytes(&url, unique("plan").to_string(), config, options).await;
        let db = sql(&url).await;
        let table = format!("\"{SCHEMA}\".items");
        let reltuples = || async {
            let row = db
                .query_one(
                    "SELECT reltuples::float8 FROM pg_class WHERE oid = $1::text::regclass",
                    &[&table],
                )
                .await
                .expect("pg_class");
            row.get::<_, f64>(0)
        };

        // A fresh table, never analyzed, with a backlog.
        fill(&q, BACKLOG).await;
        check(&q, "fresh table").await;

        // Drained, then VACUUM ANALYZE: the statistics say the table is empty.
        drain(&q, BACKLOG).await;
        db.batch_execute(&format!("VACUUM ANALYZE {table}"))
            .await
            .expect("vacuum");
        assert_eq!(
            reltuples().await,
            0.0,
            "the drained table was not counted empty"
        );
        // Refilled: the statistics still say empty (nothing analyzes it here).
        fill(&q, BACKLOG).await;
        assert_eq!(reltuples().await, 0.0);
        check(&q, "drained, VACUUM ANALYZE, refilled").await;

        // And the store's own claims still take the backlog in order.
        let first = q.receive_batch(CLAIM).await;
        let firsts: Vec<u32> = first
            .iter()
            .map(|d| u32::from_le_bytes(d.item()[..4].try_into().expect("4 bytes")))
            .collect();
        assert_eq!(firsts, (0..CLAIM as u32).collect::<Vec<_>>());
        assert!(q.ack_batch(first).await.all_accepted());
    });
}
