#!/bin/bash
# Issue 33: the server CPU a plain item's claim and ack pay for the graph's triggers
# (BENCHMARKS.md, "the dependency graph on Postgres"). Needs the schemas that
# `pg_graph_bench --only plain` leaves (leaseq_bench_graph_off / _on), `perf`, and the
# server on this machine. Prints, per pair of runs (alternating which goes first), the
# backend's task-clock ns per item without and with the triggers, and their ratio.
set -e
U=${LEASEQ_PG_URL:-"host=127.0.0.1 port=5432 user=postgres dbname=test"}
psql "$U" -q <<'SQL'
CREATE OR REPLACE FUNCTION public.plain_cost(sch text, n int) RETURNS double precision LANGUAGE plpgsql AS $$
DECLARE a bigint[]; t0 timestamptz; i int; q text := 'cost-' || sch;
BEGIN
  EXECUTE format('SELECT (%I.push_rows($1, (SELECT array_agg(int8send(g)) FROM generate_series(1,$2) g), 0, 0, NULL, NULL, false, 1000000, NULL)).ids', sch) INTO a USING q, n;
  t0 := clock_timestamp();
  FOR i IN 0..(n/16 - 1) LOOP
    EXECUTE format('UPDATE %I.items SET state = 1, lease = lease + 1, attempts = attempts + 1, deadline = clock_timestamp() WHERE id = ANY($1)', sch) USING a[i*16+1:i*16+16];
    EXECUTE format('DELETE FROM %I.items i USING unnest($1::bigint[]) AS x(id) WHERE i.id = ANY($1) AND i.id = x.id AND i.state IN (0, 1)', sch) USING a[i*16+1:i*16+16];
  END LOOP;
  RETURN extract(epoch FROM clock_timestamp() - t0) * 1e9 / n;
END $$;
SQL
one() {
    local t; t=$(mktemp -d)
    cat > "$t/run.sql" <<SQL
SELECT pg_backend_pid() AS pid \gset
\setenv BPID :pid
SELECT public.plain_cost('$1', 1600);
\! perf stat -x, -e task-clock -p \$BPID -o $t/perf & echo \$! > $t/ppid; sleep 0.5
SELECT public.plain_cost('$1', 16000);
\! sleep 0.2; kill -INT \$(cat $t/ppid); sleep 0.3
SQL
    psql "$U" -Atq -f "$t/run.sql" > /dev/null
    awk -F, '/task-clock/ {printf "%.0f\n", $1*1e6/16000}' "$t/perf"
    rm -rf "$t"
}
for r in $(seq 1 "${PAIRS:-10}"); do
    if [ $((r % 2)) = 0 ]; then a=$(one leaseq_bench_graph_off); b=$(one leaseq_bench_graph_on)
    else b=$(one leaseq_bench_graph_on); a=$(one leaseq_bench_graph_off); fi
    echo "$a $b" | awk '{printf "%s %s %.3f\n", $1, $2, $2/$1}'
done
