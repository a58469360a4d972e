//! Schedules kept in the schema: the `schedules` table (schema step 7; one row per queue
//! and schedule, times as nanoseconds since the UNIX epoch, the schedule's own wall clock,
//! exact) and a scheduler step as one transaction:
//!
//! 1. the compare-and-set: the row inserted if the step read none (`ON CONFLICT DO
//!    NOTHING`: a concurrent first step waits for the other's commit, then inserts
//!    nothing), or updated `WHERE cursor_ns = <the cursor read>` (a concurrent step waits
//!    for the row lock, then finds the cursor moved): no row changed is `Moved`, rolled
//!    back;
//! 2. in a bounded queue, room for the ticks taken from its ledger (`room_sql.rs`), and a
//!    refusal (`Full`) if they do not fit;
//! 3. each tick inserted as a keyed push is (`ON CONFLICT DO NOTHING` on the live keys:
//!    nothing inserted is a duplicate, counted);
//! 4. the stale ticks' waiting rows dead-lettered (reason `Expired`), by key;
//! 5. a notification if a tick is due now; commit.
//!
//! So every process runs the schedule against the one cursor, and a step is all done or
//! not at all. A commit whose reply was lost is "outcome unknown": the scheduler reads the
//! row again and sees whether it moved.
//!
//! Run on the store's pool, from the scheduler's task (a step is rare: no writer batching).

use leaseq_async::{
    PushError, ScheduleCommit, ScheduleCommitError, ScheduleCommitted, ScheduleState, StoreError,
};
use leaseq_core::{MessageId, Reason, Timestamp};
use tokio_postgres::Row;

use crate::counters::Counters;
use crate::db::{micros, Db};
use crate::operator::store_error;
use crate::store::PgStore;

/// The schema version that added the table.
pub(crate) const SCHEDULES_VERSION: i64 = 7;

/// The schema step that adds the table (see `schema.rs`).
pub(crate) const SCHEDULES_TABLE: &str = r#"
    CREATE TABLE IF NOT EXISTS {s}.schedules (
        queue        text    NOT NULL,
        name         text    NOT NULL,
        cursor_ns    bigint  NOT NULL,   -- the latest tick pushed or skipped
        last_tick_ns bigint,             -- the latest tick pushed
        next_tick_ns bigint,             -- the first tick after the cursor
        moved_at_ns  bigint  NOT NULL,   -- when the cursor last moved
        calendar     text,               -- the calendar in words
        PRIMARY KEY (queue, name)
    );
    "#;

/// The statements of one schema's schedules.
struct ScheduleSql {
    read: String,
    read_all: String,
    insert: String,
    update: String,
    withdraw: String,
}

const COLUMNS: &str = "name, cursor_ns, last_tick_ns, next_tick_ns, moved_at_ns, calendar";

impl ScheduleSql {
    fn new(schema: &str) -> ScheduleSql {
        let s = format!("\"{schema}\"");
        ScheduleSql {
            read: format!("SELECT {COLUMNS} FROM {s}.schedules WHERE queue = $1 AND name = $2"),
            read_all: format!("SELECT {COLUMNS} FROM {s}.schedules WHERE queue = $1 ORDER BY name"),
            insert: format!(
                "INSERT INTO {s}.schedules (queue, {COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)
                 ON CONFLICT (queue, name) DO NOTHING"
            ),
            update: format!(
                "UPDATE {s}.schedules SET cursor_ns = $3, last_tick_ns = $4, next_tick_ns = $5,
                        moved_at_ns = $6, calendar = $7
                 WHERE queue = $1 AND name = $2 AND cursor_ns = $8"
            ),
            withdraw: crate::graph_told::told(
                &format!(
                    "UPDATE {s}.items SET state = 2, reason = {expired}, dead_at = clock_timestamp()
                     WHERE queue = $1 AND key = ANY($2) AND state = 0
                     RETURNING id",
                    expired = Reason::Expired.code()
                ),
                "",
                schema,
                crate::graph_told::Fate::Dead,
            ),
        }
    }
}

fn ns(t: Timestamp) -> i64 {
    i64::try_from(t.as_nanos()).unwrap_or(i64::MAX)
}

fn at(ns: i64) -> Timestamp {
    Timestamp::from_nanos(ns.max(0) as u64)
}

/// A row of [`COLUMNS`].
fn state_of(r: &Row) -> ScheduleState {
    let mut state = ScheduleState::new(r.get::<_, String>(0), at(r.get(1)), at(r.get(4)));
    state.last_tick = r.get::<_, Option<i64>>(2).map(at);
    state.next_tick = r.get::<_, Option<i64>>(3).map(at);
    state.calendar = r.get(5);
    state
}

