//! Flow control in SQL (issue 32): schema step 12, the claim of a queue with flow control
//! (`flow_claim`), and what the plain statements read of it.
//! A leaf: `schema.rs`, `sql.rs`, `flow_insert.rs` and `flow.rs` take their text from here.
//!
//! **What a plain queue pays.** One probe, shared with the pause flag: the plain claim
//! (`sql.rs`) finds nothing in a queue whose row in `claim_flags` says paused or flowed
//! (`plain_sql.rs`, step 14, kept by triggers on `flow_queues` and `queue_pauses`). A queue
//! gets its row in `flow_queues` with its first limit, rate or grouped push; from then on
//! every process claims it with `flow_claim` (the plain claim finds nothing, and the
//! claimer's probe, `next_visible`, says why).
//!
//! **A queue limit alone** (no other limit, no rate, never a grouped push) is claimed
//! through its slots (`flow_slots_sql.rs`: `flow_claim` hands over to `flow_claim_slots`
//! before the lock below, and makes the slots under it), so that the claims of several
//! processes run side by side.
//!
//! **Ordered groups without limits or rates** are claimed by `flow_claim_groups`
//! (`flow_groups_sql.rs`: `flow_claim` hands over before the lock below, which that claim
//! takes shared, locking the groups' rows instead), so that such claims run side by side.
//!
//! **The flow claim** (`flow_claim`, plpgsql) takes the queue's advisory lock
//! (`pg_advisory_xact_lock`, held to its commit), so the flow claims of a queue run one at
//! a time across every process and each sees the ones before it committed (a plpgsql
//! statement reads a fresh snapshot); settles need no lock (a row leaving flight only makes
//! the next count smaller). It counts what is in flight (the queue's leased rows, by kind
//! and partition where a limit asks), reads the rates' GCRA state, then walks two streams
//! merged: ungrouped ready rows in claim order (a level at a time, each an index range that
//! ends at the first row not yet visible) and the groups in turn order (`flow_groups`,
//! the group served longest ago first; a group's head is its first live row in push order,
//! `fseq`). It passes items a full limit, a rate or a group's turn holds, takes up to `n`
//! others, moves the TATs of the rates they count against and each served group to the back
//! (`turn = now`), and leases them in one `UPDATE` (`leased_at` the instant the rates
//! counted, so that the starts a table shows keep the GCRA's bound exactly). A last row (id `NULL`) says when the
//! first item a rate held becomes eligible and what held items back.
//!
//! **Grouped rows** wait with `visible_at` at [`HOLD`] (far in the future: never in the
//! claim index's visible range, so neither a plain claim nor the ungrouped walk meets
//! them), their own due time in `fdue`; once a head fails, is put back or redriven, its
//! `visible_at` is a real time again and rules.

/// Where a grouped row's `visible_at` waits for its group's turn: far away, but finite
/// (arithmetic on it never fails).
pub(crate) const HOLD: &str = "'9999-01-01 00:00:00+00'::timestamptz";

/// Whether queue `$1` has flow control (read at open and after a limit's removal).
pub(crate) const FLOWED: &str = "EXISTS (SELECT 1 FROM {s}.flow_queues WHERE queue = $1)";
/// The flow claim: `$1` queue, `$2` how many, `$3` visibility (us), `$4` a dead letter
/// blocks its group, `$5` max item size, `$6` note the first start, `$7` the walk's budget.
pub(crate) const CLAIM: &str =
    "SELECT * FROM {s}.flow_claim($1, $2::integer, $3, $4, $5, $6, $7::integer)";

