//! Schema step 16 (issue 32): a bounded queue's room ledger, so that a bounded insert far
//! from the bound costs one row update instead of a count of the queue's live rows under a
//! lock. A leaf: `schema.rs` takes the migration, `op_sql.rs` the statements. The step's
//! whole SQL, in one file.
//!
//! **The ledger.** `queue_room` has a row per bounded queue: `taken`, never below the
//! queue's live (waiting and leased) rows, and `bound`, at most the capacity `cap`. Every
//! statement that adds live rows to a bounded queue first takes room with
//! `take_room(queue, capacity, n)`, in its own transaction: the writer's batches
//! (`insert_bounded`), the transactional and SQL pushes (`push_rows`), keyed pushes
//! (`keyed.rs`), schedule ticks (`schedule.rs`), redrives (`capacity.rs`). Nothing that
//! removes rows touches it (acks, dead letters, cancels, purges, expiry, replacements, the
//! rescuer): an unbounded queue, and every settle, pays nothing. So `taken` is an upper
//! bound of the live rows, counted exactly at the last recount plus every row added since.
//!
//! **Taking room.** The fast path is one `UPDATE .. SET taken = taken + n WHERE taken + n <=
//! bound`: no count and no advisory lock, the ledger's row locked to the commit of the
//! caller's transaction. When it fails (the bound is near, or the `cap` recorded is not the
//! caller's capacity), the slow path locks the row, counts the live rows (a statement of
//! its own after the lock: under `READ COMMITTED` it sees every row committed by the
//! transactions that held the row before), grants `min(n, capacity - live)` and sets
//! `taken` to the count plus the grant and `bound` halfway from there to the capacity. So
//! the queue never holds more than its capacity (`taken <= bound <= cap` on the fast path,
//! an exact count on the slow one), a count is made only once per half of the room left
//! (far from the bound: rarely; at the bound: every insert, as before), and the estimate
//! a process reads back (`taken`) is never more than half the room left above the truth.
//! Room taken for rows not inserted after all (a key held, a retried batch's rows already
//! in) stays taken until the next recount: safe, only earlier to count again.
//!
//! **Crashes.** The ledger's changes are in the transaction that inserts the rows: a
//! process killed mid-way rolls both back (or the server commits both, should the
//! statement already be running). A process of an older version still running calls the
//! functions this step makes again (its writer's batches and transactional pushes take
//! room), but its keyed pushes, schedule ticks and redrives count under step 11's advisory
//! lock and add nothing to the ledger: stop such processes before pushes of those kinds
//! into a bounded queue.

