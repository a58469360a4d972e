//! Schema step 12 (snoozes and unique keys' windows, issue 32) and the statements that use
//! it. A leaf: `schema.rs` takes the migration, `sql.rs` the statements. Kept in one file
//! so that the step can be renumbered at a merge (on this branch it is the tenth).

/// Schema step 12: `items.snoozes`, an item's uncounted snoozes so far (NULL: none, so a
/// row that never snoozes stores nothing for it). Idempotent.
pub(crate) const MIGRATION: &str = r#"
    ALTER TABLE {s}.items ADD COLUMN IF NOT EXISTS snoozes integer;
"#;

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