/// Schema step 12 (flow control, issue 32). `{s}` the quoted schema, `{schema}` the bare
/// name (the advisory lock's key). Idempotent.
pub(crate) const MIGRATION: &str = r#"
    ALTER TABLE {s}.items ADD COLUMN IF NOT EXISTS fkind bigint,   -- FlowKey of the kind
                          ADD COLUMN IF NOT EXISTS fpart bigint,   -- of the partition
                          ADD COLUMN IF NOT EXISTS fgroup bigint,  -- of the ordered group
                          ADD COLUMN IF NOT EXISTS fseq bigint,    -- push order in the group
                          ADD COLUMN IF NOT EXISTS fdue timestamptz; -- a grouped row's own due time
    CREATE SEQUENCE IF NOT EXISTS {s}.flow_seq AS bigint;
    CREATE INDEX IF NOT EXISTS items_group ON {s}.items (queue, fgroup, fseq)
        WHERE fgroup IS NOT NULL;
    CREATE INDEX IF NOT EXISTS items_group_busy ON {s}.items (queue, fgroup)
        WHERE state = 1 AND fgroup IS NOT NULL;
    -- A queue with flow control: read by every plain claim (hence PUBLIC).
    CREATE TABLE IF NOT EXISTS {s}.flow_queues (
        queue       text        PRIMARY KEY,
        since       timestamptz NOT NULL DEFAULT clock_timestamp(),
        grouped     boolean     NOT NULL DEFAULT false  -- a grouped push came: kept for good
    );
    GRANT SELECT ON {s}.flow_queues TO PUBLIC;
    -- scope: 0 queue (key 0), 1 kind, 2 partition.
    CREATE TABLE IF NOT EXISTS {s}.flow_limits (
        queue       text        NOT NULL,
        scope       smallint    NOT NULL,
        key         bigint      NOT NULL,
        max_running integer     NOT NULL CHECK (max_running >= 0),
        PRIMARY KEY (queue, scope, key)
    );
    CREATE TABLE IF NOT EXISTS {s}.flow_rates (
        queue       text        NOT NULL,
        scope       smallint    NOT NULL,
        key         bigint      NOT NULL,
        max         bigint      NOT NULL,   -- Rate::max
        period_ns   bigint      NOT NULL,   -- Rate::period
        burst       bigint      NOT NULL,   -- Rate::burst_size
        interval_ns bigint      NOT NULL,   -- the emission interval
        tolerance_ns bigint     NOT NULL,   -- (burst - 1) * interval
        tat_ns      bigint      NOT NULL DEFAULT 0, -- theoretical arrival time, Unix ns
        PRIMARY KEY (queue, scope, key)
    );
    -- The groups with rows (a row may outlive them: removed by the claim that finds it empty).
    CREATE TABLE IF NOT EXISTS {s}.flow_groups (
        queue       text        NOT NULL,
        grp         bigint      NOT NULL,
        turn        timestamptz NOT NULL,   -- last served (or made): the walk's order
        last        bigint      NOT NULL,   -- the highest fseq pushed: a push changes it
        PRIMARY KEY (queue, grp)
    );
    CREATE INDEX IF NOT EXISTS flow_groups_turn ON {s}.flow_groups (queue, turn, grp);
    -- The leases the flow claims of a queue with a concurrency limit handed out (and those
    -- in flight when its first limit was set): the limits count the ones still leased (a
    -- primary-key probe each) rather than scan the leased rows' index, which every lease
    -- and heartbeat leaves a dead entry in until the next VACUUM.
    CREATE TABLE IF NOT EXISTS {s}.flow_running (
        queue       text        NOT NULL,
        id          bigint      NOT NULL,
        lease       bigint      NOT NULL,
        fkind       bigint,
        fpart       bigint,
        PRIMARY KEY (queue, id)
    ) WITH (autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 1000);
    {flow_claim_fn}
"#;

