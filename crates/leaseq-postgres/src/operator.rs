//! The operator calls of the `Store` seam on a [`PgStore`]: `peek` and `dead_letters`
//! (paged, in id order), `redrive`, `redrive_matching` and `purge_dead_matching` (a
//! [`DeadFilter`]'s reason and kind in SQL), `purge` and `refresh_stats`, each one statement on a pooled connection (a redrive into a bounded
//! queue: room taken from its ledger, `capacity.rs`). A read that fails is "not done"; a write
//! whose reply was lost is "outcome unknown" ([`StoreError`]).

use leaseq_async::{AdminError, CodecError, DeadFilter, Page, StoreError};
use leaseq_core::{DeadLetter, ItemState, ItemView, MessageId, Reason, RedriveError, Stats};
use tokio_postgres::Row;

use crate::counters::Counters;
use crate::db::Db;
use crate::store::PgStore;

/// A failed statement as a store error: a write whose reply may have been lost is
/// outcome unknown, anything else not done.
pub(crate) fn store_error(what: &str, e: &tokio_postgres::Error, write: bool) -> StoreError {
    if write && crate::outcome::maybe_made(e) {
        StoreError::outcome_unknown(format!("{what}: {}", leaseq_async::ErrorChain(e)))
    } else {
        StoreError::not_done(format!("{what}: {}", leaseq_async::ErrorChain(e)))
    }
}

/// A connection for an operator call (none: not done).
async fn client<T>(db: &Db<T>, what: &str) -> Result<deadpool_postgres::Object, StoreError> {
    db.client().await.map_err(|e| {
        StoreError::not_done(format!(
            "{what}: no connection: {}",
            leaseq_async::ErrorChain(&e)
        ))
    })
}

/// A page's bounds as the statements take them: ids above, at most.
fn bounds(page: Page) -> (i64, i64) {
    let after = page.after.map_or(i64::MIN, |id| id.get() as i64);
    (after, i64::try_from(page.limit).unwrap_or(i64::MAX))
}

/// A stored key as the core's, if the row has one (a key the core would refuse: none).
fn key_of(row: &Row, i: usize) -> Option<leaseq_core::UniqueKey> {
    row.get::<_, Option<&[u8]>>(i)
        .and_then(leaseq_core::UniqueKey::new)
}

