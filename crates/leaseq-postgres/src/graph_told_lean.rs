//! The told statement's fixed work per call cut: schema step 20
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
//! row's update), and its move was a plan of eleven aggregates and a lock pass. Step 20
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
//! for / failed, each parent's weight taken back only by its own move. The function is
//! step 19's text with those three parts replaced ([`graph_told`]: one copy of the rest).

/// Schema step 20 (see the module's docs). `{s}` is the quoted schema; `{graph_told_lean}`
/// is filled in by `schema::migrate` with [`graph_told`].
pub(crate) const MIGRATION: &str = r#"
    -- The state graph_told's last move of the node took it from (graph_told's scratch).
    ALTER TABLE {s}.graph_nodes ADD COLUMN IF NOT EXISTS told_from smallint;

    {graph_told_lean}
"#;

/// The parts of step 19's `graph_told` (`graph_slots.rs`) that step 20 replaces: each the
/// text from its first marker up to (not including) its second, and what takes its place.
const PARTS: [(&str, &str, &str); 4] = [
    // Its variables: the slot taken in one statement.
    (
        "        z record;\n",
        "        i integer;\n",
        "        z record;
        left_w integer;
        zwi integer;
        zfi integer;
",
    ),
    // The move: the old state kept by the update itself, no locking read before it.
    (
        "        -- The nodes locked in node order and moved;",
        "             d AS MATERIALIZED (",
        "        -- The nodes moved (locked by the move, in node order; the old state kept in
        -- told_from); each child's change summed over its moved parents (children with split
        -- counters apart), gathered by one aggregate.
        WITH m AS (UPDATE {s}.graph_nodes g SET told_from = g.state, state = t.st,
                          payload = CASE WHEN t.st = 4 AND g.state = 1 THEN t.payload ELSE g.payload END
                   FROM (SELECT u.node, u.st, u.payload
                         FROM unnest(p_nodes, p_states, p_payloads) AS u(node, st, payload)
                         ORDER BY u.node) t
                   WHERE g.node = t.node AND g.state <> t.st
                   RETURNING g.node, {s}.graph_class(g.told_from) AS oc, {s}.graph_class(g.state) AS nc),
",
    ),
    // The children's changes: one aggregate with filters, not one subquery each.
    (
        "        SELECT (SELECT count(*) FROM m),",
        "        INTO moved,",
        "        SELECT (SELECT count(*) FROM m),
               array_agg(d.child) FILTER (WHERE NOT d.split),
               array_agg(d.wr) FILTER (WHERE NOT d.split),
               array_agg(d.w) FILTER (WHERE NOT d.split),
               array_agg(d.f) FILTER (WHERE NOT d.split),
               array_agg(d.child ORDER BY d.child) FILTER (WHERE d.split),
               array_agg(d.wr ORDER BY d.child) FILTER (WHERE d.split),
               array_agg(d.w ORDER BY d.child) FILTER (WHERE d.split),
               array_agg(d.f ORDER BY d.child) FILTER (WHERE d.split)
        FROM d
",
    ),
    // A split child's slots: acked parents only, taken in one statement from graph_slot's
    // row if it has enough; else graph_slots from that row up.
    (
        "            SELECT * INTO z FROM {s}.graph_slots(",
        "                zn := zn || skids[i];",
        "            left_w := NULL;
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
",
    ),
];

/// `graph_told` as step 19 defines it (`graph_slots.rs`) with [`PARTS`] replaced, and the
/// slot's counts (`zwi`, `zfi`) appended where step 19 appended `z`'s: step 20's text.
/// Empty if step 19's text no longer has the function or a part's markers (a test fails).
pub(crate) fn graph_told() -> String {
    let step19 = crate::graph_slots::MIGRATION;
    let Some(start) = step19.find("CREATE OR REPLACE FUNCTION {s}.graph_told(") else {
        return String::new();
    };
    let Some(len) = step19[start..].find("$fn$;") else {
        return String::new();
    };
    let mut f = step19[start..start + len + "$fn$;".len()].to_string();
    for (from, to, with) in PARTS {
        let Some(a) = f.find(from) else {
            return String::new();
        };
        let Some(b) = f[a..].find(to).map(|b| a + b) else {
            return String::new();
        };
        f.replace_range(a..b, with);
    }
    let appended = "                zw := zw || z.zw;\n                zf := zf || z.zf;\n";
    if !f.contains(appended) {
        return String::new();
    }
    f.replace(
        appended,
        "                zw := zw || zwi;\n                zf := zf || zfi;\n",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_20_redefines_graph_told_from_step_19s_text() {
        let f = graph_told();
        assert!(
            f.starts_with("CREATE OR REPLACE FUNCTION {s}.graph_told("),
            "{f}"
        );
        assert!(f.ends_with("$fn$;"));
        assert!(f.contains("SET told_from = g.state"));
        assert!(
            !f.contains("FOR UPDATE),"),
            "no locking read before the move"
        );
        assert!(f.contains("FILTER (WHERE d.split)\n        FROM d\n        INTO moved,"));
        assert!(!f.contains("(SELECT array_agg"));
        assert!(
            f.contains("FOR UPDATE SKIP LOCKED)\n                RETURNING x.waiting INTO left_w;")
        );
        assert!(f.contains("zw := zw || zwi;"));
        assert!(!f.contains("z.zw <> 0"));
        assert!(MIGRATION.contains("{graph_told_lean}"));
    }
}
