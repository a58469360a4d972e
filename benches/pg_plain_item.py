#!/usr/bin/env python3
"""A plain item's statements as a `pgbench` script, taken from a Postgres server log
(`log_statement = all`) written while a leaseq `pg_bench` ran on database DB: the first plain
claim and plain ack that database's sessions executed, their parameters filled in (`$1` the
queue `:q`, `$2` 16 items, `$3` 30 s; the ack's `$1`/`$2` the claimed ids and leases), behind
an insert of 16 plain rows. One transaction: insert 16, claim them, ack them.
`benches/pg_plain_instructions.sh` runs it; BENCHMARKS.md, round 11.

Usage: benches/pg_plain_item.py LOGFILE DB > script.pgb
"""
import re
import sys

INSERT = (
    "INSERT INTO \"leaseq_bench_store\".items (id, queue, priority, visible_at, payload) "
    "SELECT nextval('bench_ids'), :q, 0, clock_timestamp(), "
    "'\\x000102030405060708090a0b0c0d0e0f'::bytea FROM generate_series(1, 16);"
)
CLAIM = 'UPDATE "leaseq_bench_store".items SET state = 1'
ACK = 'DELETE FROM "leaseq_bench_store".items i USING'


def one_line(sql):
    return " ".join(sql.split())


def main():
    log, db = sys.argv[1], sys.argv[2]
    text = open(log, encoding="utf-8", errors="replace").read()
    entries = re.split(r"\n(?=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \w+ \[)", text)
    found = {}
    for e in entries:
        m = re.search(r"@" + re.escape(db) + r" LOG:  execute [^:]*: (.*)", e, re.S)
        if not m:
            continue
        body = m.group(1).strip()
        for name, head in (("claim", CLAIM), ("ack", ACK)):
            if name not in found and body.startswith(head):
                found[name] = body
    if len(found) < 2:
        sys.exit(f"no plain claim and ack of database {db} in {log}: {sorted(found)}")
    claim = found["claim"].replace("$1", ":q").replace("$2", "16").replace("$3", "30000000")
    ack = found["ack"].replace("$1", ":ids").replace("$2", ":leases")
    print(INSERT)
    print(
        "WITH c AS (" + one_line(claim) + ") "
        "SELECT array_agg(id) AS ids, array_agg(lease) AS leases FROM c \\gset"
    )
    print(one_line(ack) + ";")


main()
