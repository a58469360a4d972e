//! A bounded queue (`Config::with_capacity(n)`) on Postgres: the bound on the table is
//! exact, the refusal of `try_push` is judged from this process's last estimate.
//!
//! **The bound.** Every statement that adds live rows (the writer's inserts, keyed pushes,
//! schedule ticks, redrives, transactional pushes) first takes room for them from the
//! queue's ledger (`room_sql.rs`, the function `take_room`), in the transaction that
//! inserts them: one row update far from the bound, a count of the live rows under the
//! ledger's row lock near it. The ledger never counts fewer rows than are live, and grants
//! nothing past `n`; claims, settles and the rescuer never add live rows and never touch
//! it. So the queue never holds more than `n` waiting and leased rows, whatever the number
//! of processes.
//!
//! **The refusal.** `try_push` cannot ask the server (it never waits): it refuses with
//! `PushError::Full` when this process's last estimate of live rows plus its rows not yet
//! inserted reach `n`. The estimate is the count taken at open and while a push waits for
//! room, and after each insert the ledger's upper bound (`taken`: never more than half the
//! room left above the true count, `room_sql.rs`). It is taken again, while a push is
//! refused or waits for room, after this process removes a row (ack, dead letter, cancel,
//! purge) or every `Options::poll_interval` otherwise. So a refusal may be stale by rows
//! other processes removed meanwhile, and an accepted row may find the table full: it then
//! waits in this process (in order, before later rows) until there is room, and
//! `push(..).await` answers once it is inserted. Never more than `n` rows in the table.
//!
//! Over the settings (`db.rs`) and the writer's queue (`pushes.rs`, where the estimate is
//! kept) only; the writer's bounded insert is in `writer.rs`.

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
/// counts again (woken only then: a process that is not waiting for room, a worker's,
/// wakes nothing at its acks).
pub(crate) fn removed<T>(db: &Db<T>, pushes: &Pushes) {
    if db.config.capacity().is_some() {
        let mut buf = pushes.buf.lock();
        buf.removed = true;
        let waiting = buf.wants_room;
        drop(buf);
        if waiting {
            pushes.queued.notify(1);
        }
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

/// Room for `n` rows taken from the queue's ledger in the caller's transaction (which
/// then holds the ledger's row until it ends): how many of them fit.
pub(crate) async fn take_room<C: deadpool_postgres::GenericClient, T>(
    db: &Db<T>,
    client: &C,
    cap: usize,
    n: usize,
) -> Result<usize, tokio_postgres::Error> {
    let cap = i64::try_from(cap).unwrap_or(i64::MAX);
    let n = i32::try_from(n).unwrap_or(i32::MAX);
    let row = client
        .query_one(&db.sql.op.take_room, &[&db.queue, &cap, &n])
        .await?;
    Ok(usize::try_from(row.get::<_, i32>(0)).unwrap_or(0))
}

/// `redrive` in a bounded queue: room for its row taken from the ledger, refused (`None`)
/// when full; otherwise how many rows moved (0 or 1).
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
    if take_room(db, &tx, cap, 1).await? == 0 {
        return Ok(None);
    }
    let n = tx.execute(redrive, &[&db.queue, &id]).await?;
    give_back(db, &tx, 1 - n.min(1)).await?;
    tx.commit().await?;
    Ok(Some(n))
}

/// `redrive_matching` (`reason` and `head` as `OpSql::redrive_all` takes them): one
/// statement, in a bounded queue for the room its ledger grants (the rest given back).
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
    let room = take_room(db, &tx, cap, cap).await? as u64;
    let limit = i64::try_from(room).unwrap_or(i64::MAX);
    let n = tx
        .execute(all, &[&db.queue, &limit, &reason, &head])
        .await?;
    give_back(db, &tx, room.saturating_sub(n)).await?;
    tx.commit().await?;
    Ok(n)
}

/// Room taken in this transaction and not used, given back to the ledger.
async fn give_back<C: deadpool_postgres::GenericClient, T>(
    db: &Db<T>,
    client: &C,
    rows: u64,
) -> Result<(), tokio_postgres::Error> {
    if rows > 0 {
        let rows = i64::try_from(rows).unwrap_or(i64::MAX);
        client
            .execute(&db.sql.op.give_room, &[&db.queue, &rows])
            .await?;
    }
    Ok(())
}
