//! Pushing and cancelling on a [`PgStore`]: `try_push` checks and encodes the item, gives
//! it its id and queues its row for the writer; `synced` waits for the commit; `cancel`
//! deletes a row and hands its item back.

use leaseq_async::{AdminError, Push, PushError, StoreError};
use leaseq_core::{CancelError, MessageId, MAX_PRIORITY};

use crate::db::micros;
use crate::pushes::{PushRow, Pushes};
use crate::store::PgStore;

/// What a push with a key window this version does not know (`KeyWindow` is
/// non-exhaustive) is refused as.
pub(crate) const KEY_WINDOWS: &str =
    "this unique key window (Push::key_window) on the Postgres store";

/// What a push with flow keys (`Push::kind`, `partition`, `group`, `flow_keys`) is refused
/// as where the store does not keep them: in the caller's transaction (`push_in`), in a
/// schedule's ticks, beside a unique key (`Push::key`).
pub(crate) const FLOW_KEYS: &str =
    "flow keys (Push::kind, partition, group, flow_keys) in a transactional push, a schedule's tick, beside a unique key or in a bounded queue on the Postgres store";

/// What the Postgres store refuses in a push it does not hand to its writer (in the
/// caller's transaction, a schedule's tick), if anything: flow keys.
pub(crate) fn unsupported(push: &Push) -> Option<&'static str> {
    push.flow().is_some().then_some(FLOW_KEYS)
}

/// A push's flow keys as the writer inserts them (kind, partition, group).
fn flow_row(push: &Push) -> Option<[Option<i64>; 3]> {
    let keys = push.flow()?;
    let id = |k: Option<leaseq_core::FlowKey>| k.map(|k| k.get() as i64);
    Some([
        id(keys.kind_key()),
        id(keys.partition_key()),
        id(keys.group_key()),
    ])
}

