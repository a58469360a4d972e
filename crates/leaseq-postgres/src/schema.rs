//! The tables, their versioned migrations, and the checks made before a store uses them.

use tokio_postgres::Client;

use crate::error::OpenError;

/// The schema version this library writes and reads. A database at a newer version is
/// refused ([`OpenError::SchemaTooNew`]); an older one is migrated forward at open.
pub const SCHEMA_VERSION: i64 = 25;

/// The migrations, in order: migration `i` takes the schema from version `i` to `i + 1`.
/// `{s}` stands for the quoted schema name, `{schema}` for the bare one. Never edit a
/// released one: add the next.
const MIGRATIONS: &[&str] = &[
    // 1: the items table (every queue of the schema), its indexes and the instance numbers.
    r#"
    CREATE SEQUENCE {s}.instances;
    CREATE TABLE {s}.items (
        id          bigint      PRIMARY KEY,          -- instance << 32 | counter
        queue       text        NOT NULL,
        state       smallint    NOT NULL DEFAULT 0,   -- 0 waiting, 1 leased, 2 dead letter
        priority    smallint    NOT NULL DEFAULT 0,   -- 0..=7, 7 first
        visible_at  timestamptz NOT NULL,             -- waiting: claimable from then
        deadline    timestamptz,                      -- the last lease's end
        leased_at   timestamptz,                      -- the last lease's start (max lease)
        lease       bigint      NOT NULL DEFAULT 0,   -- fencing token: leases issued
        attempts    integer     NOT NULL DEFAULT 0,   -- deliveries so far
        expires_at  timestamptz,                      -- the item's own time to live
        reason      smallint,                         -- last failure (Reason code)
        last_error  text,
        dead_at     timestamptz,
        payload     bytea       NOT NULL
    ) WITH (fillfactor = 80,
            autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 5000,
            autovacuum_vacuum_insert_scale_factor = 0.0,
            autovacuum_vacuum_insert_threshold = 50000);
    CREATE INDEX items_claim   ON {s}.items (queue, priority DESC, visible_at, id) WHERE state = 0;
    CREATE INDEX items_ttl     ON {s}.items (queue, expires_at) WHERE state = 0 AND expires_at IS NOT NULL;
    CREATE INDEX items_leased  ON {s}.items (queue, deadline) WHERE state = 1;
    CREATE INDEX items_dead    ON {s}.items (queue, dead_at, id) WHERE state = 2;
    "#,
    // 2: each writer instance's committed-id watermark, raised in the statement that inserts
    // a batch (writer.rs): a batch retried after a lost reply skips the rows its first
    // attempt committed, even those acked and deleted since. `below` is `top` before the
    // last raise: the rows a batch may insert are those above it.
    r#"
    CREATE TABLE {s}.writer_marks (
        instance    bigint      PRIMARY KEY,          -- ids are instance << 32 | counter
        top         bigint      NOT NULL,             -- highest id committed
        below       bigint      NOT NULL,             -- top before the last batch's raise
        at          timestamptz NOT NULL              -- the last batch's commit
    );
    "#,
    // 3 (unique keys, issue 18): an item's unique key; two live (waiting or leased) rows
    // of a queue never share one, dead letters keep theirs for a redrive. A capacity needs
    // no schema: it is counted on the claim and lease indexes under an advisory lock.
    r#"
    ALTER TABLE {s}.items ADD COLUMN key bytea;
    CREATE UNIQUE INDEX items_key ON {s}.items (queue, key)
        WHERE key IS NOT NULL AND state IN (0, 1);
    "#,
    // 4: the reasons' names, for SQL readers.
    REASON_NAMES,
    // 5 (checkpoints, issue 19): a handler's last checkpoint, kept by every change of the
    // row but its delete (ack, cancel, purge, replacement); shown by the dead letters' view.
    r#"
    ALTER TABLE {s}.items ADD COLUMN IF NOT EXISTS progress bytea;
    CREATE OR REPLACE VIEW {s}.dead_letters AS
        SELECT i.id, i.queue, i.priority, i.attempts, i.reason,
               r.name AS reason_name, i.last_error, i.dead_at, i.payload, i.progress
        FROM {s}.items i LEFT JOIN {s}.reasons r ON r.code = i.reason
        WHERE i.state = 2;
    "#,
    // 6 (transactional pushes, issue 30): the `tx_ids` sequence (ids from 2^62 up, the
    // `instances` capped below 2^30), the queues' limits (`queue_settings`), and the
    // functions `push_rows`, `push_item` and `push_job` (tx_sql.rs).
    crate::tx_sql::MIGRATION,
    // 7 (schedules, issue 30): each schedule's cursor, moved by compare-and-set in the
    // transaction that inserts its ticks (`schedule.rs`).
    crate::schedule::SCHEDULES_TABLE,
    // 8 (the record of finished jobs, issue 30): `items.pushed_at` and `started_at`, the
    // `history` table (`history_sql.rs`).
    crate::history_sql::MIGRATION,
    // 9 (pause and resume, issue 31): the paused queues, read by the claim (`pause.rs`).
    crate::pause_sql::MIGRATION,
    // 10 (jobs that wait for other jobs, issue 33): `items.node`, the graph's tables, its
    // functions and the two triggers that tell it a tracked row's outcome (`graph_sql.rs`).
    crate::graph_sql::MIGRATION,
    // 11 (issue 32): `items.snoozes`, the keys' windows (`items.key_hold`,
    // `key_until`, `key_then`, the `gone_keys` table and its triggers, `key_holder`) and
    // the push functions taking a window (`settle_sql.rs`).
    crate::settle_sql::MIGRATION,
    // 12 (flow control, issue 32): the items' flow keys, the queues with flow control, their
    // limits, rates and groups, and the flow claim (`flow_sql.rs`; the claim function's text
    // is filled in at `{flow_claim_fn}`).
    crate::flow_sql::MIGRATION,
    // 13 (issue 33's costs): the graph's triggers dropped, the statements that settle a
    // tracked row tell it once per statement (`graph_told.rs`; `key_holder` redefined at
    // `{graph_key_holder}`).
    crate::graph_told::MIGRATION,
    // 14 (issues 32 and 33): the key windows' triggers replaced by the statements that take
    // rows out, and the claim's two flags in one row (`plain_sql.rs`).
    crate::plain_sql::MIGRATION,
    // 15 (issue 32): a queue limit's slots and their claim, `flow_claim` made again
    // (`flow_slots_sql.rs`).
    crate::flow_slots_sql::MIGRATION,
    // 16 (issue 32): the bounded queues' room ledger (`queue_room`, `take_room`) and
    // `insert_bounded` and `push_rows` taking room from it (`room_sql.rs`).
    crate::room_sql::MIGRATION,
    // 17 (issue 33's fan-out): `graph_told` redefined, a batch child's counters rows locked
    // by their key and written in the statement that moves it (`graph_fanout.rs`).
    crate::graph_fanout::MIGRATION,
    // 18 (issue 32's groups): a grouped queue with no limit and no
    // rate claimed side by side, the groups' rows locked rather than the queue
    // (`flow_groups_sql.rs`), `flow_claim` made again.
    crate::flow_groups_sql::MIGRATION,
    // 19 (issue 33's fan-out): a split child's counters rows taken as
    // slots, `graph_slot`, `graph_slots`, `graph_told` and `graph_move` redefined
    // (`graph_slots.rs`; `graph_move`'s text filled in at `{graph_move_slots}`).
    crate::graph_slots::MIGRATION,
    // 20 (issue 33's fan-out):
    // `graph_told` redefined, its fixed work per call cut: the old state kept by the move
    // (`graph_nodes.told_from`), one aggregate, a slot taken in one statement
    // (`graph_told_lean.rs`).
    crate::graph_told_lean::MIGRATION,
    // 21 (issues 32 and 33): the three flow claims made again, each row saying whether it
    // has a graph node, as the plain claim's do (`flow_plain_sql.rs`; the functions filled
    // in at `{flow_claims_plain}`).
    crate::flow_plain_sql::MIGRATION,
    // 22 (issue 32's groups): `flow_claim_groups` made again, every statement with one
    // plan whatever the statistics say (`flow_groups_plans.rs`; the function filled in at
    // `{flow_claim_groups_plans}`).
    crate::flow_groups_plans::MIGRATION,
    // 23 (issue 32's limit): the slot claim leases its picked rows by primary key
    // (`flow_slots_pk_sql.rs`).
    crate::flow_slots_pk_sql::MIGRATION,
    // 24 (issue 32's limits by kind and partition, and rates): the walking claim leases its
    // picked rows by primary key (`flow_walk_pk_sql.rs`).
    crate::flow_walk_pk_sql::MIGRATION,
    // 25 (issue 32's groups):
    // `flow_claim_groups` made again with less fixed work per call (`flow_groups_lean.rs`;
    // the function filled in at `{flow_claim_groups_lean}`).
    crate::flow_groups_lean::MIGRATION,
];