/// Every schedule of `queue` in `schema`, by name, read with `client` (the inspector's
/// read-only transaction, or a store connection).
pub(crate) async fn read_all<C: tokio_postgres::GenericClient>(
    client: &C,
    schema: &str,
    queue: &str,
) -> Result<Vec<ScheduleState>, tokio_postgres::Error> {
    let rows = client
        .query(&ScheduleSql::new(schema).read_all, &[&queue])
        .await?;
    Ok(rows.iter().map(state_of).collect())
}

/// A tick's row, but for its id.
struct TickRow {
    delay_us: i64,
    ttl_us: Option<i64>,
    priority: i16,
    key: Option<Vec<u8>>,
    payload: Vec<u8>,
}

impl<T: Clone + Send + Sync + 'static> PgStore<T> {
    async fn connection(&self, what: &str) -> Result<deadpool_postgres::Object, StoreError> {
        self.db.client().await.map_err(|e| {
            StoreError::not_done(format!(
                "{what}: no connection: {}",
                leaseq_async::ErrorChain(&e)
            ))
        })
    }

    /// `Store::schedule`.
    pub(crate) async fn schedule_state(
        &self,
        name: &str,
    ) -> Result<Option<ScheduleState>, StoreError> {
        let db = &self.db;
        let client = self.connection("schedule read").await?;
        let row = client
            .query_opt(
                &ScheduleSql::new(&db.options.schema).read,
                &[&db.queue, &name],
            )
            .await
            .map_err(|e| store_error("schedule read", &e, false))?;
        Ok(row.as_ref().map(state_of))
    }

    /// `Store::schedules`.
    pub(crate) async fn schedule_states(&self) -> Result<Vec<ScheduleState>, StoreError> {
        let db = &self.db;
        let client = self.connection("schedules").await?;
        read_all(&**client, &db.options.schema, &db.queue)
            .await
            .map_err(|e| store_error("schedules", &e, false))
    }

    /// `Store::commit_schedule`: one transaction (see the file's header).
    pub(crate) async fn commit_schedule_step(
        &self,
        mut step: ScheduleCommit<T>,
    ) -> Result<ScheduleCommitted, ScheduleCommitError<T>> {
        let db = &self.db;
        if (self.life.is_closed() || self.life.is_stopped()) && !step.ticks.is_empty() {
            let (job, _) = step.ticks.swap_remove(0);
            return Err(ScheduleCommitError::Push(PushError::Closed(job)));
        }
        // Encoded and checked before any statement.
        let mut rows = Vec::with_capacity(step.ticks.len());
        for i in 0..step.ticks.len() {
            let (job, push) = &step.ticks[i];
            if let Some(what) = crate::push::unsupported(push) {
                let (item, _) = step.ticks.swap_remove(i);
                return Err(ScheduleCommitError::Push(PushError::Unsupported {
                    item,
                    what,
                }));
            }
            let refusal = match db.codec.encode(job) {
                Err(e) => Err(e.to_string()),
                Ok(p) if p.len() > db.options.max_item_size => Ok(Err(p.len())),
                Ok(p) => Ok(Ok(p)),
            };
            let payload = match refusal {
                Ok(Ok(p)) => p,
                Ok(Err(size)) => {
                    let (item, _) = step.ticks.swap_remove(i);
                    let max = db.options.max_item_size;
                    return Err(ScheduleCommitError::Push(PushError::TooLarge {
                        item,
                        size,
                        max,
                    }));
                }
                Err(error) => {
                    let (item, _) = step.ticks.swap_remove(i);
                    return Err(ScheduleCommitError::Push(PushError::Encode { item, error }));
                }
            };
            let (delay, ttl, options) = push.parts();
            rows.push(TickRow {
                delay_us: micros(delay),
                ttl_us: ttl.map(micros),
                priority: i16::from(options.priority),
                key: options.key_bytes().map(<[u8]>::to_vec),
                payload,
            });
        }
        let mut ids = Vec::with_capacity(rows.len());
        for _ in &rows {
            let Some(id) = self.pushes.buf.lock().next_id() else {
                let (job, _) = step.ticks.swap_remove(0);
                return Err(ScheduleCommitError::Push(PushError::Full(job)));
            };
            ids.push(id);
        }
        let mut client = self.connection("schedule step").await?;
        let done = transaction(db, &mut client, &step, &rows, &ids).await;
        let (committed, due_now) = match done {
            Ok(Some(done)) => done,
            Ok(None) => return Err(ScheduleCommitError::Moved),
            Err(Step::Full) => {
                crate::capacity::wants_room(&self.pushes);
                let (job, _) = step.ticks.swap_remove(0);
                return Err(ScheduleCommitError::Push(PushError::Full(job)));
            }
            Err(Step::Failed(e)) => {
                db.failed("schedule step", &e);
                return Err(ScheduleCommitError::Store(e));
            }
        };
        let pushed = committed.pushed() as u64;
        let counters = &self.counters;
        Counters::add(&counters.pushed, pushed);
        Counters::add(&counters.duplicates, committed.duplicates() as u64);
        Counters::add(&counters.rejected, committed.duplicates() as u64);
        let withdrawn = committed.withdrawn.len() as u64;
        Counters::add(&counters.dead_lettered, withdrawn);
        Counters::add(&counters.expired, withdrawn);
        {
            let mut buf = self.pushes.buf.lock();
            buf.live = (buf.live + pushed).saturating_sub(withdrawn);
        }
        if due_now {
            self.board.wake.notify(usize::MAX);
        }
        Ok(committed)
    }
}

