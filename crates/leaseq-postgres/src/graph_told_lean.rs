//! The told statement's fixed work per call cut: schema step 22, numbered 20 on this branch
//! (issue 33, a fan-out of 10,000 children into one callback at >= 0.7x the rate of
//! independent jobs).
//!
//! A batch child's ack runs `graph_told` once per ack statement, and the pool's statements
//! carry few children (1 to 16): what the call costs whatever its size is most of what a
//! child's ack pays over an independent job's (backend CPU per acked row, 4 a statement, in a
//! copy of the bench's schema: 22 us for the bare ack, 78 us for a told one, 29 to 38 of
//! them with a `graph_told` doing nothing; BENCHMARKS.md, round 11). Step 19's `graph_told`
//! (`graph_slots.rs`) ran six statements for a batch child's ack (the move, then
//! `graph_slots`: its call, the policy's read, `graph_slot`'s call and its locking read, the
//! row's update), and its move was a plan of eleven aggregates and a lock pass. Step 22
//! redefines it, same signature, same results, same commits:
//!
//! - **The old state kept by the move.** `graph_nodes.told_from` (added here, written only
//!   by `graph_told`) takes the node's state in the `UPDATE` that moves it (`SET told_from =
//!   g.state`: the row's newest version, the update's own lock), so `RETURNING` gives the old
//!   class without the locking read before it (a lock record in the WAL per node, a second
//!   walk of the primary key, a join). The nodes are still locked in node order (the moved
//!   rows come from the array sorted).
//! - **One aggregate.** The children's changes are gathered by one aggregate with filters,
//!   not one subquery each (nine `Agg` nodes to start up and run per call).
//! - **A slot in one statement.** A split child (a batch's callback) whose change only takes
//!   parents waited for (its parents acked: the same for every policy) takes them in one
//!   `UPDATE .. WHERE shard = (SELECT .. FOR UPDATE SKIP LOCKED)` from the row step 19's
//!   `graph_slot` would take first (the lowest with some left that no other transaction
//!   holds), if that row has enough; it never waits. Else step 19's `graph_slots` does it
//!   as before, from that row (now held by this transaction) up: locks still rising.
//!
//! What stays: a dependent is released only under its row's lock, from pending, in the
//! statement of its last parent's move; the counters rows' sums are the parents still waited
//! for / failed, each parent's weight taken back only by its own move.