impl<T: Clone + Send + Sync + 'static> PgStore<T> {
    /// `Store::refresh_stats`: the queue's rows counted now (every process's), with this
    /// process's counters.
    pub(crate) async fn refresh(&self) -> Result<Stats, StoreError> {
        let client = client(&self.db, "refresh stats").await?;
        self.keeper.count(&client).await.map_err(|e| {
            StoreError::not_done(format!("refresh stats: {}", leaseq_async::ErrorChain(&e)))
        })?;
        Ok(self.counters.stats())
    }

    /// `Store::peek`: live rows of `page` in id order, times on the queue's clock.
    pub(crate) async fn peek_page(&self, page: Page) -> Result<Vec<ItemView>, StoreError> {
        let db = &*self.db;
        let client = client(db, "peek").await?;
        let (after, limit) = bounds(page);
        let rows = client
            .query(&db.sql.op.peek, &[&db.queue, &after, &limit])
            .await
            .map_err(|e| store_error("peek", &e, false))?;
        Ok(rows
            .iter()
            .map(|r| {
                let state = match (r.get::<_, i16>(1), r.get::<_, Option<i64>>(6)) {
                    (1, deadline) => ItemState::InFlight {
                        deadline: db.local_in(deadline.unwrap_or(0)),
                    },
                    _ if r.get::<_, Option<i64>>(5).unwrap_or(0) > 0 => ItemState::Delayed,
                    _ => ItemState::Ready,
                };
                let mut view = ItemView::new(MessageId::new(r.get::<_, i64>(0) as u64), state);
                view.attempts = u32::try_from(r.get::<_, i32>(2)).unwrap_or(0);
                view.priority = u8::try_from(r.get::<_, i16>(3)).unwrap_or(0);
                view.key = key_of(r, 4);
                view.expires_at = r.get::<_, Option<i64>>(7).map(|us| db.local_in(us));
                view
            })
            .collect())
    }

    /// `Store::dead_letters`: the dead letters of `page` in id order, each decoded or
    /// its codec error.
    pub(crate) async fn dead_page(
        &self,
        page: Page,
    ) -> Result<Vec<DeadLetter<Result<T, CodecError>>>, StoreError> {
        let db = &*self.db;
        let client = client(db, "dead letters").await?;
        let (after, limit) = bounds(page);
        let rows = client
            .query(
                &db.sql.op.dead_page,
                &[&db.queue, &after, &limit, &None::<i16>, &None::<Vec<u8>>],
            )
            .await
            .map_err(|e| store_error("dead letters", &e, false))?;
        Ok(rows
            .iter()
            .map(|r| {
                // A code this version does not know (a newer version's reason) reads as
                // "dropped", as a SQLite file's does at open.
                let reason = r
                    .get::<_, Option<i16>>(2)
                    .and_then(|c| u8::try_from(c).ok())
                    .and_then(Reason::from_code)
                    .unwrap_or(Reason::Dropped);
                let mut letter = DeadLetter::new(
                    crate::claim::decode_sized(db, r, 8),
                    MessageId::new(r.get::<_, i64>(0) as u64),
                    u32::try_from(r.get::<_, i32>(1)).unwrap_or(0),
                    reason,
                    db.local_in(r.get::<_, Option<i64>>(6).unwrap_or(0)),
                );
                letter.last_error = r.get(3);
                letter.priority = u8::try_from(r.get::<_, i16>(4)).unwrap_or(0);
                letter.key = key_of(r, 5);
                letter.expires_at = r.get::<_, Option<i64>>(7).map(|us| db.local_in(us));
                letter
            })
            .collect())
    }

    /// `Store::redrive`: the dead letter `id` back, visible at once, attempts reset;
    /// refused as the core refuses (not a dead letter, expired, its key held, no room).
    pub(crate) async fn redrive_one(
        &self,
        id: MessageId,
    ) -> Result<MessageId, AdminError<RedriveError>> {
        let db = &*self.db;
        let mut client = client(db, "redrive").await?;
        let row = id.get() as i64;
        let r = crate::capacity::redrive_in(db, &mut client, row).await;
        // Not a dead letter, expired, its key held (a unique violation), or no room: the
        // row says which, in the core's order (no room last).
        let full = match r {
            Ok(Some(n)) if n > 0 => {
                Counters::add(&self.counters.redriven, 1);
                self.board.wake.notify(usize::MAX);
                return Ok(id);
            }
            Ok(Some(_)) => false,
            Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) => false,
            Ok(None) => true,
            Err(e) => return Err(store_error("redrive", &e, true).into()),
        };
        // Nothing moved: the row says why.
        let read = client
            .query_opt(&db.sql.op.redrive_why, &[&db.queue, &row])
            .await
            .map_err(|e| store_error("redrive", &e, false))?;
        let Some(read) = read else {
            return Err(AdminError::Refused(RedriveError::NotFound(id)));
        };
        if read.get::<_, i16>(0) != 2 {
            return Err(AdminError::Refused(RedriveError::NotFound(id)));
        }
        if read.get::<_, bool>(1) {
            return Err(AdminError::Refused(RedriveError::Expired(id)));
        }
        let key: Option<Vec<u8>> = read.get(2);
        let holder = match key {
            Some(key) => client
                .query_opt(&db.sql.op.key_holder, &[&db.queue, &key])
                .await
                .map_err(|e| store_error("redrive", &e, false))?
                .map(|h| MessageId::new(h.get::<_, i64>(0) as u64)),
            None => None,
        };
        match holder {
            Some(holder) => Err(AdminError::Refused(RedriveError::KeyTaken { id, holder })),
            None if full => Err(AdminError::Refused(RedriveError::Full(id))),
            // The holder went between the two reads: the caller may try again.
            None => {
                Err(StoreError::not_done("redrive: the key's holder changed; try again").into())
            }
        }
    }

    /// `Store::redrive_matching`: one statement for every dead letter `filter` takes that
    /// can go back (in a bounded queue, as many as there is room for).
    pub(crate) async fn redrive_every(&self, filter: &DeadFilter<T>) -> Result<u64, StoreError> {
        let Some((reason, head)) = filter_params(filter) else {
            return Ok(0);
        };
        let db = &*self.db;
        let mut client = client(db, "redrive all").await?;
        let n = crate::capacity::redrive_all_in(db, &mut client, reason, head.as_deref())
            .await
            .map_err(|e| store_error("redrive all", &e, true))?;
        if n > 0 {
            Counters::add(&self.counters.redriven, n);
            self.board.wake.notify(usize::MAX);
        }
        Ok(n)
    }

    /// `Store::purge_dead_matching`: one delete of the dead letters `filter` takes.
    pub(crate) async fn purge_dead(&self, filter: &DeadFilter<T>) -> Result<u64, StoreError> {
        let Some((reason, head)) = filter_params(filter) else {
            return Ok(0);
        };
        let what = "purge dead letters";
        let client = client(&self.db, what).await?;
        client
            .execute(
                &self.db.sql.op.purge_dead,
                &[&self.db.queue, &reason, &head],
            )
            .await
            .map_err(|e| store_error(what, &e, true))
    }

    /// `Store::purge`: one delete of the waiting rows.
    pub(crate) async fn purge_waiting(&self) -> Result<u64, StoreError> {
        let db = &*self.db;
        let what = "purge";
        let client = client(db, what).await?;
        let n = client
            .execute(&db.sql.op.purge, &[&db.queue])
            .await
            .map_err(|e| store_error(what, &e, true))?;
        // Room in a bounded queue: a waiting push may go.
        crate::capacity::removed(db, &self.pushes);
        Ok(n)
    }
}

/// A filter as the statements take it: the reason's code and the envelope head
/// (`[len] ++ kind`) a payload of the kind begins with, `None` for "any"; `None` overall
/// when no item can match (a kind no envelope can carry).
#[allow(clippy::type_complexity)]
pub(crate) fn filter_params<T>(filter: &DeadFilter<T>) -> Option<(Option<i16>, Option<Vec<u8>>)> {
    if filter.matches_none() {
        return None;
    }
    let reason = filter.wanted_reason().map(|r| i16::from(r.code()));
    Some((reason, filter.kind_head()))
}
