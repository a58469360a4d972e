#!/bin/bash
# Issue 33, schema step 20: the backend CPU an ack statement costs per acked row, a batch
# child's (the told ack, `graph_told` in it) against an independent job's (the bare ack), as
# the store sends them (texts taken from the server's log of a pg_graph_bench run, schema
# renamed), with the store's session settings, `K` rows a statement, one statement a
# transaction. Needs the `fancost` schema benches/pg_fanout_told_cost.sh leaves (a copy of
# the bench's schema, its graph emptied, with `fan_fixture`); load a `graph_told` into it to
# compare versions. CPU from /proc/<backend>/stat (utime + stime, 10 ms ticks): run it on
# the server's machine, alternate the versions, several runs.
#   usage: LEASEQ_PG_URL=.. benches/pg_told_ack_cpu.sh BASE_ID K told|bare   (N rows, 10000)
set -e
U=${LEASEQ_PG_URL:-"host=127.0.0.1 port=5432 user=postgres dbname=test"}
export PGOPTIONS="-c jit=off -c enable_bitmapscan=off -c enable_sort=off -c enable_seqscan=off \
  -c plan_cache_mode=force_generic_plan -c synchronous_commit=off"
B=$1; K=$2; KIND=$3; N=${N:-10000}
t=$(mktemp -d)
TOLD='WITH d AS (DELETE FROM "fancost".items i USING unnest($1::bigint[], $2::bigint[]) AS a(id, lease)
                 WHERE i.id = ANY($1::bigint[]) AND i.id = a.id AND i.lease = a.lease AND i.state IN (0, 1)
                  RETURNING i.id AS r0, i.state AS r1, -(EXTRACT(EPOCH FROM (i.deadline - clock_timestamp())) * 1000000)::bigint AS r2, CASE WHEN i.key_hold >= 2 AND i.key IS NOT NULL AND i.state IN (0, 1)
              THEN "fancost".keep_key(i.queue, i.key, i.key_hold, i.key_until, i.key_then, i.id) END AS r3, i.node AS g_node, i.state AS g_state, NULL::bytea AS g_payload),
         g AS MATERIALIZED (SELECT "fancost".graph_told(array_agg(g_node), array_agg((2)::smallint),
                                                    array_agg(g_payload))
               FROM d WHERE g_node IS NOT NULL AND (2) IS NOT NULL HAVING count(*) > 0)
         SELECT r0, r1, r2, r3 FROM d LEFT JOIN g ON true'
BARE='DELETE FROM "fancost".items i USING unnest($1::bigint[], $2::bigint[]) AS a(id, lease)
                 WHERE i.node IS NULL AND i.id = ANY($1::bigint[]) AND i.id = a.id AND i.lease = a.lease AND i.state IN (0, 1)
                 RETURNING i.id, i.state, -(EXTRACT(EPOCH FROM (i.deadline - clock_timestamp())) * 1000000)::bigint, CASE WHEN i.key_hold >= 2 AND i.key IS NOT NULL AND i.state IN (0, 1)
              THEN "fancost".keep_key(i.queue, i.key, i.key_hold, i.key_until, i.key_then, i.id) END'
rows="INSERT INTO fancost.items (id, queue, state, visible_at, deadline, lease, payload, node)
      SELECT $B + i, 'q', 1, now(), now() + interval '1 hour', 1, '\x00'"
if [ "$KIND" = told ]; then
  psql "$U" -Atq -c "SELECT fancost.fan_fixture($B, $N)" -c "$rows, $B + i FROM generate_series(1, $N) i" >/dev/null
  SQL=$TOLD
else
  psql "$U" -Atq -c "$rows, NULL FROM generate_series(1, $N) i" >/dev/null
  SQL=$BARE
fi
{
  echo "PREPARE a(bigint[], bigint[]) AS $SQL;"
  echo "SELECT pg_backend_pid() AS pid \\gset"
  echo "\\setenv PID :pid"
  echo "\\! awk '{print \$14+\$15}' /proc/\$PID/stat > $t/cpu0"
  awk -v b="$B" -v n="$N" -v k="$K" 'BEGIN{
    for (i = 1; i <= n; i += k) { a = ""; s = "";
      for (j = 0; j < k && i + j <= n; j++) { a = a (j ? "," : "") (b + i + j); s = s (j ? "," : "") "1" }
      print "EXECUTE a('\''{" a "}'\'', '\''{" s "}'\'');" } }'
  echo "\\! awk '{print \$14+\$15}' /proc/\$PID/stat > $t/cpu1"
} > "$t/run.sql"
psql "$U" -q -f "$t/run.sql" >/dev/null
left=$(psql "$U" -Atq -c "SELECT count(*) FROM fancost.items WHERE id > $B AND id <= $B + $N")
echo "$KIND k=$K: $(( ($(cat $t/cpu1) - $(cat $t/cpu0)) * 10000 / N )) us CPU/row ($left rows left)"
if [ "$KIND" = told ]; then
  psql "$U" -Atq -c "SELECT 'callback released: ' || (state = 1) FROM fancost.graph_nodes WHERE node = $B"
fi
rm -rf "$t"
