#!/bin/bash
# Issue 33, schema step 17: the server time `graph_told` takes per batch child, as the store's
# sessions run it (their settings, generic plans). Copies the schema `pg_graph_bench --only
# fanout` leaves (`SRC`, whatever step it is at) into `fancost` (dropped first), empties its
# graph, adds `OTHERS` untold fan-outs (the callbacks a schema already holds: 5 after a bench
# run), then tells the children of fresh fan-outs of `N` children (one callback each), `K` to
# a call, one statement a call, and prints the function's time per child from
# pg_stat_user_functions (track_functions = pl) and the wall time per child. Run it once on
# a schema of each build and compare. Needs pg_dump and psql; the server on this machine.
set -e
U=${LEASEQ_PG_URL:-"host=127.0.0.1 port=5432 user=postgres dbname=test"}
SRC=${SRC:-leaseq_bench_graph_fanout}
N=${N:-10000}
OTHERS=${OTHERS:-5}
ROUNDS=${ROUNDS:-3}
export PGOPTIONS="-c jit=off -c enable_bitmapscan=off -c enable_sort=off -c enable_seqscan=off \
  -c plan_cache_mode=force_generic_plan -c track_functions=pl -c synchronous_commit=off"
t=$(mktemp -d)
psql "$U" -q -c "DROP SCHEMA IF EXISTS fancost CASCADE" 2>/dev/null
pg_dump -d "$U" -n "$SRC" --schema-only | sed "s/\b$SRC\b/fancost/g" | psql "$U" -q >/dev/null 2>&1
psql "$U" -q <<'SQL'
TRUNCATE fancost.graph_nodes, fancost.graph_edges, fancost.graph_shards, fancost.graph_batches, fancost.items;
CREATE OR REPLACE FUNCTION fancost.fan_fixture(b bigint, n int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO fancost.graph_nodes (node, queue, state, policy, waiting, payload) VALUES (b, 'q', 0, 0, 64, 'cb');
  INSERT INTO fancost.graph_nodes (node, queue, state, policy) SELECT b + i, 'q', 1, 0 FROM generate_series(1, n) i;
  INSERT INTO fancost.graph_edges (parent, child, ord, shard)
    SELECT b + i, b, i, ((i - 1) % 64)::smallint FROM generate_series(1, n) i;
  INSERT INTO fancost.graph_shards (node, shard, policy, waiting)
    SELECT b, g::smallint, 0, (n - 1 - g) / 64 + 1 FROM generate_series(0, 63) g;
END $$;
SQL
for o in $(seq 1 "$OTHERS"); do psql "$U" -Atq -c "SELECT fancost.fan_fixture(${o}000000, $N)" >/dev/null; done
psql "$U" -q -c "ANALYZE fancost.graph_nodes; ANALYZE fancost.graph_edges; ANALYZE fancost.graph_shards"
q="SELECT coalesce(sum(total_time), 0) FROM pg_stat_user_functions WHERE schemaname = 'fancost' AND funcname = 'graph_told'"
b=100000000
for r in $(seq 1 "$ROUNDS"); do
  for k in ${KS:-1 4 16}; do
    b=$((b + 1000000))
    psql "$U" -Atq -c "SELECT fancost.fan_fixture($b, $N)" >/dev/null
    awk -v b=$b -v n=$N -v k=$k 'BEGIN{
      for (i = 1; i <= n; i += k) { a = ""; s = ""; p = "";
        for (j = 0; j < k && i + j <= n; j++) { a = a (j ? "," : "") (b + i + j); s = s (j ? "," : "") "2"; p = p (j ? "," : "") "NULL" }
        print "SELECT fancost.graph_told(ARRAY[" a "]::bigint[], '\''{" s "}'\''::smallint[], '\''{" p "}'\''::bytea[]);" } }' > "$t/calls.sql"
    t0=$(psql "$U" -Atq -c "$q"); s=$(date +%s%N)
    psql "$U" -q -f "$t/calls.sql" >/dev/null
    e=$(date +%s%N); sleep 1.2; t1=$(psql "$U" -Atq -c "$q")
    ok=$(psql "$U" -Atq -c "SELECT state = 1 FROM fancost.graph_nodes WHERE node = $b")
    echo "$t0 $t1 $s $e" | awk -v k=$k -v n=$N -v ok=$ok -v r=$r \
      '{printf "round %d  %2d a call  graph_told %6.1f us/child  wall %6.1f us/child  callback released %s\n", r, k, ($2-$1)*1000/n, ($4-$3)/1000/n, ok}'
  done
done
rm -rf "$t"
