//! Pushes: `try_push` encodes the item and queues a row at once (with its id, in the
//! writer's queue, `pushes.rs`); one writer task per store inserts everything queued in one
//! statement per batch (group commit), then publishes how far it got. `push().await` waits
//! for that (`Store::synced`). A failed insert is retried, rows kept, until it commits: an
//! accepted push is never dropped while the process lives.
//!
//! A retry never inserts a row twice, even when the first attempt committed and only its
//! reply was lost, and a consumer took and acked the row since: each writer instance's ids
//! grow in the order the writer sends them (a batch is retried whole, in front, before
//! anything later), and the statement that inserts a batch also raises the instance's
//! committed-id watermark (`writer_marks`), inserting only ids above the mark as it was.
//! The mark's row is locked by the upsert before any row of the batch is inserted, so a
//! retry that overlaps a first attempt still running on the server (its connection gone)
//! waits for it and then reads its mark. Other processes have other instances (a database
//! sequence), so they never contend for a mark.

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::Object;

use crate::board::Board;
use crate::counters::Counters;
use crate::db::Db;
use crate::error::DbError;
use crate::life::Life;
use crate::pushes::{PushRow, Pushes};

/// The writer task and the parts it uses: it owns the push queue ([`Pushes`]) and rings
/// the claimer ([`Board::wake`]) after each commit.
pub(crate) struct Writer<T: 'static> {
    pub(crate) db: Arc<Db<T>>,
    pub(crate) life: Arc<Life>,
    pub(crate) counters: Arc<Counters>,
    pub(crate) pushes: Arc<Pushes>,
    pub(crate) board: Arc<Board<T>>,
}

impl<T: Send + 'static> Writer<T> {
    /// The writer task: inserts queued rows in batches until the store is gone and nothing
    /// is left to write.
    pub(crate) async fn run(self) {
        let (db, pushes) = (&*self.db, &*self.pushes);
        let mut backoff = Duration::from_millis(10);
        loop {
            let listener = pushes.queued.listen();
            let (batch, upto, spare) = {
                let mut buf = pushes.buf.lock();
                // A batch push in progress: wait for all of it (it notifies when done), so
                // that it goes in one insert, unless a full insert is ready anyway.
                let n = if buf.filling > 0 && buf.rows.len() < db.options.max_push_batch {
                    0
                } else {
                    buf.rows.len().min(db.options.max_push_batch)
                };
                let upto = buf.committed + n as u64;
                let batch: Vec<PushRow> = buf.rows.drain(..n).collect();
                (batch, upto, buf.wants_spare())
            };
            if spare {
                self.fetch_spare().await;
            }
            if batch.is_empty() {
                if self.life.is_stopped() {
                    return;
                }
                if crate::capacity::recount_due(db, pushes) {
                    crate::capacity::recount(db, pushes).await;
                    continue;
                }
                self.wait(listener).await;
                continue;
            }
            match self.insert(&batch).await {
                Ok(n) => {
                    backoff = Duration::from_millis(10);
                    let blocked = n < batch.len();
                    {
                        let mut buf = pushes.buf.lock();
                        buf.committed = upto - (batch.len() - n) as u64;
                        buf.failing_since = None;
                        if blocked {
                            // A bounded queue without room: the rest waits, in front.
                            let rest = std::mem::take(&mut buf.rows);
                            buf.rows = batch.into_iter().skip(n).collect();
                            buf.rows.extend(rest);
                            buf.wants_room = true;
                        }
                    }
                    Counters::add(&self.counters.pushed, n as u64);
                    pushes.committed.notify(usize::MAX);
                    // Receivers of this process look at once; other processes are told by
                    // the notification sent with the batch.
                    self.board.wake.notify(usize::MAX);
                    if blocked {
                        self.wait(pushes.queued.listen()).await;
                    }
                }
                Err(e) => {
                    db.failed("insert", e);
                    // Put the rows back in front, in order, and try again.
                    {
                        let mut buf = pushes.buf.lock();
                        let rest = std::mem::take(&mut buf.rows);
                        buf.rows = batch;
                        buf.rows.extend(rest);
                        buf.failing_since
                            .get_or_insert_with(std::time::Instant::now);
                    }
                    // Waiters look whether the commit timeout ran out.
                    pushes.committed.notify(usize::MAX);
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
            }
        }
    }

    /// Waits for a wake (rows queued, a row removed here, stop), or, while pushes wait for
    /// room in a bounded queue, at most the poll interval (rows removed by other processes
    /// are seen by counting again).
    async fn wait(&self, listener: event_listener::EventListener) {
        if self.pushes.buf.lock().wants_room {
            let _ = tokio::time::timeout(self.db.options.poll_interval, listener).await;
        } else {
            listener.await;
        }
    }

    /// One batch in one statement (in a bounded queue, the rows that fit: how many); a
    /// notification if some rows are visible at once. The statement inserts without
    /// `ON CONFLICT` (the watermark already skips every row a lost reply's first attempt
    /// committed); should it meet a row with one of the batch's ids anyway, it is refused
    /// whole (nothing done) and the batch runs again with `ON CONFLICT (id) DO NOTHING`.
    async fn insert(&self, batch: &[PushRow]) -> Result<usize, DbError> {
        let db = &*self.db;
        let mut client = db.client().await?;
        match self
            .insert_fitting(&mut client, batch, &db.sql.insert)
            .await
        {
            Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) => {
                self.insert_fitting(&mut client, batch, &db.sql.insert_checked)
                    .await
            }
            r => r,
        }
        .map_err(DbError::Db)
    }

    /// Inserts the first rows of `batch` that fit: with `sql` (the insert, checked or not)
    /// in an unbounded queue (all of them), in a bounded one with `insert_bounded`, room
    /// taken from the queue's ledger (`capacity.rs`); how many.
    async fn insert_fitting(
        &self,
        client: &mut Object,
        batch: &[PushRow],
        sql: &str,
    ) -> Result<usize, tokio_postgres::Error> {
        let db = &*self.db;
        let Some(cap) = db.config.capacity() else {
            insert_on(db, &*client, batch, sql).await?;
            return Ok(batch.len());
        };
        // One statement (one round trip): room taken, the rows that fit
        // (`room_sql::INSERT_BOUNDED`, with `ON CONFLICT (id)` if `sql` is the checked
        // insert).
        let checked = sql == db.sql.insert_checked;
        let ids: Vec<i64> = batch.iter().map(|r| r.id).collect();
        let priorities: Vec<i16> = batch.iter().map(|r| r.priority).collect();
        let delays: Vec<i64> = batch.iter().map(|r| r.delay_us).collect();
        let ttls: Vec<Option<i64>> = batch.iter().map(|r| r.ttl_us).collect();
        let payloads: Vec<&[u8]> = batch.iter().map(|r| r.payload.as_slice()).collect();
        let stmt = client.prepare_cached(&db.sql.op.insert_bounded).await?;
        let cap = i64::try_from(cap).unwrap_or(i64::MAX);
        let row = client
            .query_one(
                &stmt,
                &[
                    &db.queue,
                    &ids,
                    &priorities,
                    &delays,
                    &ttls,
                    &payloads,
                    &db.sql.channel,
                    &cap,
                    &checked,
                ],
            )
            .await?;
        let now = row.get::<_, i64>(0).max(0) as u64;
        let room = usize::try_from(row.get::<_, i32>(1).max(0)).unwrap_or(0);
        crate::capacity::counted(&self.pushes, now + room as u64);
        Ok(room)
    }

    async fn fetch_spare(&self) {
        let Ok(client) = self.db.client().await else {
            return;
        };
        if let Ok(row) = client.query_one(&self.db.sql.instance, &[]).await {
            self.pushes.buf.lock().spare_instance = Some(row.get(0));
        }
    }
}

