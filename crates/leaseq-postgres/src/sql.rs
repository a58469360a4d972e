//! Every statement the store runs, with its schema filled in once at open. Times travel as
//! microseconds (`bigint`): durations into the database, remaining times out of it, so
//! that only the database's clock decides deadlines and the machines' clocks may differ.

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

/// The payload if it is at most `{max_item}` bytes (else NULL: never loaded), then its size:
/// the last two columns of a statement that reads items back.
macro_rules! sized_payload {
    () => {
        "CASE WHEN octet_length(payload) <= {max_item} THEN payload END, \
         octet_length(payload)::bigint"
    };
}

/// The statements of one schema.
#[derive(Debug)]
pub(crate) struct Sql {
    /// The notification channel of the schema (payload: the queue name).
    pub(crate) channel: String,
    /// Pause and resume (`pause.rs`).
    pub(crate) pause: (String, String),
    pub(crate) instance: String,
    pub(crate) insert: String,
    pub(crate) insert_checked: String,
    /// `insert` and `insert_checked` for a batch with flow keys (`flow_sql.rs`).
    pub(crate) insert_flow: (String, String),
    pub(crate) forget_marks: String,
    pub(crate) claim: String,
    pub(crate) next_visible: String,
    /// The claim of a queue with flow control (`flow_claim.rs`).
    pub(crate) flow_claim: String,
    pub(crate) ack: String,
    /// `ack` for rows without a node, telling the graph nothing (`ack_plain.rs`); set by
    /// `open.rs` before the graph wraps `ack`; empty (every ack takes `ack`) until then.
    pub(crate) ack_plain: String,
    pub(crate) why_stale: String,
    pub(crate) reread: String,
    pub(crate) retry: String,
    pub(crate) snooze: String,
    pub(crate) bury: String,
    pub(crate) terminate: String,
    pub(crate) extend: String,
    pub(crate) unclaim: String,
    pub(crate) checkpoint: String,
    pub(crate) checkpoints: String,
    pub(crate) heartbeat: String,
    pub(crate) expired_leases: String,
    pub(crate) rescue: String,
    pub(crate) expire_items: String,
    pub(crate) counts: String,
    pub(crate) cancel_read: String,
    pub(crate) cancel: String,
    /// The operator's, keyed pushes' and capacities' statements.
    pub(crate) op: crate::op_sql::OpSql,
    /// The record of finished jobs' statements.
    pub(crate) history: crate::history_sql::HistorySql,
    pub(crate) vacuum: String,
    pub(crate) vacuum_analyze: String,
}

impl Sql {
    /// Rewrites the finishing statements to write their history entries in the same
    /// statement, and the claim to note a row's first start: the statements of a store with
    /// retention on (`history_sql.rs`).
    pub(crate) fn record_history(&mut self, schema: &str) {
        use crate::history_sql::{noting_start, recorded, DEAD_OUTCOME};
        self.ack = recorded(&self.ack, "i.", schema, "0", "");
        self.cancel = recorded(&self.cancel, "", schema, "2", "");
        self.bury = recorded(&self.bury, "", schema, DEAD_OUTCOME, "");
        self.terminate = recorded(&self.terminate, "", schema, DEAD_OUTCOME, "");
        self.rescue = recorded(
            &self.rescue,
            "i.",
            schema,
            DEAD_OUTCOME,
            "WHERE h_state = 2",
        );
        self.expire_items = recorded(&self.expire_items, "", schema, "3", "");
        self.claim = noting_start(&self.claim);
    }

