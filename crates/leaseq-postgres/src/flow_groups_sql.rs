//! Flow control in SQL, the claim of a grouped queue with no limit and no rate (issue 32):
//! schema step 18, `flow_claim_groups`. `schema.rs` takes [`MIGRATION`], [`claim_fn`] and
//! [`ENTER`] (`flow_sql.rs`'s `flow_claim` calls the function) from here. Step 22
//! (`flow_groups_plans.rs`) makes the function again, the same rules with every statement
//! planned one way; this text stays as steps 18 and 21 shipped it.
//!
//! **Why.** `flow_claim` holds the queue's advisory lock to its commit, and a commit waits
//! for its WAL flush (3.4 ms a commit on the bench machine, `pgbench` of a one-row insert):
//! the flow claims of a queue ran one at a time, at most about 300 a second whatever their
//! size, while the plain claims of a pool commit side by side (their flushes shared). For
//! ordered groups alone nothing needs the whole queue: a group's turn is its own row of
//! `flow_groups`.
//!
//! **How.** The claim takes the advisory lock *shared* (claims of groups run side by side;
//! a change of the settings, `flow.rs`, and the walk of a queue with limits or rates take
//! it exclusive, so they wait for the group claims under way and those wait for them), and
//! reads again, under it, that the queue has no limit and no rate (else it claims nothing
//! and says to claim again at once: the next claim walks). It then locks the groups in
//! turn order (`flow_groups`, the group served longest ago first) with `SKIP LOCKED`, a
//! few more than it wants at a time: a group another claim holds is passed, as the walk
//! passes a group whose head is leased. In its next statement (a fresh snapshot, taken
//! while it holds them: it sees every claim that held them before commit) it reads each
//! locked group's head and tells it as the walk does (leased or a leased row in the group:
//! held; not due: when; gone: the group's row removed or sent to the back); whether a
//! group has a leased row is one statement for all the groups it locked (the walk asks
//! per group, each time a scan of every leased row of the queue: the planner picks
//! `items_leased`, whose rows do not say their group). Ungrouped ready
//! rows are locked with `SKIP LOCKED` as the plain claim does. The two streams are merged
//! by the walk's rule (priority, then the row's visible time against the group's turn), up
//! to `n`; the groups served go to the back in one `UPDATE` and the rows are leased in one.
//! A group's head is never leased twice nor out of turn: only the claim holding its
//! group's row leases in it, and a lease committed before that row was locked is seen.

/// Schema step 18 (issue 32): `flow_claim_groups` ([`claim_fn`]); `flow_claim` made again
/// (it calls it, [`ENTER`]). `{s}` the quoted schema, `{schema}` the bare name; the two
/// functions filled in by `schema.rs`. Idempotent.
pub(crate) const MIGRATION: &str = r#"
    {flow_claim_groups_fn}
    {flow_claim_fn}
"#;

