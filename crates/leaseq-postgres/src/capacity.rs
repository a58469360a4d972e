//! A bounded queue (`Config::with_capacity(n)`) on Postgres: the bound on the table is
//! exact, the refusal of `try_push` is judged from this process's last count.
//!
//! **The bound.** Every statement that adds live rows (the writer's inserts, keyed pushes,
//! redrives) runs in a transaction (the writer's: one statement, the function
//! `insert_bounded` of `settle_sql.rs`, one round trip) that first takes the queue's
//! advisory lock
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
//!
//! Over the settings (`db.rs`) and the writer's queue (`pushes.rs`, where the last count
//! is kept) only; the writer's insert under the lock is in `writer.rs`.

use std::time::Instant;

use deadpool_postgres::Object;

use crate::db::Db;
use crate::pushes::Pushes;

/// Whether a push of `pending` more rows must be refused as full, by the last count.
pub(crate) fn full<T>(db: &Db<T>, live: u64, pending: usize) -> bool {
    db.config
        .capacity()
        .is_some_and(|cap| live + pending as u64 >= cap as u64)
}

/// A row left the queue in this process: a push waiting for room may go, once the writer
/// counts again.
pub(crate) fn removed<T>(db: &Db<T>, pushes: &Pushes) {
    if db.config.capacity().is_some() {
        pushes.buf.lock().removed = true;
        pushes.queued.notify(1);
    }
}

/// A push was refused for room: the writer counts again when it may have changed.
pub(crate) fn wants_room(pushes: &Pushes) {
    pushes.buf.lock().wants_room = true;
    pushes.queued.notify(1);
}

/// The queue's live rows now, under the lock if the caller's transaction holds it.
pub(crate) async fn live<C: deadpool_postgres::GenericClient, T>(
    db: &Db<T>,
    client: &C,
) -> Result<u64, tokio_postgres::Error> {
    let row = client.query_one(&db.sql.op.live, &[&db.queue]).await?;
    Ok(row.get::<_, i64>(0).max(0) as u64)
}

/// Records a count of live rows taken now.
pub(crate) fn counted(pushes: &Pushes, live: u64) {
    let mut buf = pushes.buf.lock();
    buf.live = live;
    buf.counted_at = Some(Instant::now());
    drop(buf);
    // Whoever waits for room looks at the new count.
    pushes.committed.notify(usize::MAX);
}

/// Whether the writer should count again now: a push waits for room, and a row left in
/// this process since the last count or the poll interval passed.
pub(crate) fn recount_due<T>(db: &Db<T>, pushes: &Pushes) -> bool {
    let buf = pushes.buf.lock();
    db.config.capacity().is_some()
        && buf.wants_room
        && (buf.removed
            || buf
                .counted_at
                .is_none_or(|at| at.elapsed() >= db.options.poll_interval))
}

/// The writer's count while pushes wait for room (errors retried at the next wake).
pub(crate) async fn recount<T>(db: &Db<T>, pushes: &Pushes) {
    {
        let mut buf = pushes.buf.lock();
        buf.wants_room = false;
        buf.removed = false;
    }
    match db.client().await {
        Ok(client) => match live(db, &client).await {
            Ok(n) => counted(pushes, n),
            Err(e) => db.failed("count for room", e),
        },
        Err(e) => db.failed("count for room", e),
    }
}

/// `redrive` in a bounded queue: under the queue's lock, refused (`None`) when full;
/// otherwise how many rows moved (0 or 1).
pub(crate) async fn redrive_in<T>(
    db: &Db<T>,
    client: &mut Object,
    id: i64,
) -> Result<Option<u64>, tokio_postgres::Error> {
    let redrive = &db.sql.op.redrive;
    let Some(cap) = db.config.capacity() else {
        return Ok(Some(client.execute(redrive, &[&db.queue, &id]).await?));
    };
    let tx = client.transaction().await?;
    tx.execute(&db.sql.op.cap_lock, &[&db.queue]).await?;
    if live(db, &tx).await? >= cap as u64 {
        return Ok(None);
    }
    let n = tx.execute(redrive, &[&db.queue, &id]).await?;
    tx.commit().await?;
    Ok(Some(n))
}

/// `redrive_matching` (`reason` and `head` as `OpSql::redrive_all` takes them): one statement, in a bounded queue under its lock and for the room left.
pub(crate) async fn redrive_all_in<T>(
    db: &Db<T>,
    client: &mut Object,
    reason: Option<i16>,
    head: Option<&[u8]>,
) -> Result<u64, tokio_postgres::Error> {
    let all = &db.sql.op.redrive_all;
    let Some(cap) = db.config.capacity() else {
        return client
            .execute(all, &[&db.queue, &i64::MAX, &reason, &head])
            .await;
    };
    let tx = client.transaction().await?;
    tx.execute(&db.sql.op.cap_lock, &[&db.queue]).await?;
    let room = (cap as u64).saturating_sub(live(db, &tx).await?) as i64;
    let n = tx.execute(all, &[&db.queue, &room, &reason, &head]).await?;
    tx.commit().await?;
    Ok(n)
}
