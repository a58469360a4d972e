//! The grouped claim with less fixed work per call: schema step 25 (issue 32, 1,000
//! ordered groups of 100 items drained at >= 0.5x the ungrouped pool). `schema.rs` takes
//! [`MIGRATION`] and [`claim_fn`] from here.
//!
//! **Why.** Step 22's `flow_claim_groups` (`flow_groups_plans.rs`) cost about 0.8 ms of
//! server CPU a claim and ack of 2 items against about 0.45 ms for the plain claim's, and
//! about 27 us per item claimed against 9 (BENCHMARKS.md, round 13, measured in one
//! session with the store's session settings). Of the fixed part, what it did whatever it
//! found:
//! - it locked and read the heads of `n + 8` groups, not `n`: the bench's claims ask for
//!   10 to 36 items, so 8 more groups are 22 % to 80 % more locks and head probes, while a
//!   group held back (its head leased or not due) is rare at the front of the turn order,
//!   where the groups served longest ago are;
//! - it looked for ungrouped rows in one `UNION ALL` of eight subqueries (one a priority),
//!   four plan nodes each, all made afresh for every claim (making plan nodes was 12 % of
//!   the CPU of a claim of 2, most of it the union's eight `Limit` and index scan nodes);
//! - it walked every locked group's head in plpgsql, one fetched row and five tests each,
//!   merged the ready heads with the ungrouped rows one at a time even when none came, and
//!   wrote the served groups' turns in a statement of their own.
//!
//! **How.** Same signature, results and rules as steps 18 and 22 (their module docs), and
//! each statement still has one possible plan in the store's sessions (step 22's reasons:
//! the groups written back by `ctid`, the leases by primary key): a chunk of groups is
//! `n - taken + 2`; the ungrouped rows are one subquery run per priority level
//! (`generate_series(7, 0, -1)` joined `LATERAL`: the same index range per level, in the
//! same order); a chunk's heads are told in one statement that hands back the ready ones in
//! turn order as arrays (and whether any group held items back, the soonest not-due head,
//! and the groups with no live row, which the loop then removes or sends to the back as
//! before); with no ungrouped row the picks are the ready heads as they are; and the turns
//! of the served groups move in the leases' statement (a `WITH` of its own). A group's head
//! is still read in a snapshot taken while its group's row is held, never leased twice nor
//! out of turn.

/// Schema step 25 (issue 32): `flow_claim_groups` made again (`{flow_claim_groups_lean}`,
/// filled in by `schema.rs` with [`claim_fn`]), same signature and result type (step 21's
/// thirteen columns). `{s}` the quoted schema, `{schema}` the bare name. Idempotent.
pub(crate) const MIGRATION: &str = r#"
    {flow_claim_groups_lean}
"#;

/// Groups locked beyond those still wanted, per chunk (step 22 locked 8 more).
pub(crate) const SPARE_GROUPS: usize = 2;

