//! A bounded queue (`Config::with_capacity(n)`) on Postgres: the bound on the table is
//! exact, the refusal of `try_push` is judged from this process's last count.
//!
//! **The bound.** Every statement that adds live rows (the writer's inserts, keyed pushes,
//! redrives) runs in a transaction that first takes the queue's advisory lock
//! (`pg_advisory_xact_lock`, held until commit), then counts the queue's live rows (one
//! count on the claim index, one on the lease index), then adds at most `n - live` rows.
//! The count is a statement of its own, after the lock: under `READ COMMITTED` it sees
//! every row committed by the previous holder. Claims, settles and the rescuer never add
//! live rows and take no lock. So the queue never holds more than `n` waiting and leased
//! rows, whatever the number of processes.
//!
//! **The refusal.** `try_push` cannot ask the server (it never waits): it refuses with
//! `PushError::Full` when this process's last count of live rows plus its rows not yet
//! inserted reach `n`. That count is taken at open, at each insert, and, while a push is
//! refused or waits for room, again after this process removes a row (ack, dead letter,
//! cancel, purge) or every `Options::poll_interval` otherwise. So a refusal may be stale by rows other
//! processes removed in the last poll interval, and an accepted row may find the table
//! full: it then waits in this process (in order, before later rows) until there is room,
//! and `push(..).await` answers once it is inserted. Never more than `n` rows in the table.

use std::time::Instant;

use deadpool_postgres::Object;

use crate::store::Shared;
use crate::writer::PushRow;

/// Whether a push of `pending` more rows must be refused as full, by the last count.
pub(crate) fn full<T>(shared: &Shared<T>, live: u64, pending: usize) -> bool {
    shared
        .config
        .capacity()
        .is_some_and(|cap| live + pending as u64 >= cap as u64)
}

/// A row left the queue in this process: a push waiting for room may go, once the writer
/// counts again.
pub(crate) fn removed<T>(shared: &Shared<T>) {
    if shared.config.capacity().is_some() {
        shared.pushes.lock().removed = true;
        shared.push_queued.notify(1);
    }
}

/// A push was refused for room: the writer counts again when it may have changed.
pub(crate) fn wants_room<T>(shared: &Shared<T>) {
    shared.pushes.lock().wants_room = true;
    shared.push_queued.notify(1);
}

/// The queue's live rows now, under the lock if the caller's transaction holds it.
pub(crate) async fn live<C: deadpool_postgres::GenericClient, T>(
    shared: &Shared<T>,
    client: &C,
) -> Result<u64, tokio_postgres::Error> {
    let row = client
        .query_one(&shared.sql.op.live, &[&shared.queue])
        .await?;
    Ok(row.get::<_, i64>(0).max(0) as u64)
}

/// Records a count of live rows taken now.
pub(crate) fn counted<T>(shared: &Shared<T>, live: u64) {
    let mut buf = shared.pushes.lock();
    buf.live = live;
    buf.counted_at = Some(Instant::now());
    drop(buf);
    // Whoever waits for room looks at the new count.
    shared.push_committed.notify(usize::MAX);
}

/// Whether the writer should count again now: a push waits for room, and a row left in
/// this process since the last count or the poll interval passed.
pub(crate) fn recount_due<T>(shared: &Shared<T>) -> bool {
    let buf = shared.pushes.lock();
    shared.config.capacity().is_some()
        && buf.wants_room
        && (buf.removed
            || buf
                .counted_at
                .is_none_or(|at| at.elapsed() >= shared.options.poll_interval))
}

/// The writer's count while pushes wait for room (errors retried at the next wake).
pub(crate) async fn recount<T>(shared: &Shared<T>) {
    {
        let mut buf = shared.pushes.lock();
        buf.wants_room = false;
        buf.removed = false;
    }
    match shared.client().await {
        Ok(client) => match live(shared, &client).await {
            Ok(n) => counted(shared, n),
            Err(e) => shared.failed("count for room", e),
        },
        Err(e) => shared.failed("count for room", e),
    }
}

/// Inserts the first rows of `batch` that fit with `sql` (the writer's insert, checked or
/// not), in one transaction under the queue's lock; how many (all in an unbounded queue).
pub(crate) async fn insert_fitting<T>(
    shared: &Shared<T>,
    client: &mut Object,
    batch: &[PushRow],
    sql: &str,
) -> Result<usize, tokio_postgres::Error> {
    let Some(cap) = shared.config.capacity() else {
        crate::writer::insert_on(shared, &*client, batch, sql).await?;
        return Ok(batch.len());
    };
    let tx = client.transaction().await?;
    tx.execute(&shared.sql.op.cap_lock, &[&shared.queue])
        .await?;
    let now = live(shared, &tx).await?;
    let room = (cap as u64).saturating_sub(now).min(batch.len() as u64) as usize;
    if room > 0 {
        crate::writer::insert_on(shared, &tx, &batch[..room], sql).await?;
    }
    tx.commit().await?;
    counted(shared, now + room as u64);
    Ok(room)
}

/// `redrive` in a bounded queue: under the queue's lock, refused (`None`) when full;
/// otherwise how many rows moved (0 or 1).
pub(crate) async fn redrive_in<T>(
    shared: &Shared<T>,
    client: &mut Object,
    id: i64,
) -> Result<Option<u64>, tokio_postgres::Error> {
    let redrive = &shared.sql.op.redrive;
    let Some(cap) = shared.config.capacity() else {
        return Ok(Some(client.execute(redrive, &[&shared.queue, &id]).await?));
    };
    let tx = client.transaction().await?;
    tx.execute(&shared.sql.op.cap_lock, &[&shared.queue])
        .await?;
    if live(shared, &tx).await? >= cap as u64 {
        return Ok(None);
    }
    let n = tx.execute(redrive, &[&shared.queue, &id]).await?;
    tx.commit().await?;
    Ok(Some(n))
}

/// `redrive_matching` (`reason` and `head` as `OpSql::redrive_all` takes them): one statement, in a bounded queue under its lock and for the room left.
pub(crate) async fn redrive_all_in<T>(
    shared: &Shared<T>,
    client: &mut Object,
    reason: Option<i16>,
    head: Option<&[u8]>,
) -> Result<u64, tokio_postgres::Error> {
    let all = &shared.sql.op.redrive_all;
    let Some(cap) = shared.config.capacity() else {
        return client
            .execute(all, &[&shared.queue, &i64::MAX, &reason, &head])
            .await;
    };
    let tx = client.transaction().await?;
    tx.execute(&shared.sql.op.cap_lock, &[&shared.queue])
        .await?;
    let room = (cap as u64).saturating_sub(live(shared, &tx).await?) as i64;
    let n = tx
        .execute(all, &[&shared.queue, &room, &reason, &head])
        .await?;
    tx.commit().await?;
    Ok(n)
}
