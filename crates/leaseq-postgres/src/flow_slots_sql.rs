//! Flow control in SQL, the concurrent claim of a queue whose only rule is a queue-wide
//! concurrency limit (issue 32): schema step 15, the queue's **slots** (`flow_slots`) and
//! their claim (`flow_claim_slots`). A leaf: `schema.rs` takes [`MIGRATION`] from here,
//! `flow_sql.rs`'s `flow_claim` calls the function, `flow.rs` dissolves the slots.
//!
//! **Why.** `flow_claim` runs under the queue's advisory lock, held to its commit: the
//! flow claims of a queue ran one at a time across every process, each waiting for the
//! one before it to flush its commit. A queue limit of `M` is now `M` rows of
//! `flow_slots`, each free or holding the lease (`id`, `lease`) it was taken for; a lease
//! holds its slot until its row is no longer leased under it (acked, failed, put back,
//! rescued: nothing a settle needs to say). A claim locks the slots that look free with
//! `SKIP LOCKED`, reads which of them are free in its next statement (a fresh snapshot,
//! taken once it holds them: it sees every claim that held them before), claims that many
//! ready rows with `SKIP LOCKED` as the plain claim does, and writes each lease into its
//! slot. Claims of two processes take different slots and commit side by side; no lease
//! is ever handed out without a free slot, so at most `M` are in flight.
//!
//! **When.** Only `flow_claim` makes slots, under the queue's advisory lock, when the
//! queue's settings are one queue limit `M >= 1` and nothing else (no kind or partition
//! limit, no rate, never a grouped push) and at most `M` of its flow claims' leases are
//! in flight (`flow_running`): the slots take those over. Any change of the settings
//! (`flow.rs`, under the same lock) deletes them first (waiting for the slot claims under
//! way), and so does a flow claim that finds the queue grouped; their leases go back to
//! `flow_running` (every leased row of the queue), the next flow claim walks as before
//! and makes slots again if the new settings allow.

/// Whether slot `sl` is free: its lease (if any) no longer leased. A scalar subquery, so
/// that it is a primary-key probe per slot (a `NOT EXISTS` beside an `OR` is planned as a
/// hashed scan of every leased row's index entry, the dead ones included).
macro_rules! slot_free {
    () => {
        "NOT COALESCE((SELECT it.lease = sl.lease AND it.state = 1
                          FROM {s}.items it WHERE it.id = sl.id), false)"
    };
}

/// `flow_claim_slots` (a macro, so that [`MIGRATION`] is one `concat!`); `{s}` the quoted
/// schema, the result column of step 21 at its placeholders (`flow_plain_sql.rs`).
macro_rules! claim_slots_fn {
    () => {
        concat!(
            r#"    CREATE OR REPLACE FUNCTION {s}.flow_claim_slots(
        q text, n integer, vis_us bigint, max_item bigint, note_start boolean)
    RETURNS TABLE (r_id bigint, r_lease bigint, r_attempts integer, r_priority smallint,
                   r_rank bigint, r_deadline_in bigint, r_expires_in bigint, r_payload bytea,
                   r_size bigint, r_progress bytea, r_wake_in bigint, r_held integer{plain_col})
    LANGUAGE plpgsql AS $fn$
    DECLARE
        now_ts timestamptz;
        got integer[]; free integer[] := '{}'; picked bigint[] := '{}';
    BEGIN
        -- The slots that look free, locked without waiting: another claim's are skipped.
        got := ARRAY(
            SELECT sl.slot FROM {s}.flow_slots sl
            WHERE sl.queue = q AND "#,
    slot_free!(),
    r#"
            ORDER BY sl.slot LIMIT n FOR UPDATE OF sl SKIP LOCKED);
        IF cardinality(got) > 0 THEN
            -- Which are free, read with a snapshot taken while holding them: a slot this
            -- claim locked after another committed a lease into it shows that lease here.
            free := ARRAY(
                SELECT sl.slot FROM {s}.flow_slots sl
                WHERE sl.queue = q AND sl.slot = ANY(got) AND "#,
    slot_free!(),
    r#"
                ORDER BY sl.slot);
        END IF;
        -- The leases' instant: after their slots were found free (every settle that
        -- freed one committed before it).
        now_ts := clock_timestamp();
        IF cardinality(free) > 0 THEN
            -- The plain claim's choice (the claim index's order, locked rows skipped).
            picked := ARRAY(
                SELECT c.id FROM (
                    SELECT it.id FROM {s}.items it
                    WHERE it.queue = q AND it.state = 0 AND it.visible_at <= now_ts
                      AND it.fgroup IS NULL
                      AND (it.expires_at IS NULL OR it.expires_at > now_ts)
                    ORDER BY it.priority DESC, it.visible_at, it.id
                    LIMIT 1000 FOR UPDATE SKIP LOCKED) AS c
                LIMIT cardinality(free));
        END IF;
        IF cardinality(picked) > 0 THEN
            RETURN QUERY
                WITH upd AS (
                UPDATE {s}.items it SET state = 1, lease = it.lease + 1,
                       attempts = it.attempts + 1, leased_at = now_ts,
                       started_at = CASE WHEN note_start
                           THEN COALESCE(it.started_at, now_ts) ELSE it.started_at END,
                       deadline = LEAST(clock_timestamp() + vis_us * interval '1 microsecond',
                                        COALESCE(it.expires_at, 'infinity'))
                WHERE it.id = ANY(picked) AND it.queue = q AND it.state = 0
                RETURNING it.id, it.lease, it.attempts, it.priority,
                          array_position(picked, it.id)::bigint AS rank,
                          (EXTRACT(EPOCH FROM (it.deadline - clock_timestamp())) * 1000000)::bigint
                              AS deadline_in,
                          (EXTRACT(EPOCH FROM (it.expires_at - clock_timestamp())) * 1000000)::bigint
                              AS expires_in,
                          CASE WHEN octet_length(it.payload) <= max_item THEN it.payload END
                              AS payload,
                          octet_length(it.payload)::bigint AS size, it.progress{plain_ret}),
                -- The i-th row picked takes the i-th free slot (no more rows than slots).
                held AS (
                    UPDATE {s}.flow_slots sl SET id = u.id, lease = u.lease FROM upd u
                    WHERE sl.queue = q AND sl.slot = free[u.rank::integer])
                SELECT u.id, u.lease, u.attempts, u.priority, u.rank, u.deadline_in,
                       u.expires_in, u.payload, u.size, u.progress, NULL::bigint,
                       NULL::integer{plain_of_u}
                FROM upd u;
        END IF;
        -- Short for want of a free slot: the limit held items back (1), its slots (8).
        RETURN QUERY SELECT NULL::bigint, NULL::bigint, NULL::integer, NULL::smallint,
            NULL::bigint, NULL::bigint, NULL::bigint, NULL::bytea, NULL::bigint, NULL::bytea,
            NULL::bigint,
            CASE WHEN cardinality(free) < n AND cardinality(picked) = cardinality(free)
                 THEN 1 | 8 ELSE 0 END{no_plain};
    END
    $fn$;
