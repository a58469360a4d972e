//! The grouped claim planned one way whatever the statistics say: schema step 22 (issue
//! 32, 1,000 ordered groups of 100 items drained at >= 0.5x the ungrouped pool).
//! `schema.rs` takes [`MIGRATION`] and [`claim_fn`] from here. Step 25
//! (`flow_groups_lean.rs`) makes the function again with less fixed work per call, each
//! statement still planned one way; this text stays as step 22 shipped it.
//!
//! **Why.** The store's sessions keep one generic plan per statement
//! (`plan_cache_mode = force_generic_plan`, `open.rs`), made at a connection's first claim
//! from the statistics of that moment. Step 18's `flow_claim_groups` (`flow_groups_sql.rs`,
//! made again by step 21) had three statements whose generic plan depended on them, and a
//! pool's connections kept whichever they got: the grouped drain ran in one of two modes,
//! about 3x apart (BENCHMARKS.md, round 12; seen with `auto_explain` on the bench's
//! sessions):
//!
//! - the leases' `UPDATE` (`WHERE it.id = ANY(picked) AND it.queue = q AND it.state = 0`):
//!   `state = 0` is the claim index's predicate, so besides the primary key the planner
//!   could take `items_claim` with `queue` as its bound, reading every waiting row of the
//!   queue once (26,690 rows for a claim of 36), or once per id (`id = ANY` as a qual on
//!   the index's fourth column: 9,866 buffers and 27 ms for 35 rows);
//! - the heads' statement joined `flow_groups` again for the locked groups' rows: planned
//!   as a nested loop over the queue's every group (`Join Filter`, 7,271 rows passed for 44
//!   at 300 groups);
//! - the served groups' turns (`grp = ANY(served)`) could be bound by the turn index, its
//!   third column.
//!
//! **How.** Same signature, same results, same rules as step 18 (its module docs): the
//! statement that locks the groups in turn order (`FOR UPDATE SKIP LOCKED`) also returns
//! each row's turn, `last` and `ctid`, so the heads' statement reads no `flow_groups` (the
//! heads still in a fresh snapshot taken while holding them, their leased rows as one
//! sub-select of the same statement); the groups' rows are written back by `ctid` (rows
//! this transaction holds locked: their `ctid` cannot move under it; a TID scan is the
//! only plan); and the leases' `UPDATE` tests the state as `it.state < 1`, from which no
//! partial index's predicate follows, so the primary key is the only index it can use.
//! Nothing else changed: a group's head is never leased twice nor out of turn. The text
//! is whole here, not step 18's patched (most of its statements change; step 18's stays as
//! shipped), but for the ungrouped rows' statement, which is step 18's.

/// Schema step 22 (issue 32): `flow_claim_groups` made again (`{flow_claim_groups_plans}`,
/// filled in by `schema.rs` with [`claim_fn`]), same signature and result type (step 21's
/// thirteen columns). `{s}` the quoted schema, `{schema}` the bare name. Idempotent.
pub(crate) const MIGRATION: &str = r#"
    {flow_claim_groups_plans}
"#;

