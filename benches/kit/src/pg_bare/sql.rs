//! The bare loop's statements: the table, the reset that gives the planner a queue's
//! statistics, the push, the claim and the ack, and the check that the claim and the ack use
//! their indexes.

use tokio_postgres::Client;

/// The schema, table and claim index of the bare loop; every statement is idempotent.
pub const SETUP_SQL: &str = "
CREATE SCHEMA IF NOT EXISTS leaseq_bench;
CREATE TABLE IF NOT EXISTS leaseq_bench.bare_items (
    id bigserial PRIMARY KEY,
    payload bytea NOT NULL,
    visible_at timestamptz NOT NULL DEFAULT now(),
    state smallint NOT NULL DEFAULT 0,
    lease bigint NOT NULL DEFAULT 0,
    attempts int NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS bare_items_claim
    ON leaseq_bench.bare_items (visible_at, id) WHERE state = 0;
";

/// Empties the table and leaves the planner the picture of a queue table under load, each
/// statement in its own transaction: 10,000 pending rows, `ANALYZE`, `DELETE` (not `TRUNCATE`).
/// The table is then empty, but the planner still counts 10,000 rows, nearly all `state = 0`.
/// The seed rows are visible at `infinity`, so their dead entries sit at the far end of the
/// claim index, past every row a claim reaches, and their ids sort before the run's in the
/// primary key: no scan of the run walks through them.
///
/// Why: each connection plans its statements on a nearly empty table and keeps the plans for
/// the run (the claim has no parameters, so its first, generic plan is final; the ack goes
/// generic after five executions; autovacuum, which could replan them, may be off, as here).
/// Planned for an empty table, the claim scans and sorts every pending row under `LockRows`
/// and the ack hash-joins a scan of the table: linear in the backlog per statement (6–8 ms per
/// claim at 20k pending rows against 0.1–0.2 ms on the index, measured here). [`run_bare`](super::run_bare)
/// checks the plans before it starts the clock.
pub const RESET_SQL: [&str; 4] = [
    "TRUNCATE leaseq_bench.bare_items RESTART IDENTITY",
    "INSERT INTO leaseq_bench.bare_items (payload, visible_at) \
     SELECT '\\x00112233445566778899aabbccddeeff'::bytea, 'infinity' \
     FROM generate_series(1, 10000)",
    "ANALYZE leaseq_bench.bare_items",
    "DELETE FROM leaseq_bench.bare_items",
];

pub(super) const PUSH_SQL: &str = "INSERT INTO leaseq_bench.bare_items (payload) \
                        SELECT * FROM unnest($1::bytea[])";

pub(super) const ACK_SQL: &str = "DELETE FROM leaseq_bench.bare_items b \
                       USING unnest($1::bigint[], $2::bigint[]) AS a(id, lease) \
                       WHERE b.id = a.id AND b.lease = a.lease";

/// The claim statement for batches of up to `claim` items. The limit is written into the text
/// rather than bound, so that the planner sees the real limit in a generic plan too.
pub fn claim_sql(claim: usize) -> String {
    format!(
        "UPDATE leaseq_bench.bare_items \
         SET state = 1, lease = lease + 1, attempts = attempts + 1, \
             visible_at = clock_timestamp() + interval '30 seconds' \
         WHERE id = ANY(ARRAY( \
             SELECT id FROM leaseq_bench.bare_items \
             WHERE state = 0 AND visible_at <= clock_timestamp() \
             ORDER BY visible_at, id LIMIT {claim} \
             FOR UPDATE SKIP LOCKED)) \
         RETURNING id, lease, payload"
    )
}

/// `sql` with its schema `leaseq_bench` replaced by `schema`.
pub(super) fn in_schema(sql: &str, schema: &str) -> String {
    sql.replace("leaseq_bench", schema)
}

/// Checks that the claim and the ack, planned as the workers will plan them, find their rows
/// through the indexes rather than by scanning the table. The claim has no parameters, so its
/// plan is the generic one every worker builds; the ack's is forced generic (the plan a
/// connection settles on after five executions).
///
/// # Panics
///
/// If either plan scans the table.
pub(super) async fn check_plans(
    admin: &Client,
    claim: usize,
    schema: &str,
) -> Result<(), tokio_postgres::Error> {
    let ack_sql = in_schema(ACK_SQL, schema);
    admin
        .batch_execute(&format!(
            "SET plan_cache_mode = force_generic_plan; \
             PREPARE bare_ack(bigint[], bigint[]) AS {ack_sql}"
        ))
        .await?;
    let ack = "EXECUTE bare_ack(NULL, NULL)".to_owned();
    for (what, sql, index) in [
        (
            "claim",
            in_schema(&claim_sql(claim), schema),
            "bare_items_claim",
        ),
        ("ack", ack, "bare_items_pkey"),
    ] {
        let rows = admin.query(&format!("EXPLAIN {sql}"), &[]).await?;
        let plan: Vec<&str> = rows.iter().map(|r| r.get(0)).collect();
        let plan = plan.join("\n");
        assert!(
            plan.contains(index) && !plan.contains("Seq Scan on bare_items"),
            "the {what} would not use {index}:\n{plan}"
        );
    }
    admin
        .batch_execute("DEALLOCATE bare_ack; RESET plan_cache_mode")
        .await
}