/// Migration 4, the reasons' names, for SQL readers (additive: no table changes). `reasons`
/// maps each `items.reason` code to [`Reason::as_str`](leaseq_core::Reason::as_str), and the
/// `dead_letters` view lists every queue's dead letters with their reason's name. A reason
/// added to the core needs a new migration adding its row (a test compares this table with
/// `Reason::ALL`).
const REASON_NAMES: &str = r#"
    CREATE TABLE {s}.reasons (
        code        smallint    PRIMARY KEY,          -- Reason::code
        name        text        NOT NULL UNIQUE       -- Reason::as_str
    );
    INSERT INTO {s}.reasons (code, name) VALUES
        (0, 'lease expired'), (1, 'nacked'), (2, 'timed out'), (3, 'dropped'),
        (4, 'released'), (5, 'rejected'), (6, 'panicked'), (7, 'expired'),
        (8, 'undecodable');
    CREATE VIEW {s}.dead_letters AS
        SELECT i.id, i.queue, i.priority, i.attempts, i.reason,
               r.name AS reason_name, i.last_error, i.dead_at, i.payload
        FROM {s}.items i LEFT JOIN {s}.reasons r ON r.code = i.reason
        WHERE i.state = 2;
    "#;

/// The grants a worker role needs on a schema another role migrated: `{schema}` and
/// `{role}` to fill in (quoted here, so any valid names do). Reads the version, uses the
/// two id sequences, and reads and writes the items, the writers' watermarks, the queues'
/// limits (recorded at open for the SQL functions), the schedules' cursors, the record of
/// finished jobs (written only with `Options::retention`) and the keys held past their
/// items (`gone_keys`, written by the statements that take a windowed item out) and the
/// bounded queues' room ledger (`queue_room`); no DDL, no
/// ownership. The functions `push_item` and `push_job` run with their caller's rights
/// (PUBLIC may execute them): a role that pushes from SQL needs these grants too. The upkeep
/// (`VACUUM`, `ANALYZE`, `REINDEX`) needs more (the owner, or `MAINTAIN` on PostgreSQL 17):
/// without it the store leaves the table to autovacuum and says so once. The crate docs,
/// "Least privilege", show the whole setup.
pub const WORKER_GRANTS: &str = r#"GRANT USAGE ON SCHEMA "{schema}" TO "{role}";
GRANT SELECT ON "{schema}".leaseq_meta TO "{role}";
GRANT SELECT, INSERT, UPDATE, DELETE ON "{schema}".items, "{schema}".writer_marks, "{schema}".queue_settings, "{schema}".schedules, "{schema}".queue_pauses, "{schema}".history, "{schema}".gone_keys, "{schema}".flow_queues, "{schema}".flow_limits, "{schema}".flow_rates, "{schema}".flow_groups, "{schema}".flow_running, "{schema}".queue_room, "{schema}".flow_slots TO "{role}";
GRANT USAGE ON SEQUENCE "{schema}".instances, "{schema}".tx_ids, "{schema}".flow_seq TO "{role}";
GRANT SELECT, INSERT, UPDATE, DELETE ON "{schema}".graph_nodes, "{schema}".graph_edges, "{schema}".graph_shards, "{schema}".graph_workflows, "{schema}".graph_batches TO "{role}";
GRANT USAGE ON SEQUENCE "{schema}".graph_ids TO "{role}";"#;