/// Schema step 22 (see the module's docs). `{s}` is the quoted schema.
pub(crate) const MIGRATION: &str = r#"
    -- The state graph_told's last move of the node took it from (graph_told's scratch).
    ALTER TABLE {s}.graph_nodes ADD COLUMN IF NOT EXISTS told_from smallint;

    CREATE OR REPLACE FUNCTION {s}.graph_told(p_nodes bigint[], p_states smallint[], p_payloads bytea[])
    RETURNS integer LANGUAGE plpgsql AS $fn$
    DECLARE
        moved integer;
        kids bigint[];
        dwr integer[];
        dw integer[];
        df integer[];
        skids bigint[];
        swr integer[];
        sw integer[];
        sf integer[];
        zn bigint[] := '{}';
        zw integer[] := '{}';
        zf integer[] := '{}';
        z record;
        left_w integer;
        zwi integer;
        zfi integer;
        i integer;
        c record;
        r record;
    BEGIN
        -- The nodes moved (locked by the move, in node order; the old state kept in
        -- told_from); each child's change summed over its moved parents (children with split
        -- counters apart), gathered by one aggregate.
        WITH m AS (UPDATE {s}.graph_nodes g SET told_from = g.state, state = t.st,
                          payload = CASE WHEN t.st = 4 AND g.state = 1 THEN t.payload ELSE g.payload END
                   FROM (SELECT u.node, u.st, u.payload
                         FROM unnest(p_nodes, p_states, p_payloads) AS u(node, st, payload)
                         ORDER BY u.node) t
                   WHERE g.node = t.node AND g.state <> t.st
                   RETURNING g.node, {s}.graph_class(g.told_from) AS oc, {s}.graph_class(g.state) AS nc),
             d AS MATERIALIZED (
                   SELECT e.child, e.shard IS NOT NULL AS split,
                          sum({s}.graph_w(1::smallint, m.nc) - {s}.graph_w(1::smallint, m.oc))::int AS wr,
                          sum({s}.graph_w(0::smallint, m.nc) - {s}.graph_w(0::smallint, m.oc))::int AS w,
                          sum({s}.graph_f(0::smallint, m.nc) - {s}.graph_f(0::smallint, m.oc))::int AS f
                   FROM m JOIN {s}.graph_edges e ON e.parent = m.node
                   -- Said again as `= ANY`: the edges' index whatever the statistics say.
                   WHERE m.oc <> m.nc AND e.parent = ANY(p_nodes)
                   GROUP BY e.child, e.shard IS NOT NULL)
        SELECT (SELECT count(*) FROM m),
               array_agg(d.child) FILTER (WHERE NOT d.split),
               array_agg(d.wr) FILTER (WHERE NOT d.split),
               array_agg(d.w) FILTER (WHERE NOT d.split),
               array_agg(d.f) FILTER (WHERE NOT d.split),
               array_agg(d.child ORDER BY d.child) FILTER (WHERE d.split),
               array_agg(d.wr ORDER BY d.child) FILTER (WHERE d.split),
               array_agg(d.w ORDER BY d.child) FILTER (WHERE d.split),
               array_agg(d.f ORDER BY d.child) FILTER (WHERE d.split)
        FROM d
        INTO moved, kids, dwr, dw, df, skids, swr, sw, sf;
        -- Children with counters of their own: written once, locked in node order.
        IF kids IS NOT NULL THEN
            FOR c IN
                WITH l AS (SELECT node FROM {s}.graph_nodes WHERE node = ANY(kids) ORDER BY node FOR UPDATE)
                UPDATE {s}.graph_nodes g SET
                    waiting = g.waiting + CASE WHEN g.policy = 1 THEN d.wr ELSE d.w END,
                    failed = g.failed + CASE WHEN g.policy = 1 THEN 0 ELSE d.f END
                FROM unnest(kids, dwr, dw, df) AS d(child, wr, w, f) JOIN l ON l.node = d.child
                WHERE g.node = d.child
                RETURNING g.node, g.state, g.policy, g.waiting, g.failed, g.by_parent
            LOOP
                IF (c.state = 0 AND (c.waiting = 0 OR (c.failed > 0 AND c.policy = 0)))
                   OR (c.state = 4 AND c.by_parent AND c.failed = 0) THEN
                    PERFORM {s}.graph_judge(c.node);
                END IF;
            END LOOP;
        END IF;
        IF skids IS NULL THEN
            RETURN moved;
        END IF;
        -- Children with split counters, in node order: their rows as slots (parents acked
        -- only: taken in one statement if graph_slot's row, the first with some left that
        -- no other transaction holds, has enough; else graph_slots, from that row up),
        -- then their own counters where rows started or stopped waiting/failing.
        FOR i IN 1 .. cardinality(skids) LOOP
            left_w := NULL;
            IF swr[i] = sw[i] AND sf[i] = 0 AND sw[i] < 0 THEN
                UPDATE {s}.graph_shards x SET waiting = x.waiting + sw[i]
                WHERE x.node = skids[i] AND x.waiting >= -sw[i] AND x.shard = (
                    SELECT y.shard FROM {s}.graph_shards y
                    WHERE y.node = skids[i] AND y.waiting > 0
                    ORDER BY y.shard LIMIT 1 FOR UPDATE SKIP LOCKED)
                RETURNING x.waiting INTO left_w;
            END IF;
            IF left_w IS NOT NULL THEN
                zwi := -(left_w = 0)::int;
                zfi := 0;
            ELSE
                SELECT * INTO z FROM {s}.graph_slots(skids[i], swr[i], sw[i], sf[i]);
                zwi := z.zw;
                zfi := z.zf;
            END IF;
            IF zwi <> 0 OR zfi <> 0 THEN
                zn := zn || skids[i];
                zw := zw || zwi;
                zf := zf || zfi;
            END IF;
        END LOOP;
        FOR i IN 1 .. cardinality(zn) LOOP
            UPDATE {s}.graph_nodes g SET waiting = g.waiting + zw[i], failed = g.failed + zf[i]
            WHERE g.node = zn[i]
            RETURNING g.node, g.state, g.policy, g.waiting, g.failed, g.by_parent INTO r;
            IF (r.state = 0 AND (r.waiting = 0 OR (r.failed > 0 AND r.policy = 0)))
               OR (r.state = 4 AND r.by_parent AND r.failed = 0) THEN
                PERFORM {s}.graph_judge(r.node);
            END IF;
        END LOOP;
        RETURN moved;
    END
    $fn$;
"#;
