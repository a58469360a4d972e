//! Jobs that wait for other jobs, in SQL: schema step 10 (issue 33). The tables of the
//! graph, the functions that change it, and the two triggers on `items` that tell it a
//! tracked row's outcome in the statement that settles the row.
//!
//! **Since step 13** (`graph_told.rs`) the two triggers are gone: the settling statements
//! tell the graph themselves, once per statement (`graph_told`); what follows about the
//! triggers is step 10 as it was released. The tables and `graph_judge`, `graph_release`,
//! `graph_move`, `graph_recount`, `graph_add`, `graph_adopt` are still used as written here.
//!
//! **Rows are the truth, and the release rides on the ack.** A job of the graph that
//! waits is a row of `graph_nodes` (its payload, its policy for a failed parent, and two
//! counters: parents still waited for, failed parents that hold or cancel it), linked to
//! its parents by `graph_edges`. A released job is an `items` row whose `node` column names
//! its node; every other row has `node` NULL. The triggers fire only for rows with a node
//! (`WHEN (OLD.node IS NOT NULL)`, evaluated in C before any function runs), so a plain
//! ack or claim runs no function and touches no graph table. For a tracked row the trigger
//! runs inside the statement that deletes it (an ack, also `ack_in` in a caller's
//! transaction) or moves it to or from the dead letters: the parent's new state, each
//! child's counters, and each released child's `items` row commit with the ack, or not at
//! all. A lost reply re-runs the fenced ack, which finds no row and fires nothing; a
//! child is released only from `state = 0` (pending) under its row lock, so never twice.
//!
//! **The model is the core's** ([`leaseq_core::graph`]): a parent's class (open, acked,
//! failed) weighs on a child as [`OnFailedParent`](leaseq_core::graph::OnFailedParent)
//! says (`graph_w` / `graph_f` are the core's `OnFailedParent::weight` table, written again in SQL
//! because the release must happen inside the ack's statement; `tests/graph.rs` checks each
//! policy's behaviour against the core's docs); a pending child
//! with no parent waited for is released; a failed parent cancels (`Cancel`) or holds
//! (`Hold`) it; a parent that comes back (a redrive, a retry) revives the children it
//! cancelled. Workflows are checked (names, cycles) by the core's `WorkflowSpec` before
//! anything is sent.
//!
//! **Fates of a delete.** An ack deletes the row, and so do a cancel and a purge. The
//! statements that delete for another reason than an ack set `leaseq.fate = 'cancel'` for
//! their transaction (`CANCEL_FATE`), which the trigger reads; a purged dead letter is
//! already failed and changes nothing.
//!
//! **Locks.** A change of a node locks its row, then (one `UPDATE .. FROM graph_edges`) its
//! children's rows; an add locks its parents' rows in node order before reading their
//! states, so an ack of a parent and the add of a child are serialized: the add sees the
//! ack, or the ack's trigger sees the new edge. Two acks whose parents share two children
//! may deadlock: the server aborts one statement (an `ERROR`, nothing done), which the
//! settle retries. A child's counters are locked by each parent's ack to its commit: one
//! row for a child of up to 64 parents; for more (a batch's callback) 64 rows of
//! `graph_shards`, a parent's by its place (since step 19 any row with some left, taken
//! as a slot: `graph_slots.rs`), and the child's own counters (how many rows still wait or
//! fail) locked only when one of them starts or stops, so the acks of a batch's children
//! rarely take turns (BENCHMARKS.md, issue 33, measures a fan-out).