/// The claim of a grouped queue with no limit and no rate, with less fixed work per call.
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
        left_n integer := budget; chunk integer; seen integer; want integer;
        l_grp bigint[]; l_turn timestamptz[]; l_last bigint[]; l_tid tid[];
        at_turn timestamptz := '-infinity'; at_grp bigint := 0;
        u_ids bigint[]; u_prio smallint[]; u_vis timestamptz[];
        g_ids bigint[] := '{}'; g_prio smallint[] := '{}'; g_key timestamptz[] := '{}';
        g_tids tid[] := '{}';
        r_ids bigint[]; r_prio smallint[]; r_key timestamptz[]; r_tids tid[];
        r_held boolean; r_due timestamptz; e_grp bigint[]; e_last bigint[]; e_tid tid[];
        picked bigint[] := '{}'; served tid[] := '{}';
        ui integer := 1; gi integer := 1; i integer;
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
        SELECT COALESCE(array_agg(u.id), '{}'), COALESCE(array_agg(u.priority), '{}'),
               COALESCE(array_agg(u.visible_at), '{}')
            INTO u_ids, u_prio, u_vis
            FROM (SELECT l.id, l.priority, l.visible_at FROM generate_series(7, 0, -1) p(p)
                  CROSS JOIN LATERAL (
                      SELECT it.id, it.priority, it.visible_at FROM {s}.items it
                      WHERE it.queue = q AND it.state = 0 AND it.priority = p.p
                        AND it.visible_at <= now_ts AND it.fgroup IS NULL
                        AND (it.expires_at IS NULL OR it.expires_at > now_ts)
                      ORDER BY it.visible_at, it.id LIMIT n FOR UPDATE SKIP LOCKED) l
                  LIMIT n) u;
        -- The groups in turn order, {spare} more than still wanted at a time, locked: each
        -- row's turn, last and place kept (the newest version: the one locked).
        <<chunks>>
        LOOP
            EXIT WHEN cardinality(g_ids) >= n OR left_n <= 0;
            chunk := LEAST(left_n, n - cardinality(g_ids) + {spare});
            SELECT array_agg(l.grp), array_agg(l.turn), array_agg(l.last), array_agg(l.ctid)
                INTO l_grp, l_turn, l_last, l_tid
                FROM (SELECT g.grp, g.turn, g.last, g.ctid FROM {s}.flow_groups g
                      WHERE g.queue = q AND (g.turn, g.grp) > (at_turn, at_grp)
                      ORDER BY g.turn, g.grp LIMIT chunk FOR UPDATE SKIP LOCKED) l;
            seen := COALESCE(cardinality(l_grp), 0);
            EXIT WHEN seen = 0;
            left_n := left_n - seen;
            at_turn := l_turn[seen]; at_grp := l_grp[seen];
            -- Their heads, told in one statement with a snapshot taken while holding them:
            -- kind 0 no live row, 1 held (its head leased, or a leased row behind a head
            -- put back or redriven), 2 gone, 3 not due, 4 ready (in turn order).
            SELECT array_agg(x.id) FILTER (WHERE x.kind = 4),
                   array_agg(x.priority) FILTER (WHERE x.kind = 4),
                   array_agg(GREATEST(x.turn, x.due)) FILTER (WHERE x.kind = 4),
                   array_agg(x.tid) FILTER (WHERE x.kind = 4),
                   bool_or(x.kind = 1), min(x.due) FILTER (WHERE x.kind = 3),
                   array_agg(x.grp) FILTER (WHERE x.kind = 0),
                   array_agg(x.last) FILTER (WHERE x.kind = 0),
                   array_agg(x.tid) FILTER (WHERE x.kind = 0)
                INTO r_ids, r_prio, r_key, r_tids, r_held, r_due, e_grp, e_last, e_tid
                FROM (SELECT c.grp, c.turn, c.last, c.tid, h.id, h.priority, h.due,
                             CASE WHEN h.id IS NULL THEN 0
                                  WHEN h.state <> 0 THEN 1
                                  WHEN h.expires_at IS NOT NULL AND h.expires_at <= now_ts
                                      THEN 2
                                  WHEN h.due > now_ts THEN 3
                                  WHEN c.grp = ANY(ARRAY(
                                      SELECT b.fgroup FROM {s}.items b
                                      WHERE b.queue = q AND b.state = 1
                                        AND b.fgroup = ANY(l_grp))) THEN 1
                                  ELSE 4 END AS kind
                      FROM unnest(l_grp, l_turn, l_last, l_tid) WITH ORDINALITY
                           AS c(grp, turn, last, tid, o)
                      LEFT JOIN LATERAL (
                          SELECT it.id, it.state, it.priority, it.expires_at,
                                 CASE WHEN it.visible_at >= {hold} THEN it.fdue
                                      ELSE it.visible_at END AS due
                          FROM {s}.items it
                          WHERE it.queue = q AND it.fgroup = c.grp
                            AND it.state <= CASE WHEN block_dead THEN 2 ELSE 1 END
                          ORDER BY it.fseq LIMIT 1) h ON true
                      ORDER BY c.o) x;
            IF r_held THEN
                held := held | 4;
            END IF;
            due_ts := LEAST(due_ts, r_due);
            IF r_ids IS NOT NULL THEN
                want := n - cardinality(g_ids);
                g_ids := g_ids || r_ids[1:want]; g_prio := g_prio || r_prio[1:want];
                g_key := g_key || r_key[1:want]; g_tids := g_tids || r_tids[1:want];
            END IF;
            -- No live row: gone, unless a dead letter may come back (a redrive).
            FOR i IN 1..COALESCE(cardinality(e_grp), 0) LOOP
                IF NOT EXISTS (SELECT 1 FROM {s}.items it
                               WHERE it.queue = q AND it.fgroup = e_grp[i]) THEN
                    DELETE FROM {s}.flow_groups g
                        WHERE g.ctid = e_tid[i] AND g.last = e_last[i];
                ELSE
                    -- Only dead letters: to the back, out of the next claims' way.
                    UPDATE {s}.flow_groups g SET turn = now_ts WHERE g.ctid = e_tid[i];
                END IF;
            END LOOP;
            EXIT WHEN seen < chunk;
        END LOOP;
        -- The walk's merge: priority first, then the row's visible time against the turn.
        IF cardinality(u_ids) = 0 THEN
            picked := g_ids; served := g_tids; gi := cardinality(g_ids) + 1;
        END IF;
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
        IF cardinality(picked) > 0 THEN
            -- The served groups to the back, and the leases: `state < 1`, not `= 0`, so
            -- that the primary key is the only index the plan can take (step 22).
            RETURN QUERY
                WITH turns AS (
                    UPDATE {s}.flow_groups g SET turn = now_ts WHERE g.ctid = ANY(served))
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

/// Step 25's `CREATE` (`{flow_claim_groups_lean}` in [`MIGRATION`]), `{s}` and `{schema}`
/// still to fill in.
pub(crate) fn claim_fn() -> String {
    CLAIM_FN
        .replace("{spare}", &SPARE_GROUPS.to_string())
        .replace("{hold}", crate::flow_sql::HOLD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_25_keeps_the_result_type_and_leaves_no_placeholder_but_the_schemas() {
        let sql = claim_fn();
        assert!(sql.contains("CREATE OR REPLACE FUNCTION {s}.flow_claim_groups("));
        assert!(sql.contains("r_plain boolean"));
        assert!(sql.contains("n - cardinality(g_ids) + 2"));
        assert!(!sql.contains("{spare}") && !sql.contains("{hold}"));
    }
}