"#
        )
    };
}

/// Schema step 15 (issue 32): the slots and their claim; `flow_claim` made again (it
/// calls the slots' claim). `{s}` the quoted schema, `{flow_claim_fn}` filled in by
/// `schema.rs`. Idempotent.
pub(crate) const MIGRATION: &str = concat!(
    r#"
    -- A queue limit's slots: free (id NULL, or its lease no longer leased) or held.
    CREATE TABLE IF NOT EXISTS {s}.flow_slots (
        queue       text        NOT NULL,
        slot        integer     NOT NULL,
        id          bigint,
        lease       bigint,
        PRIMARY KEY (queue, slot)
    ) WITH (autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 1000);
"#,
    claim_slots_fn!(),
    r#"    {flow_claim_fn}
"#
);

/// What `flow_claim` runs under the queue's advisory lock before it counts (plpgsql, `q`
/// the queue): a queue found grouped gives up its slots, their leases back
/// to `flow_running` (read after the delete waited for the slot claims under way).
pub(crate) const DISSOLVE: &str = r#"
        IF is_grouped AND EXISTS (SELECT 1 FROM {s}.flow_slots sl WHERE sl.queue = q) THEN
            DELETE FROM {s}.flow_slots sl WHERE sl.queue = q;
            INSERT INTO {s}.flow_running AS r (queue, id, lease, fkind, fpart)
                SELECT q, it.id, it.lease, it.fkind, it.fpart FROM {s}.items it
                WHERE it.queue = q AND it.state = 1
                ON CONFLICT (queue, id) DO UPDATE SET lease = EXCLUDED.lease;
        END IF;
"#;

/// What `flow_claim` runs once it has counted (`qrun` of `qmax`): a queue whose only rule
/// is its limit gets its slots, the flow claims' leases in flight in the first ones, and
/// claims through them from now on (this claim included).
pub(crate) const MAKE: &str = r#"
        IF NOT is_grouped AND qmax >= 1 AND l_scope IS NULL AND t_scope IS NULL
           AND qrun <= qmax THEN
            INSERT INTO {s}.flow_slots (queue, slot, id, lease)
                SELECT q, g.k, r.id, r.lease FROM generate_series(1, qmax) AS g(k)
                LEFT JOIN (SELECT fr.id, fr.lease, row_number() OVER () AS rn
                           FROM {s}.flow_running fr WHERE fr.queue = q) AS r ON r.rn = g.k
                ON CONFLICT (queue, slot) DO NOTHING;
            DELETE FROM {s}.flow_running fr WHERE fr.queue = q;
            RETURN QUERY SELECT * FROM {s}.flow_claim_slots(q, n, vis_us, max_item, note_start);
            RETURN;
        END IF;
"#;

/// `flow_claim`'s way in (`q` the queue): a queue with slots and no grouped push claims
/// through them, without the advisory lock.
pub(crate) const ENTER: &str = r#"
        IF NOT is_grouped AND EXISTS (SELECT 1 FROM {s}.flow_slots sl WHERE sl.queue = q) THEN
            RETURN QUERY SELECT * FROM {s}.flow_claim_slots(q, n, vis_us, max_item, note_start);
            RETURN;
        END IF;
"#;

/// What a change of a queue's flow settings (`flow.rs`, under the advisory lock) runs
/// first (`$1` the queue): the slots deleted, waiting for the slot claims under way; the
/// leases in flight then go to `flow_running` (the change's next statement).
pub(crate) const DROP_SLOTS: &str = "DELETE FROM {s}.flow_slots WHERE queue = $1";

/// `flow_claim_slots`'s `CREATE` (step 21 makes it again, `flow_plain_sql.rs`, and step 23
/// with its picked rows leased by primary key, `flow_slots_pk_sql.rs`), `{s}` and the result
/// column's placeholders still to fill in.
pub(crate) fn claim_fn() -> String {
    claim_slots_fn!().to_string()
}