/// The claim of a grouped queue with no limit and no rate, every statement with one plan.
const CLAIM_FN: &str = r#"
    CREATE OR REPLACE FUNCTION {s}.flow_claim_groups(
        q text, n integer, vis_us bigint, block_dead boolean, max_item bigint,
        note_start boolean, budget integer)
    RETURNS TABLE (r_id bigint, r_lease bigint, r_attempts integer, r_priority smallint,
                   r_rank bigint, r_deadline_in bigint, r_expires_in bigint, r_payload bytea,
                   r_size bigint, r_progress bytea, r_wake_in bigint, r_held integer,
                   r_plain boolean)
    LANGUAGE plpgsql AS $fn$
    DECLARE
        now_ts timestamptz; due_ts timestamptz; wake_ns bigint;
        held integer := 0;    -- 4: a group's turn held items back
        left_n integer := budget; chunk integer; seen integer;
        l_grp bigint[]; l_turn timestamptz[]; l_last bigint[]; l_tid tid[];
        at_turn timestamptz := '-infinity'; at_grp bigint := 0;
        u_ids bigint[] := '{}'; u_prio smallint[] := '{}'; u_vis timestamptz[] := '{}';
        g_ids bigint[] := '{}'; g_prio smallint[] := '{}'; g_key timestamptz[] := '{}';
        g_tids tid[] := '{}';
        picked bigint[] := '{}'; served tid[] := '{}';
        ui integer := 1; gi integer := 1;
        r record;
    BEGIN
        PERFORM pg_advisory_xact_lock_shared(hashtext('leaseq.flow.{schema}'), hashtext(q));
        IF EXISTS (SELECT 1 FROM {s}.flow_limits f WHERE f.queue = q)
           OR EXISTS (SELECT 1 FROM {s}.flow_rates f WHERE f.queue = q) THEN
            -- A limit or a rate came since `flow_claim` looked: claim again (it walks).
            RETURN QUERY SELECT NULL::bigint, NULL::bigint, NULL::integer, NULL::smallint,
                NULL::bigint, NULL::bigint, NULL::bigint, NULL::bytea, NULL::bigint,
                NULL::bytea, 0::bigint, 0, NULL::boolean;
            RETURN;
        END IF;
        now_ts := clock_timestamp();
        -- Ungrouped ready rows in claim order, a level at a time, locked (others' skipped).
        FOR r IN {ungrouped} LOOP
            u_ids := u_ids || r.id; u_prio := u_prio || r.priority;
            u_vis := u_vis || r.visible_at;
        END LOOP;
        -- The groups in turn order, a few more than wanted at a time, locked: each row's
        -- turn, last and place kept (the newest version: the one locked).
        <<chunks>>
        LOOP
            EXIT WHEN cardinality(g_ids) >= n OR left_n <= 0;
            chunk := LEAST(left_n, n - cardinality(g_ids) + 8);
            SELECT array_agg(l.grp), array_agg(l.turn), array_agg(l.last), array_agg(l.ctid)
                INTO l_grp, l_turn, l_last, l_tid
                FROM (SELECT g.grp, g.turn, g.last, g.ctid FROM {s}.flow_groups g
                      WHERE g.queue = q AND (g.turn, g.grp) > (at_turn, at_grp)
                      ORDER BY g.turn, g.grp LIMIT chunk FOR UPDATE SKIP LOCKED) l;
            seen := COALESCE(cardinality(l_grp), 0);
            EXIT WHEN seen = 0;
            left_n := left_n - seen;
            -- Their heads and whether they have a leased row (their head, or a row behind
            -- a head put back or redriven): read with a snapshot taken while holding them.
            FOR r IN
                SELECT c.grp, c.turn, c.last, c.tid, h.id, h.state, h.priority,
                       CASE WHEN h.visible_at >= {hold} THEN h.fdue ELSE h.visible_at END
                           AS due,
                       (h.expires_at IS NOT NULL AND h.expires_at <= now_ts) AS gone,
                       c.grp = ANY(ARRAY(
                           SELECT b.fgroup FROM {s}.items b
                           WHERE b.queue = q AND b.state = 1 AND b.fgroup = ANY(l_grp)))
                           AS busy
                FROM unnest(l_grp, l_turn, l_last, l_tid) WITH ORDINALITY
                     AS c(grp, turn, last, tid, o)
                LEFT JOIN LATERAL (
                    SELECT it.id, it.state, it.priority, it.visible_at, it.fdue, it.expires_at
                    FROM {s}.items it
                    WHERE it.queue = q AND it.fgroup = c.grp
                      AND it.state <= CASE WHEN block_dead THEN 2 ELSE 1 END
                    ORDER BY it.fseq LIMIT 1) h ON true
                ORDER BY c.o
            LOOP
                at_turn := r.turn; at_grp := r.grp;
                IF r.id IS NULL THEN
                    -- No live row: gone, unless a dead letter may come back (a redrive).
                    IF NOT EXISTS (SELECT 1 FROM {s}.items it
                                   WHERE it.queue = q AND it.fgroup = r.grp) THEN
                        DELETE FROM {s}.flow_groups g
                            WHERE g.ctid = r.tid AND g.last = r.last;
                    ELSE
                        -- Only dead letters: to the back, out of the next claims' way.
                        UPDATE {s}.flow_groups g SET turn = now_ts WHERE g.ctid = r.tid;
                    END IF;
                ELSIF r.state <> 0 THEN
                    held := held | 4;
                ELSIF r.gone THEN
                    NULL;
                ELSIF r.due > now_ts THEN
                    due_ts := LEAST(due_ts, r.due);
                ELSIF r.busy THEN
                    held := held | 4;
                ELSIF cardinality(g_ids) < n THEN
                    g_ids := g_ids || r.id; g_prio := g_prio || r.priority;
                    g_key := g_key || GREATEST(r.turn, r.due); g_tids := g_tids || r.tid;
                END IF;
            END LOOP;
            EXIT WHEN seen < chunk;
        END LOOP;
        -- The walk's merge: priority first, then the row's visible time against the turn.
        WHILE cardinality(picked) < n
              AND (ui <= cardinality(u_ids) OR gi <= cardinality(g_ids)) LOOP
            IF ui <= cardinality(u_ids)
               AND (gi > cardinality(g_ids) OR u_prio[ui] > g_prio[gi]
                    OR (u_prio[ui] = g_prio[gi] AND u_vis[ui] <= g_key[gi])) THEN
                picked := picked || u_ids[ui]; ui := ui + 1;
            ELSE
                picked := picked || g_ids[gi]; served := served || g_tids[gi]; gi := gi + 1;
            END IF;
        END LOOP;
        IF cardinality(served) > 0 THEN
            UPDATE {s}.flow_groups g SET turn = now_ts WHERE g.ctid = ANY(served);
        END IF;
        IF cardinality(picked) > 0 THEN
            -- `state < 1`, not `= 0`: no partial index's predicate follows from it, so the
            -- primary key is the only index the plan can take (module docs).
            RETURN QUERY
                UPDATE {s}.items it SET state = 1, lease = it.lease + 1,
                       attempts = it.attempts + 1, leased_at = now_ts,
                       started_at = CASE WHEN note_start
                           THEN COALESCE(it.started_at, now_ts) ELSE it.started_at END,
                       deadline = LEAST(clock_timestamp() + vis_us * interval '1 microsecond',
                                        COALESCE(it.expires_at, 'infinity'))
                WHERE it.id = ANY(picked) AND it.queue = q AND it.state < 1
                RETURNING it.id, it.lease, it.attempts, it.priority,
                          array_position(picked, it.id)::bigint,
                          (EXTRACT(EPOCH FROM (it.deadline - clock_timestamp())) * 1000000)::bigint,
                          (EXTRACT(EPOCH FROM (it.expires_at - clock_timestamp())) * 1000000)::bigint,
                          CASE WHEN octet_length(it.payload) <= max_item THEN it.payload END,
                          octet_length(it.payload)::bigint, it.progress,
                          NULL::bigint, NULL::integer, it.node IS NULL;
        END IF;
        wake_ns := (EXTRACT(EPOCH FROM due_ts) * 1000000)::bigint * 1000;
        RETURN QUERY SELECT NULL::bigint, NULL::bigint, NULL::integer, NULL::smallint,
            NULL::bigint, NULL::bigint, NULL::bigint, NULL::bytea, NULL::bigint, NULL::bytea,
            (wake_ns / 1000 - (EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::bigint),
            held, NULL::boolean;
    END
    $fn$;
"#;

/// Step 22's `CREATE` (`{flow_claim_groups_plans}` in [`MIGRATION`]), `{s}` and `{schema}`
/// still to fill in; the ungrouped rows' statement is step 18's (`flow_groups_sql.rs`).
pub(crate) fn claim_fn() -> String {
    CLAIM_FN
        .replace("{ungrouped}", &crate::flow_groups_sql::ungrouped())
        .replace("{hold}", crate::flow_sql::HOLD)
}
