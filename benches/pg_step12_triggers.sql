-- What schema step 12's row triggers (issue 32, key windows) cost plain rows on the server:
-- BENCHMARKS.md, round 8. psql "host=127.0.0.1 user=postgres dbname=test" -q -f benches/pg_step12_triggers.sql
DROP SCHEMA IF EXISTS leaseq_trig_bench CASCADE;
CREATE SCHEMA leaseq_trig_bench;
SET search_path = leaseq_trig_bench;
CREATE TABLE gone_keys (queue text, key bytea, until timestamptz, id bigint, PRIMARY KEY (queue, key));
CREATE FUNCTION keep_key_window() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TABLE plain (id bigint PRIMARY KEY, queue text, state smallint, key bytea, key_hold smallint, payload bytea);
CREATE TABLE trig (LIKE plain INCLUDING ALL);
CREATE TRIGGER g AFTER DELETE ON trig FOR EACH ROW WHEN (OLD.key_hold >= 2 AND OLD.key IS NOT NULL AND OLD.state IN (0, 1)) EXECUTE FUNCTION keep_key_window();
CREATE TRIGGER d AFTER UPDATE OF state ON trig FOR EACH ROW WHEN (OLD.key_hold >= 2 AND OLD.key IS NOT NULL AND OLD.state IN (0, 1) AND NEW.state = 2) EXECUTE FUNCTION keep_key_window();
CREATE TABLE res (round int, tbl text, op text, us_per_row float8);
DO $$
DECLARE t0 timestamptz; n int := 100000; r int; tb text;
BEGIN
  FOR r IN 1..10 LOOP
    FOREACH tb IN ARRAY (CASE WHEN r % 2 = 0 THEN ARRAY['plain','trig'] ELSE ARRAY['trig','plain'] END) LOOP
      EXECUTE format('INSERT INTO %I SELECT g, ''q'', 0, NULL, NULL, ''\x00''::bytea FROM generate_series(1, %s) g', tb, n);
      t0 := clock_timestamp();
      EXECUTE format('UPDATE %I SET state = 1', tb);
      INSERT INTO res VALUES (r, tb, 'update state', EXTRACT(EPOCH FROM clock_timestamp() - t0) * 1e6 / n);
      t0 := clock_timestamp();
      EXECUTE format('DELETE FROM %I', tb);
      INSERT INTO res VALUES (r, tb, 'delete', EXTRACT(EPOCH FROM clock_timestamp() - t0) * 1e6 / n);
    END LOOP;
  END LOOP;
END $$;
SELECT op, tbl, round(percentile_cont(0.5) WITHIN GROUP (ORDER BY us_per_row)::numeric, 3) AS median_us_per_row, round(min(us_per_row)::numeric,3) AS min_us FROM res GROUP BY op, tbl ORDER BY op, tbl;
DROP SCHEMA leaseq_trig_bench CASCADE;
