//! Pushes inside the caller's transaction, in SQL: schema step 6 (the `tx_ids` sequence,
//! the `queue_settings` table, the functions `push_rows`, `push_item` and `push_job`), the
//! statement `PgStore::push_in` runs, and the queue's limits recorded at open.
//!
//! **One implementation.** `push_rows` is the push (made again by steps 11 and 16,
//! `settle_sql.rs` and `room_sql.rs`, the latest its text now): room taken in a bounded queue, the
//! `replace_pending` delete, the insert (`ON CONFLICT DO NOTHING` on the live keys' unique
//! index for a keyed row), the holder of a held key, and the `NOTIFY`, all in the caller's
//! transaction. It never raises for a refusal: it answers which one (`refusal`, `detail`),
//! so a Rust caller's transaction stays usable after a refused push. The Rust API
//! (`tx_push.rs`) checks what it can first (no round trip) and calls it with its own
//! store's limits; `push_item` and `push_job`, for SQL callers (triggers, `psql`, other
//! languages), read the limits from `queue_settings` and raise each refusal as an error
//! with its own SQLSTATE.
//!
//! **Ids.** A transactional push cannot take an id from a store's writer (`instance << 32
//! | counter`, `writer.rs`): the caller may have no store in this process, and a writer's
//! committed-id watermark (`writer_marks`) assumes its instance's ids are inserted in the
//! order it sends them, which a transaction that commits later would break. Nor a fresh
//! instance per push: instances are `< 2^31` (shifted by 32 into a `bigint`), and one per
//! push would run them out. So the ids of transactional pushes come from a sequence of
//! their own, `tx_ids`, in a range of its own: from `2^62` up (4.6e18 ids), while the
//! `instances` sequence is capped below `2^30` (a billion opens), so every store id is
//! below `2^62`. No writer instance is ever `>= 2^30`, so no watermark covers these ids,
//! and the writer's insert never meets one of them (it inserts only its own ids).
//!
//! **Limits for SQL callers.** The store's limits live in the process (`Options`,
//! `Config`); a trigger has none. Each open records its queue's `max_item_size` and
//! capacity in `queue_settings` ([`Options::record_limits`](crate::Options), on by
//! default; the `leaseq` CLI, which opens queues with its own limits, turns it off), and
//! the SQL functions read them. A queue no process ever opened has no row: `push_item`
//! refuses it (`42704`), which also catches a mistyped queue name.

