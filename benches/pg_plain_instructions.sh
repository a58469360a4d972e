#!/bin/bash
# What a plain item costs the Postgres server, in instructions (callgrind): exact, so it does
# not move with the machine's load the way CPU seconds and items/s do (BENCHMARKS.md, rounds
# 9 and 10: the same binary 16 % apart between two rounds). For the goal "jobs without
# flow control or dependencies cost nothing extra on Postgres" (issues 32 and 33).
#
#   benches/pg_plain_instructions.sh BIN [BIN ...]
#
# Each BIN (a release `pg_bench` of some commit) makes its own schema in a database of a
# throwaway cluster (initdb, port 5498, autovacuum and fsync off), with every statement
# logged; `benches/pg_plain_item.py` makes a `pgbench` script of that commit's own plain claim
# and ack from the log. The script then runs against that database under
# `valgrind --tool=callgrind` as one `pgbench` session: per transaction 16 plain rows inserted,
# claimed with the plain claim and acked with the plain ack (the claim wrapped in a `WITH`
# that hands the ids and leases to the ack).
# The session's backend counts its instructions alone (one file a process); 100 and then 400
# transactions on a truncated table, and the difference over 4,800 items is printed: the
# connection and the statements' first planning cancel out. Prints one line per BIN:
#   <bin> per_item <instructions> (t100 <total>, t400 <total>)
# Needs root (the cluster runs as `postgres`) and PostgreSQL 15's binaries.
set -eu
pg=/usr/lib/postgresql/15/bin
port=5498
dir=$(mktemp -d /tmp/pg_plain_instr.XXXXXX)
chown postgres "$dir"
su postgres -c "$pg/initdb -D $dir/data --auth=trust -U postgres" >"$dir/initdb.log" 2>&1
opts="-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$dir -c autovacuum=off -c fsync=off"

start() { # [valgrind]: the cluster started, plainly or each process under callgrind
    if [ "${1:-}" = valgrind ]; then
        mkdir -p "$dir/cg" && chown postgres "$dir/cg"
        su postgres -c "cd $dir && valgrind --tool=callgrind --callgrind-out-file=$dir/cg/cg.%p \
            $pg/postgres -D $dir/data $opts >$dir/valgrind.log 2>&1 &"
    else
        su postgres -c "$pg/pg_ctl -D $dir/data -o '$opts' -l $dir/server.log start" >/dev/null
    fi
    until pg_isready -q -h 127.0.0.1 -p $port; do sleep 1; done
}
stop() {
    su postgres -c "$pg/pg_ctl -D $dir/data stop -m fast" >/dev/null
    while pgrep -f -- "-D $dir/data" >/dev/null; do sleep 1; done
}
sql() { psql -q -h 127.0.0.1 -p $port -U postgres -d "$1" -c "$2"; }

# Each binary's schema, in a database of its own; the log names each statement's database.
start
sql postgres "ALTER SYSTEM SET log_line_prefix = '%m [%p] %q%u@%d '"
sql postgres "SELECT pg_reload_conf()" >/dev/null
i=0
for bin in "$@"; do
    i=$((i + 1))
    sql postgres "CREATE DATABASE plain$i"
    sql postgres "ALTER DATABASE plain$i SET log_statement = 'all'"
    LEASEQ_PG_URL="host=127.0.0.1 port=$port user=postgres dbname=plain$i" \
        "$bin" --rounds 1 --items 50 --pool-items 0 >"$dir/migrate$i.log" 2>&1
    sql "plain$i" "CREATE SEQUENCE bench_ids"
    sql postgres "ALTER DATABASE plain$i RESET log_statement"
done
stop
i=0
for bin in "$@"; do
    i=$((i + 1))
    python3 "$(dirname "$0")/pg_plain_item.py" "$dir/server.log" "plain$i" >"$dir/plain$i.pgb"
done

# The instructions of the backend of one pgbench session of $3 transactions of $2 on plain$1.
session() {
    sql "plain$1" "TRUNCATE leaseq_bench_store.items"
    sleep 6 # the psql session's backend writes its counts as it exits
    local before
    before=$(ls "$dir/cg" | sort)
    pgbench -h 127.0.0.1 -p $port -U postgres -n -M prepared -t "$3" -D q=q -f "$2" "plain$1" \
        >"$dir/pgbench.log" 2>&1
    grep -q "actually processed: $3/$3" "$dir/pgbench.log" || {
        cat "$dir/pgbench.log" >&2
        exit 1
    }
    sleep 6
    for f in $(comm -13 <(echo "$before") <(ls "$dir/cg" | sort)); do
        grep -m1 -E '^(summary|totals):' "$dir/cg/$f" | awk '{ print $2 }'
    done | sort -n | tail -1
}

start valgrind
i=0
for bin in "$@"; do
    i=$((i + 1))
    a=$(session $i "$dir/plain$i.pgb" 100)
    b=$(session $i "$dir/plain$i.pgb" 400)
    echo "$bin per_item $(((b - a) / 4800)) (t100 $a, t400 $b)"
done
stop
rm -rf "$dir"
