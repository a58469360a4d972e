//! The statements of the operator calls (peek, dead letters, redrive, purge), of keyed
//! pushes (unique keys, `replace_pending`) and of capacities, with the schema filled in once
//! at open. Times go out as microseconds until the row's time (negative once passed), as in
//! `sql.rs`, so the store turns them into the queue clock's `Timestamp`s the same way.

/// Microseconds from now until `x` (negative once passed), as `bigint`.
macro_rules! until {
    ($x:literal) => {
        concat!(
            "(EXTRACT(EPOCH FROM (",
            $x,
            " - clock_timestamp())) * 1000000)::bigint"
        )
    };
}

/// The operator's, keyed pushes' and capacities' statements of one schema.
#[derive(Debug)]
pub(crate) struct OpSql {
    /// Live rows of $1 with ids above $2, at most $3, in id order.
    pub(crate) peek: String,
    /// `peek` with each row's payload (NULL over the size limit) and its size, for the
    /// read-only inspector.
    pub(crate) peek_items: String,
    /// Dead letters of $1 with ids above $2, at most $3, in id order; $4 reason code, $5
    /// envelope head (NULL: any).
    pub(crate) dead_page: String,
    /// Every queue of the schema that has rows, by name, with its rows counted by state
    /// (ready, delayed, leased, dead).
    pub(crate) queues: String,
    /// A dead letter back, visible at once (unless expired): $1 queue, $2 id.
    pub(crate) redrive: String,
    /// Why a redrive changed nothing: $1 queue, $2 id.
    pub(crate) redrive_why: String,
    /// The live item holding key $2 in queue $1.
    pub(crate) key_holder: String,
    /// Every dead letter that can go back, at most $2: $1 queue, $3 reason code (NULL:
    /// any), $4 the envelope head `[len] ++ kind` its payload begins with (NULL: any).
    pub(crate) redrive_all: String,
    /// Waiting (ready and delayed) rows of $1, deleted.
    pub(crate) purge: String,
    /// Dead letters of $1, deleted: $2 reason code, $3 envelope head (NULL: any).
    pub(crate) purge_dead: String,
    /// Live rows (waiting and leased) of $1: one count per partial index.
    pub(crate) live: String,
    /// Room for $3 rows in queue $1 at capacity $2, from its ledger (`room_sql.rs`),
    /// whose row stays locked until commit: how many granted, the ledger's count after.
    pub(crate) take_room: String,
    /// Room taken and not used, given back: $1 queue, $2 rows (`room_sql.rs`).
    pub(crate) give_room: String,
    /// A bounded queue's ledger row locked until commit: $1 queue (`room_sql.rs`).
    pub(crate) lock_room: String,
    /// One keyed row, unless a live row holds its key: $1 id, $2 queue, $3 priority,
    /// $4 delay (us), $5 ttl (us), $6 key, $7 payload.
    pub(crate) keyed_insert: String,
    /// A notification on channel $1 with payload $2 (the queue), sent at commit.
    pub(crate) notify: String,
    /// A keyed row with its key's window (`settle_sql::WINDOWED_INSERT`).
    pub(crate) windowed_insert: String,
    /// Who holds a key, a waiting holder replaced (`settle_sql::KEY_HOLDER`).
    pub(crate) window_holder: String,
    /// The gone keys whose window ended, deleted (the upkeep).
    pub(crate) prune_gone_keys: String,
    /// A bounded queue's batch insert (`room_sql::INSERT_BOUNDED`).
    pub(crate) insert_bounded: String,
}