/// Runs `sql` (the insert statement, checked or not) for `batch` on `client`, a pooled
/// connection: an unbounded queue's batch (a bounded queue's goes through
/// `insert_bounded`, one statement).
pub(crate) async fn insert_on<T, C: deadpool_postgres::GenericClient>(
    db: &Db<T>,
    client: &C,
    batch: &[PushRow],
    sql: &str,
) -> Result<(), tokio_postgres::Error> {
    // A batch with flow keys: the same insert with three more arrays (`flow_sql.rs`).
    let flowed = batch.iter().any(|r| r.flow.is_some());
    let sql = match flowed {
        false => sql,
        true if sql == db.sql.insert => &db.sql.insert_flow.0,
        true => &db.sql.insert_flow.1,
    };
    let stmt = client.prepare_cached(sql).await?;
    let ids: Vec<i64> = batch.iter().map(|r| r.id).collect();
    let priorities: Vec<i16> = batch.iter().map(|r| r.priority).collect();
    let delays: Vec<i64> = batch.iter().map(|r| r.delay_us).collect();
    let ttls: Vec<Option<i64>> = batch.iter().map(|r| r.ttl_us).collect();
    let payloads: Vec<&[u8]> = batch.iter().map(|r| r.payload.as_slice()).collect();
    // One notification per batch, never one per item (NOTIFY takes a global lock at
    // commit), and only if some row is visible at once.
    let notify = batch.iter().any(|r| r.delay_us == 0);
    let (instances, tops) = marks(batch);
    let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = vec![
        &db.queue,
        &ids,
        &priorities,
        &delays,
        &ttls,
        &payloads,
        &db.sql.channel,
        &notify,
        &instances,
        &tops,
    ];
    let keys: [Vec<Option<i64>>; 3] = match flowed {
        false => Default::default(),
        true => [0, 1, 2].map(|k| batch.iter().map(|r| r.flow.and_then(|f| f[k])).collect()),
    };
    if flowed {
        params.extend(
            keys.iter()
                .map(|k| k as &(dyn tokio_postgres::types::ToSql + Sync)),
        );
    }
    client.execute(&stmt, &params).await?;
    Ok(())
}

/// The writer instances of a batch's ids and each one's highest id in it (one instance,
/// or two when the counter ran out within the batch).
fn marks(batch: &[PushRow]) -> (Vec<i64>, Vec<i64>) {
    let (mut instances, mut tops): (Vec<i64>, Vec<i64>) = (Vec::new(), Vec::new());
    for row in batch {
        let instance = row.id >> 32;
        match instances.iter().position(|i| *i == instance) {
            Some(at) => tops[at] = tops[at].max(row.id),
            None => {
                instances.push(instance);
                tops.push(row.id);
            }
        }
    }
    (instances, tops)
}