/// Whether `name` may be used as a schema name: lower-case ASCII letters, digits and `_`,
/// not starting with a digit, at most 63 bytes (so it never needs escaping).
pub(crate) fn valid_schema(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// The schema's version as recorded, `None` if leaseq never set it up there.
pub async fn schema_version(client: &Client, schema: &str) -> Result<Option<i64>, OpenError> {
    if !valid_schema(schema) {
        return Err(OpenError::InvalidName(schema.to_string()));
    }
    let exists = client
        .query_one(
            "SELECT to_regclass($1) IS NOT NULL",
            &[&format!("\"{schema}\".leaseq_meta")],
        )
        .await?;
    if !exists.get::<_, bool>(0) {
        return Ok(None);
    }
    let row = client
        .query_opt(
            &format!("SELECT value FROM \"{schema}\".leaseq_meta WHERE key = 'schema_version'"),
            &[],
        )
        .await?;
    Ok(row.map(|r| r.get(0)))
}

/// Brings `schema` to [`SCHEMA_VERSION`], in one transaction under an advisory lock (so
/// processes starting together migrate once); refuses a newer version untouched. A schema
/// already current is only read (no DDL, no lock): a worker role without the rights to
/// create or alter anything opens it (crate docs, "Least privilege").
pub async fn migrate(client: &mut Client, schema: &str) -> Result<(), OpenError> {
    if !valid_schema(schema) {
        return Err(OpenError::InvalidName(schema.to_string()));
    }
    if schema_version(client, schema).await? == Some(SCHEMA_VERSION) {
        return Ok(());
    }
    let tx = client.transaction().await?;
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtext('leaseq.migrate'), hashtext($1))",
        &[&schema],
    )
    .await?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS \"{schema}\";
         CREATE TABLE IF NOT EXISTS \"{schema}\".leaseq_meta (key text PRIMARY KEY, value bigint NOT NULL);"
    ))
    .await?;
    let found: i64 = tx
        .query_opt(
            &format!("SELECT value FROM \"{schema}\".leaseq_meta WHERE key = 'schema_version'"),
            &[],
        )
        .await?
        .map_or(0, |r| r.get(0));
    if found > SCHEMA_VERSION {
        return Err(OpenError::SchemaTooNew {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    if found < 0 {
        return Err(OpenError::SchemaCorrupt(format!(
            "schema_version is {found}"
        )));
    }
    // Steps older than the flow claims' graph flag run again over its functions only on a
    // schema set back by hand: those are dropped first (`flow_plain_sql.rs`).
    let plain_step = MIGRATIONS
        .iter()
        .position(|m| *m == crate::flow_plain_sql::MIGRATION);
    if plain_step.is_some_and(|i| (found as usize) < i) {
        let before = crate::flow_plain_sql::BEFORE_OLDER_STEPS;
        tx.batch_execute(&render(before, schema)).await?;
    }
    for step in &MIGRATIONS[found as usize..] {
        tx.batch_execute(&render(step, schema)).await?;
    }
    if found < SCHEMA_VERSION {
        tx.execute(
            &format!(
                "INSERT INTO \"{schema}\".leaseq_meta (key, value) VALUES ('schema_version', $1)
                 ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
            ),
            &[&SCHEMA_VERSION],
        )
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// A migration step's SQL for `schema`: its shared texts filled in, then the schema's name.
fn render(step: &str, schema: &str) -> String {
    let step = step
        .replace("{flow_claims_plain}", &crate::flow_plain_sql::claims())
        .replace(
            "{flow_claim_groups_lean}",
            &crate::flow_groups_lean::claim_fn(),
        )
        .replace(
            "{flow_claim_groups_plans}",
            &crate::flow_groups_plans::claim_fn(),
        )
        .replace(
            "{flow_claim_slots_by_id}",
            &crate::flow_slots_pk_sql::claim(),
        )
        .replace("{flow_claim_walk_by_id}", &crate::flow_walk_pk_sql::claim())
        .replace(
            "{flow_claim_groups_fn}",
            &crate::flow_groups_sql::claim_fn(),
        )
        .replace("{flow_claim_fn}", &crate::flow_sql::claim_fn())
        .replace("{groups_enter}", crate::flow_groups_sql::ENTER)
        .replace("{graph_key_holder}", &crate::graph_told::key_holder())
        .replace("{graph_move_slots}", &crate::graph_slots::graph_move())
        .replace("{graph_told_lean}", &crate::graph_told_lean::graph_told())
        .replace("{s}", &format!("\"{schema}\""));
    // Steps 12 to 19's flow claims return their twelve columns, as shipped.
    crate::flow_plain_sql::fill(&step, crate::flow_plain_sql::Columns::Held)
        .replace("{schema}", schema)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_need_no_quoting() {
        assert!(valid_schema("leaseq"));
        assert!(valid_schema("leaseq_test_42"));
        for bad in ["", "1abc", "Leaseq", "a-b", "a\"b", "a b", &"x".repeat(64)] {
            assert!(!valid_schema(bad), "{bad:?}");
        }
    }

    #[test]
    fn migrations_cover_every_version() {
        assert_eq!(MIGRATIONS.len() as i64, SCHEMA_VERSION);
    }

    #[test]
    fn only_steps_21_to_25_make_the_flow_claims_say_plain() {
        for (i, step) in MIGRATIONS.iter().enumerate() {
            let sql = render(step, "leaseq");
            for left in ["{plain_", "{no_plain}", "{flow_", "{groups_enter}", "{s}"] {
                assert!(!sql.contains(left), "step {}: {left} left in", i + 1);
            }
            let plain = sql.matches("r_plain boolean").count();
            // Steps 22 to 25 make the grouped, the slot, the walking and the grouped claims
            // again with step 21's columns.
            let want = match i + 1 {
                21 => 3,
                22..=25 => 1,
                _ => 0,
            };
            assert_eq!(plain, want, "step {}", i + 1);
        }
    }
}
