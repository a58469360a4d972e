-- What schema step 14 (plain_sql.rs) changes for plain rows on the server: step 11's two
-- row triggers (tbl trig) against no trigger with the leaving statement's own RETURNING
-- test (tbl ret: `CASE WHEN key_hold >= 2 ... THEN keep_key(..) END`, the function never
-- called for a plain row) and against neither (tbl plain). 100,000 plain rows a round:
-- `UPDATE .. SET state = 1` (a claim: no RETURNING test, it takes no row out) and a
-- DELETE (an ack), each consumed through the same `WITH .. SELECT count(*)`; 10 rounds,
-- the order rotated; microseconds per row, median and minimum. BENCHMARKS.md, round 9.
-- psql "host=127.0.0.1 user=postgres dbname=test" -q -f benches/pg_step14_keep.sql
DROP SCHEMA IF EXISTS leaseq_keep_bench CASCADE;
CREATE SCHEMA leaseq_keep_bench;
SET search_path = leaseq_keep_bench;
CREATE TABLE gone_keys (queue text, key bytea, until timestamptz, id bigint, PRIMARY KEY (queue, key));
CREATE FUNCTION keep_key_window() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE FUNCTION keep_key(q text, k bytea, h smallint, u timestamptz, t bigint, i bigint) RETURNS boolean
    LANGUAGE plpgsql AS $$ BEGIN RETURN true; END $$;
CREATE TABLE plain (id bigint PRIMARY KEY, queue text, state smallint, key bytea, key_hold smallint,
                    key_until timestamptz, key_then bigint, payload bytea);
CREATE TABLE trig (LIKE plain INCLUDING ALL);
CREATE TABLE ret (LIKE plain INCLUDING ALL);
CREATE TRIGGER g AFTER DELETE ON trig FOR EACH ROW WHEN (OLD.key_hold >= 2 AND OLD.key IS NOT NULL AND OLD.state IN (0, 1)) EXECUTE FUNCTION keep_key_window();
CREATE TRIGGER d AFTER UPDATE OF state ON trig FOR EACH ROW WHEN (OLD.key_hold >= 2 AND OLD.key IS NOT NULL AND OLD.state IN (0, 1) AND NEW.state = 2) EXECUTE FUNCTION keep_key_window();
CREATE TABLE res (round int, tbl text, op text, us_per_row float8);
DO $$
DECLARE t0 timestamptz; n int := 100000; r int; tb text; c bigint;
BEGIN
  FOR r IN 1..10 LOOP
    FOREACH tb IN ARRAY (CASE r % 3 WHEN 0 THEN ARRAY['plain','trig','ret'] WHEN 1 THEN ARRAY['trig','ret','plain'] ELSE ARRAY['ret','plain','trig'] END) LOOP
      EXECUTE format('INSERT INTO %I SELECT g, ''q'', 0, NULL, NULL, NULL, NULL, ''\x00''::bytea FROM generate_series(1, %s) g', tb, n);
      t0 := clock_timestamp();
      EXECUTE format('WITH u AS (UPDATE %I SET state = 1 RETURNING id) SELECT count(*) FROM u', tb) INTO c;
      INSERT INTO res VALUES (r, tb, 'update state', EXTRACT(EPOCH FROM clock_timestamp() - t0) * 1e6 / n);
      t0 := clock_timestamp();
      IF tb = 'ret' THEN
        EXECUTE 'WITH d AS (DELETE FROM ret RETURNING id, CASE WHEN key_hold >= 2 AND key IS NOT NULL AND state IN (0, 1) THEN keep_key(queue, key, key_hold, key_until, key_then, id) END) SELECT count(*) FROM d' INTO c;
      ELSE
        EXECUTE format('WITH d AS (DELETE FROM %I RETURNING id) SELECT count(*) FROM d', tb) INTO c;
      END IF;
      INSERT INTO res VALUES (r, tb, 'delete', EXTRACT(EPOCH FROM clock_timestamp() - t0) * 1e6 / n);
    END LOOP;
  END LOOP;
END $$;
SELECT op, tbl, round(percentile_cont(0.5) WITHIN GROUP (ORDER BY us_per_row)::numeric, 3) AS median_us_per_row,
       round(min(us_per_row)::numeric, 3) AS min_us FROM res GROUP BY op, tbl ORDER BY op, tbl;
DROP SCHEMA leaseq_keep_bench CASCADE;
