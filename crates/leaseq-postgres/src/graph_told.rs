//! The graph told by the statements that settle its rows, once per statement: schema step 13
//! (issue 33's cost goals) and the wrapper [`told`] that makes a settling statement tell.
//!
//! **No triggers.** Step 10 told the graph with two row triggers on `items` (`graph_finish`,
//! `graph_dead`): every claim and ack of every row paid for them (the executor reads the old
//! row for an `AFTER` row trigger before its `WHEN` is judged, about 1.1 us per plain item),
//! and a tracked row paid a PL/pgSQL call per row (about 45 us per batch child's ack). Step 13
//! drops both. Each statement that deletes a row or moves it to or from the dead letters now
//! returns the row's `node` too and, when one of its rows has one, calls [`MIGRATION`]'s
//! `graph_told` once with all of them ([`told`]: a data-modifying CTE, so it is the same
//! statement and the same commit as the settle). A statement whose rows have no node runs an
//! aggregate over its own returned rows and nothing else. The statements: the ack (also
//! `ack_in`, and with the record of finished jobs on), the nack to the dead letters, the
//! poison dead letter, the rescuer's dead letters, a time to live's expiry, a schedule's
//! withdrawal, the cancel and purge of waiting rows, a redrive and a redrive of many, a
//! workflow's cancel (`graph_ops.rs`) and a keyed push's replacement (`key_holder`, redefined
//! here from step 11's text with its delete telling). A purge of dead letters tells nothing (a
//! dead letter is failed already, and stays so).
//!
//! **Set-based.** `graph_told` moves every node of the statement at once (locked in node
//! order), sums each child's change over all its moved parents and writes each child's
//! counters (or its counter rows, `graph_shards`) once, locked in order; only the children
//! whose counters reach a decision are judged one by one (`graph_judge`, step 10's). A batch's
//! children acked 16 to a statement cost one call, not 16.
//!
//! **A batch's push.** `graph_add_fresh` adds a node under parents its own transaction
//! inserted (a batch's children): nobody sees them before the commit, so none is locked and
//! the counters are known without reading them (every parent open).