/// Schema step 6 (transactional pushes, issue 30). `{s}` is the quoted schema, `{schema}`
/// its bare name (for the capacity lock's key and the notification channel, as `sql.rs`
/// and `op_sql.rs` build them). Idempotent (a schema set back to an older version and
/// migrated again, as the migration tests do, keeps working).
pub(crate) const MIGRATION: &str = r#"
    ALTER SEQUENCE {s}.instances MAXVALUE 1073741823;
    CREATE SEQUENCE IF NOT EXISTS {s}.tx_ids AS bigint
        MINVALUE 4611686018427387904 START WITH 4611686018427387904;
    CREATE TABLE IF NOT EXISTS {s}.queue_settings (
        queue          text        PRIMARY KEY,
        max_item_size  bigint      NOT NULL CHECK (max_item_size >= 0),
        capacity       bigint      CHECK (capacity >= 0),      -- NULL: unbounded
        recorded_at    timestamptz NOT NULL DEFAULT clock_timestamp()
    );

    CREATE OR REPLACE FUNCTION {s}.push_rows(
        p_queue text, p_payloads bytea[], p_priority integer, p_delay_us bigint,
        p_ttl_us bigint, p_key bytea, p_replace boolean, p_max_item_size bigint,
        p_capacity bigint, OUT ids bigint[], OUT refusal text, OUT detail bigint)
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
                replaced := false;
                IF p_replace THEN
                    DELETE FROM {s}.items WHERE queue = p_queue AND key = p_key AND state = 0;
                    replaced := FOUND;
                END IF;
                IF p_capacity IS NOT NULL AND NOT replaced AND live >= p_capacity THEN
                    refusal := 'full'; detail := p_capacity; EXIT rows;
                END IF;
                -- Nothing inserted: a live row holds the key. Should it leave before its
                -- id is read, the insert runs once more (as keyed.rs does).
                FOR attempt IN 1..2 LOOP
                    new_id := nextval('{s}.tx_ids');
                    INSERT INTO {s}.items (id, queue, priority, visible_at, expires_at, key, payload)
                    VALUES (new_id, p_queue, p_priority, t0 + p_delay_us * interval '1 microsecond',
                            t0 + p_ttl_us * interval '1 microsecond', p_key, p_payloads[i])
                    ON CONFLICT (queue, key) WHERE key IS NOT NULL AND state IN (0, 1) DO NOTHING;
                    IF FOUND THEN
                        ids := ids || new_id;
                        IF NOT replaced THEN live := live + 1; END IF;
                        CONTINUE rows;
                    END IF;
                    SELECT h.id INTO detail FROM {s}.items h
                    WHERE h.queue = p_queue AND h.key = p_key AND h.state IN (0, 1);
                    IF FOUND THEN
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
    COMMENT ON FUNCTION {s}.push_rows(text, bytea[], integer, bigint, bigint, bytea, boolean, bigint, bigint) IS
        'leaseq: pushes rows of a queue in the caller''s transaction with the limits given, stopping at the first refusal, which it names (refusal, detail) instead of raising; used by the Rust API and by push_item. Call push_item or push_job instead.';

    CREATE OR REPLACE FUNCTION {s}.push_item(
        queue text, payload bytea, delay interval DEFAULT '0', priority integer DEFAULT 0,
        key text DEFAULT NULL, ttl interval DEFAULT NULL, replace_pending boolean DEFAULT false)
    RETURNS bigint LANGUAGE plpgsql AS $fn$
    DECLARE
        lim record;
        r record;
        delay_us bigint := (EXTRACT(EPOCH FROM coalesce(push_item.delay, '0')) * 1000000)::bigint;
        ttl_us bigint := (EXTRACT(EPOCH FROM push_item.ttl) * 1000000)::bigint;
        key_bytes bytea := convert_to(push_item.key, 'UTF8');
    BEGIN
        SELECT s.max_item_size, s.capacity INTO lim
        FROM {s}.queue_settings s WHERE s.queue = push_item.queue;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'leaseq: no queue % in schema {schema}: no process has opened it', quote_literal(push_item.queue)
                USING ERRCODE = 'undefined_object',
                      HINT = 'Check the name, or open the queue once from Rust (each open records its limits in {s}.queue_settings).';
        END IF;
        SELECT * INTO r FROM {s}.push_rows(push_item.queue, ARRAY[push_item.payload],
            push_item.priority, delay_us, ttl_us, key_bytes, coalesce(push_item.replace_pending, false),
            lim.max_item_size, lim.capacity);
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
    COMMENT ON FUNCTION {s}.push_item(text, bytea, interval, integer, text, interval, boolean) IS
        'leaseq: pushes one item (its encoded bytes) into a queue in the caller''s transaction (visible if it commits, waking idle workers then), with the limits its processes recorded; returns its id. Refusals raise: 42704 unknown queue, 54000 too large, 53400 full, 23505 key held, 22003 priority, 22001 key too long, 22023 bad delay or ttl, 0A000 bounded queue outside READ COMMITTED.';

    CREATE OR REPLACE FUNCTION {s}.push_job(
        queue text, kind text, args jsonb, delay interval DEFAULT '0', priority integer DEFAULT 0,
        key text DEFAULT NULL, ttl interval DEFAULT NULL, replace_pending boolean DEFAULT false)
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
            push_job.delay, push_job.priority, push_job.key, push_job.ttl, push_job.replace_pending);
    END
    $fn$;
    COMMENT ON FUNCTION {s}.push_job(text, text, jsonb, interval, integer, text, interval, boolean) IS
        'leaseq: pushes a job of a router queue (its kind and JSON args, in the envelope leaseq_async::router::Envelope stores) in the caller''s transaction; returns its id. Refusals raise as push_item''s, and 22023 for a kind not 1 to 255 bytes, 22004 for NULL args.';
