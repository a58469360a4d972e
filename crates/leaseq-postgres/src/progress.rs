//! Handlers' checkpoints: one fenced `UPDATE` of the row's `progress` column (schema step
//! 5), matched on the lease token and the running lease as an extension is; handed out by
//! every later claim of the row, kept by every change of the row but its delete (ack,
//! cancel, purge, replacement), and listed for operators.

use leaseq_async::{Checkpointing, LeaseKey, Page, Progress, SettleError, StoreError};
use leaseq_core::MessageId;
use tokio_postgres::types::ToSql;

use crate::outcome::{self, Decision, Fenced};
use crate::store::PgStore;
use crate::ticket::PgTicket;

impl<T: Clone + Send + Sync + 'static> PgStore<T> {
    /// `Store::checkpoint`: `Ok` once committed; refused (explained from the row) unless the
    /// lease is the row's latest and still running. A reply lost and the statement then
    /// refused on the retry is outcome unknown: the lost try may have written it.
    pub(crate) fn checkpoint_lease(&self, lease: LeaseKey, progress: Progress) -> Checkpointing {
        let Some((id, lease)) = lease.as_row() else {
            let e = SettleError::Stale(leaseq_core::ReceiptError::Unknown);
            return Box::pin(std::future::ready(Err(e)));
        };
        let (db, counters) = (self.db.clone(), self.counters.clone());
        // Only the row and the token matter to a fenced statement.
        let copy = PgTicket {
            id,
            lease,
            attempts: 0,
            expires_at: None,
            beat: None,
            progress: None,
            plain: false,
        };
        Box::pin(async move {
            let db = &*db;
            let client = match db.client().await {
                Ok(c) => c,
                Err(e) => {
                    db.failed("checkpoint", &e);
                    let e = StoreError::not_done(format!(
                        "checkpoint: {}",
                        leaseq_async::ErrorChain(&e)
                    ));
                    return Err(SettleError::Store(e));
                }
            };
            let bytes = progress.as_bytes();
            let params: [&(dyn ToSql + Sync); 3] = [&copy.id, &copy.lease, &bytes];
            let f = Fenced {
                what: "checkpoint",
                sql: &db.sql.checkpoint,
                params: &params,
                holder_only: true,
            };
            let decide = |_| Decision::Unknown;
            outcome::settle(db, &counters, &client, &copy, f, |_| (), decide).await
        })
    }

    /// `Store::checkpoints`: the rows of `page` (live or dead letters) with a checkpoint.
    pub(crate) async fn checkpoint_page(
        &self,
        page: Page,
    ) -> Result<Vec<(MessageId, Progress)>, StoreError> {
        let db = &*self.db;
        let client = db.client().await.map_err(|e| {
            StoreError::not_done(format!(
                "checkpoints: no connection: {}",
                leaseq_async::ErrorChain(&e)
            ))
        })?;
        let after = page.after.map_or(i64::MIN, |id| id.get() as i64);
        let limit = i64::try_from(page.limit).unwrap_or(i64::MAX);
        let rows = client
            .query(&db.sql.checkpoints, &[&db.queue, &after, &limit])
            .await
            .map_err(|e| {
                StoreError::not_done(format!("checkpoints: {}", leaseq_async::ErrorChain(&e)))
            })?;
        Ok(rows
            .iter()
            .map(|r| {
                (
                    MessageId::new(r.get::<_, i64>(0) as u64),
                    Progress::from_stored(r.get::<_, &[u8]>(1)),
                )
            })
            .collect())
    }
}
