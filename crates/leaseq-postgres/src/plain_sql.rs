//! Schema step 14 (issues 32 and 33): what a plain queue's statements pay for the key
//! windows and flow control it does not use, made nothing or one probe. A leaf: `schema.rs`
//! takes the migration, `sql.rs` and `graph_ops.rs` the statements' parts.
//!
//! **Kept keys, in the statement that takes the row out.** Step 11 kept a windowed key
//! (`Period`, `LiveThen`: `settle_sql.rs`) in `gone_keys` with two row triggers on `items`,
//! whose `WHEN` every claim, ack, retry and heartbeat of a plain row evaluated (and whose
//! presence made each delete fetch the old row for them). Step 14 drops them: every
//! statement that deletes a live row (ack, `ack_in`, cancel, purge, a workflow's cancel) or
//! makes one a dead letter (nack to the dead letters, poison, an undecodable claim, a lease
//! or time to live run out: the keeper's `rescue` and `expire_items`) names the function
//! `keep_key` in its own `RETURNING` ([`keeping`]), behind a `CASE` whose test a plain row
//! fails at once (`key_hold` NULL). The key is kept in the same statement, so with the same
//! commit, or not at all. Statements that cannot take a windowed row out are left as they
//! are: a purge of dead letters (already kept when they died), a schedule's withdrawn ticks
//! (ticks refuse windows), a finished workflow's forgetting (its rows are dead letters), a
//! replacement in `key_holder` (the key passes on: its window goes with it).
//!
//! **One probe for the plain claim.** The plain claim must find nothing in a paused queue
//! (step 9, `queue_pauses`) or one with flow control (step 12, `flow_queues`): two probes of
//! two tables in each claim. Step 14 keeps both flags in `claim_flags`, one row per queue
//! ever paused or given flow control, written by triggers on those two tables (rare
//! writes: a pause, a resume, a queue's first limit and its last), so the claim reads one
//! row ([`NOT_HELD`]) and the claimer's probe the same row ([`NEXT_VISIBLE`]). Everything
//! else (the counts, the queue list, the flow claim) reads the two tables as before.

/// Schema step 14. `{s}` is the quoted schema. Idempotent.
pub(crate) const MIGRATION: &str = r#"
    DROP TRIGGER IF EXISTS items_key_gone ON {s}.items;
    DROP TRIGGER IF EXISTS items_key_dead ON {s}.items;
    DROP FUNCTION IF EXISTS {s}.keep_key_window();
    -- A row with a Period or LiveThen window left (deleted, or made a dead letter) while
    -- it held its key: the key kept for the rest of its window. Called from the
    -- RETURNING of the statement that takes the row out (plain_sql.rs); answers true.
    CREATE OR REPLACE FUNCTION {s}.keep_key(
        p_queue text, p_key bytea, p_hold smallint, p_until timestamptz, p_then bigint,
        p_id bigint) RETURNS boolean
    LANGUAGE plpgsql AS $fn$
    DECLARE
        ends timestamptz := CASE p_hold WHEN 2 THEN p_until
            ELSE clock_timestamp() + p_then * interval '1 microsecond' END;
    BEGIN
        IF ends > clock_timestamp() THEN
            INSERT INTO {s}.gone_keys AS g (queue, key, until, id)
            VALUES (p_queue, p_key, ends, p_id)
            ON CONFLICT (queue, key) DO UPDATE SET until = EXCLUDED.until, id = EXCLUDED.id;
        END IF;
        RETURN true;
    END
    $fn$;

    -- The queues the plain claim leaves alone: paused, or with flow control.
    CREATE TABLE IF NOT EXISTS {s}.claim_flags (
        queue       text        PRIMARY KEY,
        paused      boolean     NOT NULL DEFAULT false,   -- a row in queue_pauses
        flowed      boolean     NOT NULL DEFAULT false    -- a row in flow_queues
    );
    GRANT SELECT ON {s}.claim_flags TO PUBLIC;
    -- Written only here, with the migrating role's rights: a role that may pause a queue
    -- or give it flow control needs no grant on claim_flags.
    CREATE OR REPLACE FUNCTION {s}.claim_flag() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
    DECLARE
        q text := CASE TG_OP WHEN 'DELETE' THEN OLD.queue ELSE NEW.queue END;
        flag boolean := TG_OP <> 'DELETE';
    BEGIN
        IF TG_TABLE_NAME = 'queue_pauses' THEN
            INSERT INTO {s}.claim_flags AS f (queue, paused) VALUES (q, flag)
            ON CONFLICT (queue) DO UPDATE SET paused = EXCLUDED.paused;
        ELSE
            INSERT INTO {s}.claim_flags AS f (queue, flowed) VALUES (q, flag)
            ON CONFLICT (queue) DO UPDATE SET flowed = EXCLUDED.flowed;
        END IF;
        RETURN NULL;
    END
    $fn$;
    DROP TRIGGER IF EXISTS claim_paused ON {s}.queue_pauses;
    CREATE TRIGGER claim_paused AFTER INSERT OR DELETE ON {s}.queue_pauses
        FOR EACH ROW EXECUTE FUNCTION {s}.claim_flag();
    DROP TRIGGER IF EXISTS claim_flowed ON {s}.flow_queues;
    CREATE TRIGGER claim_flowed AFTER INSERT OR DELETE ON {s}.flow_queues
        FOR EACH ROW EXECUTE FUNCTION {s}.claim_flag();
    INSERT INTO {s}.claim_flags AS f (queue, paused, flowed)
    SELECT q.queue, bool_or(q.p), bool_or(q.f) FROM (
        SELECT queue, true AS p, false AS f FROM {s}.queue_pauses
        UNION ALL SELECT queue, false, true FROM {s}.flow_queues) AS q
    GROUP BY q.queue
    ON CONFLICT (queue) DO UPDATE SET paused = EXCLUDED.paused, flowed = EXCLUDED.flowed;
