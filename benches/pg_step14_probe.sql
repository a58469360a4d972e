-- What the plain claim's flags cost on the server (schema step 14, plain_sql.rs): the claim's
-- row selection with step 12's two probes (`queue_pauses` and `flow_queues`, `two`) against
-- step 14's one (`claim_flags`, `one`) and against none (`none`), 8 rows a claim, the three
-- interleaved in one loop (so the machine's load weighs on each alike), 20,000 times each, 5
-- rounds; microseconds per claim, median and minimum of the rounds. BENCHMARKS.md, round 9.
-- psql "host=127.0.0.1 user=postgres dbname=test" -q -f benches/pg_step14_probe.sql
DROP SCHEMA IF EXISTS leaseq_probe_bench CASCADE;
CREATE SCHEMA leaseq_probe_bench;
SET search_path = leaseq_probe_bench;
CREATE TABLE items (id bigint PRIMARY KEY, queue text, state smallint, priority smallint,
                    visible_at timestamptz, expires_at timestamptz, payload bytea);
CREATE INDEX items_claim ON items (queue, priority DESC, visible_at, id) WHERE state = 0;
INSERT INTO items SELECT g, 'q', 0, 0, now(), NULL, '\x00' FROM generate_series(1, 20000) g;
CREATE TABLE queue_pauses (queue text PRIMARY KEY, paused_at timestamptz);
CREATE TABLE flow_queues (queue text PRIMARY KEY, since timestamptz, grouped boolean);
CREATE TABLE claim_flags (queue text PRIMARY KEY, paused boolean, flowed boolean);
INSERT INTO queue_pauses VALUES ('other', now());
INSERT INTO claim_flags VALUES ('other', true, false);
ANALYZE;
CREATE TABLE res (round int, variant text, us float8);
DO $$
DECLARE t timestamptz; a float8[] := '{0,0,0}'; x bigint; q text := 'q'; n int := 20000;
BEGIN
  FOR r IN 1..5 LOOP
    a := '{0,0,0}';
    FOR i IN 1..n LOOP
      t := clock_timestamp();
      SELECT count(*) INTO x FROM (SELECT id FROM items WHERE queue = q AND state = 0
          AND visible_at <= clock_timestamp() AND (expires_at IS NULL OR expires_at > clock_timestamp())
          AND NOT EXISTS (SELECT 1 FROM queue_pauses WHERE queue = q)
          AND NOT EXISTS (SELECT 1 FROM flow_queues WHERE queue = q)
          ORDER BY priority DESC, visible_at, id LIMIT 8 FOR UPDATE SKIP LOCKED) z;
      a[1] := a[1] + EXTRACT(EPOCH FROM clock_timestamp() - t);
      t := clock_timestamp();
      SELECT count(*) INTO x FROM (SELECT id FROM items WHERE queue = q AND state = 0
          AND visible_at <= clock_timestamp() AND (expires_at IS NULL OR expires_at > clock_timestamp())
          AND NOT EXISTS (SELECT 1 FROM claim_flags WHERE queue = q AND (paused OR flowed))
          ORDER BY priority DESC, visible_at, id LIMIT 8 FOR UPDATE SKIP LOCKED) z;
      a[2] := a[2] + EXTRACT(EPOCH FROM clock_timestamp() - t);
      t := clock_timestamp();
      SELECT count(*) INTO x FROM (SELECT id FROM items WHERE queue = q AND state = 0
          AND visible_at <= clock_timestamp() AND (expires_at IS NULL OR expires_at > clock_timestamp())
          ORDER BY priority DESC, visible_at, id LIMIT 8 FOR UPDATE SKIP LOCKED) z;
      a[3] := a[3] + EXTRACT(EPOCH FROM clock_timestamp() - t);
    END LOOP;
    INSERT INTO res VALUES (r, 'two', a[1] * 1e6 / n), (r, 'one', a[2] * 1e6 / n), (r, 'none', a[3] * 1e6 / n);
  END LOOP;
END $$;
SELECT variant, round(percentile_cont(0.5) WITHIN GROUP (ORDER BY us)::numeric, 2) AS median_us_per_claim,
       round(min(us)::numeric, 2) AS min_us FROM res GROUP BY variant ORDER BY variant;
DROP SCHEMA leaseq_probe_bench CASCADE;
