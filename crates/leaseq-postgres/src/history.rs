//! The record of finished jobs read back ([`PgStore::history`], and
//! [`PgInspector::history`](crate::PgInspector::history) through [`read`]): a page of a
//! queue's entries, filtered by kind and outcome in SQL. (The driver's removal of the entries
//! past the retention window is in `keeper.rs`.)

use std::time::{Duration, SystemTime};

use leaseq_async::{FinishOutcome, Finished, HistoryQuery};
use leaseq_core::{MessageId, Reason};
use tokio_postgres::{GenericClient, Row};

use crate::error::DbError;
use crate::history_sql::HistorySql;
use crate::store::PgStore;

impl<T: Clone + Send + Sync + 'static> PgStore<T> {
    /// The record of this queue's finished jobs that `query` asks for, oldest first: every
    /// process's entries, kept while [`Options::retention`](crate::Options::retention) is on
    /// (none without it). One statement on a pooled connection.
    ///
    /// ```no_run
    /// # async fn f(store: &leaseq_postgres::PgStore<Vec<u8>>) -> Result<(), leaseq_postgres::DbError> {
    /// use leaseq_postgres::{FinishOutcome, HistoryQuery};
    ///
    /// let mut query = HistoryQuery::first(100).outcome(FinishOutcome::DeadLettered);
    /// loop {
    ///     let page = store.history(&query).await?;
    ///     let Some(last) = page.last() else { break };
    ///     for f in &page {
    ///         println!("{} {:?} {} attempts: {:?}", f.id, f.kind, f.attempts, f.last_error);
    ///     }
    ///     query = query.next(last.seq);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn history(&self, query: &HistoryQuery) -> Result<Vec<Finished>, DbError> {
        let db = &*self.db;
        let client = db.client().await?;
        read(&**client, &db.sql.history, &db.queue, query).await
    }
}

/// One page of `queue`'s record on `client`.
pub(crate) async fn read<C: GenericClient>(
    client: &C,
    sql: &HistorySql,
    queue: &str,
    query: &HistoryQuery,
) -> Result<Vec<Finished>, DbError> {
    let after = query
        .after
        .map_or(i64::MIN, |seq| i64::try_from(seq).unwrap_or(i64::MAX));
    let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
    let kind: Option<&[u8]> = query.kind.as_deref().map(str::as_bytes);
    let outcome: Option<i16> = query.outcome.map(|o| i16::from(o.code()));
    let rows = client
        .query(&sql.page, &[&queue, &after, &limit, &kind, &outcome])
        .await?;
    Ok(rows.iter().filter_map(entry).collect())
}

/// A row of the page statement as an entry (an outcome code this version does not know:
/// left out).
fn entry(r: &Row) -> Option<Finished> {
    let outcome = FinishOutcome::from_code(u8::try_from(r.get::<_, i16>(3)).ok()?)?;
    let time = |i: usize| r.get::<_, Option<i64>>(i).map(epoch);
    let mut f = Finished::new(
        u64::try_from(r.get::<_, i64>(0)).unwrap_or(0),
        MessageId::new(r.get::<_, i64>(1) as u64),
        outcome,
        u32::try_from(r.get::<_, i32>(5)).unwrap_or(0),
        time(8).unwrap_or(SystemTime::UNIX_EPOCH),
    );
    f.kind = r
        .get::<_, Option<Vec<u8>>>(2)
        .and_then(|k| String::from_utf8(k).ok());
    f.reason = r
        .get::<_, Option<i16>>(4)
        .and_then(|c| u8::try_from(c).ok())
        .and_then(Reason::from_code);
    f.pushed_at = time(6);
    f.started_at = time(7);
    f.duration = r
        .get::<_, Option<i64>>(9)
        .map(|us| Duration::from_micros(us.max(0) as u64));
    f.last_error = r.get(10);
    Some(f)
}

/// Microseconds since the Unix epoch as a `SystemTime`.
fn epoch(us: i64) -> SystemTime {
    let d = Duration::from_micros(us.unsigned_abs());
    if us >= 0 {
        SystemTime::UNIX_EPOCH + d
    } else {
        SystemTime::UNIX_EPOCH
            .checked_sub(d)
            .unwrap_or(SystemTime::UNIX_EPOCH)
    }
}