/// Schema step 13 (see the module's docs). `{s}` is the quoted schema, `{schema}` its bare
/// name; `{graph_key_holder}` is filled in by `schema::migrate` with [`key_holder`].
pub(crate) const MIGRATION: &str = r#"
    DROP TRIGGER IF EXISTS graph_finish ON {s}.items;
    DROP TRIGGER IF EXISTS graph_dead ON {s}.items;
    DROP FUNCTION IF EXISTS {s}.graph_on_delete();
    DROP FUNCTION IF EXISTS {s}.graph_on_dead();

    -- One statement's tracked rows: node p_nodes[i] now p_states[i] (1 live again, 2 acked,
    -- 3 dead letter, 4 cancelled: its row's payload p_payloads[i] kept for a retry).
    CREATE OR REPLACE FUNCTION {s}.graph_told(p_nodes bigint[], p_states smallint[], p_payloads bytea[])
    RETURNS integer LANGUAGE plpgsql AS $fn$
    DECLARE
        moved integer;
        kids bigint[];
        dwr integer[];
        dw integer[];
        df integer[];
        skids bigint[];
        shards smallint[];
        sdwr integer[];
        sdw integer[];
        sdf integer[];
        c record;
        r record;
    BEGIN
        -- The nodes, locked in node order, moved; for those whose class changed, each
        -- child's change summed over its moved parents (per counters row for a child with
        -- split counters): one statement.
        WITH t AS (SELECT u.node, u.st, u.payload
                   FROM unnest(p_nodes, p_states, p_payloads) AS u(node, st, payload)),
             o AS (SELECT node, state FROM {s}.graph_nodes WHERE node = ANY(p_nodes)
                   ORDER BY node FOR UPDATE),
             m AS (UPDATE {s}.graph_nodes g SET state = t.st,
                          payload = CASE WHEN t.st = 4 AND o.state = 1 THEN t.payload ELSE g.payload END
                   FROM t JOIN o ON o.node = t.node
                   WHERE g.node = t.node AND o.state <> t.st
                   RETURNING g.node, {s}.graph_class(o.state) AS oc, {s}.graph_class(t.st) AS nc),
             d AS (SELECT e.child, e.shard,
                          sum({s}.graph_w(1::smallint, m.nc) - {s}.graph_w(1::smallint, m.oc))::int AS wr,
                          sum({s}.graph_w(0::smallint, m.nc) - {s}.graph_w(0::smallint, m.oc))::int AS w,
                          sum({s}.graph_f(0::smallint, m.nc) - {s}.graph_f(0::smallint, m.oc))::int AS f
                   FROM m JOIN {s}.graph_edges e ON e.parent = m.node
                   -- Said again as `= ANY`: the edges' index whatever the statistics say (a
                   -- hash join over a scan of every edge was planned, 50 to 90 ms a call).
                   WHERE m.oc <> m.nc AND e.parent = ANY(p_nodes)
                   GROUP BY e.child, e.shard)
        SELECT array_agg(d.child ORDER BY d.child) FILTER (WHERE d.shard IS NULL),
               array_agg(d.wr ORDER BY d.child) FILTER (WHERE d.shard IS NULL),
               array_agg(d.w ORDER BY d.child) FILTER (WHERE d.shard IS NULL),
               array_agg(d.f ORDER BY d.child) FILTER (WHERE d.shard IS NULL),
               array_agg(d.child ORDER BY d.child, d.shard) FILTER (WHERE d.shard IS NOT NULL),
               array_agg(d.shard ORDER BY d.child, d.shard) FILTER (WHERE d.shard IS NOT NULL),
               array_agg(d.wr ORDER BY d.child, d.shard) FILTER (WHERE d.shard IS NOT NULL),
               array_agg(d.w ORDER BY d.child, d.shard) FILTER (WHERE d.shard IS NOT NULL),
               array_agg(d.f ORDER BY d.child, d.shard) FILTER (WHERE d.shard IS NOT NULL),
               (SELECT count(*) FROM m)
        INTO kids, dwr, dw, df, skids, shards, sdwr, sdw, sdf, moved
        FROM d;
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
        -- Children with split counters: each row written once (locked in order), and the
        -- child's own counters only when rows start or stop waiting/failing.
        IF skids IS NULL THEN
            RETURN moved;
        END IF;
        FOR c IN
            WITH l AS (
                SELECT x.node, x.shard FROM {s}.graph_shards x
                JOIN unnest(skids, shards) AS d(child, shard) ON x.node = d.child AND x.shard = d.shard
                ORDER BY x.node, x.shard FOR UPDATE OF x),
            u AS (
                UPDATE {s}.graph_shards x SET
                    waiting = x.waiting + CASE WHEN x.policy = 1 THEN d.wr ELSE d.w END,
                    failed = x.failed + CASE WHEN x.policy = 1 THEN 0 ELSE d.f END
                FROM unnest(skids, shards, sdwr, sdw, sdf) AS d(child, shard, wr, w, f)
                JOIN l ON l.node = d.child AND l.shard = d.shard
                WHERE x.node = d.child AND x.shard = d.shard
                RETURNING x.node,
                    (x.waiting > 0)::int - (x.waiting - CASE WHEN x.policy = 1 THEN d.wr ELSE d.w END > 0)::int AS zw,
                    (x.failed > 0)::int - (x.failed - CASE WHEN x.policy = 1 THEN 0 ELSE d.f END > 0)::int AS zf)
            SELECT u.node, sum(u.zw)::int AS zw, sum(u.zf)::int AS zf FROM u
            GROUP BY u.node HAVING sum(u.zw) <> 0 OR sum(u.zf) <> 0 ORDER BY u.node
        LOOP
            UPDATE {s}.graph_nodes g SET waiting = g.waiting + c.zw, failed = g.failed + c.zf
            WHERE g.node = c.node
            RETURNING g.node, g.state, g.policy, g.waiting, g.failed, g.by_parent INTO r;
            IF (r.state = 0 AND (r.waiting = 0 OR (r.failed > 0 AND r.policy = 0)))
               OR (r.state = 4 AND r.by_parent AND r.failed = 0) THEN
                PERFORM {s}.graph_judge(r.node);
            END IF;
        END LOOP;
        RETURN moved;
    END
    $fn$;

    -- A node under parents this transaction inserted, every one queued (a batch's
    -- children): none locked, none read; its counters are every parent open.
    CREATE OR REPLACE FUNCTION {s}.graph_add_fresh(p_queue text, p_payload bytea, p_parents bigint[],
        p_policy smallint) RETURNS bigint
    LANGUAGE plpgsql AS $fn$
    DECLARE
        v_id bigint := nextval('{s}.graph_ids');
        n integer := coalesce(cardinality(p_parents), 0);
        split boolean := n > 64;
    BEGIN
        INSERT INTO {s}.graph_nodes (node, queue, state, policy, payload, waiting)
        VALUES (v_id, p_queue, 0, p_policy, p_payload, CASE WHEN split THEN 64 ELSE n END);
        INSERT INTO {s}.graph_edges (parent, child, ord, shard)
        SELECT p, v_id, o::integer, CASE WHEN split THEN ((o - 1) % 64)::smallint END
        FROM unnest(p_parents) WITH ORDINALITY AS u(p, o);
        IF split THEN
            INSERT INTO {s}.graph_shards (node, shard, policy, waiting)
            SELECT v_id, g::smallint, p_policy, (n - 1 - g) / 64 + 1 FROM generate_series(0, 63) g;
        END IF;
        IF n = 0 THEN
            PERFORM {s}.graph_judge(v_id);
        END IF;
        RETURN v_id;
    END
    $fn$;

    {graph_key_holder}
