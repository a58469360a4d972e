//! The record of finished jobs in SQL (schema step 8): the `history` table, the items'
//! `pushed_at` and `started_at` columns, the finishing statements rewritten to write their
//! entry in the same statement when [`Options::retention`](crate::Options::retention) is on,
//! the operator's page and the upkeep's removal by age.

/// The schema version from which the record exists.
pub(crate) const HISTORY_VERSION: i64 = 8;

/// Step 8: `items.pushed_at` (set by its default on every insert path: the writer, keyed
/// pushes, transactional pushes and the SQL functions; rows of before stay NULL) and
/// `items.started_at` (a row's first claim, written by claims while retention is on); the
/// `history` table, its entries numbered by `seq` in the order they were written, one index
/// by `(queue, seq)` serving both the operator's paging and the removal by age (entries are
/// written in finish order, within a commit's overlap: the removal reads the oldest by
/// `seq`).
pub(crate) const MIGRATION: &str = r#"
    ALTER TABLE {s}.items ADD COLUMN IF NOT EXISTS pushed_at timestamptz,
                          ADD COLUMN IF NOT EXISTS started_at timestamptz;
    ALTER TABLE {s}.items ALTER COLUMN pushed_at SET DEFAULT statement_timestamp();
    CREATE TABLE IF NOT EXISTS {s}.history (
        seq         bigint      GENERATED ALWAYS AS IDENTITY,
        queue       text        NOT NULL,
        id          bigint      NOT NULL,
        kind        bytea,                            -- a router envelope's kind bytes
        outcome     smallint    NOT NULL,             -- 0 acked, 1 dead letter, 2 cancelled, 3 expired
        reason      smallint,                         -- last failure (Reason code)
        attempts    integer     NOT NULL,
        pushed_at   timestamptz,
        started_at  timestamptz,                      -- first claim
        leased_at   timestamptz,                      -- last claim
        finished_at timestamptz NOT NULL,
        last_error  text
    ) WITH (autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 5000,
            autovacuum_vacuum_insert_scale_factor = 0.0,
            autovacuum_vacuum_insert_threshold = 50000);
    CREATE INDEX IF NOT EXISTS history_page ON {s}.history (queue, seq);
"#;

/// The kind bytes of a router envelope in payload column `p` (`[len] ++ kind ++ ..`: the
/// `len` bytes after the first, if the payload is that long), else NULL. Nested `CASE`s, so
/// `get_byte` never reads an empty payload.
fn kind_of(p: &str) -> String {
    format!(
        "CASE WHEN octet_length({p}) = 0 THEN NULL
              WHEN get_byte({p}, 0) > 0 AND octet_length({p}) > get_byte({p}, 0)
              THEN substring({p} FROM 2 FOR get_byte({p}, 0)) END"
    )
}

/// The top-level, comma-separated expressions of a `RETURNING` list.
fn split_top(list: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0_i32, 0, Vec::new());
    for (i, c) in list.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(list[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = list[start..].trim();
    if !last.is_empty() {
        out.push(last);
    }
    out
}

/// `stmt` (an `UPDATE` or `DELETE` of items, its rows qualified by `p`: `"i."` or `""`)
/// writing one history entry per row it changes (those `only` keeps: a `WHERE` on the
/// changed rows' `h_state` / `h_reason`, or empty) with `outcome` (an expression of them),
/// in the same statement; it returns what `stmt` returned (or each row's id), so callers
/// read it as before.
pub(crate) fn recorded(stmt: &str, p: &str, schema: &str, outcome: &str, only: &str) -> String {
    let (body, cols) = match stmt.rfind("RETURNING") {
        Some(at) => (&stmt[..at], split_top(&stmt[at + "RETURNING".len()..])),
        None => (stmt, Vec::new()),
    };
    let mut ret: Vec<String> = cols
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{c} AS r{i}"))
        .collect();
    let out: Vec<String> = if cols.is_empty() {
        vec!["h_id".to_string()]
    } else {
        (0..cols.len()).map(|i| format!("r{i}")).collect()
    };
    ret.push(format!(
        "{p}queue AS h_queue, {p}id AS h_id, {} AS h_kind, {p}reason AS h_reason, \
         {p}attempts AS h_attempts, {p}pushed_at AS h_pushed, {p}started_at AS h_started, \
         {p}leased_at AS h_leased, {p}last_error AS h_error, {p}state AS h_state",
        kind_of(&format!("{p}payload"))
    ));
    format!(
        "WITH d AS ({body} RETURNING {}),
         h AS (INSERT INTO \"{schema}\".history (queue, id, kind, outcome, reason, attempts,
                   pushed_at, started_at, leased_at, finished_at, last_error)
               SELECT h_queue, h_id, h_kind, {outcome}, h_reason, h_attempts, h_pushed,
                      h_started, h_leased, clock_timestamp(), h_error FROM d {only})
         SELECT {} FROM d",
        ret.join(", "),
        out.join(", ")
    )
}

