#!/bin/bash
# Issue 33, schema step 13: the server CPU a plain item's claim and ack pay for the graph,
# three ways in one run: `none` (no graph at all: the bare claim-shaped UPDATE and ack-shaped
# DELETE), `told` (step 13: the same claim, the ack as `graph_told.rs`'s `told` wraps it: the
# row's node returned, `graph_told` called only when one has one), `trig` (step 10 to 12: the
# bare statements on a table with the two row triggers `graph_finish` / `graph_dead`, their
# `WHEN` false for plain rows as before). Tables are `LIKE` copies of a step-13 schema's items
# (`SRC`, default the one `pg_graph_bench --only fanout` leaves). Prints per pair of rounds
# (alternating order) the backend's task-clock ns per item for none / told / trig and the
# ratios told/none and trig/none. With BARE=1: none / bare / told instead, `bare` being the
# settler's ack of rows claimed without a node (`ack_plain.rs`: none's delete with
# `node IS NULL`). Needs `perf` and the server on this machine.
set -e
U=${LEASEQ_PG_URL:-"host=127.0.0.1 port=5432 user=postgres dbname=test"}
SRC=${SRC:-leaseq_bench_graph_fanout}
psql "$U" -q <<SQL
DROP SCHEMA IF EXISTS cost_none CASCADE; DROP SCHEMA IF EXISTS cost_trig CASCADE;
CREATE SCHEMA cost_none; CREATE SCHEMA cost_trig;
CREATE TABLE cost_none.items (LIKE "$SRC".items INCLUDING ALL);
CREATE TABLE cost_trig.items (LIKE "$SRC".items INCLUDING ALL);
CREATE FUNCTION cost_trig.nothing() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN RETURN NULL; END \$\$;
CREATE TRIGGER graph_finish AFTER DELETE ON cost_trig.items
    FOR EACH ROW WHEN (OLD.node IS NOT NULL) EXECUTE FUNCTION cost_trig.nothing();
CREATE TRIGGER graph_dead AFTER UPDATE OF state ON cost_trig.items
    FOR EACH ROW WHEN (NEW.node IS NOT NULL AND (OLD.state = 2) <> (NEW.state = 2))
    EXECUTE FUNCTION cost_trig.nothing();
CREATE OR REPLACE FUNCTION public.told_cost(sch text, how text, n int) RETURNS double precision LANGUAGE plpgsql AS \$f\$
DECLARE a bigint[]; b bigint[]; t0 timestamptz; i int; c bigint;
BEGIN
  -- Static statements: planned once and kept (generic plans, as the store's sessions do).
  SET LOCAL plan_cache_mode = force_generic_plan;
  EXECUTE format('INSERT INTO %I.items (id, queue, visible_at, payload)
                  SELECT g, ''q'', clock_timestamp(), int8send(g) FROM generate_series(1, \$1) g', sch) USING n;
  SELECT array_agg(g) INTO a FROM generate_series(1, n) g;
  t0 := clock_timestamp();
  FOR i IN 0..(n/16 - 1) LOOP
    b := a[i*16+1:i*16+16];
    IF how = 'trig' THEN
      UPDATE cost_trig.items SET state = 1, lease = lease + 1, attempts = attempts + 1, deadline = clock_timestamp() WHERE id = ANY(b);
      WITH d AS (DELETE FROM cost_trig.items it USING unnest(b) AS x(id) WHERE it.id = ANY(b) AND it.id = x.id AND it.state IN (0, 1)
                 RETURNING it.id AS r0, it.state AS r1)
      SELECT count(*) INTO c FROM d;
    ELSIF how = 'bare' THEN
      -- The settler's ack of rows claimed without a node (ack_plain.rs): none's delete
      -- with node IS NULL in its condition, telling nothing.
      UPDATE cost_none.items SET state = 1, lease = lease + 1, attempts = attempts + 1, deadline = clock_timestamp() WHERE id = ANY(b);
      WITH d AS (DELETE FROM cost_none.items it USING unnest(b) AS x(id) WHERE it.node IS NULL AND it.id = ANY(b) AND it.id = x.id AND it.state IN (0, 1)
                 RETURNING it.id AS r0, it.state AS r1)
      SELECT count(*) INTO c FROM d;
    ELSIF how = 'told' THEN
      UPDATE cost_none.items SET state = 1, lease = lease + 1, attempts = attempts + 1, deadline = clock_timestamp() WHERE id = ANY(b);
      WITH d AS (DELETE FROM cost_none.items it USING unnest(b) AS x(id) WHERE it.id = ANY(b) AND it.id = x.id AND it.state IN (0, 1)
                 RETURNING it.id AS r0, it.state AS r1, it.node AS g_node, it.state AS g_state, NULL::bytea AS g_payload),
           g AS MATERIALIZED (SELECT "$SRC".graph_told(array_agg(g_node), array_agg((2)::smallint), array_agg(g_payload))
                 FROM d WHERE g_node IS NOT NULL AND (2) IS NOT NULL HAVING count(*) > 0)
      SELECT count(*) INTO c FROM (SELECT r0, r1 FROM d LEFT JOIN g ON true) z;
    ELSE
      UPDATE cost_none.items SET state = 1, lease = lease + 1, attempts = attempts + 1, deadline = clock_timestamp() WHERE id = ANY(b);
      WITH d AS (DELETE FROM cost_none.items it USING unnest(b) AS x(id) WHERE it.id = ANY(b) AND it.id = x.id AND it.state IN (0, 1)
                 RETURNING it.id AS r0, it.state AS r1)
      SELECT count(*) INTO c FROM d;
    END IF;
  END LOOP;
  RETURN extract(epoch FROM clock_timestamp() - t0) * 1e9 / n;
END \$f\$;
SQL
one() {
    local t; t=$(mktemp -d)
    cat > "$t/run.sql" <<SQL
SELECT pg_backend_pid() AS pid \gset
\setenv BPID :pid
SELECT public.told_cost('$1', '$2', 1600);
\! perf stat -x, -e task-clock -p \$BPID -o $t/perf & echo \$! > $t/ppid; sleep 0.5
SELECT public.told_cost('$1', '$2', 16000);
\! sleep 0.2; kill -INT \$(cat $t/ppid); sleep 0.3
SQL
    psql "$U" -Atq -f "$t/run.sql" > /dev/null
    awk -F, '/task-clock/ {printf "%.0f\n", $1*1e6/16000}' "$t/perf"
    rm -rf "$t"
}
if [ -n "$BARE" ]; then
    # none / bare / told: the bare ack (`ack_plain.rs`) against no graph and step 13's wrapper.
    for r in $(seq 1 "${PAIRS:-6}"); do
        if [ $((r % 2)) = 0 ]; then a=$(one cost_none none); b=$(one cost_none bare); c=$(one cost_none told)
        else c=$(one cost_none told); b=$(one cost_none bare); a=$(one cost_none none); fi
        echo "$a $b $c" | awk '{printf "none %s bare %s told %s  bare/none %.3f told/none %.3f\n", $1, $2, $3, $2/$1, $3/$1}'
    done
    exit 0
fi
for r in $(seq 1 "${PAIRS:-6}"); do
    if [ $((r % 2)) = 0 ]; then a=$(one cost_none none); b=$(one cost_none told); c=$(one cost_trig trig)
    else c=$(one cost_trig trig); b=$(one cost_none told); a=$(one cost_none none); fi
    echo "$a $b $c" | awk '{printf "none %s told %s trig %s  told/none %.3f trig/none %.3f\n", $1, $2, $3, $2/$1, $3/$1}'
done
