//! Schema step 11 (snoozes and unique keys' windows, issue 32) and the statements that use
//! it. A leaf: `schema.rs` takes the migration, `sql.rs` and `op_sql.rs` the statements.
//! Kept in one file, the step's whole SQL.
//!
//! **Snoozes.** `items.snoozes`, an item's uncounted snoozes so far (NULL: none, so a row
//! that never snoozes stores nothing more), read and raised by [`SNOOZE`] (`snooze.rs`).
//!
//! **Key windows** (`Push::key_window`, the core's `KeyWindow` with its meaning). A live
//! row still holds its key in `items.key` (the unique index `items_key` on waiting and
//! leased rows decides between concurrent pushes); its window is in three columns, NULL
//! for a plain keyed row: `key_hold` (1 `Queued`, 2 `Period`, 3 `LiveThen`), `key_until`
//! (a `Period`'s end: the push's time plus the period) and `key_then` (a `LiveThen`'s
//! period, microseconds). An item that leaves (deleted: ack, cancel, purge, replacement;
//! or made a dead letter: nack, expiry, rescue, poison) within its window leaves its key in
//! `gone_keys` until the window ends, written by two row triggers whose `WHEN` is false for
//! every row without a `Period` or `LiveThen` window, until step 14 replaced them by the
//! statements that take the row out (`plain_sql.rs`); the upkeep prunes the ended ones. `key_holder(queue, key, replace)` is the
//! one judgement every keyed push makes (`keyed.rs`'s transaction and `push_rows`, so
//! `push_in`, `push_item` and `push_job` too): the live row holding the key, unless its
//! window has passed (`Queued` and leased, `Period` over: its key is then let go for good,
//! `key` set NULL); else the item that left within its window. With `replace` a waiting
//! live holder is deleted instead (debounce: `Period` with `replace_pending`), its window
//! going with it. All on the database's clock (`clock_timestamp()`), so every process
//! judges a window alike.
//!
//! Step 16 (`room_sql.rs`) makes `insert_bounded` and `push_rows` again, taking a bounded
//! queue's room from its ledger instead of this step's lock and count: their text here is
//! what a schema at this step had, not what runs now.