/// Schema step 16. `{s}` is the quoted schema. Idempotent: `insert_bounded` and
/// `push_rows` (step 11's) are made again with the ledger in place of the lock and count.
pub(crate) const MIGRATION: &str = r#"
    CREATE TABLE IF NOT EXISTS {s}.queue_room (
        queue       text        PRIMARY KEY,
        cap         bigint      NOT NULL,             -- the capacity `bound` was set for
        taken       bigint      NOT NULL,             -- >= the queue's live rows
        bound       bigint      NOT NULL              -- the fast path's limit of `taken`
    ) WITH (fillfactor = 50);

    -- Locks p_queue's ledger row to the caller's commit, made if missing (with a `cap` of
    -- -1: the next take counts).
    CREATE OR REPLACE FUNCTION {s}.lock_room(p_queue text) RETURNS void
    LANGUAGE plpgsql AS $fn$
    BEGIN
        PERFORM 1 FROM {s}.queue_room r WHERE r.queue = p_queue FOR UPDATE;
        IF NOT FOUND THEN
            INSERT INTO {s}.queue_room (queue, cap, taken, bound) VALUES (p_queue, -1, 0, 0)
            ON CONFLICT (queue) DO NOTHING;
            PERFORM 1 FROM {s}.queue_room r WHERE r.queue = p_queue FOR UPDATE;
        END IF;
    END
    $fn$;

    -- Takes room for p_n rows of p_queue (room_sql.rs): granted, how many of them fit (all,
    -- on the fast path), and held, `taken` after the grant. The ledger's row stays locked
    -- to the caller's commit. p_n = 0 counts again and grants nothing.
    CREATE OR REPLACE FUNCTION {s}.take_room(
        p_queue text, p_capacity bigint, p_n integer, OUT granted integer, OUT held bigint)
    LANGUAGE plpgsql AS $fn$
    DECLARE
        live bigint;
    BEGIN
        granted := 0;
        IF p_n > 0 THEN
            UPDATE {s}.queue_room r SET taken = r.taken + p_n
            WHERE r.queue = p_queue AND r.cap = p_capacity AND r.taken + p_n <= r.bound
            RETURNING r.taken INTO held;
            IF FOUND THEN
                granted := p_n;
                RETURN;
            END IF;
        END IF;
        PERFORM {s}.lock_room(p_queue);
        -- A statement of its own, after the lock: it sees every row its holders committed.
        live := (SELECT count(*) FROM {s}.items WHERE queue = p_queue AND state = 0)
              + (SELECT count(*) FROM {s}.items WHERE queue = p_queue AND state = 1);
        granted := least(greatest(p_capacity - live, 0), greatest(p_n, 0));
        held := live + granted;
        UPDATE {s}.queue_room r
        SET cap = p_capacity, taken = held, bound = held + greatest(p_capacity - held, 0) / 2
        WHERE r.queue = p_queue;
    END
    $fn$;

    -- A bounded queue's insert of a writer's batch in one statement (writer.rs): room for
    -- the batch taken from the ledger (take_room), then the rows that fit inserted with the
    -- writer's watermark raised for them only, and one notification. live: the ledger's
    -- `taken` before the batch's rows (an upper bound of the live rows). As the unbounded
    -- insert (sql.rs), no `ON CONFLICT` (a speculative insertion per row) unless p_checked:
    -- the watermark already skips every row a lost reply's first attempt committed.
    CREATE OR REPLACE FUNCTION {s}.insert_bounded(
        p_queue text, p_ids bigint[], p_priorities smallint[], p_delays bigint[],
        p_ttls bigint[], p_payloads bytea[], p_channel text, p_capacity bigint,
        p_checked boolean, OUT live bigint, OUT room integer)
    LANGUAGE plpgsql AS $fn$
    DECLARE
        t0 timestamptz := clock_timestamp();
    BEGIN
        SELECT t.granted, t.held - t.granted INTO room, live
        FROM {s}.take_room(p_queue, p_capacity, coalesce(cardinality(p_ids), 0)) t;
        IF room = 0 THEN
            RETURN;
        ELSIF room < cardinality(p_ids) THEN
            -- Only the rows that fit (slices copy: a whole batch is taken as it is).
            p_ids := p_ids[1:room]; p_priorities := p_priorities[1:room];
            p_delays := p_delays[1:room]; p_ttls := p_ttls[1:room];
            p_payloads := p_payloads[1:room];
        END IF;
        IF p_checked THEN
            WITH b AS (
                   SELECT * FROM unnest(p_ids, p_priorities, p_delays, p_ttls, p_payloads)
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
        ELSE
            WITH b AS (
                   SELECT * FROM unnest(p_ids, p_priorities, p_delays, p_ttls, p_payloads)
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
            WHERE b.id > mark.below;
        END IF;
        IF 0 = ANY(p_delays) THEN
            PERFORM pg_notify(p_channel, p_queue);
        END IF;
    END
    $fn$;
    -- Step 11's signature, for a process of that version still running: checked, and
    -- room taken from the ledger too.
    CREATE OR REPLACE FUNCTION {s}.insert_bounded(
        p_queue text, p_ids bigint[], p_priorities smallint[], p_delays bigint[],
        p_ttls bigint[], p_payloads bytea[], p_channel text, p_capacity bigint,
        OUT live bigint, OUT room integer)
    LANGUAGE sql AS $fn$
        SELECT b.live, b.room FROM {s}.insert_bounded(p_queue, p_ids, p_priorities, p_delays,
            p_ttls, p_payloads, p_channel, p_capacity, true) b
    $fn$;

    -- The push (tx_sql.rs says what it does), its capacity taken from the ledger.
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
        got integer;
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
            -- take_room's count must see every row committed before its lock was granted.
            refusal := 'isolation'; RETURN;
        END IF;
        -- The rows before the first one over the size limit (or NULL) may go.
        WHILE fit < n AND octet_length(p_payloads[fit + 1]) <= p_max_item_size LOOP
            fit := fit + 1;
        END LOOP;
        IF p_key IS NULL THEN
            take := fit;
            IF fit > 0 AND p_capacity IS NOT NULL THEN
                -- Room taken from the queue's ledger (room_sql.rs), the row locked to commit.
                SELECT t.granted INTO take FROM {s}.take_room(p_queue, p_capacity, fit) t;
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
            IF fit > 0 AND p_capacity IS NOT NULL THEN
                -- The ledger's row locked before any key is judged, as keyed.rs does: a
                -- replacement's delete never waits while holding the ledger's row.
                PERFORM {s}.lock_room(p_queue);
            END IF;
            <<rows>>
            FOR i IN 1..fit LOOP
                -- The key's holder (settle_sql.rs: a live row whose window has not passed,
                -- or an item that left within its window); a waiting one replaced.
                SELECT k.holder, k.replaced INTO detail, replaced
                FROM {s}.key_holder(p_queue, p_key, p_replace) k;
                IF detail IS NOT NULL THEN
                    refusal := 'duplicate'; EXIT rows;
                END IF;
                IF p_capacity IS NOT NULL AND NOT replaced THEN
                    SELECT t.granted INTO got FROM {s}.take_room(p_queue, p_capacity, 1) t;
                    IF got = 0 THEN
                        refusal := 'full'; detail := p_capacity; EXIT rows;
                    END IF;
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
"#;

/// Room for $3 rows of queue $1 at capacity $2 (the function `take_room`): how many were
/// granted, and the ledger's `taken` after (an upper bound of the live rows).
pub(crate) const TAKE_ROOM: &str = "SELECT granted, held FROM {s}.take_room($1, $2, $3)";

/// Room taken for $2 rows of queue $1 and not used, given back (the caller's transaction
/// holds the ledger's row since its `take_room`), the fast path's bound brought back
/// halfway to the capacity if it was above that.
pub(crate) const GIVE_ROOM: &str = "UPDATE {s}.queue_room
     SET taken = taken - $2::bigint,
         bound = LEAST(bound, taken - $2::bigint + GREATEST(cap - (taken - $2::bigint), 0) / 2)
     WHERE queue = $1";

/// Queue $1's ledger row locked to the commit (the function `lock_room`): taken first by
/// a keyed push, so that lock orders stay the same everywhere (`keyed.rs`).
pub(crate) const LOCK_ROOM: &str = "SELECT {s}.lock_room($1)";

/// A bounded queue's batch insert (the function `insert_bounded`): $1 queue, $2 ids,
/// $3 priorities, $4 delays (us), $5 ttls (us), $6 payloads, $7 channel, $8 capacity, $9
/// with `ON CONFLICT (id) DO NOTHING`; the ledger's count before the batch and how many
/// of the batch's first rows went in.
pub(crate) const INSERT_BOUNDED: &str =
    "SELECT live, room FROM {s}.insert_bounded($1, $2, $3, $4, $5, $6, $7, $8, $9)";