"#;

/// Step 11's `key_holder` delete of a replaced waiting row, and the same telling the graph.
const REPLACED: (&str, &str) = (
    "DELETE FROM {s}.items WHERE id = h.id AND state = 0;
                -- Counted before the next PERFORM, which sets FOUND itself.
                GET DIAGNOSTICS gone = ROW_COUNT;",
    "DECLARE
                    g_node bigint;
                    g_payload bytea;
                BEGIN
                    DELETE FROM {s}.items WHERE id = h.id AND state = 0
                    RETURNING node, payload INTO g_node, g_payload;
                    GET DIAGNOSTICS gone = ROW_COUNT;
                    IF g_node IS NOT NULL THEN
                        PERFORM {s}.graph_told(ARRAY[g_node], ARRAY[4::smallint], ARRAY[g_payload]);
                    END IF;
                END;",
);

/// `key_holder` as step 11 defines it (`settle_sql.rs`), its replacement's delete telling
/// the graph: step 13 redefines it so (one copy of its text). Empty if step 11's text no
/// longer has the function or the delete (a test fails then).
pub(crate) fn key_holder() -> String {
    let step11 = crate::settle_sql::MIGRATION;
    let Some(start) = step11.find("CREATE OR REPLACE FUNCTION {s}.key_holder(") else {
        return String::new();
    };
    let Some(len) = step11[start..].find("$fn$;") else {
        return String::new();
    };
    let f = &step11[start..start + len + "$fn$;".len()];
    if !f.contains(REPLACED.0) {
        return String::new();
    }
    f.replace(REPLACED.0, REPLACED.1)
}

impl crate::sql::Sql {
    /// Makes the statements that delete rows or move them to or from the dead letters tell
    /// the graph (after `record_history`, whose form [`told`] reads).
    pub(crate) fn tell_graph(&mut self, schema: &str) {
        self.ack = told(&self.ack, "i.", schema, Fate::Acked);
        self.cancel = told(&self.cancel, "", schema, Fate::Cancelled);
        self.bury = told(&self.bury, "", schema, Fate::Dead);
        self.terminate = told(&self.terminate, "", schema, Fate::Dead);
        self.rescue = told(&self.rescue, "i.", schema, Fate::DeadIfSo);
        self.expire_items = told(&self.expire_items, "", schema, Fate::Dead);
        self.op.redrive = told(&self.op.redrive, "", schema, Fate::Redriven);
        self.op.redrive_all = told(&self.op.redrive_all, "", schema, Fate::Redriven);
        self.op.purge = told(&self.op.purge, "", schema, Fate::Cancelled);
    }
}

/// What a statement's rows are to the graph: an SQL expression of the row's returned state
/// `g_state` (its state after an `UPDATE`, before a `DELETE`) giving the node's new state,
/// NULL for a row that tells nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fate {
    /// Deleted live rows: acked.
    Acked,
    /// Deleted rows: cancelled if they were live (their payload kept), nothing if dead.
    Cancelled,
    /// Rows now dead letters (every row of the statement).
    Dead,
    /// Rows of which those now in state 2 are dead letters (the rescuer's verdicts).
    DeadIfSo,
    /// Rows back from the dead letters (redriven).
    Redriven,
}

impl Fate {
    fn state(self) -> &'static str {
        match self {
            Fate::Acked => "2",
            Fate::Cancelled => "CASE WHEN g_state <> 2 THEN 4 END",
            Fate::Dead => "3",
            Fate::DeadIfSo => "CASE WHEN g_state = 2 THEN 3 END",
            Fate::Redriven => "1",
        }
    }
}

/// The top-level, comma-separated expressions of a list (no parentheses split).
fn split_top(list: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0_i32, 0, Vec::new());
    for (i, ch) in list.char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(list[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if !list[start..].trim().is_empty() {
        out.push(list[start..].trim());
    }
    out
}

/// The index of the `)` closing the `(` just before `from`.
fn closing(s: &str, from: usize) -> Option<usize> {
    let mut depth = 1_i32;
    for (i, ch) in s[from..].char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(from + i);
                }
            }
            _ => {}
        }
    }
    None
}