impl OpSql {
    /// The statements of `schema`.
    pub(crate) fn new(schema: &str, max_item: usize) -> OpSql {
        let s = format!("\"{schema}\"");
        let f = |q: &str| q.replace("{s}", &s);
        OpSql {
            peek: f(concat!(
                "SELECT id, state, attempts, priority, key, ",
                until!("visible_at"),
                ", ",
                until!("deadline"),
                ", ",
                until!("expires_at"),
                " FROM {s}.items WHERE queue = $1 AND state IN (0, 1) AND id > $2
                 ORDER BY id LIMIT $3"
            )),
            peek_items: f(concat!(
                "SELECT id, state, attempts, priority, key, ",
                until!("visible_at"),
                ", ",
                until!("deadline"),
                ", ",
                until!("expires_at"),
                ", CASE WHEN octet_length(payload) <= {max_item} THEN payload END,
                   octet_length(payload)::bigint
                 FROM {s}.items WHERE queue = $1 AND state IN (0, 1) AND id > $2
                 ORDER BY id LIMIT $3"
            ))
            .replace("{max_item}", &max_item.to_string()),
            queues: f("SELECT queue,
                   count(*) FILTER (WHERE state = 0 AND visible_at <= clock_timestamp()),
                   count(*) FILTER (WHERE state = 0 AND visible_at > clock_timestamp()),
                   count(*) FILTER (WHERE state = 1),
                   count(*) FILTER (WHERE state = 2), {paused}
                 FROM {s}.items i GROUP BY queue ORDER BY queue")
            .replace("{paused}", &f(crate::pause_sql::PAUSED_LIST)),
            dead_page: f(concat!(
                "SELECT id, attempts, reason, last_error, priority, key, ",
                until!("dead_at"),
                ", ",
                until!("expires_at"),
                // An item over the size limit is not loaded: NULL and its size.
                ", CASE WHEN octet_length(payload) <= {max_item} THEN payload END,
                   octet_length(payload)::bigint
                 FROM {s}.items WHERE queue = $1 AND state = 2 AND id > $2
                   AND ($4::smallint IS NULL OR reason = $4)
                   AND ($5::bytea IS NULL OR substring(payload FROM 1 FOR octet_length($5)) = $5)
                 ORDER BY id LIMIT $3"
            ))
            .replace("{max_item}", &max_item.to_string()),
            // The fencing token moves on: the lease that ended in the dead letters stays
            // stale (its late ack or dead letter must not settle the redriven item). A key
            // a live row holds makes it fail with a unique violation (`items_key`).
            redrive: f("UPDATE {s}.items SET state = 0, attempts = 0, lease = lease + 1,
                        visible_at = clock_timestamp(), reason = NULL, last_error = NULL, dead_at = NULL,
                        key_hold = NULL, key_until = NULL, key_then = NULL
                 WHERE queue = $1 AND id = $2 AND state = 2
                   AND (expires_at IS NULL OR expires_at > clock_timestamp())
                 RETURNING id"),
            redrive_why: f("SELECT state, expires_at IS NOT NULL AND expires_at <= clock_timestamp(), key
                 FROM {s}.items WHERE queue = $1 AND id = $2"),
            key_holder: f("SELECT id FROM {s}.items
                 WHERE queue = $1 AND key = $2 AND key IS NOT NULL AND state IN (0, 1)"),
            // In id order, as the memory store's: not expired, no live row holding its key,
            // and of several dead letters with one key only the first goes.
            redrive_all: f("UPDATE {s}.items SET state = 0, attempts = 0, lease = lease + 1,
                        visible_at = clock_timestamp(), reason = NULL, last_error = NULL, dead_at = NULL,
                        key_hold = NULL, key_until = NULL, key_then = NULL
                 WHERE id IN (
                     SELECT d.id FROM {s}.items d
                     WHERE d.queue = $1 AND d.state = 2
                       AND (d.expires_at IS NULL OR d.expires_at > clock_timestamp())
                       AND ($3::smallint IS NULL OR d.reason = $3)
                       AND ($4::bytea IS NULL OR substring(d.payload FROM 1 FOR octet_length($4)) = $4)
                       AND (d.key IS NULL OR (
                           NOT EXISTS (SELECT 1 FROM {s}.items l WHERE l.queue = $1
                                       AND l.key = d.key AND l.state IN (0, 1))
                           AND d.id = (SELECT min(o.id) FROM {s}.items o WHERE o.queue = $1
                                       AND o.key = d.key AND o.state = 2
                                       AND ($3::smallint IS NULL OR o.reason = $3)
                                       AND ($4::bytea IS NULL OR substring(o.payload FROM 1 FOR octet_length($4)) = $4)
                                       AND (o.expires_at IS NULL OR o.expires_at > clock_timestamp()))))
                     ORDER BY d.id LIMIT $2)"),
            purge: f("DELETE FROM {s}.items WHERE queue = $1 AND state = 0"),
            purge_dead: f("DELETE FROM {s}.items WHERE queue = $1 AND state = 2
                   AND ($2::smallint IS NULL OR reason = $2)
                   AND ($3::bytea IS NULL OR substring(payload FROM 1 FOR octet_length($3)) = $3)"),
            live: f("SELECT (SELECT count(*) FROM {s}.items WHERE queue = $1 AND state = 0)
                          + (SELECT count(*) FROM {s}.items WHERE queue = $1 AND state = 1)"),
            take_room: f(crate::room_sql::TAKE_ROOM),
            give_room: f(crate::room_sql::GIVE_ROOM),
            lock_room: f(crate::room_sql::LOCK_ROOM),
            keyed_insert: f("INSERT INTO {s}.items (id, queue, priority, visible_at, expires_at, key, payload)
                 VALUES ($1, $2, $3, clock_timestamp() + $4::bigint * interval '1 microsecond',
                         clock_timestamp() + $5::bigint * interval '1 microsecond', $6, $7)
                 ON CONFLICT (queue, key) WHERE key IS NOT NULL AND state IN (0, 1) DO NOTHING
                 RETURNING id"),
            notify: "SELECT pg_notify($1, $2)".to_string(),
            windowed_insert: f(crate::settle_sql::WINDOWED_INSERT),
            window_holder: f(crate::settle_sql::KEY_HOLDER),
            prune_gone_keys: f(crate::settle_sql::PRUNE_GONE_KEYS),
            insert_bounded: f(crate::room_sql::INSERT_BOUNDED),
        }
    }
}
