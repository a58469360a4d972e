//! Pushes with a unique key (`Push::key`, `replace_pending`, `Push::key_window`).
//! `try_push` must say at once whether the key is held and by which item, so a keyed push
//! does not go through the writer: it is inserted on the blocking thread (`blocking.rs`),
//! the caller's thread blocked for one transaction (three or four round trips):
//!
//! 1. in a bounded queue, its room ledger's row locked (`room_sql.rs`), first, as every
//!    keyed push does: none deletes a holder and then waits for the ledger;
//! 2. with `replace_pending`, the key's holder judged by the schema's `key_holder`
//!    (`settle_sql.rs`): a waiting live holder is deleted (replaced), any other refuses
//!    the push with `DuplicateKey`;
//! 3. in a bounded queue and nothing replaced, room for the row taken from the ledger
//!    (`capacity.rs`), refused as full if there is none;
//! 4. the row inserted with its window's columns, unless an item that left within its
//!    window keeps the key (`gone_keys`), `ON CONFLICT DO NOTHING` on the unique index of
//!    live keys (`items_key`: waiting and leased rows; dead letters keep their key but do
//!    not hold it); nothing inserted: `key_holder` judges the holder (a live one whose
//!    window has passed lets the key go for good) and either refuses with `DuplicateKey`
//!    or the insert runs once more.
//!
//! A refusal rolls the transaction back at once (the blocking thread's connection is only
//! driven while a job runs: a dropped transaction would keep its locks until the next).
//! A keyed push is committed when `try_push` returns, and is not ordered after this
//! process's unkeyed pushes still waiting for the writer (its row may be claimed first).

use leaseq_async::{Push, PushError, StoreError};
use leaseq_core::{KeyWindow, MessageId, UniqueKey};

use crate::counters::Counters;
use crate::db::{micros, Db};
use crate::operator::store_error;
use crate::store::PgStore;

/// What the transaction did.
enum Keyed {
    Pushed { replaced: bool },
    Duplicate(MessageId),
    Full,
}

impl<T: Clone + Send + Sync + 'static> PgStore<T> {
    /// `try_push` with a key: inserted now, or refused (duplicate, full, a store failure)
    /// with the item handed back.
    pub(crate) fn push_keyed(&self, item: T, push: &Push) -> Result<MessageId, PushError<T>> {
        let db = &*self.db;
        let (delay, ttl, options) = push.parts();
        let Some(key) = options.key_bytes().map(<[u8]>::to_vec) else {
            // The exact length is the core's to keep; it is more than the most allowed.
            let len = UniqueKey::MAX_LEN + 1;
            return Err(PushError::KeyTooLong { item, len });
        };
        let payload = match db.codec.encode(&item) {
            Ok(p) => p,
            Err(e) => {
                let error = e.to_string();
                return Err(PushError::Encode { item, error });
            }
        };
        let Some((window, window_us)) = window_columns(push.window().unwrap_or(KeyWindow::Live))
        else {
            let what = crate::push::KEY_WINDOWS;
            return Err(PushError::Unsupported { item, what });
        };
        let Some(id) = self.pushes.buf.lock().next_id() else {
            return Err(PushError::Full(item));
        };
        let row = Row {
            id: id.get() as i64,
            priority: i16::from(options.priority),
            delay_us: micros(delay),
            ttl_us: ttl.map(micros),
            key,
            payload,
            replace: options.replace_pending,
            window,
            window_us,
        };
        let task = self.db.clone();
        let done = self.blocking.run(move |rt, pool| {
            rt.block_on(async {
                let mut client = pool.get().await.map_err(|e| {
                    StoreError::not_done(format!(
                        "keyed push: no connection: {}",
                        leaseq_async::ErrorChain(&e)
                    ))
                })?;
                insert(&task, &mut client, &row).await.inspect_err(|e| {
                    task.failed("keyed push", e);
                })
            })
        });
        match done {
            Some(Ok(Keyed::Pushed { replaced })) => {
                Counters::add(&self.counters.pushed, 1);
                if replaced {
                    Counters::add(&self.counters.cancelled, 1);
                    Counters::add(&self.counters.replaced, 1);
                }
                self.pushes.buf.lock().live += u64::from(!replaced);
                self.board.wake.notify(usize::MAX);
                Ok(id)
            }
            Some(Ok(Keyed::Duplicate(existing))) => {
                Counters::add(&self.counters.rejected, 1);
                Counters::add(&self.counters.duplicates, 1);
                Err(PushError::DuplicateKey { item, existing })
            }
            Some(Ok(Keyed::Full)) => {
                if !options.waits_for_room {
                    Counters::add(&self.counters.rejected, 1);
                }
                crate::capacity::wants_room(&self.pushes);
                Err(PushError::Full(item))
            }
            // A commit whose reply was lost: the row may be in (it holds `id`).
            Some(Err(error)) if error.is_outcome_unknown() => {
                Err(PushError::Unconfirmed { id, error })
            }
            Some(Err(error)) => Err(PushError::Store { item, error }),
            None => Err(PushError::Store {
                item,
                error: StoreError::not_done("keyed push: the blocking thread could not start"),
            }),
        }
    }
}