/// Schema step 11. `{s}` is the quoted schema. Idempotent (a schema set back to an older
/// version and migrated again, as the migration tests do, keeps working: the older
/// signatures of the push functions that step 6 made again are dropped).
pub(crate) const MIGRATION: &str = r#"
    ALTER TABLE {s}.items ADD COLUMN IF NOT EXISTS snoozes integer;
    ALTER TABLE {s}.items ADD COLUMN IF NOT EXISTS key_hold smallint;
    ALTER TABLE {s}.items ADD COLUMN IF NOT EXISTS key_until timestamptz;
    ALTER TABLE {s}.items ADD COLUMN IF NOT EXISTS key_then bigint;
    CREATE TABLE IF NOT EXISTS {s}.gone_keys (
        queue       text        NOT NULL,
        key         bytea       NOT NULL,
        until       timestamptz NOT NULL,             -- held until then
        id          bigint      NOT NULL,             -- by the item that left
        PRIMARY KEY (queue, key)
    );
    CREATE INDEX IF NOT EXISTS gone_keys_until ON {s}.gone_keys (until);

    -- An item with a Period or LiveThen window leaves: its key kept for the rest of it.
    CREATE OR REPLACE FUNCTION {s}.keep_key_window() RETURNS trigger
    LANGUAGE plpgsql AS $fn$
    DECLARE
        ends timestamptz := CASE OLD.key_hold WHEN 2 THEN OLD.key_until
            ELSE clock_timestamp() + OLD.key_then * interval '1 microsecond' END;
    BEGIN
        IF ends > clock_timestamp() THEN
            INSERT INTO {s}.gone_keys AS g (queue, key, until, id)
            VALUES (OLD.queue, OLD.key, ends, OLD.id)
            ON CONFLICT (queue, key) DO UPDATE SET until = EXCLUDED.until, id = EXCLUDED.id;
        END IF;
        RETURN NULL;
    END
    $fn$;
    DROP TRIGGER IF EXISTS items_key_gone ON {s}.items;
    CREATE TRIGGER items_key_gone AFTER DELETE ON {s}.items FOR EACH ROW
        WHEN (OLD.key_hold >= 2 AND OLD.key IS NOT NULL AND OLD.state IN (0, 1))
        EXECUTE FUNCTION {s}.keep_key_window();
    DROP TRIGGER IF EXISTS items_key_dead ON {s}.items;
    CREATE TRIGGER items_key_dead AFTER UPDATE OF state ON {s}.items FOR EACH ROW
        WHEN (OLD.key_hold >= 2 AND OLD.key IS NOT NULL AND OLD.state IN (0, 1) AND NEW.state = 2)
        EXECUTE FUNCTION {s}.keep_key_window();

    -- Who holds key p_key of queue p_queue now (see settle_sql.rs); with p_replace a
    -- waiting live holder is deleted (replaced) instead.
    CREATE OR REPLACE FUNCTION {s}.key_holder(
        p_queue text, p_key bytea, p_replace boolean, OUT holder bigint, OUT replaced boolean)
    LANGUAGE plpgsql AS $fn$
    DECLARE
        h record;
        gone integer;
    BEGIN
        replaced := false;
        -- Read, not locked: a refusal must not hold the holder's row (a push in a long
        -- transaction would stall its ack); what changes it re-checks its condition.
        SELECT i.id, i.state, i.key_hold, i.key_until INTO h FROM {s}.items i
        WHERE i.queue = p_queue AND i.key = p_key AND i.state IN (0, 1);
        IF FOUND THEN
            IF (h.key_hold = 1 AND h.state = 1)
               OR (h.key_hold = 2 AND h.key_until <= clock_timestamp()) THEN
                -- Its window has passed: it lets the key go for good. (Changed meanwhile:
                -- the insert's conflict says so, and the holder is judged again.)
                UPDATE {s}.items SET key = NULL WHERE id = h.id AND key = p_key
                    AND ((key_hold = 1 AND state = 1)
                         OR (key_hold = 2 AND key_until <= clock_timestamp()));
            ELSIF p_replace AND h.state = 0 THEN
                -- A replacement, not an ack: said to the graph's trigger (`graph_sql.rs`)
                -- for this delete alone (the caller's transaction may ack later).
                PERFORM set_config('leaseq.fate', 'cancel', true);
                DELETE FROM {s}.items WHERE id = h.id AND state = 0;
                -- Counted before the next PERFORM, which sets FOUND itself.
                GET DIAGNOSTICS gone = ROW_COUNT;
                PERFORM set_config('leaseq.fate', '', true);
                IF gone = 0 THEN
                    -- Claimed meanwhile: in flight, it is not replaced.
                    holder := h.id;
                    RETURN;
                END IF;
                -- The key passes to the replacing item: the holder's window goes with it.
                DELETE FROM {s}.gone_keys WHERE queue = p_queue AND key = p_key;
                replaced := true;
                RETURN;
            ELSE
                holder := h.id;
                RETURN;
            END IF;
        END IF;
        SELECT g.id INTO holder FROM {s}.gone_keys g
        WHERE g.queue = p_queue AND g.key = p_key AND g.until > clock_timestamp();
    END
    $fn$;

    -- A bounded queue's insert of a writer's batch in one statement (writer.rs): the
    -- queue's capacity lock, then its live rows counted (a statement of its own, so its
    -- snapshot sees every row the lock's previous holder committed), then the rows that
    -- fit inserted with the writer's watermark raised for them only, and one
    -- notification. The lock is held to the commit of the caller's statement.
    CREATE OR REPLACE FUNCTION {s}.insert_bounded(
        p_queue text, p_ids bigint[], p_priorities smallint[], p_delays bigint[],
        p_ttls bigint[], p_payloads bytea[], p_channel text, p_capacity bigint,
        OUT live bigint, OUT room integer)
    LANGUAGE plpgsql AS $fn$
    DECLARE
        t0 timestamptz := clock_timestamp();
    BEGIN
        PERFORM pg_advisory_xact_lock(hashtext('leaseq.capacity.{schema}'), hashtext(p_queue));
        live := (SELECT count(*) FROM {s}.items WHERE queue = p_queue AND state = 0)
              + (SELECT count(*) FROM {s}.items WHERE queue = p_queue AND state = 1);
        room := least(greatest(p_capacity - live, 0), coalesce(cardinality(p_ids), 0));
        IF room = 0 THEN
            RETURN;
        END IF;
        WITH b AS (
               SELECT * FROM unnest(p_ids[1:room], p_priorities[1:room], p_delays[1:room],
                                    p_ttls[1:room], p_payloads[1:room])
                   AS u(id, priority, delay, ttl, payload)),
             mark AS (
               INSERT INTO {s}.writer_marks AS w (instance, top, below, at)
               SELECT b.id >> 32, max(b.id), 0, clock_timestamp() FROM b GROUP BY 1
               ON CONFLICT (instance) DO UPDATE
               SET below = w.top, top = GREATEST(w.top, EXCLUDED.top), at = EXCLUDED.at
               RETURNING w.instance, w.below)
        INSERT INTO {s}.items (id, queue, priority, visible_at, expires_at, payload)
        SELECT b.id, p_queue, b.priority, t0 + b.delay * interval '1 microsecond',
               t0 + b.ttl * interval '1 microsecond', b.payload
        FROM b JOIN mark ON mark.instance = b.id >> 32
        WHERE b.id > mark.below
        ON CONFLICT (id) DO NOTHING;
        IF 0 = ANY(p_delays[1:room]) THEN
            PERFORM pg_notify(p_channel, p_queue);
        END IF;
    END
    $fn$;

    -- The push functions with the key's window (tx_sql.rs says what they do).
    DROP FUNCTION IF EXISTS {s}.push_job(text, text, jsonb, interval, integer, text, interval, boolean);
    DROP FUNCTION IF EXISTS {s}.push_item(text, bytea, interval, integer, text, interval, boolean);
    DROP FUNCTION IF EXISTS {s}.push_rows(text, bytea[], integer, bigint, bigint, bytea, boolean, bigint, bigint);
    CREATE OR REPLACE FUNCTION {s}.push_rows(
        p_queue text, p_payloads bytea[], p_priority integer, p_delay_us bigint,
        p_ttl_us bigint, p_key bytea, p_replace boolean, p_max_item_size bigint,
        p_capacity bigint, p_window smallint, p_window_us bigint,
        OUT ids bigint[], OUT refusal text, OUT detail bigint)
    LANGUAGE plpgsql AS $fn$
    DECLARE
        n integer := coalesce(cardinality(p_payloads), 0);
        fit integer := 0;
        take integer;
        live bigint := 0;
        t0 timestamptz := clock_timestamp();
        new_id bigint;
        replaced boolean;
    BEGIN
        ids := '{}';
        IF p_queue IS NULL OR octet_length(p_queue) NOT BETWEEN 1 AND 200 THEN
            refusal := 'queue'; RETURN;
        ELSIF p_priority IS NULL OR p_priority NOT BETWEEN 0 AND 7 THEN
            refusal := 'priority'; detail := p_priority; RETURN;
        ELSIF p_delay_us IS NULL OR p_delay_us < 0 THEN
            refusal := 'delay'; detail := p_delay_us; RETURN;
        ELSIF p_ttl_us IS NOT NULL AND p_ttl_us <= p_delay_us THEN
            refusal := 'expired'; detail := p_ttl_us; RETURN;
        ELSIF octet_length(p_key) > 64 THEN
            refusal := 'key_length'; detail := octet_length(p_key); RETURN;
        ELSIF p_key IS NOT NULL AND p_window IS NOT NULL AND (p_window NOT BETWEEN 1 AND 3
              OR (p_window > 1 AND (p_window_us IS NULL OR p_window_us < 0))) THEN
            refusal := 'window'; detail := p_window; RETURN;
        ELSIF p_capacity IS NOT NULL
              AND current_setting('transaction_isolation') <> 'read committed' THEN
            -- The count below must see every row committed before the lock was granted.
            refusal := 'isolation'; RETURN;
        END IF;
        -- The rows before the first one over the size limit (or NULL) may go.
        WHILE fit < n AND octet_length(p_payloads[fit + 1]) <= p_max_item_size LOOP
            fit := fit + 1;
        END LOOP;
        IF fit > 0 AND p_capacity IS NOT NULL THEN
            -- capacity.rs: the queue's lock, then its live rows counted (a statement of
            -- its own: it sees every row the lock's previous holder committed).
            PERFORM pg_advisory_xact_lock(hashtext('leaseq.capacity.{schema}'), hashtext(p_queue));
            live := (SELECT count(*) FROM {s}.items WHERE queue = p_queue AND state = 0)
                  + (SELECT count(*) FROM {s}.items WHERE queue = p_queue AND state = 1);
        END IF;
        IF p_key IS NULL THEN
            take := fit;
            IF p_capacity IS NOT NULL THEN
                take := least(fit, greatest(p_capacity - live, 0));
            END IF;
            FOR i IN 1..take LOOP
                ids := ids || nextval('{s}.tx_ids');
            END LOOP;
            IF take > 0 THEN
                INSERT INTO {s}.items (id, queue, priority, visible_at, expires_at, payload)
                SELECT u.id, p_queue, p_priority, t0 + p_delay_us * interval '1 microsecond',
                       t0 + p_ttl_us * interval '1 microsecond', u.payload
                FROM unnest(ids, p_payloads[1:take]) AS u(id, payload);
            END IF;
            IF take < fit THEN
                refusal := 'full'; detail := p_capacity;
            END IF;
        ELSE
            <<rows>>
            FOR i IN 1..fit LOOP
                -- The key's holder (settle_sql.rs: a live row whose window has not passed,
                -- or an item that left within its window); a waiting one replaced.
                SELECT k.holder, k.replaced INTO detail, replaced
                FROM {s}.key_holder(p_queue, p_key, p_replace) k;
                IF detail IS NOT NULL THEN
                    refusal := 'duplicate'; EXIT rows;
                END IF;
                IF p_capacity IS NOT NULL AND NOT replaced AND live >= p_capacity THEN
                    refusal := 'full'; detail := p_capacity; EXIT rows;
                END IF;
                -- Nothing inserted: a live row took the key meanwhile. Should it leave
                -- before its holder is read, the insert runs once more (as keyed.rs does).
                FOR attempt IN 1..2 LOOP
                    new_id := nextval('{s}.tx_ids');
                    INSERT INTO {s}.items (id, queue, priority, visible_at, expires_at, key, payload,
                                           key_hold, key_until, key_then)
                    VALUES (new_id, p_queue, p_priority, t0 + p_delay_us * interval '1 microsecond',
                            t0 + p_ttl_us * interval '1 microsecond', p_key, p_payloads[i], p_window,
                            CASE WHEN p_window = 2 THEN t0 + p_window_us * interval '1 microsecond' END,
                            CASE WHEN p_window = 3 THEN p_window_us END)
                    ON CONFLICT (queue, key) WHERE key IS NOT NULL AND state IN (0, 1) DO NOTHING;
                    IF FOUND THEN
                        ids := ids || new_id;
                        IF NOT replaced THEN live := live + 1; END IF;
                        CONTINUE rows;
                    END IF;
                    SELECT k.holder INTO detail FROM {s}.key_holder(p_queue, p_key, false) k;
                    IF detail IS NOT NULL THEN
                        refusal := 'duplicate'; EXIT rows;
                    END IF;
                END LOOP;
                refusal := 'key_busy'; EXIT rows;
            END LOOP;
        END IF;
        IF refusal IS NULL AND fit < n THEN
            IF p_payloads[fit + 1] IS NULL THEN
                refusal := 'null';
            ELSE
                refusal := 'too_large'; detail := octet_length(p_payloads[fit + 1]);
            END IF;
        END IF;
        -- Delivered at commit, and only then: idle claimers of every process wake.
        IF cardinality(ids) > 0 AND p_delay_us = 0 THEN
            PERFORM pg_notify(left('leaseq.{schema}', 63), p_queue);
        END IF;
    END
    $fn$;
    COMMENT ON FUNCTION {s}.push_rows(text, bytea[], integer, bigint, bigint, bytea, boolean, bigint, bigint, smallint, bigint) IS
        'leaseq: pushes rows of a queue in the caller''s transaction with the limits given, stopping at the first refusal, which it names (refusal, detail) instead of raising; used by the Rust API and by push_item. Call push_item or push_job instead.';

    CREATE OR REPLACE FUNCTION {s}.push_item(
        queue text, payload bytea, delay interval DEFAULT '0', priority integer DEFAULT 0,
        key text DEFAULT NULL, ttl interval DEFAULT NULL, replace_pending boolean DEFAULT false,
        key_window text DEFAULT NULL, key_period interval DEFAULT NULL)
    RETURNS bigint LANGUAGE plpgsql AS $fn$
    DECLARE
        lim record;
        win smallint := CASE lower(push_item.key_window) WHEN 'live' THEN NULL WHEN 'queued' THEN 1
                             WHEN 'period' THEN 2 WHEN 'live_then' THEN 3 END;
        win_us bigint := (EXTRACT(EPOCH FROM push_item.key_period) * 1000000)::bigint;
        r record;
        delay_us bigint := (EXTRACT(EPOCH FROM coalesce(push_item.delay, '0')) * 1000000)::bigint;
        ttl_us bigint := (EXTRACT(EPOCH FROM push_item.ttl) * 1000000)::bigint;
        key_bytes bytea := convert_to(push_item.key, 'UTF8');
    BEGIN
        SELECT s.max_item_size, s.capacity INTO lim
        FROM {s}.queue_settings s WHERE s.queue = push_item.queue;
        IF push_item.key_window IS NOT NULL AND lower(push_item.key_window) NOT IN ('live', 'queued', 'period', 'live_then') THEN
            RAISE EXCEPTION 'leaseq: key_window % is not live, queued, period or live_then', quote_literal(push_item.key_window)
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'leaseq: no queue % in schema {schema}: no process has opened it', quote_literal(push_item.queue)
                USING ERRCODE = 'undefined_object',
                      HINT = 'Check the name, or open the queue once from Rust (each open records its limits in {s}.queue_settings).';
        END IF;
        SELECT * INTO r FROM {s}.push_rows(push_item.queue, ARRAY[push_item.payload],
            push_item.priority, delay_us, ttl_us, key_bytes, coalesce(push_item.replace_pending, false),
            lim.max_item_size, lim.capacity, win, win_us);
        IF r.refusal IS NULL THEN
            RETURN r.ids[1];
        END IF;
        CASE r.refusal
        WHEN 'too_large' THEN
            RAISE EXCEPTION 'leaseq: the item is % bytes, over the max_item_size of queue % (% bytes)',
                    r.detail, quote_literal(push_item.queue), lim.max_item_size
                USING ERRCODE = 'program_limit_exceeded',
                      HINT = 'The limit is Options::max_item_size of the processes that open the queue.';
        WHEN 'full' THEN
            RAISE EXCEPTION 'leaseq: queue % is full (capacity %)', quote_literal(push_item.queue), r.detail
                USING ERRCODE = 'configuration_limit_exceeded',
                      HINT = 'Retry once workers have taken items, or raise the queue''s capacity.';
        WHEN 'duplicate' THEN
            RAISE EXCEPTION 'leaseq: key % of queue % is held by item %',
                    quote_literal(push_item.key), quote_literal(push_item.queue), r.detail
                USING ERRCODE = 'unique_violation', CONSTRAINT = 'items_key',
                      DETAIL = format('held by item %s', r.detail),
                      HINT = 'A waiting item''s key is taken over with replace_pending => true.';
        WHEN 'key_busy' THEN
            RAISE EXCEPTION 'leaseq: the holder of key % kept changing', quote_literal(push_item.key)
                USING ERRCODE = 'serialization_failure', HINT = 'Retry the transaction.';
        WHEN 'window' THEN
            RAISE EXCEPTION 'leaseq: key_window % needs a key_period of zero or more, not %',
                    quote_literal(push_item.key_window), coalesce(push_item.key_period::text, 'NULL')
                USING ERRCODE = 'invalid_parameter_value';
        WHEN 'priority' THEN
            RAISE EXCEPTION 'leaseq: priority % is out of range 0..7', coalesce(r.detail::text, 'NULL')
                USING ERRCODE = 'numeric_value_out_of_range';
        WHEN 'key_length' THEN
            RAISE EXCEPTION 'leaseq: the key is % bytes, longer than the most allowed (64)', r.detail
                USING ERRCODE = 'string_data_right_truncation';
        WHEN 'delay' THEN
            RAISE EXCEPTION 'leaseq: the delay % is negative', push_item.delay
                USING ERRCODE = 'invalid_parameter_value';
        WHEN 'expired' THEN
            RAISE EXCEPTION 'leaseq: the time to live (%) must be longer than the delay (%)',
                    push_item.ttl, coalesce(push_item.delay, '0')
                USING ERRCODE = 'invalid_parameter_value';
        WHEN 'null' THEN
            RAISE EXCEPTION 'leaseq: the payload is NULL' USING ERRCODE = 'null_value_not_allowed';
        WHEN 'isolation' THEN
            RAISE EXCEPTION 'leaseq: queue % is bounded: push into it in a READ COMMITTED transaction',
                    quote_literal(push_item.queue)
                USING ERRCODE = 'feature_not_supported',
                      HINT = 'Its live rows are counted under a lock, which needs each statement''s own snapshot.';
        ELSE
            RAISE EXCEPTION 'leaseq: queue name % is not 1 to 200 bytes long', quote_literal(push_item.queue)
                USING ERRCODE = 'invalid_parameter_value';
        END CASE;
    END
    $fn$;
    COMMENT ON FUNCTION {s}.push_item(text, bytea, interval, integer, text, interval, boolean, text, interval) IS
        'leaseq: pushes one item (its encoded bytes) into a queue in the caller''s transaction (visible if it commits, waking idle workers then), with the limits its processes recorded; returns its id. key_window (live, queued, period, live_then; key_period for the last two) holds the key as Push::key_window does. Refusals raise: 42704 unknown queue, 54000 too large, 53400 full, 23505 key held, 22003 priority, 22001 key too long, 22023 bad delay, ttl or key window, 0A000 bounded queue outside READ COMMITTED.';

    CREATE OR REPLACE FUNCTION {s}.push_job(
        queue text, kind text, args jsonb, delay interval DEFAULT '0', priority integer DEFAULT 0,
        key text DEFAULT NULL, ttl interval DEFAULT NULL, replace_pending boolean DEFAULT false,
        key_window text DEFAULT NULL, key_period interval DEFAULT NULL)
    RETURNS bigint LANGUAGE plpgsql AS $fn$
    DECLARE
        k bytea := convert_to(push_job.kind, 'UTF8');
    BEGIN
        IF k IS NULL OR octet_length(k) NOT BETWEEN 1 AND 255 THEN
            RAISE EXCEPTION 'leaseq: a job kind must be 1 to 255 bytes long, not %', coalesce(octet_length(k)::text, 'NULL')
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF push_job.args IS NULL THEN
            RAISE EXCEPTION 'leaseq: the args of a job of kind % are NULL', quote_literal(push_job.kind)
                USING ERRCODE = 'null_value_not_allowed', HINT = 'A job without args takes ''null''::jsonb.';
        END IF;
        -- The router's envelope: the kind's length, the kind, the args as JSON text.
        RETURN {s}.push_item(push_job.queue,
            set_byte('\x00'::bytea, 0, octet_length(k)) || k || convert_to(push_job.args::text, 'UTF8'),
            push_job.delay, push_job.priority, push_job.key, push_job.ttl, push_job.replace_pending,
            push_job.key_window, push_job.key_period);
    END
    $fn$;
    COMMENT ON FUNCTION {s}.push_job(text, text, jsonb, interval, integer, text, interval, boolean, text, interval) IS
        'leaseq: pushes a job of a router queue (its kind and JSON args, in the envelope leaseq_async::router::Envelope stores) in the caller''s transaction; returns its id. Refusals raise as push_item''s, and 22023 for a kind not 1 to 255 bytes, 22004 for NULL args.';
"#;

/// A keyed row with its window ($8 `key_hold`, $9 the window's period in us), unless a
/// live row holds its key or an item that left within its window does (nothing inserted
/// then): $1 id, $2 queue, $3 priority, $4 delay (us), $5 ttl (us), $6 key, $7 payload.
pub(crate) const WINDOWED_INSERT: &str = "INSERT INTO {s}.items
        (id, queue, priority, visible_at, expires_at, key, payload, key_hold, key_until, key_then)
     SELECT $1, $2, $3, clock_timestamp() + $4::bigint * interval '1 microsecond',
            clock_timestamp() + $5::bigint * interval '1 microsecond', $6, $7, $8::smallint,
            CASE WHEN $8 = 2 THEN clock_timestamp() + $9::bigint * interval '1 microsecond' END,
            CASE WHEN $8 = 3 THEN $9::bigint END
     WHERE NOT EXISTS (SELECT 1 FROM {s}.gone_keys g
                       WHERE g.queue = $2 AND g.key = $6 AND g.until > clock_timestamp())
     ON CONFLICT (queue, key) WHERE key IS NOT NULL AND state IN (0, 1) DO NOTHING
     RETURNING id";

/// Who holds key $2 of queue $1 now, a waiting live holder replaced if $3 (the function
/// `key_holder`): the holder's id (NULL: none) and whether one was replaced.
pub(crate) const KEY_HOLDER: &str = "SELECT holder, replaced FROM {s}.key_holder($1, $2, $3)";

/// The gone keys whose window has ended, deleted (the upkeep).
pub(crate) const PRUNE_GONE_KEYS: &str =
    "DELETE FROM {s}.gone_keys WHERE until <= clock_timestamp()";

/// The snooze ([`Store::snooze`](leaseq_async::Store::snooze)), fenced as a nack: $1 id,
/// $2 lease, $3 delay (us), $4 the queue's `max_snoozes`. The lease's row is locked and
/// read (`cur`); below the bound it is made waiting again after the delay, its attempt
/// taken back and its snoozes counted (`up`). One row when the lease is still running:
/// the snoozes before, then the snoozes after and microseconds until visible (both NULL
/// at the bound: nothing changed, the caller counts a failed attempt). No row: refused
/// (the lease ran out or was taken over), or already made by a try whose reply was lost.
pub(crate) const SNOOZE: &str = "WITH cur AS (
        SELECT id, COALESCE(snoozes, 0) AS n FROM {s}.items
        WHERE id = $1 AND lease = $2 AND state = 1 AND deadline >= clock_timestamp()
        FOR UPDATE),
     up AS (
        UPDATE {s}.items i SET state = 0, attempts = i.attempts - 1, snoozes = cur.n + 1,
               visible_at = clock_timestamp() + $3::bigint * interval '1 microsecond'
        FROM cur WHERE i.id = cur.id AND cur.n < $4::integer
        RETURNING i.snoozes,
            (EXTRACT(EPOCH FROM (i.visible_at - clock_timestamp())) * 1000000)::bigint AS visible_us)
     SELECT cur.n, up.snoozes, up.visible_us FROM cur LEFT JOIN up ON true";
