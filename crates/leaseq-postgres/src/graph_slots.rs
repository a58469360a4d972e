//! A split child's counters rows taken as interchangeable slots: schema step 19 (issue 33, a
//! batch of 10,000 children into one callback at >= 0.7x the rate of independent jobs).
//!
//! Until step 19 a parent's outcome was written to the counters row of its place (`shard`
//! of its edge, `graph_shards`), so an ack statement carrying `k` of a batch's children
//! locked about `k` of the callback's 64 rows until its commit. The pool's acks pile up
//! while one waits, so a told statement carried 60 children (`pg_stat_user_functions`
//! during the bench: 498 calls for 31,000 children, 70 ms a call), locked nearly every row,
//! and the acks of a fan-out took turns, one commit at a time (`pg_stat_activity`: the told
//! acks waiting on `Lock: transactionid/tuple` in most samples; BENCHMARKS.md, round 10).
//!
//! Now the rows are slots: only their sums mean anything (the callback's own counters still
//! count the rows with parents waited for / failed, so it is released when every row is at
//! zero, the sum of its waiting parents). `graph_slots` applies a callback's summed change
//! of one statement: what it adds goes to one row; what it takes is taken from rows with
//! some left, the first one no other transaction holds (`FOR UPDATE SKIP LOCKED`), so
//! concurrent acks take different rows and commit together. The sum is never short of what
//! is taken: each parent's weight was added when it was (the push, a redrive) and only its
//! own move takes it back. When every row with some left is held by others, it waits for
//! the first such row above every row it holds (locks taken in rising order: no deadlock),
//! or if there is none, sleeps 1 ms and looks again (what it needs is held by transactions
//! that will commit or roll back).
//!
//! **Room for a node's move on its page.** `graph_nodes` gets `fillfactor = 50` (pages
//! written from now on): a batch's push fills pages with its children's nodes, and each
//! child's ack rewrites its node's state, which on a full page is a new row version on another
//! page with an entry in each of the table's three indexes (`pg_stat_user_tables` after the
//! bench: 71,468 updates, 495 of them HOT). With room on the page the move is a HOT update:
//! one backend's CPU moving 20,000 nodes, 12 a statement, 33 to 38 against 48 to 57 ticks
//! of 10 ms (three runs each, alternated).
//!
//! `graph_told` (step 17's, `graph_fanout.rs`) and `graph_move` (step 10's, `graph_sql.rs`)
//! are redefined to call it; `graph_recount` and `graph_add_fresh` still spread a count over
//! the rows by the parents' places, one way among many of making the same sums.

