-- What a plain row pays on the server for the columns and indexes issues 32 and 33 added to
-- `items` (BENCHMARKS.md round 10): the table as 82a21e3 made it (schema version 9: 18
-- columns, 6 indexes; `base`), as it is now (28 columns, step 12's two partial indexes on the
-- flow group; `now`), and now without those two indexes (`now_noidx`: the columns' share).
-- Per round and table: 50,000 plain rows inserted (one statement), updated as the claim
-- does (`state = 1`, lease, attempts, leased_at, deadline: a new row version in every index
-- whose condition holds), and deleted as the ack does; microseconds per row, median and
-- minimum of 10 rounds, the tables' order rotated each round (the load weighs on each alike).
-- psql "host=127.0.0.1 user=postgres dbname=test" -q -f benches/pg_unused_rows.sql
DROP SCHEMA IF EXISTS leaseq_rows_bench CASCADE;
CREATE SCHEMA leaseq_rows_bench;
SET search_path = leaseq_rows_bench;
CREATE TABLE base (
    id bigint PRIMARY KEY, queue text NOT NULL, state smallint NOT NULL DEFAULT 0,
    priority smallint NOT NULL DEFAULT 0, visible_at timestamptz NOT NULL, deadline timestamptz,
    leased_at timestamptz, lease bigint NOT NULL DEFAULT 0, attempts integer NOT NULL DEFAULT 0,
    expires_at timestamptz, reason smallint, last_error text, dead_at timestamptz,
    payload bytea NOT NULL, key bytea, progress bytea,
    pushed_at timestamptz DEFAULT statement_timestamp(), started_at timestamptz
) WITH (fillfactor = 80);
CREATE INDEX base_claim ON base (queue, priority DESC, visible_at, id) WHERE state = 0;
CREATE INDEX base_ttl ON base (queue, expires_at) WHERE state = 0 AND expires_at IS NOT NULL;
CREATE INDEX base_leased ON base (queue, deadline) WHERE state = 1;
CREATE INDEX base_dead ON base (queue, dead_at, id) WHERE state = 2;
CREATE UNIQUE INDEX base_key ON base (queue, key) WHERE key IS NOT NULL AND state IN (0, 1);
CREATE TABLE now_noidx (LIKE base INCLUDING ALL);
ALTER TABLE now_noidx ADD COLUMN node bigint, ADD COLUMN snoozes integer,
    ADD COLUMN key_hold smallint, ADD COLUMN key_until timestamptz, ADD COLUMN key_then bigint,
    ADD COLUMN fkind bigint, ADD COLUMN fpart bigint, ADD COLUMN fgroup bigint,
    ADD COLUMN fseq bigint, ADD COLUMN fdue timestamptz;
CREATE TABLE now (LIKE now_noidx INCLUDING ALL);
CREATE INDEX now_group ON now (queue, fgroup, fseq) WHERE fgroup IS NOT NULL;
CREATE INDEX now_group_busy ON now (queue, fgroup) WHERE state = 1 AND fgroup IS NOT NULL;
CREATE TABLE res (round int, tbl text, op text, us_per_row float8);
DO $$
DECLARE t0 timestamptz; n int := 50000; tbls text[] := ARRAY['base', 'now', 'now_noidx'];
BEGIN
  FOR r IN 1..10 LOOP
    FOR k IN 0..2 LOOP
      DECLARE tb text := tbls[(r + k) % 3 + 1];
      BEGIN
        t0 := clock_timestamp();
        EXECUTE format('INSERT INTO %I (id, queue, priority, visible_at, expires_at, payload)
            SELECT g, ''q'', 0, statement_timestamp(), NULL, ''\x000102030405060708090a0b0c0d0e0f''::bytea
            FROM generate_series(1, %s) g', tb, n);
        INSERT INTO res VALUES (r, tb, '1 insert', EXTRACT(EPOCH FROM clock_timestamp() - t0) * 1e6 / n);
        t0 := clock_timestamp();
        EXECUTE format('UPDATE %I SET state = 1, lease = lease + 1, attempts = attempts + 1,
            leased_at = clock_timestamp(),
            deadline = LEAST(clock_timestamp() + interval ''30 s'', COALESCE(expires_at, ''infinity''))
            WHERE queue = ''q'' AND state = 0', tb);
        INSERT INTO res VALUES (r, tb, '2 claim update', EXTRACT(EPOCH FROM clock_timestamp() - t0) * 1e6 / n);
        t0 := clock_timestamp();
        EXECUTE format('DELETE FROM %I WHERE state IN (0, 1)', tb);
        INSERT INTO res VALUES (r, tb, '3 delete', EXTRACT(EPOCH FROM clock_timestamp() - t0) * 1e6 / n);
      END;
    END LOOP;
  END LOOP;
END $$;
SELECT op, tbl, round(percentile_cont(0.5) WITHIN GROUP (ORDER BY us_per_row)::numeric, 3) AS median_us_per_row,
       round(min(us_per_row)::numeric, 3) AS min_us FROM res GROUP BY op, tbl ORDER BY op, tbl;
DROP SCHEMA leaseq_rows_bench CASCADE;