/// Why a step's transaction did not commit (`Moved` is `Ok(None)`).
enum Step {
    Full,
    Failed(StoreError),
}

/// The step's transaction: `Ok(None)` when the cursor moved (rolled back), else what it
/// did and whether a tick is due now.
async fn transaction<T: Clone + Send + Sync + 'static>(
    db: &Db<T>,
    client: &mut deadpool_postgres::Object,
    step: &ScheduleCommit<T>,
    rows: &[TickRow],
    ids: &[MessageId],
) -> Result<Option<(ScheduleCommitted, bool)>, Step> {
    let sql = ScheduleSql::new(&db.options.schema);
    // Only a commit whose reply was lost may have made the step.
    let before = |e: tokio_postgres::Error| Step::Failed(store_error("schedule step", &e, false));
    let tx = client.transaction().await.map_err(before)?;
    let s = &step.state;
    let (last, next) = (s.last_tick.map(ns), s.next_tick.map(ns));
    let (cursor, moved_at) = (ns(s.cursor), ns(s.moved_at));
    let moved = match step.expected.map(ns) {
        None => {
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 7] = [
                &db.queue,
                &s.name,
                &cursor,
                &last,
                &next,
                &moved_at,
                &s.calendar,
            ];
            tx.execute(&sql.insert, &params).await
        }
        Some(expected) => {
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 8] = [
                &db.queue,
                &s.name,
                &cursor,
                &last,
                &next,
                &moved_at,
                &s.calendar,
                &expected,
            ];
            tx.execute(&sql.update, &params).await
        }
    }
    .map_err(before)?;
    if moved == 0 {
        // Dropped: rolled back.
        return Ok(None);
    }
    if let Some(cap) = db.config.capacity().filter(|_| !rows.is_empty()) {
        let granted = crate::capacity::take_room(db, &tx, cap, rows.len())
            .await
            .map_err(before)?;
        if granted < rows.len() {
            return Err(Step::Full);
        }
    }
    let mut committed = ScheduleCommitted::default();
    let mut due_now = false;
    for (row, id) in rows.iter().zip(ids) {
        let inserted = tx
            .query_opt(
                &db.sql.op.keyed_insert,
                &[
                    &(id.get() as i64),
                    &db.queue,
                    &row.priority,
                    &row.delay_us,
                    &row.ttl_us,
                    &row.key,
                    &row.payload,
                ],
            )
            .await
            .map_err(before)?;
        due_now |= inserted.is_some() && row.delay_us == 0;
        committed.ids.push(inserted.map(|_| *id));
    }
    if !step.withdraw.is_empty() {
        let keys: Vec<Vec<u8>> = step
            .withdraw
            .iter()
            .map(|k| k.as_bytes().to_vec())
            .collect();
        let gone = tx
            .query(&sql.withdraw, &[&db.queue, &keys])
            .await
            .map_err(before)?;
        committed.withdrawn = gone
            .iter()
            .map(|r| MessageId::new(r.get::<_, i64>(0) as u64))
            .collect();
    }
    if due_now {
        tx.execute(&db.sql.op.notify, &[&db.sql.channel, &db.queue])
            .await
            .map_err(before)?;
    }
    tx.commit()
        .await
        .map_err(|e| Step::Failed(store_error("schedule step", &e, true)))?;
    Ok(Some((committed, due_now)))
}