/// Schema step 10 (issue 33). `{s}` is the quoted schema, `{schema}` its bare name.
/// Idempotent, like step 6.
pub(crate) const MIGRATION: &str = r#"
    ALTER TABLE {s}.items ADD COLUMN IF NOT EXISTS node bigint;
    CREATE SEQUENCE IF NOT EXISTS {s}.graph_ids AS bigint;
    CREATE TABLE IF NOT EXISTS {s}.graph_nodes (
        node        bigint      PRIMARY KEY,
        queue       text        NOT NULL,
        state       smallint    NOT NULL DEFAULT 0, -- 0 pending, 1 queued, 2 acked, 3 dead letter, 4 cancelled
        policy      smallint    NOT NULL,           -- 0 cancel, 1 run, 2 hold
        waiting     integer     NOT NULL DEFAULT 0, -- parents still waited for
        failed      integer     NOT NULL DEFAULT 0, -- failed parents that hold or cancel it
        by_parent   boolean     NOT NULL DEFAULT false, -- cancelled because a parent failed
        message     bigint,                         -- the items row it was pushed as
        payload     bytea,                          -- while the graph holds it
        workflow    bigint,
        step        text,
        batch       bigint,                         -- the batch it is a child of
        result      bytea
    );
    CREATE UNIQUE INDEX IF NOT EXISTS graph_nodes_message ON {s}.graph_nodes (message) WHERE message IS NOT NULL;
    CREATE INDEX IF NOT EXISTS graph_nodes_workflow ON {s}.graph_nodes (workflow, node) WHERE workflow IS NOT NULL;
    CREATE INDEX IF NOT EXISTS graph_nodes_batch ON {s}.graph_nodes (batch) WHERE batch IS NOT NULL;
    CREATE TABLE IF NOT EXISTS {s}.graph_edges (
        parent      bigint      NOT NULL,
        child       bigint      NOT NULL,
        ord         integer     NOT NULL,           -- the parent's place in the child's list
        shard       smallint,                       -- the child's counters row (SHARDS), or NULL
        PRIMARY KEY (parent, child)
    );
    CREATE INDEX IF NOT EXISTS graph_edges_child ON {s}.graph_edges (child, ord);
    -- The counters of a job with more than 64 parents (a batch's callback), split over 64
    -- rows by the parent's place: a parent's outcome locks one of them, and the job's own
    -- counters (in graph_nodes) count the rows with parents still waited for / failed.
    CREATE TABLE IF NOT EXISTS {s}.graph_shards (
        node        bigint      NOT NULL,
        shard       smallint    NOT NULL,
        policy      smallint    NOT NULL,
        waiting     integer     NOT NULL DEFAULT 0,
        failed      integer     NOT NULL DEFAULT 0,
        PRIMARY KEY (node, shard)
    ) WITH (fillfactor = 50);
    CREATE TABLE IF NOT EXISTS {s}.graph_workflows (
        workflow    bigint      PRIMARY KEY,
        queue       text        NOT NULL,
        steps       text[]      NOT NULL            -- the step names in the spec's order
    );
    CREATE TABLE IF NOT EXISTS {s}.graph_batches (
        batch       bigint      PRIMARY KEY,
        queue       text        NOT NULL,
        callback    bigint      NOT NULL,
        on_success  boolean     NOT NULL,
        total       bigint      NOT NULL            -- its counts are its children's states
    );

    -- A node state's class: 0 open (pending, queued), 1 acked, 2 failed.
    CREATE OR REPLACE FUNCTION {s}.graph_class(st smallint) RETURNS integer
    LANGUAGE sql IMMUTABLE AS $fn$
        SELECT CASE WHEN st <= 1 THEN 0 WHEN st = 2 THEN 1 ELSE 2 END
    $fn$;

    -- What a parent of class c adds to a child's counters, waiting (graph_w) and failed
    -- (graph_f): the core's OnFailedParent::weight. Scalar SQL, inlined where it is called.
    CREATE OR REPLACE FUNCTION {s}.graph_w(policy smallint, c integer) RETURNS integer
    LANGUAGE sql IMMUTABLE AS $fn$
        SELECT CASE WHEN c = 0 THEN 1 WHEN c = 1 THEN 0 WHEN policy = 1 THEN 0 ELSE 1 END
    $fn$;
    CREATE OR REPLACE FUNCTION {s}.graph_f(policy smallint, c integer) RETURNS integer
    LANGUAGE sql IMMUTABLE AS $fn$
        SELECT CASE WHEN c = 2 AND policy <> 1 THEN 1 ELSE 0 END
    $fn$;

    -- Pushes a pending node's payload as an items row (push_rows: the one push), names it.
    CREATE OR REPLACE FUNCTION {s}.graph_release(p_node bigint) RETURNS void
    LANGUAGE plpgsql AS $fn$
    DECLARE
        n record;
        r record;
    BEGIN
        SELECT queue, payload INTO n FROM {s}.graph_nodes WHERE node = p_node;
        -- push_rows as step 11 redefines it (with a key's window; step 10 alone never runs).
        SELECT * INTO r FROM {s}.push_rows(n.queue, ARRAY[n.payload], 0, 0, NULL, NULL, false,
                                           9223372036854775807, NULL, NULL, NULL);
        IF r.refusal IS NOT NULL THEN
            RAISE EXCEPTION 'leaseq: node % not released: %', p_node, r.refusal;
        END IF;
        UPDATE {s}.items SET node = p_node WHERE id = r.ids[1];
        UPDATE {s}.graph_nodes SET state = 1, message = r.ids[1], payload = NULL, by_parent = false
        WHERE node = p_node;
    END
    $fn$;

    -- Judges a node after its counters changed: released, cancelled or revived.
    CREATE OR REPLACE FUNCTION {s}.graph_judge(p_node bigint) RETURNS void
    LANGUAGE plpgsql AS $fn$
    DECLARE
        n record;
    BEGIN
        SELECT state, policy, waiting, failed, by_parent INTO n FROM {s}.graph_nodes WHERE node = p_node;
        IF n.state = 0 THEN
            IF n.failed > 0 AND n.policy = 0 THEN
                UPDATE {s}.graph_nodes SET by_parent = true WHERE node = p_node;
                PERFORM {s}.graph_move(p_node, 4::smallint);
            ELSIF n.waiting = 0 THEN
                PERFORM {s}.graph_release(p_node);
            END IF;
        ELSIF n.state = 4 AND n.by_parent AND n.failed = 0 THEN
            -- Revived: pending again (and judged again there).
            UPDATE {s}.graph_nodes SET by_parent = false WHERE node = p_node;
            PERFORM {s}.graph_move(p_node, 0::smallint);
            PERFORM {s}.graph_judge(p_node);
        END IF;
    END
    $fn$;

    -- Moves a node to a state, and tells its children if its class changed: one statement
    -- for the node, one for all its children's counters, then each child that may change
    -- judged. A batch's counts are its children's states (read, not kept): no row that
    -- every child's ack rewrites but the callback's counters.
    CREATE OR REPLACE FUNCTION {s}.graph_move(p_node bigint, p_state smallint) RETURNS void
    LANGUAGE plpgsql AS $fn$
    DECLARE
        old_state smallint;
        c record;
        oc integer;
        nc integer;
        dw_run integer;
        dw integer;
        df integer;
        r record;
    BEGIN
        UPDATE {s}.graph_nodes g SET state = p_state
        FROM (SELECT node, state FROM {s}.graph_nodes WHERE node = p_node FOR UPDATE) o
        WHERE g.node = o.node AND o.state <> p_state
        RETURNING o.state INTO old_state;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        oc := {s}.graph_class(old_state);
        nc := {s}.graph_class(p_state);
        IF oc = nc THEN
            RETURN;
        END IF;
        -- The weights' changes, for `Run` (1) and for the other two (same weights), taken
        -- once here rather than per child.
        dw_run := {s}.graph_w(1::smallint, nc) - {s}.graph_w(1::smallint, oc);
        dw := {s}.graph_w(0::smallint, nc) - {s}.graph_w(0::smallint, oc);
        df := {s}.graph_f(0::smallint, nc) - {s}.graph_f(0::smallint, oc);
        FOR c IN
            UPDATE {s}.graph_nodes g SET
                waiting = g.waiting + CASE WHEN g.policy = 1 THEN dw_run ELSE dw END,
                failed = g.failed + CASE WHEN g.policy = 1 THEN 0 ELSE df END
            FROM {s}.graph_edges e
            WHERE e.parent = p_node AND e.shard IS NULL AND g.node = e.child
            RETURNING g.node, g.state, g.policy, g.waiting, g.failed, g.by_parent
        LOOP
            IF (c.state = 0 AND (c.waiting = 0 OR (c.failed > 0 AND c.policy = 0)))
               OR (c.state = 4 AND c.by_parent AND c.failed = 0) THEN
                PERFORM {s}.graph_judge(c.node);
            END IF;
        END LOOP;
        -- Children with split counters: their row of this parent, and their own counters
        -- only when that row starts or stops waiting (or failing).
        FOR c IN
            UPDATE {s}.graph_shards x SET
                waiting = x.waiting + CASE WHEN x.policy = 1 THEN dw_run ELSE dw END,
                failed = x.failed + CASE WHEN x.policy = 1 THEN 0 ELSE df END
            FROM {s}.graph_edges e
            WHERE e.parent = p_node AND e.shard IS NOT NULL AND x.node = e.child AND x.shard = e.shard
            RETURNING x.node,
                (x.waiting > 0)::int - (x.waiting - CASE WHEN x.policy = 1 THEN dw_run ELSE dw END > 0)::int AS zw,
                (x.failed > 0)::int - (x.failed - CASE WHEN x.policy = 1 THEN 0 ELSE df END > 0)::int AS zf
        LOOP
            IF c.zw <> 0 OR c.zf <> 0 THEN
                UPDATE {s}.graph_nodes g SET waiting = g.waiting + c.zw, failed = g.failed + c.zf
                WHERE g.node = c.node
                RETURNING g.node, g.state, g.policy, g.waiting, g.failed, g.by_parent INTO r;
                IF (r.state = 0 AND (r.waiting = 0 OR (r.failed > 0 AND r.policy = 0)))
                   OR (r.state = 4 AND r.by_parent AND r.failed = 0) THEN
                    PERFORM {s}.graph_judge(r.node);
                END IF;
            END IF;
        END LOOP;
    END
    $fn$;

    -- Recounts a node's counters (and its split rows) from its parents as they stand.
    CREATE OR REPLACE FUNCTION {s}.graph_recount(p_node bigint) RETURNS void
    LANGUAGE plpgsql AS $fn$
    DECLARE
        pol smallint;
    BEGIN
        SELECT policy INTO pol FROM {s}.graph_nodes WHERE node = p_node;
        UPDATE {s}.graph_shards x SET waiting = t.w, failed = t.f
        FROM (SELECT e.shard, sum({s}.graph_w(pol, {s}.graph_class(g.state))) AS w,
                     sum({s}.graph_f(pol, {s}.graph_class(g.state))) AS f
              FROM {s}.graph_edges e
              JOIN {s}.graph_nodes g ON g.node = e.parent
              WHERE e.child = p_node AND e.shard IS NOT NULL
              GROUP BY e.shard) t
        WHERE x.node = p_node AND x.shard = t.shard;
        IF FOUND THEN
            UPDATE {s}.graph_nodes SET
                waiting = (SELECT count(*) FROM {s}.graph_shards WHERE node = p_node AND waiting > 0),
                failed = (SELECT count(*) FROM {s}.graph_shards WHERE node = p_node AND failed > 0)
            WHERE node = p_node;
        ELSE
            UPDATE {s}.graph_nodes SET
                waiting = coalesce(t.w, 0), failed = coalesce(t.f, 0)
            FROM (SELECT sum({s}.graph_w(pol, {s}.graph_class(g.state))) AS w,
                         sum({s}.graph_f(pol, {s}.graph_class(g.state))) AS f
                  FROM {s}.graph_edges e
                  JOIN {s}.graph_nodes g ON g.node = e.parent
                  WHERE e.child = p_node) t
            WHERE node = p_node;
        END IF;
    END
    $fn$;

    -- Adds a node under parents (nodes of this schema), counted and judged; NULL if a parent
    -- is unknown or named twice. p_policy 0 cancel, 1 run, 2 hold. Over 64 parents, its
    -- counters are split (graph_shards).
    CREATE OR REPLACE FUNCTION {s}.graph_add(p_queue text, p_payload bytea, p_parents bigint[],
        p_policy smallint, p_workflow bigint, p_step text, p_batch bigint) RETURNS bigint
    LANGUAGE plpgsql AS $fn$
    DECLARE
        v_id bigint := nextval('{s}.graph_ids');
        found_n integer;
        split boolean;
    BEGIN
        p_parents := coalesce(p_parents, '{}');
        split := cardinality(p_parents) > 64;
        IF (SELECT count(DISTINCT p) FROM unnest(p_parents) p) <> cardinality(p_parents) THEN
            RETURN NULL;
        END IF;
        PERFORM 1 FROM {s}.graph_nodes WHERE node = ANY(p_parents) ORDER BY node FOR UPDATE;
        SELECT count(*) INTO found_n FROM {s}.graph_nodes WHERE node = ANY(p_parents);
        IF found_n <> cardinality(p_parents) THEN
            RETURN NULL;
        END IF;
        INSERT INTO {s}.graph_nodes (node, queue, state, policy, payload, workflow, step, batch)
        VALUES (v_id, p_queue, 0, p_policy, p_payload, p_workflow, p_step, p_batch);
        INSERT INTO {s}.graph_edges (parent, child, ord, shard)
        SELECT p, v_id, o::integer, CASE WHEN split THEN ((o - 1) % 64)::smallint END
        FROM unnest(p_parents) WITH ORDINALITY AS u(p, o);
        IF split THEN
            INSERT INTO {s}.graph_shards (node, shard, policy)
            SELECT v_id, g::smallint, p_policy FROM generate_series(0, 63) g;
        END IF;
        PERFORM {s}.graph_recount(v_id);
        PERFORM {s}.graph_judge(v_id);
        RETURN v_id;
    END
    $fn$;

    -- The node of a message of p_queue, adopted if it is a plain row; NULL if the row is
    -- gone (finished: nothing to wait for).
    CREATE OR REPLACE FUNCTION {s}.graph_adopt(p_queue text, p_message bigint) RETURNS bigint
    LANGUAGE plpgsql AS $fn$
    DECLARE
        v_id bigint;
        st smallint;
    BEGIN
        SELECT node INTO v_id FROM {s}.graph_nodes WHERE message = p_message;
        IF FOUND THEN
            RETURN v_id;
        END IF;
        v_id := nextval('{s}.graph_ids');
        UPDATE {s}.items SET node = v_id WHERE id = p_message AND queue = p_queue AND node IS NULL
        RETURNING state INTO st;
        IF NOT FOUND THEN
            -- Gone, or adopted meanwhile by another transaction (committed: its node is seen).
            RETURN (SELECT i.node FROM {s}.items i WHERE i.id = p_message AND i.queue = p_queue);
        END IF;
        INSERT INTO {s}.graph_nodes (node, queue, state, policy, message)
        VALUES (v_id, p_queue, CASE WHEN st = 2 THEN 3 ELSE 1 END, 0, p_message);
        RETURN v_id;
    END
    $fn$;

    -- A tracked row deleted: acked, unless the transaction said it cancels (a purged dead
    -- letter stays failed as it was).
    CREATE OR REPLACE FUNCTION {s}.graph_on_delete() RETURNS trigger
    LANGUAGE plpgsql AS $fn$
    BEGIN
        IF OLD.state = 2 THEN
            RETURN NULL;
        END IF;
        IF current_setting('leaseq.fate', true) = 'cancel' THEN
            UPDATE {s}.graph_nodes SET payload = OLD.payload WHERE node = OLD.node AND state = 1;
            PERFORM {s}.graph_move(OLD.node, 4::smallint);
        ELSE
            PERFORM {s}.graph_move(OLD.node, 2::smallint);
        END IF;
        RETURN NULL;
    END
    $fn$;

    -- A tracked row to the dead letters (failed) or back from them (redriven: open again).
    CREATE OR REPLACE FUNCTION {s}.graph_on_dead() RETURNS trigger
    LANGUAGE plpgsql AS $fn$
    BEGIN
        IF NEW.state = 2 THEN
            PERFORM {s}.graph_move(NEW.node, 3::smallint);
        ELSE
            PERFORM {s}.graph_move(NEW.node, 1::smallint);
        END IF;
        RETURN NULL;
    END
    $fn$;

    DROP TRIGGER IF EXISTS graph_finish ON {s}.items;
    CREATE TRIGGER graph_finish AFTER DELETE ON {s}.items
        FOR EACH ROW WHEN (OLD.node IS NOT NULL) EXECUTE FUNCTION {s}.graph_on_delete();
    DROP TRIGGER IF EXISTS graph_dead ON {s}.items;
    CREATE TRIGGER graph_dead AFTER UPDATE OF state ON {s}.items
        FOR EACH ROW WHEN (NEW.node IS NOT NULL AND (OLD.state = 2) <> (NEW.state = 2))
        EXECUTE FUNCTION {s}.graph_on_dead();
"#;
