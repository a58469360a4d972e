//! Schema step 20's claim of a grouped queue with no limit and no rate (issue 32):
//! `flow_claim_groups` in fewer statements. A leaf: `flow_plain_sql.rs` takes [`claim_fn`]
//! from here (step 20 makes the function again, with the row's graph flag).
//!
//! **Why.** Step 18's claim (`flow_groups_sql.rs`) ran about ten statements a call beside
//! `flow_claim`'s own: per chunk of locked groups one for their leased rows and one for
//! their heads, then a plpgsql loop over the heads, an `UPDATE` of the served groups'
//! turns, the leases' `UPDATE`, and a closing `SELECT`. A pool's claim is as slow as this
//! function is, and each statement pays the executor's start and its own snapshot.
//!
//! **How.** The rules are step 18's (its module docs): the advisory lock taken shared,
//! the groups locked in turn order with `SKIP LOCKED` a chunk at a time, their heads read
//! in the *next* statement (a snapshot taken while holding them, so that it sees every
//! claim that held them before), the walk's merge of the ungrouped rows. What changed: a
//! chunk's heads, whether each group has a leased row (an index probe of `items_group_busy`
//! per group) and the verdict on each (ready, held, not due, gone) are one statement
//! that aggregates the ready heads into arrays in turn order; a group with no live row
//! (rare) is then removed or sent to the back; without ungrouped rows the merge is the
//! ready heads as they came; the served groups' turns move in the leases' statement (a
//! data-modifying `WITH`); the closing row is a `RETURN NEXT`, no query.