/// The claim of a grouped queue with no limit and no rate: see the module docs.
const CLAIM_FN: &str = r#"
    CREATE OR REPLACE FUNCTION {s}.flow_claim_groups(
        q text, n integer, vis_us bigint, block_dead boolean, max_item bigint,
        note_start boolean, budget integer)
    RETURNS TABLE (r_id bigint, r_lease bigint, r_attempts integer, r_priority smallint,
                   r_rank bigint, r_deadline_in bigint, r_expires_in bigint, r_payload bytea,
                   r_size bigint, r_progress bytea, r_wake_in bigint, r_held integer{plain_col})
    LANGUAGE plpgsql AS $fn$
    DECLARE
        now_ts timestamptz; due_ts timestamptz; wake_ns bigint;
        held integer := 0;    -- 4: a group's turn held items back
        left_n integer := budget; chunk integer; seen integer;
        locked bigint[]; busy bigint[]; l_turn timestamptz := '-infinity'; l_grp bigint := 0;
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
            RETURN QUERY SELECT NULL::bigint, NULL::bigint, NULL::integer, NULL::smallint,
                NULL::bigint, NULL::bigint, NULL::bigint, NULL::bytea, NULL::bigint,
                NULL::bytea, 0::bigint, 0{no_plain};
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
            -- Those with a leased row (their head, or a row behind a head put back or
            -- redriven), and their heads: read with snapshots taken while holding them.
            -- One look at the leased rows for the chunk, not one per group.
            busy := ARRAY(SELECT it.fgroup FROM {s}.items it
                          WHERE it.queue = q AND it.state = 1 AND it.fgroup = ANY(locked));
            FOR r IN
                SELECT g.grp, g.turn, g.last, h.id, h.state, h.priority,
                       CASE WHEN h.visible_at >= {hold} THEN h.fdue ELSE h.visible_at END
                           AS due,
                       (h.expires_at IS NOT NULL AND h.expires_at <= now_ts) AS gone
                FROM unnest(locked) WITH ORDINALITY AS c(grp, o)
                JOIN {s}.flow_groups g ON g.queue = q AND g.grp = c.grp
                LEFT JOIN LATERAL (
                    SELECT it.id, it.state, it.priority, it.visible_at, it.fdue, it.expires_at
                    FROM {s}.items it
                    WHERE it.queue = q AND it.fgroup = g.grp
                      AND it.state <= CASE WHEN block_dead THEN 2 ELSE 1 END
                    ORDER BY it.fseq LIMIT 1) h ON true
                ORDER BY c.o
            LOOP
                l_turn := r.turn; l_grp := r.grp;
                IF r.id IS NULL THEN
                    -- No live row: gone, unless a dead letter may come back (a redrive).
                    IF NOT EXISTS (SELECT 1 FROM {s}.items it
                                   WHERE it.queue = q AND it.fgroup = r.grp) THEN
                        DELETE FROM {s}.flow_groups g
                            WHERE g.queue = q AND g.grp = r.grp AND g.last = r.last;
                    ELSE
                        -- Only dead letters: to the back, out of the next claims' way.
                        UPDATE {s}.flow_groups g SET turn = now_ts
                            WHERE g.queue = q AND g.grp = r.grp;
                    END IF;
                ELSIF r.state <> 0 THEN
                    held := held | 4;
                ELSIF r.gone THEN
                    NULL;
                ELSIF r.due > now_ts THEN
                    due_ts := LEAST(due_ts, r.due);
                ELSIF r.grp = ANY(busy) THEN
                    held := held | 4;
                ELSIF cardinality(g_ids) < n THEN
                    g_ids := g_ids || r.id; g_prio := g_prio || r.priority;
                    g_key := g_key || GREATEST(r.turn, r.due); g_grps := g_grps || r.grp;
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
                picked := picked || g_ids[gi]; served := served || g_grps[gi]; gi := gi + 1;
            END IF;
        END LOOP;
        IF cardinality(served) > 0 THEN
            UPDATE {s}.flow_groups g SET turn = now_ts
                WHERE g.queue = q AND g.grp = ANY(served);
        END IF;
        IF cardinality(picked) > 0 THEN
            RETURN QUERY
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
                          NULL::bigint, NULL::integer{plain_of_it};
        END IF;
        wake_ns := (EXTRACT(EPOCH FROM due_ts) * 1000000)::bigint * 1000;
        RETURN QUERY SELECT NULL::bigint, NULL::bigint, NULL::integer, NULL::smallint,
            NULL::bigint, NULL::bigint, NULL::bigint, NULL::bytea, NULL::bigint, NULL::bytea,
            (wake_ns / 1000 - (EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::bigint),
            held{no_plain};
    END
    $fn$;
"#;

/// `flow_claim`'s way in for a grouped queue with no limit and no rate (plpgsql, `q` the
/// queue, after the pause check; `{groups_enter}` in its text, filled in by `schema.rs`):
/// `flow_claim_groups`, without the exclusive lock.
pub(crate) const ENTER: &str = r#"
        IF is_grouped AND NOT EXISTS (SELECT 1 FROM {s}.flow_limits f WHERE f.queue = q)
           AND NOT EXISTS (SELECT 1 FROM {s}.flow_rates f WHERE f.queue = q) THEN
            RETURN QUERY SELECT * FROM {s}.flow_claim_groups(q, n, vis_us, block_dead,
                                                              max_item, note_start, budget);
            RETURN;
        END IF;
"#;

/// The ungrouped ready rows of `flow_claim_groups` (`{ungrouped}`, step 22's too): each
/// level in claim order, a level at a time (each an index range of `items_claim` ending at
/// the first row not visible yet), at most `n`, locked with `SKIP LOCKED`.
pub(crate) fn ungrouped() -> String {
    let levels = (0..8)
        .rev()
        .map(|p| {
            format!(
                "SELECT * FROM (SELECT it.id, it.priority, it.visible_at FROM {{s}}.items it
                  WHERE it.queue = q AND it.state = 0 AND it.priority = {p}
                    AND it.visible_at <= now_ts AND it.fgroup IS NULL
                    AND (it.expires_at IS NULL OR it.expires_at > now_ts)
                  ORDER BY it.visible_at, it.id LIMIT n FOR UPDATE SKIP LOCKED) l{p}"
            )
        })
        .collect::<Vec<_>>()
        .join("\n            UNION ALL ");
    format!("SELECT a.id, a.priority, a.visible_at FROM ({levels}) a LIMIT n")
}

/// `flow_claim_groups`'s `CREATE` (`{flow_claim_groups_fn}` in [`MIGRATION`]; step 21's
/// too, `flow_plain_sql.rs`), `{s}`, `{schema}` and the result column's placeholders still
/// to fill in.
pub(crate) fn claim_fn() -> String {
    CLAIM_FN
        .replace("{ungrouped}", &ungrouped())
        .replace("{hold}", crate::flow_sql::HOLD)
}
