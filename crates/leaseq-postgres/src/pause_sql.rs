//! The statements of pausing (`pause.rs`): migration 9's table, the flag's reads, pause and
//! resume (the claim reads the flag as step 14 copies it, `plain_sql.rs`). A leaf: `sql.rs`,
//! `schema.rs` and `inspect.rs` take their text from here.

/// Migration 9: the paused queues. Readable by every role that may use the schema: every
/// claimer's probe read it until step 14 (now `claim_flags`, PUBLIC too), so a worker granted
/// an older version's rights still claims (it cannot pause or resume without version 9's
/// `WORKER_GRANTS`).
pub(crate) const MIGRATION: &str = r#"
    CREATE TABLE IF NOT EXISTS {s}.queue_pauses (
        queue       text        PRIMARY KEY,
        paused_at   timestamptz NOT NULL DEFAULT clock_timestamp()
    );
    GRANT SELECT ON {s}.queue_pauses TO PUBLIC;
"#;

/// The first schema version with `queue_pauses`.
pub(crate) const PAUSE_VERSION: i64 = 9;

/// The flag as the counts read it (`$1` the queue; `{s}` the quoted schema).
pub(crate) const PAUSED_COUNT: &str = "EXISTS (SELECT 1 FROM {s}.queue_pauses WHERE queue = $1)";
/// The flag as the schema's queue list reads it (each row's `i.queue`).
pub(crate) const PAUSED_LIST: &str =
    "EXISTS (SELECT 1 FROM {s}.queue_pauses p WHERE p.queue = i.queue)";

/// The statements: pause (`$1` queue; a row inserted if none), resume (`$1` queue, `$2`
/// channel; the row deleted and the channel notified at commit). Each answers how many
/// rows it changed.
pub(crate) fn statements(schema: &str) -> (String, String) {
    let s = format!("\"{schema}\"");
    (
        format!("INSERT INTO {s}.queue_pauses (queue) VALUES ($1) ON CONFLICT (queue) DO NOTHING"),
        format!(
            "WITH d AS (DELETE FROM {s}.queue_pauses WHERE queue = $1 RETURNING queue)
             SELECT (SELECT count(*) FROM d) FROM pg_notify($2, $1)"
        ),
    )
}
