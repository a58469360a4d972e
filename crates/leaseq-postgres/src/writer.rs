//! Pushes: `try_push` encodes the item and queues a row at once (with its id); one writer
//! task per store inserts everything queued in one statement per batch (group commit), then
//! publishes how far it got. `push().await` waits for that (`Store::synced`). A failed
//! insert is retried, rows kept, until it commits: an accepted push is never dropped while
//! the process lives.
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

use leaseq_core::MessageId;

use crate::counters::Counters;
use crate::error::DbError;
use crate::store::Shared;

/// A row waiting for the writer.
#[derive(Debug)]
pub(crate) struct PushRow {
    pub(crate) id: i64,
    pub(crate) priority: i16,
    pub(crate) delay_us: i64,
    pub(crate) ttl_us: Option<i64>,
    pub(crate) payload: Vec<u8>,
}

/// The rows accepted and not yet committed, and the id source.
#[derive(Debug, Default)]
pub(crate) struct PushBuffer {
    pub(crate) rows: Vec<PushRow>,
    /// Sequence number of the last row queued (rows are numbered from 1, in order).
    pub(crate) queued: u64,
    /// Sequence number of the last row committed.
    pub(crate) committed: u64,
    /// This process's instance number (ids are `instance << 32 | counter`).
    pub(crate) instance: i64,
    pub(crate) counter: u32,
    /// A fresh instance number fetched ahead, for when the counter runs out.
    pub(crate) spare_instance: Option<i64>,
    /// Batch pushes in progress (the writer waits for them to end).
    pub(crate) filling: usize,
    /// Since when the writer's inserts have failed (none: the last one committed).
    pub(crate) failing_since: Option<std::time::Instant>,
    /// A bounded queue's live rows at the last count, plus the rows inserted since by
    /// this process (`capacity.rs`).
    pub(crate) live: u64,
    /// When `live` was last counted on the server.
    pub(crate) counted_at: Option<std::time::Instant>,
    /// A push was refused, or waits, for room: count again when it may have changed.
    pub(crate) wants_room: bool,
    /// This process removed a row since the last count.
    pub(crate) removed: bool,
}

impl PushBuffer {
    /// The next id, if one is left: ids are unique across every process (each has its own
    /// instance number from a database sequence).
    pub(crate) fn next_id(&mut self) -> Option<MessageId> {
        if self.counter == u32::MAX {
            self.instance = self.spare_instance.take()?;
            self.counter = 0;
        }
        self.counter += 1;
        Some(MessageId::new(
            ((self.instance as u64) << 32) | u64::from(self.counter),
        ))
    }

    /// Whether the writer should fetch a spare instance number now.
    pub(crate) fn wants_spare(&self) -> bool {
        self.spare_instance.is_none() && self.counter > u32::MAX / 2
    }
}

/// The writer task: inserts queued rows in batches until the store is gone and nothing is
/// left to write.
pub(crate) async fn run<T: Send + 'static>(shared: Arc<Shared<T>>) {
    let mut backoff = Duration::from_millis(10);
    loop {
        let listener = shared.push_queued.listen();
        let (batch, upto, spare) = {
            let mut buf = shared.pushes.lock();
            // A batch push in progress: wait for all of it (it notifies when done), so that
            // it goes in one insert, unless a full insert is ready anyway.
            let n = if buf.filling > 0 && buf.rows.len() < shared.options.max_push_batch {
                0
            } else {
                buf.rows.len().min(shared.options.max_push_batch)
            };
            let upto = buf.committed + n as u64;
            let batch: Vec<PushRow> = buf.rows.drain(..n).collect();
            (batch, upto, buf.wants_spare())
        };
        if spare {
            fetch_spare(&shared).await;
        }
        if batch.is_empty() {
            if shared.is_stopped() {
                return;
            }
            if crate::capacity::recount_due(&shared) {
                crate::capacity::recount(&shared).await;
                continue;
            }
            wait(&shared, listener).await;
            continue;
        }
        match insert(&shared, &batch).await {
            Ok(n) => {
                backoff = Duration::from_millis(10);
                let blocked = n < batch.len();
                {
                    let mut buf = shared.pushes.lock();
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
                Counters::add(&shared.counters.pushed, n as u64);
                shared.push_committed.notify(usize::MAX);
                // Receivers of this process look at once; other processes are told by the
                // notification sent with the batch.
                shared.claim_wake.notify(usize::MAX);
                if blocked {
                    wait(&shared, shared.push_queued.listen()).await;
                }
            }
            Err(e) => {
                shared.failed("insert", e);
                // Put the rows back in front, in order, and try again.
                {
                    let mut buf = shared.pushes.lock();
                    let rest = std::mem::take(&mut buf.rows);
                    buf.rows = batch;
                    buf.rows.extend(rest);
                    buf.failing_since
                        .get_or_insert_with(std::time::Instant::now);
                }
                // Waiters look whether the commit timeout ran out.
                shared.push_committed.notify(usize::MAX);
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
        }
    }
}

/// Waits for a wake (rows queued, a row removed here, stop), or, while pushes wait for
/// room in a bounded queue, at most the poll interval (rows removed by other processes
/// are seen by counting again).
async fn wait<T>(shared: &Shared<T>, listener: event_listener::EventListener) {
    if shared.pushes.lock().wants_room {
        let _ = tokio::time::timeout(shared.options.poll_interval, listener).await;
    } else {
        listener.await;
    }
}

/// One batch in one statement (in a bounded queue, the rows that fit: how many); a
/// notification if some rows are visible at once. The statement inserts without
/// `ON CONFLICT` (the watermark already skips every row a lost reply's first attempt
/// committed); should it meet a row with one of the batch's ids anyway, it is refused whole
/// (nothing done) and the batch runs again with `ON CONFLICT (id) DO NOTHING`.
async fn insert<T>(shared: &Shared<T>, batch: &[PushRow]) -> Result<usize, DbError> {
    let mut client = shared.client().await?;
    let fitting = crate::capacity::insert_fitting;
    match fitting(shared, &mut client, batch, &shared.sql.insert).await {
        Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) => {
            fitting(shared, &mut client, batch, &shared.sql.insert_checked).await
        }
        r => r,
    }
    .map_err(DbError::Db)
}

/// Runs `sql` (the insert statement, checked or not) for `batch` on `client` (a pooled
/// connection, or a bounded queue's transaction).
pub(crate) async fn insert_on<T, C: deadpool_postgres::GenericClient>(
    shared: &Shared<T>,
    client: &C,
    batch: &[PushRow],
    sql: &str,
) -> Result<(), tokio_postgres::Error> {
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
    client
        .execute(
            &stmt,
            &[
                &shared.queue,
                &ids,
                &priorities,
                &delays,
                &ttls,
                &payloads,
                &shared.sql.channel,
                &notify,
                &instances,
                &tops,
            ],
        )
        .await?;
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

async fn fetch_spare<T>(shared: &Shared<T>) {
    let Ok(client) = shared.client().await else {
        return;
    };
    if let Ok(row) = client.query_one(&shared.sql.instance, &[]).await {
        shared.pushes.lock().spare_instance = Some(row.get(0));
    }
}