"#;

/// What the plain claim adds to its row filter (`$1` the queue; `{s}` the quoted schema):
/// neither paused nor under flow control, one probe.
pub(crate) const NOT_HELD: &str =
    "NOT EXISTS (SELECT 1 FROM {s}.claim_flags WHERE queue = $1 AND (paused OR flowed))";

/// The claimer's probe (`$1` the queue; `{s}` the quoted schema, `{until_min}` the
/// microseconds until the soonest waiting row, an expression of the levels' `v`): how soon
/// a waiting item becomes visible (NULL while the queue is paused: the resume notifies),
/// and whether the queue has flow control (then the flow claim takes it). One probe of the
/// flags, the levels read only when the queue is not paused.
pub(crate) const NEXT_VISIBLE: &str = "SELECT CASE WHEN NOT COALESCE(f.paused, false) THEN (
            SELECT {until_min} FROM (SELECT (SELECT visible_at FROM {s}.items
                WHERE queue = $1 AND state = 0 AND priority = p
                ORDER BY visible_at LIMIT 1) AS v FROM generate_series(0, 7) AS p) AS levels) END,
        COALESCE(f.flowed, false)
     FROM (SELECT 1) AS one LEFT JOIN {s}.claim_flags f ON f.queue = $1";

/// How a statement takes rows out of the live ones, for [`keeping`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Leaving {
    /// A `DELETE`: its `RETURNING` reads the deleted row (live if `state` 0 or 1).
    Deleted,
    /// An `UPDATE` that may set `state = 2`: its `RETURNING` reads the row as updated,
    /// whose state before was live (each such statement says so in its `WHERE`).
    DeadLettered,
}

/// `stmt` (a `DELETE` or `UPDATE` of `{s}.items` ending in its own `RETURNING`, or in
/// none; its rows qualified by `p`: `"i."` or `""`; `s` the quoted schema) also keeping the
/// key of each windowed row it takes out of the live ones (`keep_key`), as one more last
/// column of its `RETURNING` (NULL for every other row). Callers read the columns they read
/// before, by position.
pub(crate) fn keeping(stmt: &str, p: &str, how: Leaving, s: &str) -> String {
    let left = match how {
        Leaving::Deleted => format!("{p}state IN (0, 1)"),
        Leaving::DeadLettered => format!("{p}state = 2"),
    };
    let keep = format!(
        "CASE WHEN {p}key_hold >= 2 AND {p}key IS NOT NULL AND {left}
              THEN {s}.keep_key({p}queue, {p}key, {p}key_hold, {p}key_until, {p}key_then, {p}id) END"
    );
    if stmt.contains("RETURNING") {
        format!("{stmt}, {keep}")
    } else {
        format!("{stmt}\n                 RETURNING {keep}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_statement_returns_its_columns_first() {
        let r = keeping(
            "DELETE FROM x.items i WHERE i.id = $1 RETURNING i.id, i.state",
            "i.",
            Leaving::Deleted,
            "x",
        );
        assert!(
            r.starts_with("DELETE FROM x.items i WHERE i.id = $1 RETURNING i.id, i.state, CASE")
        );
        assert!(r.contains("i.state IN (0, 1)"), "{r}");
        assert!(r.ends_with("i.key_then, i.id) END"), "{r}");
        let r = keeping(
            "UPDATE x.items SET state = 2 WHERE id = $1",
            "",
            Leaving::DeadLettered,
            "x",
        );
        assert!(r.contains("RETURNING CASE WHEN key_hold >= 2"), "{r}");
        assert!(r.contains("AND state = 2"), "{r}");
    }

    #[test]
    fn a_kept_statement_is_still_recorded() {
        // The record of finished jobs wraps the statements after this (`record_history`).
        let r = crate::history_sql::recorded(
            &keeping(
                "DELETE FROM x.items WHERE id = $1",
                "",
                Leaving::Deleted,
                "x",
            ),
            "",
            "x",
            "2",
            "",
        );
        assert!(
            r.contains("x.keep_key(queue, key, key_hold, key_until, key_then, id) END AS r0"),
            "{r}"
        );
        assert!(r.ends_with("SELECT r0 FROM d"), "{r}");
    }
}