"#;

/// The statement [`PgStore::push_in`](crate::PgStore::push_in) runs: `push_rows` with the
/// store's limits ($1 queue, $2 payloads, $3 priority, $4 delay (us), $5 ttl (us), $6 key,
/// $7 replace, $8 max item size, $9 capacity, $10 the key's window, $11 its period (us):
/// step 11's signature, `settle_sql.rs`).
pub(crate) fn push_rows(schema: &str) -> String {
    format!(
        "SELECT ids, refusal, detail FROM \"{schema}\".push_rows($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
    )
}

/// Records `queue`'s limits for the SQL functions (an open does, unless
/// [`Options::record_limits`](crate::Options) is off); changes no row when they are the
/// same. `Some(note)` if the role may not write them (a worker role granted the rights of
/// an older schema version): the open goes on, and the note is the store's first
/// [`last_error`](crate::PgStore::last_error).
pub(crate) async fn record_limits(
    client: &tokio_postgres::Client,
    options: &crate::Options,
    queue: &str,
    capacity: Option<usize>,
) -> Result<Option<String>, tokio_postgres::Error> {
    if !options.record_limits {
        return Ok(None);
    }
    let s = &options.schema;
    let upsert = format!(
        "INSERT INTO \"{s}\".queue_settings AS q (queue, max_item_size, capacity)
         VALUES ($1, $2, $3)
         ON CONFLICT (queue) DO UPDATE
         SET max_item_size = EXCLUDED.max_item_size, capacity = EXCLUDED.capacity,
             recorded_at = clock_timestamp()
         WHERE (q.max_item_size, q.capacity) IS DISTINCT FROM (EXCLUDED.max_item_size, EXCLUDED.capacity)"
    );
    let max = i64::try_from(options.max_item_size).unwrap_or(i64::MAX);
    let capacity = capacity.map(|c| i64::try_from(c).unwrap_or(i64::MAX));
    match client.execute(&upsert, &[&queue, &max, &capacity]).await {
        Ok(_) => Ok(None),
        Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE) => {
            Ok(Some(format!(
                "the queue's limits were not recorded for the SQL functions ({e}): grant \
                 WORKER_GRANTS of this version"
            )))
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_functions_check_what_the_rust_api_checks() {
        // The bounds written in the SQL are the Rust side's.
        assert!(MIGRATION.contains("NOT BETWEEN 0 AND 7"));
        assert_eq!(leaseq_core::MAX_PRIORITY, 7);
        assert!(MIGRATION.contains("octet_length(p_key) > 64"));
        assert_eq!(leaseq_core::UniqueKey::MAX_LEN, 64);
        assert!(MIGRATION.contains("NOT BETWEEN 1 AND 200"));
        assert_eq!(crate::MAX_QUEUE_NAME, 200);
    }

    #[test]
    fn transactional_ids_are_above_every_store_id() {
        // instances <= 2^30 - 1, so store ids < 2^62 = the first transactional id.
        let top_store_id = ((1_u64 << 30) - 1) << 32 | u64::from(u32::MAX);
        assert!(MIGRATION.contains("MAXVALUE 1073741823"));
        assert_eq!((1_u64 << 30) - 1, 1_073_741_823);
        assert!(MIGRATION.contains("START WITH 4611686018427387904"));
        assert_eq!(1_u64 << 62, 4_611_686_018_427_387_904);
        assert!(top_store_id < 1 << 62);
    }
}