impl<T: Clone + Send + Sync + 'static> PgStore<T> {
    /// `try_push`: refused at once (the item handed back) when closed, when the writer is
    /// `max_pending_pushes` behind, or when the push asks for what the store cannot do.
    pub(crate) fn push_row(&self, item: T, push: &Push) -> Result<MessageId, PushError<T>> {
        let id = self.queue_row(item, push)?;
        self.pushes.queued.notify(1);
        Ok(id)
    }

    /// Checks, encodes and queues one row without waking the writer.
    fn queue_row(&self, item: T, push: &Push) -> Result<MessageId, PushError<T>> {
        let db = &*self.db;
        if self.life.is_closed() || self.life.is_stopped() {
            return Err(PushError::Closed(item));
        }
        let (delay, ttl, options) = push.parts();
        if options.priority > MAX_PRIORITY {
            let level = options.priority;
            return Err(PushError::PriorityOutOfRange { item, level });
        }
        if ttl.is_some_and(|ttl| ttl.is_zero() || ttl <= delay) {
            return Err(PushError::AlreadyExpired(item));
        }
        if push.flow().is_some() && (options.has_key() || db.config.capacity().is_some()) {
            // Beside a key (its own insert), or in a bounded queue (whose insert,
            // `insert_bounded`, takes no flow keys): refused, not stored without them.
            let what = FLOW_KEYS;
            return Err(PushError::Unsupported { item, what });
        }
        if options.has_key() {
            return self.push_keyed(item, push);
        }
        let payload = match db.codec.encode(&item) {
            Ok(p) => p,
            Err(e) => {
                return Err(PushError::Encode {
                    item,
                    error: e.to_string(),
                })
            }
        };
        if payload.len() > db.options.max_item_size {
            let (size, max) = (payload.len(), db.options.max_item_size);
            return Err(PushError::TooLarge { item, size, max });
        }
        let mut buf = self.pushes.buf.lock();
        let no_room = crate::capacity::full(db, buf.live, buf.rows.len());
        if buf.rows.len() >= db.options.max_pending_pushes || no_room {
            drop(buf);
            if no_room {
                crate::capacity::wants_room(&self.pushes);
            }
            // A push that waits for room is refused only if it gives up (see
            // `PushOptions::waits_for_room`): it counts nothing here.
            if !options.waits_for_room {
                crate::counters::Counters::add(&self.counters.rejected, 1);
            }
            return Err(PushError::Full(item));
        }
        let Some(id) = buf.next_id() else {
            drop(buf);
            return Err(PushError::Full(item));
        };
        buf.rows.push(PushRow {
            id: id.get() as i64,
            priority: i16::from(options.priority),
            delay_us: micros(delay),
            ttl_us: ttl.map(micros),
            payload,
            flow: flow_row(push),
        });
        buf.queued += 1;
        Ok(id)
    }

    /// `try_push_batch`: every item pushed one by one as `push` says, the writer held back
    /// until the last so that the batch goes in one insert (one commit); stops at the first
    /// refusal with the ids accepted before it.
    #[allow(clippy::type_complexity)]
    pub(crate) fn push_many(
        &self,
        items: &mut dyn Iterator<Item = T>,
        push: &Push,
    ) -> Result<Vec<MessageId>, (Vec<MessageId>, PushError<T>)> {
        /// Ends the batch (also if a codec panics) and lets the writer go.
        struct Filling<'a>(&'a Pushes);
        impl Drop for Filling<'_> {
            fn drop(&mut self) {
                self.0.buf.lock().filling -= 1;
                self.0.queued.notify(1);
            }
        }
        self.pushes.buf.lock().filling += 1;
        let _filling = Filling(&self.pushes);
        // The writer is woken once, when the batch ends (`Filling`'s drop).
        let mut ids = Vec::new();
        for item in items {
            match self.queue_row(item, push) {
                Ok(id) => ids.push(id),
                Err(e) => return Err((ids, e)),
            }
        }
        Ok(ids)
    }

    /// Completes once every row queued up to `seq` is committed; an "outcome unknown"
    /// error if the writer's inserts have failed for `Options::commit_timeout` (the rows
    /// stay queued), or if the store stopped first.
    pub(crate) async fn committed(&self, seq: u64) -> Result<(), StoreError> {
        let (db, pushes) = (&*self.db, &*self.pushes);
        let timeout = db.options.commit_timeout;
        loop {
            let listener = pushes.committed.listen();
            let failing_since = {
                let buf = pushes.buf.lock();
                if buf.committed >= seq {
                    return Ok(());
                }
                buf.failing_since
            };
            let last = || db.last_error.lock().clone().unwrap_or_default();
            if self.life.is_stopped() {
                return Err(StoreError::outcome_unknown(format!(
                    "the store stopped before the push was committed (last error: {})",
                    last()
                )));
            }
            match failing_since {
                Some(since) if since.elapsed() >= timeout => {
                    return Err(StoreError::outcome_unknown(format!(
                        "the push was not committed: inserts failed for {timeout:?} (it stays \
                         queued; last error: {})",
                        last()
                    )));
                }
                Some(since) => {
                    let _ = tokio::time::timeout(timeout - since.elapsed(), listener).await;
                }
                None => listener.await,
            }
        }
    }

    /// `cancel`: deletes a waiting item (with `leased`, a leased one too) and hands it back.
    /// An item whose bytes do not decode is left alone (`NotFound`); it is dead-lettered as
    /// undecodable when claimed. A database failure is tried again (three tries, each on a
    /// fresh connection: the transaction rolled back unless its commit was sent). When
    /// every try failed the answer is a store error: "outcome unknown" if a commit was sent
    /// and its reply lost (the row may be gone by this cancel: its item would be lost to a
    /// wrong `NotFound`), else "not done".
    pub(crate) async fn cancel_row(
        &self,
        id: MessageId,
        leased: bool,
    ) -> Result<T, AdminError<CancelError>> {
        let db = &*self.db;
        let mut unsure = false;
        let mut last = String::new();
        for tried in 0..3_u32 {
            if tried > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(20) * tried).await;
            }
            let mut client = match db.client().await {
                Ok(c) => c,
                Err(e) => {
                    last = format!("no connection: {}", leaseq_async::ErrorChain(&e));
                    db.failed("cancel", e);
                    continue;
                }
            };
            let mut committing = false;
            let r = async {
                let tx = client.transaction().await?;
                let row = tx
                    .query_opt(&db.sql.cancel_read, &[&db.queue, &(id.get() as i64)])
                    .await?;
                let Some(row) = row else {
                    return Ok(Err(CancelError::NotFound(id)));
                };
                let state: i16 = row.get(0);
                if state == 2 {
                    return Ok(Err(CancelError::DeadLettered(id)));
                }
                if state == 1 && !leased {
                    return Ok(Err(CancelError::InFlight(id)));
                }
                // An item over the size limit is not even loaded (nor one that does not decode).
                let Ok(item) = crate::claim::decode_sized(db, &row, 1) else {
                    return Ok(Err(CancelError::NotFound(id)));
                };
                tx.execute(&db.sql.cancel, &[&(id.get() as i64)]).await?;
                committing = true;
                tx.commit().await?;
                Ok::<_, tokio_postgres::Error>(Ok(item))
            }
            .await;
            match r {
                Ok(Ok(item)) => {
                    crate::counters::Counters::add(&self.counters.cancelled, 1);
                    crate::capacity::removed(db, &self.pushes);
                    return Ok(item);
                }
                // A refusal after an earlier try whose commit may have landed: the row
                // gone (`NotFound`) may be that try's doing.
                Ok(Err(CancelError::NotFound(_))) if unsure => break,
                Ok(Err(e)) => return Err(AdminError::Refused(e)),
                Err(e) => {
                    unsure |= committing && crate::outcome::maybe_made(&e);
                    last = leaseq_async::ErrorChain(&e).to_string();
                    db.failed("cancel", e);
                }
            }
        }
        Err(AdminError::Store(if unsure {
            StoreError::outcome_unknown(format!(
                "cancel: the commit's reply was lost and the row is gone or unreadable ({last})"
            ))
        } else {
            StoreError::not_done(format!("cancel: {last}"))
        }))
    }
}