/// The flow claim: see the module docs. `block_dead`: a dead letter blocks its group
/// (`GroupDeadLetter::Block`); `budget`: the most rows and groups looked at.
const CLAIM_FN: &str = r#"
    CREATE OR REPLACE FUNCTION {s}.flow_claim(
        q text, n integer, vis_us bigint, block_dead boolean, max_item bigint,
        note_start boolean, budget integer)
    RETURNS TABLE (r_id bigint, r_lease bigint, r_attempts integer, r_priority smallint,
                   r_rank bigint, r_deadline_in bigint, r_expires_in bigint, r_payload bytea,
                   r_size bigint, r_progress bytea, r_wake_in bigint, r_held integer{plain_col})
    LANGUAGE plpgsql AS $fn$
    DECLARE
        now_ts timestamptz; now_ns bigint; is_grouped boolean;
        qmax integer; qrun bigint := 0;
        l_scope smallint[]; l_key bigint[]; l_max integer[]; l_run integer[];
        t_scope smallint[]; t_key bigint[]; t_int bigint[]; t_tol bigint[]; t_tat bigint[];
        run_k bigint[]; run_p bigint[];
        picked bigint[] := '{}';
        wake_ns bigint; due_ts timestamptz;
        held integer := 0;    -- 1: a concurrency limit, 2: a rate, 4: a group's turn
        left_n integer := budget;
        cu refcursor; cg refcursor;
        u_ok boolean := false; u_done boolean := false;
        g_ok boolean := false; g_done boolean := false;
        u_id bigint; u_kind bigint; u_part bigint; u_prio smallint; u_vis timestamptz;
        g_grp bigint; g_turn timestamptz; g_last bigint; g_id bigint; g_state smallint;
        g_kind bigint; g_part bigint; g_prio smallint; g_due timestamptz; g_exp boolean;
        c_id bigint; c_kind bigint; c_part bigint; c_grp bigint;
        i integer; at_ns bigint; ok boolean;
    BEGIN
        SELECT f.grouped INTO is_grouped FROM {s}.flow_queues f WHERE f.queue = q;
        IF NOT FOUND THEN
            RETURN QUERY SELECT NULL::bigint, NULL::bigint, NULL::integer, NULL::smallint,
                NULL::bigint, NULL::bigint, NULL::bigint, NULL::bytea, NULL::bigint,
                NULL::bytea, NULL::bigint, -1{no_plain};
            RETURN;
        END IF;
        IF EXISTS (SELECT 1 FROM {s}.queue_pauses p WHERE p.queue = q) THEN
            RETURN QUERY SELECT NULL::bigint, NULL::bigint, NULL::integer, NULL::smallint,
                NULL::bigint, NULL::bigint, NULL::bigint, NULL::bytea, NULL::bigint,
                NULL::bytea, NULL::bigint, 0{no_plain};
            RETURN;
        END IF;
        {slots_enter}
        {groups_enter}
        PERFORM pg_advisory_xact_lock(hashtext('leaseq.flow.{schema}'), hashtext(q));
        now_ts := clock_timestamp();
        now_ns := (EXTRACT(EPOCH FROM now_ts) * 1000000)::bigint * 1000;
        SELECT f.max_running INTO qmax FROM {s}.flow_limits f
            WHERE f.queue = q AND f.scope = 0 AND f.key = 0;
        SELECT array_agg(f.scope), array_agg(f.key), array_agg(f.max_running)
            INTO l_scope, l_key, l_max
            FROM {s}.flow_limits f WHERE f.queue = q AND f.scope > 0;
        {slots_dissolve}
        IF qmax IS NOT NULL OR l_scope IS NOT NULL THEN
            DELETE FROM {s}.flow_running r WHERE r.queue = q AND NOT EXISTS (
                SELECT 1 FROM {s}.items it
                WHERE it.id = r.id AND it.lease = r.lease AND it.state = 1);
            SELECT count(*), array_agg(r.fkind), array_agg(r.fpart) INTO qrun, run_k, run_p
                FROM {s}.flow_running r WHERE r.queue = q;
        END IF;
        IF l_scope IS NOT NULL THEN
            l_run := array_fill(0, ARRAY[cardinality(l_scope)]);
            FOR i IN 1..cardinality(l_scope) LOOP
                l_run[i] := coalesce(cardinality(array_positions(
                    CASE WHEN l_scope[i] = 1 THEN run_k ELSE run_p END, l_key[i])), 0);
            END LOOP;
        END IF;
        SELECT array_agg(f.scope), array_agg(f.key), array_agg(f.interval_ns),
               array_agg(f.tolerance_ns), array_agg(f.tat_ns)
            INTO t_scope, t_key, t_int, t_tol, t_tat
            FROM {s}.flow_rates f WHERE f.queue = q;
        {slots_make}
        OPEN cu FOR
            {ungrouped};
        OPEN cg FOR
            SELECT g.grp, g.turn, g.last, h.id, h.state, h.fkind, h.fpart, h.priority,
                   CASE WHEN h.visible_at >= {hold} THEN h.fdue ELSE h.visible_at END,
                   (h.expires_at IS NOT NULL AND h.expires_at <= now_ts)
            FROM {s}.flow_groups g
            LEFT JOIN LATERAL (
                SELECT it.id, it.state, it.fkind, it.fpart, it.priority, it.visible_at,
                       it.fdue, it.expires_at
                FROM {s}.items it
                WHERE it.queue = q AND it.fgroup = g.grp
                  AND it.state <= CASE WHEN block_dead THEN 2 ELSE 1 END
                ORDER BY it.fseq LIMIT 1) h ON true
            WHERE g.queue = q
            ORDER BY g.turn, g.grp;
        <<walk>>
        LOOP
            EXIT WHEN cardinality(picked) >= n OR left_n <= 0;
            EXIT WHEN qmax IS NOT NULL AND qrun >= qmax;
            -- The queue-wide rate holds every item.
            IF t_scope IS NOT NULL THEN
                FOR i IN 1..cardinality(t_scope) LOOP
                    IF t_scope[i] = 0 AND t_tat[i] - t_tol[i] > now_ns THEN
                        held := held | 2;
                        wake_ns := LEAST(wake_ns, t_tat[i] - t_tol[i]);
                        EXIT walk;
                    END IF;
                END LOOP;
            END IF;
            IF NOT u_ok AND NOT u_done THEN
                FETCH cu INTO u_id, u_kind, u_part, u_prio, u_vis;
                IF FOUND THEN u_ok := true; left_n := left_n - 1; ELSE u_done := true; END IF;
            END IF;
            WHILE NOT g_ok AND NOT g_done AND left_n > 0 LOOP
                FETCH cg INTO g_grp, g_turn, g_last, g_id, g_state, g_kind, g_part, g_prio,
                              g_due, g_exp;
                IF NOT FOUND THEN g_done := true; EXIT; END IF;
                left_n := left_n - 1;
                IF g_id IS NULL THEN
                    -- No live row: gone, unless a dead letter may come back (a redrive).
                    IF NOT EXISTS (SELECT 1 FROM {s}.items it
                                   WHERE it.queue = q AND it.fgroup = g_grp) THEN
                        DELETE FROM {s}.flow_groups g
                            WHERE g.queue = q AND g.grp = g_grp AND g.last = g_last;
                    ELSE
                        -- Only dead letters: to the back, out of the next walks' way.
                        UPDATE {s}.flow_groups g SET turn = now_ts
                            WHERE g.queue = q AND g.grp = g_grp;
                    END IF;
                ELSIF g_state <> 0 THEN
                    held := held | 4;
                ELSIF g_exp THEN
                    NULL;
                ELSIF g_due > now_ts THEN
                    due_ts := LEAST(due_ts, g_due);
                ELSIF EXISTS (SELECT 1 FROM {s}.items it
                              WHERE it.queue = q AND it.fgroup = g_grp AND it.state = 1) THEN
                    held := held | 4;
                ELSE
                    g_ok := true;
                END IF;
            END LOOP;
            EXIT WHEN NOT u_ok AND NOT g_ok;
            IF u_ok AND (NOT g_ok OR u_prio > g_prio
                         OR (u_prio = g_prio AND u_vis <= GREATEST(g_turn, g_due))) THEN
                c_id := u_id; c_kind := u_kind; c_part := u_part; c_grp := NULL;
                u_ok := false;
            ELSE
                c_id := g_id; c_kind := g_kind; c_part := g_part; c_grp := g_grp;
                g_ok := false;
            END IF;
            ok := true;
            IF l_scope IS NOT NULL THEN
                FOR i IN 1..cardinality(l_scope) LOOP
                    IF ((l_scope[i] = 1 AND l_key[i] = c_kind)
                        OR (l_scope[i] = 2 AND l_key[i] = c_part))
                       AND l_run[i] >= l_max[i] THEN
                        ok := false;
                        held := held | 1;
                    END IF;
                END LOOP;
            END IF;
            IF ok AND t_scope IS NOT NULL THEN
                at_ns := NULL;
                FOR i IN 1..cardinality(t_scope) LOOP
                    IF ((t_scope[i] = 1 AND t_key[i] = c_kind)
                        OR (t_scope[i] = 2 AND t_key[i] = c_part))
                       AND t_tat[i] - t_tol[i] > now_ns THEN
                        at_ns := GREATEST(at_ns, t_tat[i] - t_tol[i]);
                    END IF;
                END LOOP;
                IF at_ns IS NOT NULL THEN
                    ok := false;
                    held := held | 2;
                    wake_ns := LEAST(wake_ns, at_ns);
                END IF;
            END IF;
            CONTINUE WHEN NOT ok;
            picked := picked || c_id;
            qrun := qrun + 1;
            IF l_scope IS NOT NULL THEN
                FOR i IN 1..cardinality(l_scope) LOOP
                    IF (l_scope[i] = 1 AND l_key[i] = c_kind)
                       OR (l_scope[i] = 2 AND l_key[i] = c_part) THEN
                        l_run[i] := l_run[i] + 1;
                    END IF;
                END LOOP;
            END IF;
            IF t_scope IS NOT NULL THEN
                FOR i IN 1..cardinality(t_scope) LOOP
                    IF t_scope[i] = 0 OR (t_scope[i] = 1 AND t_key[i] = c_kind)
                       OR (t_scope[i] = 2 AND t_key[i] = c_part) THEN
                        t_tat[i] := GREATEST(t_tat[i], now_ns) + t_int[i];
                    END IF;
                END LOOP;
            END IF;
            IF c_grp IS NOT NULL THEN
                UPDATE {s}.flow_groups g SET turn = now_ts
                    WHERE g.queue = q AND g.grp = c_grp;
            END IF;
        END LOOP;
        IF qmax IS NOT NULL AND qrun >= qmax THEN
            held := held | 1;
        END IF;
        CLOSE cu;
        CLOSE cg;
        IF t_scope IS NOT NULL AND cardinality(picked) > 0 THEN
            UPDATE {s}.flow_rates f SET tat_ns = u.tat
                FROM unnest(t_scope, t_key, t_tat) AS u(scope, key, tat)
                WHERE f.queue = q AND f.scope = u.scope AND f.key = u.key AND f.tat_ns <> u.tat;
        END IF;
        RETURN QUERY
            WITH upd AS (
            UPDATE {s}.items it SET state = 1, lease = it.lease + 1, attempts = it.attempts + 1,
                   leased_at = now_ts,
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
                      octet_length(it.payload)::bigint AS size, it.progress, it.fkind, it.fpart{plain_ret}),
            ran AS (
                INSERT INTO {s}.flow_running AS r (queue, id, lease, fkind, fpart)
                SELECT q, u.id, u.lease, u.fkind, u.fpart FROM upd u
                WHERE qmax IS NOT NULL OR l_scope IS NOT NULL
                ON CONFLICT (queue, id) DO UPDATE SET lease = EXCLUDED.lease)
            SELECT u.id, u.lease, u.attempts, u.priority, u.rank, u.deadline_in, u.expires_in,
                   u.payload, u.size, u.progress, NULL::bigint, NULL::integer{plain_of_u}
            FROM upd u;
        wake_ns := LEAST(wake_ns, (EXTRACT(EPOCH FROM due_ts) * 1000000)::bigint * 1000);
        RETURN QUERY SELECT NULL::bigint, NULL::bigint, NULL::integer, NULL::smallint,
            NULL::bigint, NULL::bigint, NULL::bigint, NULL::bytea, NULL::bigint, NULL::bytea,
            (wake_ns / 1000 - (EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::bigint),
            held{no_plain};
    END
    $fn$;
"#;

/// The ungrouped walk of `flow_claim`: ready rows of each level in claim order, a level at
/// a time (each an index range of `items_claim` ending at the first row not visible yet).
fn ungrouped() -> String {
    (0..8)
        .rev()
        .map(|p| {
            format!(
                "(SELECT it.id, it.fkind, it.fpart, it.priority, it.visible_at FROM {{s}}.items it
                  WHERE it.queue = q AND it.state = 0 AND it.priority = {p}
                    AND it.visible_at <= now_ts AND it.fgroup IS NULL
                    AND (it.expires_at IS NULL OR it.expires_at > now_ts)
                  ORDER BY it.visible_at, it.id)"
            )
        })
        .collect::<Vec<_>>()
        .join("\n            UNION ALL ")
}

/// The claim function's `CREATE` (`{flow_claim_fn}` in [`MIGRATION`]), `{s}`, `{schema}`
/// and `{groups_enter}` (a grouped queue's way in, `flow_groups_sql.rs`) still to fill in.
pub(crate) fn claim_fn() -> String {
    CLAIM_FN
        .replace("{ungrouped}", &ungrouped())
        .replace("{hold}", HOLD)
        .replace("{slots_enter}", crate::flow_slots_sql::ENTER)
        .replace("{slots_dissolve}", crate::flow_slots_sql::DISSOLVE)
        .replace("{slots_make}", crate::flow_slots_sql::MAKE)
}