    /// The statements of `schema`, claims taking at most `max_claim` items.
    ///
    /// The statements that settle a batch by joining the table with `unnest` of the ids
    /// (ack, unclaim, heartbeat, rescue) also say `i.id = ANY($1)`: the table's side is then
    /// an index scan on those ids whichever way round the planner joins. Without it, a
    /// plan made while the statistics said the table was empty scanned the whole primary
    /// key once per ack, the function scan inside (20 to 300 ms per ack of 16, measured).
    pub(crate) fn new(schema: &str, max_claim: usize, max_item: usize) -> Sql {
        let s = format!("\"{schema}\"");
        let f = |q: &str| q.replace("{s}", &s);
        let mut sql = Sql {
            channel: format!("leaseq.{schema}").chars().take(63).collect(),
            pause: crate::pause_sql::statements(schema),
            instance: f("SELECT nextval('{s}.instances')"),
            // $1 queue, then one array per column; delay and ttl in microseconds; $9 the
            // writer instances of the batch's ids and $10 each one's highest id in it.
            // First each instance's watermark is raised (`mark`: an upsert, so the row is
            // locked, and waited for if another statement of the same instance holds it,
            // and `below` is the top committed before this statement); then only rows above
            // it are inserted: a batch retried after a lost reply skips every row its first
            // attempt committed, also rows acked and deleted since. With them (when $8: some
            // are visible at once) one notification on channel $7, sent at commit: one round
            // trip and one commit per batch. Times count from the statement's start, one
            // reading for the batch: per row (`clock_timestamp()`) they came out in the
            // join's order, which put a batch's items in reverse for claims.
            insert: f("WITH mark AS (
                   INSERT INTO {s}.writer_marks AS w (instance, top, below, at)
                   SELECT m.instance, m.top, 0, clock_timestamp()
                   FROM unnest($9::bigint[], $10::bigint[]) AS m(instance, top)
                   ON CONFLICT (instance) DO UPDATE
                   SET below = w.top, top = GREATEST(w.top, EXCLUDED.top), at = EXCLUDED.at
                   RETURNING w.instance, w.below),
                 ins AS (
                   INSERT INTO {s}.items (id, queue, priority, visible_at, expires_at, payload)
                   SELECT u.id, $1, u.priority, statement_timestamp() + u.delay * interval '1 microsecond',
                          statement_timestamp() + u.ttl * interval '1 microsecond', u.payload
                   FROM unnest($2::bigint[], $3::smallint[], $4::bigint[], $5::bigint[], $6::bytea[])
                        AS u(id, priority, delay, ttl, payload)
                   JOIN mark ON mark.instance = u.id >> 32
                   WHERE u.id > mark.below)
                 SELECT pg_notify($7, $1) WHERE $8::bool"),
            // The same with `ON CONFLICT (id) DO NOTHING`, for a batch the first statement
            // refused with a unique violation, which the watermark makes impossible; kept
            // as a safety net, not on the hot path (a speculative insertion per row costs
            // 4 to 8 us of server CPU per item, measured).
            insert_checked: String::new(),
            insert_flow: (String::new(), String::new()),
            // Watermarks of writer instances that committed nothing for 30 days (upkeep):
            // no retry of theirs can still be under way.
            forget_marks: f("DELETE FROM {s}.writer_marks WHERE at < clock_timestamp() - interval '30 days'"),
            // $1 queue, $2 how many (at most `{max_claim}`), $3 visibility (us).
            // `= ANY(ARRAY(...))` keeps the claim index once the statement is prepared
            // (`IN (SELECT ...)` gets a generic plan with a full scan). The inner limit is
            // the largest claim, written in the text, and the bound one is applied outside
            // it: rows are locked only as the outer limit pulls them, and the planner costs
            // the statement for a known number of rows, so that after five executions the
            // plan cache keeps one generic plan (with `LIMIT $2` alone it assumes a tenth
            // of the table and plans every execution again). The `ORDER BY` is the claim
            // index's order, which the store's sessions never replace by a sort (open.rs).
            // No lease outlives its item's time to live (the max lease is at least the
            // visibility).
            claim: f(concat!(
                "UPDATE {s}.items SET state = 1, lease = lease + 1, attempts = attempts + 1,
                        leased_at = clock_timestamp(),
                        deadline = LEAST(clock_timestamp() + $3::bigint * interval '1 microsecond',
                                         COALESCE(expires_at, 'infinity'))
                 WHERE id = ANY(ARRAY(
                     SELECT id FROM (
                         SELECT id FROM {s}.items
                         WHERE queue = $1 AND state = 0 AND visible_at <= clock_timestamp()
                           AND (expires_at IS NULL OR expires_at > clock_timestamp())
                           AND {not_held}
                         ORDER BY priority DESC, visible_at, id
                         LIMIT {max_claim} FOR UPDATE SKIP LOCKED) AS c
                     LIMIT $2))
                 RETURNING id, lease, attempts, priority,
                           (EXTRACT(EPOCH FROM visible_at) * 1000000)::bigint, ",
                until!("deadline"),
                ", ",
                until!("expires_at"),
                ", ",
                sized_payload!(),
                ", progress, node IS NULL"
            ))
            .replace("{not_held}", &f(crate::plain_sql::NOT_HELD))
            .replace("{max_claim}", &max_claim.max(1).to_string())
            .replace("{max_item}", &max_item.to_string()),
            // The soonest a waiting item of $1 becomes visible: one index probe per level;
            // none while the queue is paused (`pause.rs`: the resume notifies); and whether
            // the queue has flow control (then the flow claim takes it, `flow_claim.rs`).
            // Both flags read in one probe (`plain_sql.rs`).
            next_visible: f(crate::plain_sql::NEXT_VISIBLE).replace("{until_min}", until!("min(v)")),
            flow_claim: f(crate::flow_sql::CLAIM),
            // $1 ids, $2 leases. Accepted while the lease is the item's latest and the item is
            // not a dead letter: on time, or late but claimed by nobody since.
            ack: f(concat!(
                "DELETE FROM {s}.items i USING unnest($1::bigint[], $2::bigint[]) AS a(id, lease)
                 WHERE i.id = ANY($1::bigint[]) AND i.id = a.id AND i.lease = a.lease AND i.state IN (0, 1)
                 RETURNING i.id, i.state, -",
                until!("i.deadline")
            )),
            ack_plain: String::new(),
            // Why leases were refused: $1 ids.
            why_stale: f(concat!(
                "SELECT id, state, lease, ",
                until!("deadline"),
                " FROM {s}.items WHERE id = ANY($1::bigint[])"
            )),
            // A row as it is now, after a settle's reply was lost: $1 id.
            reread: f(concat!(
                "SELECT state, lease, reason, attempts, COALESCE(snoozes, 0), ",
                until!("deadline"),
                ", ",
                until!("visible_at"),
                " FROM {s}.items WHERE id = $1"
            )),
            // A failed attempt, back after $3 us: $1 id, $2 lease, $4 reason, $5 error.
            retry: f(concat!(
                "UPDATE {s}.items SET state = 0,
                        visible_at = clock_timestamp() + $3::bigint * interval '1 microsecond',
                        reason = $4, last_error = COALESCE($5, last_error)
                 WHERE id = $1 AND lease = $2 AND state = 1 AND deadline >= clock_timestamp()
                 RETURNING ",
                until!("visible_at")
            )),
            snooze: f(crate::settle_sql::SNOOZE),
            // A failed attempt, to the dead letters: $1 id, $2 lease, $3 reason, $4 error.
            bury: f("UPDATE {s}.items SET state = 2, reason = $3,
                        last_error = COALESCE($4, last_error), dead_at = clock_timestamp()
                 WHERE id = $1 AND lease = $2 AND state = 1 AND deadline >= clock_timestamp()
                 RETURNING attempts"),
            // Poison: to the dead letters whether or not the lease ran out, unless claimed
            // since. $1 id, $2 lease, $3 reason, $4 error.
            terminate: f("UPDATE {s}.items SET state = 2, reason = $3, last_error = $4,
                        dead_at = clock_timestamp()
                 WHERE id = $1 AND lease = $2 AND state IN (0, 1)
                 RETURNING attempts"),
            // $1 id, $2 lease, $3 visibility (us), $4 max lease (us).
            extend: f(concat!(
                "UPDATE {s}.items SET deadline = LEAST(
                        clock_timestamp() + $3::bigint * interval '1 microsecond',
                        leased_at + $4::bigint * interval '1 microsecond',
                        COALESCE(expires_at, 'infinity'))
                 WHERE id = $1 AND lease = $2 AND state = 1 AND deadline >= clock_timestamp()
                 RETURNING ",
                until!("deadline")
            )),
            // A handler's checkpoint, fenced as an extension: $1 id, $2 lease, $3 bytes.
            checkpoint: f("UPDATE {s}.items SET progress = $3
                 WHERE id = $1 AND lease = $2 AND state = 1 AND deadline >= clock_timestamp()
                 RETURNING id"),
            // The checkpoints of $1's live rows and dead letters with ids above $2, at most
            // $3, in id order (an operator's read).
            checkpoints: f("SELECT id, progress FROM {s}.items
                 WHERE queue = $1 AND progress IS NOT NULL AND id > $2 ORDER BY id LIMIT $3"),
            // Claimed but never handed out (its receive went away): waiting again, this
            // attempt not counted. $1 ids, $2 leases.
            unclaim: f("UPDATE {s}.items i SET state = 0, attempts = attempts - 1
                 FROM unnest($1::bigint[], $2::bigint[]) AS a(id, lease)
                 WHERE i.id = ANY($1::bigint[]) AND i.id = a.id AND i.lease = a.lease AND i.state = 1
                 RETURNING i.id"),
            // Every held lease of this process in one statement: $1 ids, $2 leases,
            // $3 visibility (us), $4 max lease (us). Returns the ones kept.
            heartbeat: f(concat!(
                "UPDATE {s}.items i SET deadline = LEAST(
                        clock_timestamp() + $3::bigint * interval '1 microsecond',
                        i.leased_at + $4::bigint * interval '1 microsecond',
                        COALESCE(i.expires_at, 'infinity'))
                 FROM unnest($1::bigint[], $2::bigint[]) AS a(id, lease)
                 WHERE i.id = ANY($1::bigint[]) AND i.id = a.id AND i.lease = a.lease AND i.state = 1
                   AND i.deadline >= clock_timestamp()
                   AND i.leased_at + $4::bigint * interval '1 microsecond' > clock_timestamp()
                 RETURNING i.id, ",
                until!("i.deadline")
            )),
            // Leases of $1 that ran out, whoever held them (in a transaction, with `rescue`).
            expired_leases: f("SELECT id, attempts, (expires_at IS NOT NULL AND expires_at <= clock_timestamp())
                 FROM {s}.items WHERE queue = $1 AND state = 1 AND deadline < clock_timestamp()
                 ORDER BY deadline LIMIT $2 FOR UPDATE SKIP LOCKED"),
            // The rescuer's verdicts: $1 ids, $2 new states, $3 delays (us), $4 reasons.
            rescue: f("UPDATE {s}.items i SET state = u.state,
                        visible_at = CASE WHEN u.state = 0
                            THEN clock_timestamp() + u.delay * interval '1 microsecond'
                            ELSE i.visible_at END,
                        reason = u.reason,
                        dead_at = CASE WHEN u.state = 2 THEN clock_timestamp() END
                 FROM unnest($1::bigint[], $2::smallint[], $3::bigint[], $4::smallint[])
                      AS u(id, state, delay, reason)
                 WHERE i.id = ANY($1::bigint[]) AND i.id = u.id AND i.state = 1"),
            // Waiting items of $1 whose time to live passed: dead letters ($2 reason code).
            expire_items: f("UPDATE {s}.items SET state = 2, reason = $2, dead_at = clock_timestamp()
                 WHERE id = ANY(ARRAY(SELECT id FROM {s}.items
                     WHERE queue = $1 AND state = 0 AND expires_at <= clock_timestamp()
                     LIMIT 1000 FOR UPDATE SKIP LOCKED))"),
            counts: f("SELECT
                   count(*) FILTER (WHERE state = 0 AND visible_at <= clock_timestamp()),
                   count(*) FILTER (WHERE state = 0 AND visible_at > clock_timestamp()),
                   count(*) FILTER (WHERE state = 1),
                   count(*) FILTER (WHERE state = 2), {paused}
                 FROM {s}.items WHERE queue = $1")
            .replace("{paused}", &f(crate::pause_sql::PAUSED_COUNT)),
            // $1 queue, $2 id: the row to cancel, locked.
            cancel_read: f(concat!(
                "SELECT state, ",
                sized_payload!(),
                " FROM {s}.items WHERE queue = $1 AND id = $2 FOR UPDATE"
            ))
            .replace("{max_item}", &max_item.to_string()),
            cancel: f("DELETE FROM {s}.items WHERE id = $1"),
            op: crate::op_sql::OpSql::new(schema, max_item),
            history: crate::history_sql::HistorySql::new(schema),
            // INDEX_CLEANUP ON: never skip the indexes (see upkeep.rs). TRUNCATE OFF: a
            // queue's table keeps emptying and refilling its last pages, and the truncation
            // waits up to 5 s for an exclusive lock it rarely gets (and stalls every claim
            // and ack while it holds it); emptied pages are reused anyway.
            vacuum: f("VACUUM (INDEX_CLEANUP ON, TRUNCATE OFF) {s}.items"),
            vacuum_analyze: f("VACUUM (ANALYZE, INDEX_CLEANUP ON, TRUNCATE OFF) {s}.items"),
        };
        sql.insert_checked = sql.insert.replace(
            "WHERE u.id > mark.below)",
            "WHERE u.id > mark.below\n                   ON CONFLICT (id) DO NOTHING)",
        );
        // The statements that take rows out keep windowed keys (`plain_sql.rs`).
        {
            use crate::plain_sql::{keeping, Leaving::DeadLettered, Leaving::Deleted};
            let fix = |stmt: &mut String, p: &str, how| *stmt = keeping(stmt, p, how, &s);
            fix(&mut sql.ack, "i.", Deleted);
            fix(&mut sql.cancel, "", Deleted);
            fix(&mut sql.op.purge, "", Deleted);
            fix(&mut sql.bury, "", DeadLettered);
            fix(&mut sql.terminate, "", DeadLettered);
            fix(&mut sql.rescue, "i.", DeadLettered);
            fix(&mut sql.expire_items, "", DeadLettered);
        }
        sql.insert_flow = (
            crate::flow_insert::flowed_insert(&sql.insert, &s),
            crate::flow_insert::flowed_insert(&sql.insert_checked, &s),
        );
        sql
    }
}
