//! The fan-out's told statement: schema step 17 (issue 33, a batch of 10,000 children into one
//! callback at >= 0.7x the rate of independent jobs).
//!
//! Step 13's `graph_told` (`graph_told.rs`) locked a callback's split counters rows
//! (`graph_shards`) with `JOIN unnest(..) .. ORDER BY x.node, x.shard FOR UPDATE`: in the
//! store's sessions (`enable_sort = off`, generic plans, `open.rs`) that is planned as a walk of
//! the whole `graph_shards` primary key in order, every row of every callback of the schema
//! read and filtered against the statement's few: about 1 ms a call with a dozen fan-outs in
//! the table, growing with each (BENCHMARKS.md, round 9, "the fan-out's told statement").
//! Step 17 redefines `graph_told` (same signature, same results, same commit semantics):
//!
//! - **Lookups, in order.** The rows to lock are taken one by one by their key (a `LATERAL`
//!   subquery with `FOR UPDATE` per wanted row, over the wanted rows sorted): a nested loop
//!   whatever the session's settings, locks taken in `(node, shard)` order as before.
//! - **One statement for a batch child.** The move of the nodes, each child's change summed,
//!   and the counters rows of split children (a batch's callback: `graph_shards`, a table the
//!   statement changes nothing else in) written in one statement; the callbacks whose rows
//!   started or stopped waiting or failing come back from it, and only those are written and
//!   judged after. Children with counters of their own (in `graph_nodes`) are still written
//!   by a second statement, run only when there are some: a node can be both moved and a
//!   child of a moved node in one call (a redrive of many), and a row changes once per
//!   statement.
//!
//! Locks: moved nodes (node order), then counters rows (`(node, shard)` order), then children
//! with their own counters (node order), then callbacks' own counters (node order); step 13
//! took the children with their own counters before the counters rows (the two sets are
//! different rows of different children). Statements that still meet the other way round
//! (an add under a parent being acked, a judge's cascade) deadlock, and the server aborts
//! one, which the settle retries (as before, `graph_sql.rs`).
//!
//! The wrapper that calls it ([`told`](crate::graph_told::told)) is unchanged.

/// Schema step 17 (see the module's docs). `{s}` is the quoted schema.
pub(crate) const MIGRATION: &str = r#"
    CREATE OR REPLACE FUNCTION {s}.graph_told(p_nodes bigint[], p_states smallint[], p_payloads bytea[])
    RETURNS integer LANGUAGE plpgsql AS $fn$
    DECLARE
        moved integer;
        kids bigint[];
        dwr integer[];
        dw integer[];
        df integer[];
        zn bigint[];
        zw integer[];
        zf integer[];
        i integer;
        c record;
        r record;
    BEGIN
        -- One statement: the nodes locked in node order and moved; each child's change summed
        -- over its moved parents; split counters rows (a batch's callback: graph_shards, a
        -- table the statement changes nothing else in) locked in order and written, and the
        -- callbacks whose rows started or stopped waiting/failing returned. Children with
        -- counters of their own are returned to be written by the next statement (a node can
        -- be both moved and a child here: a row changes once per statement).
        WITH t AS (SELECT u.node, u.st, u.payload
                   FROM unnest(p_nodes, p_states, p_payloads) AS u(node, st, payload)),
             o AS (SELECT node, state FROM {s}.graph_nodes WHERE node = ANY(p_nodes)
                   ORDER BY node FOR UPDATE),
             m AS (UPDATE {s}.graph_nodes g SET state = t.st,
                          payload = CASE WHEN t.st = 4 AND o.state = 1 THEN t.payload ELSE g.payload END
                   FROM t JOIN o ON o.node = t.node
                   WHERE g.node = t.node AND o.state <> t.st
                   RETURNING g.node, {s}.graph_class(o.state) AS oc, {s}.graph_class(t.st) AS nc),
             d AS MATERIALIZED (
                   SELECT e.child, e.shard,
                          sum({s}.graph_w(1::smallint, m.nc) - {s}.graph_w(1::smallint, m.oc))::int AS wr,
                          sum({s}.graph_w(0::smallint, m.nc) - {s}.graph_w(0::smallint, m.oc))::int AS w,
                          sum({s}.graph_f(0::smallint, m.nc) - {s}.graph_f(0::smallint, m.oc))::int AS f
                   FROM m JOIN {s}.graph_edges e ON e.parent = m.node
                   -- Said again as `= ANY`: the edges' index whatever the statistics say.
                   WHERE m.oc <> m.nc AND e.parent = ANY(p_nodes)
                   GROUP BY e.child, e.shard),
             l AS (SELECT x.node, x.shard
                   FROM (SELECT d.child, d.shard FROM d WHERE d.shard IS NOT NULL ORDER BY d.child, d.shard) s
                   CROSS JOIN LATERAL (SELECT y.node, y.shard FROM {s}.graph_shards y
                                       WHERE y.node = s.child AND y.shard = s.shard FOR UPDATE) x),
             u AS (UPDATE {s}.graph_shards x SET
                       waiting = x.waiting + CASE WHEN x.policy = 1 THEN d.wr ELSE d.w END,
                       failed = x.failed + CASE WHEN x.policy = 1 THEN 0 ELSE d.f END
                   FROM d JOIN l ON l.node = d.child AND l.shard = d.shard
                   WHERE x.node = d.child AND x.shard = d.shard
                   RETURNING x.node,
                       (x.waiting > 0)::int - (x.waiting - CASE WHEN x.policy = 1 THEN d.wr ELSE d.w END > 0)::int AS zw,
                       (x.failed > 0)::int - (x.failed - CASE WHEN x.policy = 1 THEN 0 ELSE d.f END > 0)::int AS zf),
             z AS (SELECT u.node, sum(u.zw)::int AS zw, sum(u.zf)::int AS zf FROM u
                   GROUP BY u.node HAVING sum(u.zw) <> 0 OR sum(u.zf) <> 0)
        SELECT (SELECT count(*) FROM m),
               (SELECT array_agg(d.child) FROM d WHERE d.shard IS NULL),
               (SELECT array_agg(d.wr) FROM d WHERE d.shard IS NULL),
               (SELECT array_agg(d.w) FROM d WHERE d.shard IS NULL),
               (SELECT array_agg(d.f) FROM d WHERE d.shard IS NULL),
               (SELECT array_agg(z.node ORDER BY z.node) FROM z),
               (SELECT array_agg(z.zw ORDER BY z.node) FROM z),
               (SELECT array_agg(z.zf ORDER BY z.node) FROM z)
        INTO moved, kids, dwr, dw, df, zn, zw, zf;
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
        -- Callbacks whose counters rows started or stopped waiting/failing: their own counters.
        IF zn IS NOT NULL THEN
            FOR i IN 1 .. cardinality(zn) LOOP
                UPDATE {s}.graph_nodes g SET waiting = g.waiting + zw[i], failed = g.failed + zf[i]
                WHERE g.node = zn[i]
                RETURNING g.node, g.state, g.policy, g.waiting, g.failed, g.by_parent INTO r;
                IF (r.state = 0 AND (r.waiting = 0 OR (r.failed > 0 AND r.policy = 0)))
                   OR (r.state = 4 AND r.by_parent AND r.failed = 0) THEN
                    PERFORM {s}.graph_judge(r.node);
                END IF;
            END LOOP;
        END IF;
        RETURN moved;
    END
    $fn$;
"#;
