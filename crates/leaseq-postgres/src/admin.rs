//! What an operator or a test does on a [`PgStore`] beyond the `Store` seam (whose operator
//! calls, on the queue, are in `operator.rs`): acking inside one's own transaction, the
//! table's upkeep, the last error.

use leaseq_async::Delivery;
use leaseq_core::{Acked, ReceiptError};
use leaseq_tokio::TokioRuntime;
use tokio_postgres::GenericClient;

use crate::db::Conn;
use crate::error::{DbError, TxAckError};
use crate::settle;
use crate::stale::{stale, why_stale};
use crate::store::PgStore;

impl<T: Clone + Send + Sync + 'static> PgStore<T> {
    /// Acks `delivery` inside the caller's own transaction (or on the caller's client), so
    /// that the work's result and the ack commit together or not at all. The ack takes
    /// effect when the caller commits; if the transaction rolls back, the item stays leased
    /// (its heartbeat stopped) and comes back when the lease runs out, its attempt counted.
    ///
    /// Works with a `tokio_postgres::Transaction` or `Client` (a deadpool transaction
    /// derefs to one). Fenced like every settle: a stale lease gives
    /// [`TxAckError::Stale`] and changes no row. This process's `acked` counter counts it
    /// when the statement succeeds: an ack whose transaction then rolls back is counted
    /// too (and again when the redelivered item is acked).
    pub async fn ack_in<C: GenericClient + Sync>(
        &self,
        client: &C,
        delivery: Delivery<T, TokioRuntime, PgStore<T>>,
    ) -> Result<Acked, TxAckError> {
        let id = delivery.id();
        let Some(ticket) = delivery.into_ticket() else {
            return Err(TxAckError::Stale(ReceiptError::Released(id)));
        };
        self.leases.forget(&ticket);
        let db = &*self.db;
        let conn: Conn<'_, C> = Conn::Caller(client);
        let rows = crate::ack_plain::ack_rows(conn, &db.sql.ack, &[ticket.id], &[ticket.lease])
            .await
            .map_err(TxAckError::Db)?;
        let r = match rows.get(&ticket.id) {
            Some(acked) => Ok(*acked),
            None => {
                let why = why_stale(db, conn, &[ticket.id])
                    .await
                    .map_err(TxAckError::Db)?;
                let row = why.get(&ticket.id).copied();
                Err(stale(ticket.id, ticket.lease, row, false))
            }
        };
        settle::count_ack(&self.counters, &r.map_err(leaseq_async::SettleError::Stale));
        r.map_err(TxAckError::Stale)
    }

    /// The last database error a background task met (each retries), if any.
    pub fn last_error(&self) -> Option<String> {
        self.db.last_error.lock().clone()
    }

    /// The queue's name.
    pub fn queue_name(&self) -> &str {
        &self.db.queue
    }

    /// The schema its tables live in.
    pub fn schema(&self) -> &str {
        &self.db.options.schema
    }

    /// How old the stats' row counts (`ready`, `delayed`, `in_flight`, `dead` of
    /// `stats()`) are: the time since their count's statement was sent, `None` before the
    /// first count. The driver keeps it under
    /// [`Options::stats_max_age`](crate::Options::stats_max_age) plus one rescue period while
    /// the database answers; [`refresh_stats`](leaseq_async::LeaseQueue::refresh_stats)
    /// counts now.
    pub fn stats_age(&self) -> Option<std::time::Duration> {
        use leaseq_async::Runtime;
        let at = self.counters.gauges.lock().counted_at?;
        Some(self.db.rt.now().saturating_duration_since(at))
    }

    /// Leases this process's heartbeat keeps alive now.
    pub fn heartbeats(&self) -> usize {
        self.leases.len()
    }

    /// Runs the table's upkeep now, as the store does by itself after
    /// [`Options::vacuum_after_rows`](crate::Options::vacuum_after_rows) removed rows:
    /// `VACUUM (ANALYZE)` of the items table, then `REINDEX INDEX CONCURRENTLY` of each index
    /// past twice the size a fresh build would take (unless
    /// [`Options::rebuild_bloated_indexes`](crate::Options::rebuild_bloated_indexes) is off),
    /// and the drop of an index a failed rebuild left invalid. Waits while another process
    /// of the schema runs its own. For operators, or where the store's removals alone do
    /// not make it due (many processes each removing few rows).
    pub async fn run_upkeep(&self) -> Result<Upkeep, DbError> {
        // In a task of its own: dropping this future must not leave the pooled connection
        // holding the schema's upkeep lock (a session lock) between lock and unlock.
        let (db, counters) = (self.db.clone(), self.counters.clone());
        let upkeep = tokio::spawn(async move {
            let client = db.client().await?;
            crate::upkeep::upkeep_now(&db, &counters, &client)
                .await
                .map_err(DbError::Db)
        });
        match upkeep.await {
            Ok(r) => r?,
            Err(e) => return Err(DbError::pool("the upkeep task ended", e)),
        }
        Ok(self.upkeep())
    }

    /// The table upkeep this process ran: `VACUUM`s of the items table, and indexes it
    /// rebuilt because they had grown past twice what their live entries need
    /// ([`Options::rebuild_bloated_indexes`](crate::Options::rebuild_bloated_indexes)).
    pub fn upkeep(&self) -> Upkeep {
        let c = &self.counters;
        Upkeep {
            vacuums: c.vacuums.load(std::sync::atomic::Ordering::Relaxed),
            indexes_rebuilt: c.reindexes.load(std::sync::atomic::Ordering::Relaxed),
        }
    }
}

/// The table upkeep one process ran ([`PgStore::upkeep`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Upkeep {
    /// `VACUUM (ANALYZE)`s of the items table.
    pub vacuums: u64,
    /// Indexes rebuilt by `REINDEX INDEX CONCURRENTLY`.
    pub indexes_rebuilt: u64,
}