/// Step 20's `flow_claim_groups` (`{s}` the quoted schema, `{schema}` the bare name).
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
        now_ts timestamptz; due_ts timestamptz; c_due timestamptz; wake_ns bigint;
        held integer := 0;    -- 4: a group's turn held items back
        left_n integer := budget; chunk integer; seen integer; k integer;
        locked bigint[]; l_turn timestamptz := '-infinity'; l_grp bigint := 0;
        c_busy boolean; c_ids bigint[]; c_prio smallint[]; c_key timestamptz[];
        c_grps bigint[]; c_empty bigint[]; c_last bigint[];
        u_ids bigint[] := '{}'; u_prio smallint[] := '{}'; u_vis timestamptz[] := '{}';
        g_ids bigint[] := '{}'; g_prio smallint[] := '{}'; g_key timestamptz[] := '{}';
        g_grps bigint[] := '{}';
        picked bigint[] := '{}'; served bigint[] := '{}';
        ui integer := 1; gi integer := 1;
        r record;
    BEGIN
        PERFORM pg_advisory_xact_lock_shared(hashtext('leaseq.flow.{schema}'), hashtext(q));
        IF EXISTS (SELECT 1 FROM {s}.flow_limits f WHERE f.queue = q)
           OR EXISTS (SELECT 1 FROM {s}.flow_rates f WHERE f.queue = q) THEN
            -- A limit or a rate came since `flow_claim` looked: claim again (it walks).
            r_wake_in := 0; r_held := 0;
            RETURN NEXT;
            RETURN;
        END IF;
        now_ts := clock_timestamp();
        -- Ungrouped ready rows in claim order, a level at a time, locked (others' skipped).
        FOR r IN {ungrouped} LOOP
            u_ids := u_ids || r.id; u_prio := u_prio || r.priority;
            u_vis := u_vis || r.visible_at;
        END LOOP;
        -- The groups in turn order, a few more than wanted at a time, locked.
        <<chunks>>
        LOOP
            EXIT WHEN cardinality(g_ids) >= n OR left_n <= 0;
            chunk := LEAST(left_n, n - cardinality(g_ids) + 8);
            locked := ARRAY(
                SELECT g.grp FROM {s}.flow_groups g
                WHERE g.queue = q AND (g.turn, g.grp) > (l_turn, l_grp)
                ORDER BY g.turn, g.grp LIMIT chunk FOR UPDATE SKIP LOCKED);
            seen := cardinality(locked);
            EXIT WHEN seen = 0;
            left_n := left_n - seen;
            -- Each locked group's head and whether a row of it is leased (its head, or a
            -- row behind a head put back or redriven), judged in one statement with a
            -- snapshot taken while holding them: the ready heads in turn order.
            SELECT array_agg(j.id) FILTER (WHERE j.ready),
                   array_agg(j.priority) FILTER (WHERE j.ready),
                   array_agg(GREATEST(j.turn, j.due)) FILTER (WHERE j.ready),
                   array_agg(j.grp) FILTER (WHERE j.ready),
                   bool_or(j.held), min(j.due) FILTER (WHERE j.later),
                   array_agg(j.grp) FILTER (WHERE j.id IS NULL),
                   array_agg(j.last) FILTER (WHERE j.id IS NULL),
                   (array_agg(j.turn))[count(*)], (array_agg(j.grp))[count(*)]
                INTO c_ids, c_prio, c_key, c_grps, c_busy, c_due, c_empty, c_last,
                     l_turn, l_grp
                FROM (
                    SELECT g.grp, g.turn, g.last, h.id, h.priority, h.due,
                           h.state <> 0
                               OR (NOT h.gone AND COALESCE(h.due <= now_ts, true) AND b.busy)
                               AS held,
                           h.state = 0 AND NOT h.gone AND h.due > now_ts AS later,
                           h.state = 0 AND NOT h.gone AND COALESCE(h.due <= now_ts, true)
                               AND NOT b.busy AS ready
                    FROM unnest(locked) WITH ORDINALITY AS c(grp, o)
                    JOIN {s}.flow_groups g ON g.queue = q AND g.grp = c.grp
                    LEFT JOIN LATERAL (
                        SELECT it.id, it.state, it.priority,
                               CASE WHEN it.visible_at >= {hold} THEN it.fdue
                                    ELSE it.visible_at END AS due,
                               (it.expires_at IS NOT NULL AND it.expires_at <= now_ts) AS gone
                        FROM {s}.items it
                        WHERE it.queue = q AND it.fgroup = g.grp
                          AND it.state <= CASE WHEN block_dead THEN 2 ELSE 1 END
                        ORDER BY it.fseq LIMIT 1) h ON true
                    CROSS JOIN LATERAL (
                        SELECT EXISTS (SELECT 1 FROM {s}.items it
                                       WHERE it.queue = q AND it.fgroup = g.grp
                                         AND it.state = 1) AS busy) b
                    ORDER BY c.o) j;
            IF c_busy THEN
                held := held | 4;
            END IF;
            due_ts := LEAST(due_ts, c_due);
            IF c_ids IS NOT NULL THEN
                k := LEAST(cardinality(c_ids), n - cardinality(g_ids));
                g_ids := g_ids || c_ids[1:k]; g_prio := g_prio || c_prio[1:k];
                g_key := g_key || c_key[1:k]; g_grps := g_grps || c_grps[1:k];
            END IF;
            IF c_empty IS NOT NULL THEN
                -- No live row: gone, unless a dead letter may come back (a redrive); only
                -- dead letters: to the back, out of the next claims' way.
                DELETE FROM {s}.flow_groups g USING unnest(c_empty, c_last) AS e(grp, last)
                    WHERE g.queue = q AND g.grp = e.grp AND g.last = e.last
                      AND NOT EXISTS (SELECT 1 FROM {s}.items it
                                      WHERE it.queue = q AND it.fgroup = e.grp);
                UPDATE {s}.flow_groups g SET turn = now_ts
                    WHERE g.queue = q AND g.grp = ANY(c_empty)
                      AND EXISTS (SELECT 1 FROM {s}.items it
                                  WHERE it.queue = q AND it.fgroup = g.grp);
            END IF;
            EXIT WHEN seen < chunk;
        END LOOP;
        IF cardinality(u_ids) = 0 THEN
            -- Groups alone: their ready heads in turn order (at most `n`).
            picked := g_ids; served := g_grps;
        ELSE
            -- The walk's merge: priority first, then the row's visible time against the turn.
            WHILE cardinality(picked) < n
                  AND (ui <= cardinality(u_ids) OR gi <= cardinality(g_ids)) LOOP
                IF ui <= cardinality(u_ids)
                   AND (gi > cardinality(g_ids) OR u_prio[ui] > g_prio[gi]
                        OR (u_prio[ui] = g_prio[gi] AND u_vis[ui] <= g_key[gi])) THEN
                    picked := picked || u_ids[ui]; ui := ui + 1;
                ELSE
                    picked := picked || g_ids[gi]; served := served || g_grps[gi];
                    gi := gi + 1;
                END IF;
            END LOOP;
        END IF;
        IF cardinality(picked) > 0 THEN
            -- The served groups to the back, and the leases, in one statement.
            RETURN QUERY
                WITH turns AS (
                    UPDATE {s}.flow_groups g SET turn = now_ts
                    WHERE g.queue = q AND g.grp = ANY(served))
                UPDATE {s}.items it SET state = 1, lease = it.lease + 1,
                       attempts = it.attempts + 1, leased_at = now_ts,
                       started_at = CASE WHEN note_start
                           THEN COALESCE(it.started_at, now_ts) ELSE it.started_at END,
                       deadline = LEAST(clock_timestamp() + vis_us * interval '1 microsecond',
                                        COALESCE(it.expires_at, 'infinity'))
                WHERE it.id = ANY(picked) AND it.queue = q AND it.state = 0
                RETURNING it.id, it.lease, it.attempts, it.priority,
                          array_position(picked, it.id)::bigint,
                          (EXTRACT(EPOCH FROM (it.deadline - clock_timestamp())) * 1000000)::bigint,
                          (EXTRACT(EPOCH FROM (it.expires_at - clock_timestamp())) * 1000000)::bigint,
                          CASE WHEN octet_length(it.payload) <= max_item THEN it.payload END,
                          octet_length(it.payload)::bigint, it.progress,
                          NULL::bigint, NULL::integer, it.node IS NULL;
        END IF;
        wake_ns := (EXTRACT(EPOCH FROM due_ts) * 1000000)::bigint * 1000;
        r_id := NULL; r_lease := NULL; r_attempts := NULL; r_priority := NULL;
        r_rank := NULL; r_deadline_in := NULL; r_expires_in := NULL; r_payload := NULL;
        r_size := NULL; r_progress := NULL; r_plain := NULL;
        r_wake_in := wake_ns / 1000 - (EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::bigint;
        r_held := held;
        RETURN NEXT;
    END
    $fn$;
"#;

/// Step 20's `flow_claim_groups`'s `CREATE`, `{s}` and `{schema}` still to fill in.
pub(crate) fn claim_fn() -> String {
    CLAIM_FN
        .replace("{ungrouped}", &crate::flow_groups_sql::ungrouped())
        .replace("{hold}", crate::flow_sql::HOLD)
}