/// A key's window as the row keeps it (`settle_sql.rs`): `key_hold` and the period in
/// microseconds; `None` for a window this version does not know.
pub(crate) fn window_columns(window: KeyWindow) -> Option<(Option<i16>, Option<i64>)> {
    Some(match window {
        KeyWindow::Live => (None, None),
        KeyWindow::Queued => (Some(1), None),
        KeyWindow::Period(d) => (Some(2), Some(micros(d))),
        KeyWindow::LiveThen(d) => (Some(3), Some(micros(d))),
        _ => return None,
    })
}

/// A keyed row to insert.
struct Row {
    id: i64,
    priority: i16,
    delay_us: i64,
    ttl_us: Option<i64>,
    key: Vec<u8>,
    payload: Vec<u8>,
    replace: bool,
    /// The key's window as `items.key_hold` keeps it, and its period (us).
    window: Option<i16>,
    window_us: Option<i64>,
}

/// The keyed push's transaction (see the file's header).
async fn insert<T>(
    db: &Db<T>,
    client: &mut deadpool_postgres::Object,
    row: &Row,
) -> Result<Keyed, StoreError> {
    let op = &db.sql.op;
    // Only a commit whose reply was lost may have made the row: anything before it rolled
    // the transaction back.
    let before = |e: tokio_postgres::Error| store_error("keyed push", &e, false);
    let tx = client.transaction().await.map_err(before)?;
    let cap = db.config.capacity();
    if cap.is_some() {
        tx.execute(&op.lock_room, &[&db.queue])
            .await
            .map_err(before)?;
    }
    let holder = |replace: bool| {
        let tx = &tx;
        async move {
            let r = tx
                .query_one(&op.window_holder, &[&db.queue, &row.key, &replace])
                .await?;
            let holder: Option<i64> = r.get(0);
            Ok::<_, tokio_postgres::Error>((holder.map(|h| MessageId::new(h as u64)), r.get(1)))
        }
    };
    let mut replaced = false;
    if row.replace {
        let (held, r) = holder(true).await.map_err(before)?;
        if let Some(h) = held {
            return refused(tx, Keyed::Duplicate(h)).await;
        }
        replaced = r;
    }
    if let Some(cap) = cap.filter(|_| !replaced) {
        if crate::capacity::take_room(db, &tx, cap, 1)
            .await
            .map_err(before)?
            == 0
        {
            return refused(tx, Keyed::Full).await;
        }
    }
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 9] = [
        &row.id,
        &db.queue,
        &row.priority,
        &row.delay_us,
        &row.ttl_us,
        &row.key,
        &row.payload,
        &row.window,
        &row.window_us,
    ];
    // Nothing inserted: a live row holds the key, or an item that left within its window.
    // The holder is judged (a live one whose window passed lets the key go) and the
    // insert runs once more, should the key be free now.
    for _ in 0..2 {
        let inserted = tx
            .query_opt(&op.windowed_insert, &params)
            .await
            .map_err(before)?;
        if inserted.is_some() {
            if row.delay_us == 0 {
                tx.execute(&op.notify, &[&db.sql.channel, &db.queue])
                    .await
                    .map_err(before)?;
            }
            tx.commit()
                .await
                .map_err(|e| store_error("keyed push", &e, true))?;
            return Ok(Keyed::Pushed { replaced });
        }
        if let (Some(h), _) = holder(false).await.map_err(before)? {
            return refused(tx, Keyed::Duplicate(h)).await;
        }
    }
    Err(StoreError::not_done(
        "keyed push: the key's holder kept changing; try again",
    ))
}

/// A refused push's transaction rolled back now: its locks (the holder's row, the
/// ledger's row) must not wait for this connection's next job to be let go.
async fn refused(
    tx: deadpool_postgres::Transaction<'_>,
    answer: Keyed,
) -> Result<Keyed, StoreError> {
    tx.rollback()
        .await
        .map_err(|e| store_error("keyed push", &e, false))?;
    Ok(answer)
}