/// `stmt` (an `UPDATE` or `DELETE` of items whose rows `p` qualifies, `"i."` or `""`; plain,
/// or as `history_sql::recorded` wrote it: `WITH d AS (..) .. SELECT .. FROM d`) telling the
/// graph `fate` of its rows that have a node, in the same statement; it returns what `stmt`
/// returned (a statement without `RETURNING`: one column per row, so its count is as before).
pub(crate) fn told(stmt: &str, p: &str, schema: &str, fate: Fate) -> String {
    let wrapped;
    let stmt = if stmt.trim_start().starts_with("WITH d AS (") {
        stmt
    } else {
        let (body, cols) = match stmt.rfind("RETURNING") {
            Some(at) => (&stmt[..at], split_top(&stmt[at + "RETURNING".len()..])),
            None => (stmt, Vec::new()),
        };
        let mut ret: Vec<String> = cols
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c} AS r{i}"))
            .collect();
        let out: Vec<String> = (0..cols.len()).map(|i| format!("r{i}")).collect();
        let out = if out.is_empty() {
            "g_node".to_string()
        } else {
            out.join(", ")
        };
        if ret.is_empty() {
            ret.push(format!("{p}id AS r_id"));
        }
        wrapped = format!(
            "WITH d AS ({body} RETURNING {}) SELECT {out} FROM d",
            ret.join(", ")
        );
        &wrapped
    };
    let open = stmt.find("WITH d AS (").map(|a| a + "WITH d AS (".len());
    let close = open.and_then(|o| closing(stmt, o));
    let last = stmt.rfind("SELECT ");
    let (Some(close), Some(last)) = (close, last) else {
        return stmt.to_string();
    };
    let payload = if fate == Fate::Cancelled {
        format!(", {p}payload AS g_payload")
    } else {
        ", NULL::bytea AS g_payload".to_string()
    };
    format!(
        "{head}, {p}node AS g_node, {p}state AS g_state{payload}{mid},
         g AS MATERIALIZED (SELECT \"{schema}\".graph_told(array_agg(g_node), array_agg(({state})::smallint),
                                                    array_agg(g_payload))
               FROM d WHERE g_node IS NOT NULL AND ({state}) IS NOT NULL HAVING count(*) > 0)
         {tail} LEFT JOIN g ON true",
        head = &stmt[..close],
        mid = &stmt[close..last].trim_end(),
        state = fate.state(),
        tail = &stmt[last..],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_13_redefines_key_holder_with_its_delete_telling() {
        let f = key_holder();
        assert!(
            f.starts_with("CREATE OR REPLACE FUNCTION {s}.key_holder("),
            "{f}"
        );
        assert!(f.contains("RETURNING node, payload INTO g_node, g_payload"));
        assert!(f.ends_with("$fn$;"));
        assert!(MIGRATION.contains("{graph_key_holder}"));
    }

    #[test]
    fn a_plain_statement_keeps_its_columns_and_tells() {
        let t = told(
            "DELETE FROM x.items i WHERE i.id = $1 RETURNING i.id, -(a - b)::bigint",
            "i.",
            "x",
            Fate::Acked,
        );
        assert!(t.starts_with("WITH d AS (DELETE FROM x.items i WHERE i.id = $1  RETURNING i.id AS r0, -(a - b)::bigint AS r1, i.node AS g_node, i.state AS g_state, NULL::bytea AS g_payload)"), "{t}");
        assert!(
            t.ends_with("SELECT r0, r1 FROM d LEFT JOIN g ON true"),
            "{t}"
        );
        assert!(t.contains("\"x\".graph_told("));
        let t = told(
            "DELETE FROM x.items WHERE id = $1",
            "",
            "x",
            Fate::Cancelled,
        );
        assert!(
            t.contains(
                "RETURNING id AS r_id, node AS g_node, state AS g_state, payload AS g_payload)"
            ),
            "{t}"
        );
        assert!(
            t.ends_with("SELECT g_node FROM d LEFT JOIN g ON true"),
            "{t}"
        );
    }

    #[test]
    fn a_recorded_statement_tells_too() {
        let r = crate::history_sql::recorded(
            "UPDATE x.items SET state = 2 WHERE id = $1 RETURNING attempts",
            "",
            "x",
            "1",
            "",
        );
        let t = told(&r, "", "x", Fate::Dead);
        assert!(
            t.contains("AS h_state, node AS g_node, state AS g_state, NULL::bytea AS g_payload),"),
            "{t}"
        );
        assert!(t.contains("INSERT INTO \"x\".history"));
        assert!(t.ends_with("SELECT r0 FROM d LEFT JOIN g ON true"), "{t}");
    }
}