/// Schema step 19 (see the module's docs). `{s}` is the quoted schema; `{graph_move_slots}`
/// is filled in by `schema::migrate` with [`graph_move`].
pub(crate) const MIGRATION: &str = r#"
    ALTER TABLE {s}.graph_nodes SET (fillfactor = 50);

    -- One of p_node's counters rows, locked: p_mode 0 any, 1 one with parents waited for,
    -- 2 one with failed parents. Not one another transaction holds, if there is one; else
    -- waits for the first above p_top (the highest this call holds); else sleeps and looks
    -- again.
    CREATE OR REPLACE FUNCTION {s}.graph_slot(p_node bigint, p_mode integer, p_top integer)
    RETURNS {s}.graph_shards LANGUAGE plpgsql AS $fn$
    DECLARE
        r {s}.graph_shards;
        tries integer := 0;
    BEGIN
        LOOP
            SELECT * INTO r FROM {s}.graph_shards x WHERE x.node = p_node
                AND (p_mode = 0 OR (p_mode = 1 AND x.waiting > 0) OR (p_mode = 2 AND x.failed > 0))
                ORDER BY x.shard LIMIT 1 FOR UPDATE SKIP LOCKED;
            IF FOUND THEN
                RETURN r;
            END IF;
            SELECT * INTO r FROM {s}.graph_shards x WHERE x.node = p_node AND x.shard > p_top
                AND (p_mode = 0 OR (p_mode = 1 AND x.waiting > 0) OR (p_mode = 2 AND x.failed > 0))
                ORDER BY x.shard LIMIT 1 FOR UPDATE;
            IF FOUND THEN
                RETURN r;
            END IF;
            tries := tries + 1;
            IF tries > 30000 THEN
                RAISE EXCEPTION 'leaseq: node %''s counters rows hold less than told (mode %)', p_node, p_mode;
            END IF;
            PERFORM pg_sleep(0.001);
        END LOOP;
    END
    $fn$;

    -- A change of p_node's split counters (its policy's: p_wr for Run, else p_w and p_f),
    -- applied to its rows as slots; how many rows started (+) or stopped (-) waiting and
    -- failing.
    CREATE OR REPLACE FUNCTION {s}.graph_slots(p_node bigint, p_wr integer, p_w integer, p_f integer,
        OUT zw integer, OUT zf integer)
    LANGUAGE plpgsql AS $fn$
    DECLARE
        pol smallint;
        dw integer;
        df integer;
        need integer;
        take integer;
        top integer := -1;
        r {s}.graph_shards;
    BEGIN
        zw := 0;
        zf := 0;
        SELECT policy INTO pol FROM {s}.graph_shards WHERE node = p_node AND shard = 0;
        dw := CASE WHEN pol = 1 THEN p_wr ELSE p_w END;
        df := CASE WHEN pol = 1 THEN 0 ELSE p_f END;
        IF dw > 0 OR df > 0 THEN
            SELECT * INTO r FROM {s}.graph_slot(p_node, 0, top);
            top := greatest(top, r.shard);
            UPDATE {s}.graph_shards SET waiting = waiting + greatest(dw, 0), failed = failed + greatest(df, 0)
            WHERE node = p_node AND shard = r.shard;
            zw := zw + (r.waiting = 0 AND dw > 0)::int;
            zf := zf + (r.failed = 0 AND df > 0)::int;
        END IF;
        need := greatest(-dw, 0);
        WHILE need > 0 LOOP
            SELECT * INTO r FROM {s}.graph_slot(p_node, 1, top);
            top := greatest(top, r.shard);
            take := least(need, r.waiting);
            UPDATE {s}.graph_shards SET waiting = waiting - take WHERE node = p_node AND shard = r.shard;
            zw := zw - (r.waiting = take)::int;
            need := need - take;
        END LOOP;
        need := greatest(-df, 0);
        WHILE need > 0 LOOP
            SELECT * INTO r FROM {s}.graph_slot(p_node, 2, top);
            top := greatest(top, r.shard);
            take := least(need, r.failed);
            UPDATE {s}.graph_shards SET failed = failed - take WHERE node = p_node AND shard = r.shard;
            zf := zf - (r.failed = take)::int;
            need := need - take;
        END LOOP;
    END
    $fn$;

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
        i integer;
        c record;
        r record;
    BEGIN
        -- The nodes locked in node order and moved; each child's change summed over its moved
        -- parents (children with split counters apart).
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
                   SELECT e.child, e.shard IS NOT NULL AS split,
                          sum({s}.graph_w(1::smallint, m.nc) - {s}.graph_w(1::smallint, m.oc))::int AS wr,
                          sum({s}.graph_w(0::smallint, m.nc) - {s}.graph_w(0::smallint, m.oc))::int AS w,
                          sum({s}.graph_f(0::smallint, m.nc) - {s}.graph_f(0::smallint, m.oc))::int AS f
                   FROM m JOIN {s}.graph_edges e ON e.parent = m.node
                   -- Said again as `= ANY`: the edges' index whatever the statistics say.
                   WHERE m.oc <> m.nc AND e.parent = ANY(p_nodes)
                   GROUP BY e.child, e.shard IS NOT NULL)
        SELECT (SELECT count(*) FROM m),
               (SELECT array_agg(d.child) FROM d WHERE NOT d.split),
               (SELECT array_agg(d.wr) FROM d WHERE NOT d.split),
               (SELECT array_agg(d.w) FROM d WHERE NOT d.split),
               (SELECT array_agg(d.f) FROM d WHERE NOT d.split),
               (SELECT array_agg(d.child ORDER BY d.child) FROM d WHERE d.split),
               (SELECT array_agg(d.wr ORDER BY d.child) FROM d WHERE d.split),
               (SELECT array_agg(d.w ORDER BY d.child) FROM d WHERE d.split),
               (SELECT array_agg(d.f ORDER BY d.child) FROM d WHERE d.split)
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
        -- Children with split counters, in node order: their rows as slots, then their own
        -- counters where rows started or stopped waiting/failing.
        FOR i IN 1 .. cardinality(skids) LOOP
            SELECT * INTO z FROM {s}.graph_slots(skids[i], swr[i], sw[i], sf[i]);
            IF z.zw <> 0 OR z.zf <> 0 THEN
                zn := zn || skids[i];
                zw := zw || z.zw;
                zf := zf || z.zf;
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

    {graph_move_slots}
"#;

/// Step 10's `graph_move` writing a parent's row of each split child (`graph_sql.rs`).
const BY_PLACE: &str = "UPDATE {s}.graph_shards x SET
                waiting = x.waiting + CASE WHEN x.policy = 1 THEN dw_run ELSE dw END,
                failed = x.failed + CASE WHEN x.policy = 1 THEN 0 ELSE df END
            FROM {s}.graph_edges e
            WHERE e.parent = p_node AND e.shard IS NOT NULL AND x.node = e.child AND x.shard = e.shard
            RETURNING x.node,
                (x.waiting > 0)::int - (x.waiting - CASE WHEN x.policy = 1 THEN dw_run ELSE dw END > 0)::int AS zw,
                (x.failed > 0)::int - (x.failed - CASE WHEN x.policy = 1 THEN 0 ELSE df END > 0)::int AS zf";

/// The same rows as slots (the same columns: `node`, `zw`, `zf`), split children in node order.
const AS_SLOTS: &str = "SELECT e.child AS node, z.zw, z.zf
            FROM (SELECT child FROM {s}.graph_edges
                  WHERE parent = p_node AND shard IS NOT NULL ORDER BY child) e
            CROSS JOIN LATERAL {s}.graph_slots(e.child, dw_run, dw, df) z";

/// `graph_move` as step 10 defines it (`graph_sql.rs`), its split children's rows written
/// as slots: step 19 redefines it so (one copy of its text). Empty if step 10's text no
/// longer has the function or its split update (a test fails then).
pub(crate) fn graph_move() -> String {
    let step10 = crate::graph_sql::MIGRATION;
    let Some(start) = step10.find("CREATE OR REPLACE FUNCTION {s}.graph_move(") else {
        return String::new();
    };
    let Some(len) = step10[start..].find("$fn$;") else {
        return String::new();
    };
    let f = &step10[start..start + len + "$fn$;".len()];
    if !f.contains(BY_PLACE) {
        return String::new();
    }
    f.replace(BY_PLACE, AS_SLOTS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_20_redefines_graph_move_with_slots() {
        let f = graph_move();
        assert!(
            f.starts_with("CREATE OR REPLACE FUNCTION {s}.graph_move("),
            "{f}"
        );
        assert!(f.contains("graph_slots(e.child, dw_run, dw, df)"));
        assert!(!f.contains("x.shard = e.shard"));
        assert!(f.ends_with("$fn$;"));
        assert!(MIGRATION.contains("{graph_move_slots}"));
    }
}