/// The outcome of a row moved to the dead letters: expired (reason 7) or dead-lettered.
pub(crate) const DEAD_OUTCOME: &str = "CASE WHEN h_reason = 7 THEN 3 ELSE 1 END";

/// The claim `claim` also noting a row's first start (`started_at`).
pub(crate) fn noting_start(claim: &str) -> String {
    claim.replacen(
        "leased_at = clock_timestamp(),",
        "leased_at = clock_timestamp(), started_at = COALESCE(started_at, clock_timestamp()),",
        1,
    )
}

/// Microseconds since the Unix epoch of column `x`, as `bigint`.
macro_rules! epoch_us {
    ($x:literal) => {
        concat!("(EXTRACT(EPOCH FROM ", $x, ") * 1000000)::bigint")
    };
}

/// The record's statements of one schema.
#[derive(Debug)]
pub(crate) struct HistorySql {
    /// Entries of $1 numbered above $2, at most $3, in `seq` order; $4 kind bytes, $5
    /// outcome code (NULL: any).
    pub(crate) page: String,
    /// Of the 10,000 oldest entries of $1 (by `seq`: one bounded read of the index), those
    /// that finished more than $2 microseconds ago, removed. An entry written after one
    /// that finished later (commits overlap) waits at most that overlap longer.
    pub(crate) prune: String,
}

impl HistorySql {
    /// The statements of `schema`.
    pub(crate) fn new(schema: &str) -> HistorySql {
        let s = format!("\"{schema}\"");
        let f = |q: &str| q.replace("{s}", &s);
        HistorySql {
            page: f(concat!(
                "SELECT seq, id, kind, outcome, reason, attempts, ",
                epoch_us!("pushed_at"),
                ", ",
                epoch_us!("started_at"),
                ", ",
                epoch_us!("finished_at"),
                // The duration as the difference of the two times as read, so that it is
                // exactly `finished - started` for an item run once.
                ", CASE WHEN attempts > 0 THEN ",
                epoch_us!("finished_at"),
                " - ",
                epoch_us!("leased_at"),
                " END, last_error
                 FROM {s}.history WHERE queue = $1 AND seq > $2
                   AND ($4::bytea IS NULL OR kind = $4)
                   AND ($5::smallint IS NULL OR outcome = $5)
                 ORDER BY seq LIMIT $3"
            )),
            prune: f(
                "DELETE FROM {s}.history WHERE queue = $1 AND seq = ANY(ARRAY(
                     SELECT seq FROM (SELECT seq, finished_at FROM {s}.history WHERE queue = $1
                                      ORDER BY seq LIMIT 10000) AS oldest
                     WHERE finished_at < clock_timestamp() - $2::bigint * interval '1 microsecond'))",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_returning_list_splits_at_its_top_level_commas() {
        assert_eq!(
            split_top(" i.id, i.state, -(EXTRACT(EPOCH FROM (a - b)) * 1)::bigint"),
            vec![
                "i.id",
                "i.state",
                "-(EXTRACT(EPOCH FROM (a - b)) * 1)::bigint"
            ]
        );
        assert!(split_top(" ").is_empty());
    }

    #[test]
    fn a_recorded_statement_returns_what_the_plain_one_did() {
        let r = recorded(
            "UPDATE x.items SET state = 2 WHERE id = $1 RETURNING attempts",
            "",
            "x",
            "1",
            "",
        );
        assert!(r.starts_with(
            "WITH d AS (UPDATE x.items SET state = 2 WHERE id = $1  RETURNING attempts AS r0,"
        ));
        assert!(r.ends_with("SELECT r0 FROM d"), "{r}");
        let r = recorded("DELETE FROM x.items WHERE id = $1", "", "x", "2", "");
        assert!(r.ends_with("SELECT h_id FROM d"), "{r}");
    }
}
