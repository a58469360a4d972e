//! Extending a held lease (a zero extension hands the item back, reason `Released`): one
//! fenced statement, tried again if its reply is lost (an extension is idempotent: it sets
//! the deadline from now), never past the max lease or the item's time to live.

use std::time::Duration;

use leaseq_async::{SettleError, StoreError};
use leaseq_core::{Extended, Failure, Reason};
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use crate::counters::Counters;
use crate::db::micros;
use crate::outcome::{self, Decision, Fenced, RowNow};
use crate::settle;
use crate::stale::stale;
use crate::store::PgStore;
use crate::ticket::PgTicket;

impl<T: Clone + Send + Sync + 'static> PgStore<T> {
    /// Moves the lease's deadline (zero: hands the item back, reason `Released`).
    pub(crate) fn extend_lease(
        &self,
        ticket: &mut PgTicket,
        visibility: Duration,
    ) -> impl std::future::Future<Output = Result<Extended, SettleError>> + Send + '_ {
        let (id, lease, attempts, expires_at) =
            (ticket.id, ticket.lease, ticket.attempts, ticket.expires_at);
        let release = visibility.is_zero();
        if release {
            self.leases.forget(ticket);
            ticket.beat = None;
        }
        async move {
            let db = &*self.db;
            let client = match db.client().await {
                Ok(c) => c,
                Err(e) => {
                    db.failed("extend", &e);
                    let e =
                        StoreError::not_done(format!("extend: {}", leaseq_async::ErrorChain(&e)));
                    return Err(SettleError::Store(e));
                }
            };
            let copy = PgTicket {
                id,
                lease,
                attempts,
                expires_at,
                beat: None,
                progress: None,
                plain: false,
            };
            if release {
                let failure = Failure::with_reason(Reason::Released);
                return settle::fail(self.settler.parts(), &client, copy, failure)
                    .await
                    .map(Extended::Released);
            }
            let vis = micros(visibility);
            let max = db.max_lease_us();
            let params: [&(dyn ToSql + Sync); 4] = [&id, &lease, &vis, &max];
            let f = Fenced {
                what: "extend",
                sql: &db.sql.extend,
                params: &params,
                holder_only: true,
            };
            let done = |row: &Row| {
                let left: i64 = row.get::<_, Option<i64>>(0).unwrap_or(0);
                // Cut short by the max lease or the item's expiry (a few ms of slack for
                // the round trip).
                let capped = left < vis - 5_000;
                let c = &self.counters;
                Counters::add(&c.extends, 1);
                if capped {
                    Counters::add(&c.extends_capped, 1);
                }
                Extended::Until {
                    deadline: db.local_in(left),
                    capped,
                }
            };
            // Tried again after a lost reply and refused: the lease is not ours to extend
            // now, whatever the lost try did.
            let decide = |row: Option<RowNow>| {
                let row = row.map(|r| (r.state, r.lease, r.deadline_us));
                Decision::Stale(stale(id, lease, row, true))
            };
            outcome::settle(db, &self.counters, &client, &copy, f, done, decide).await
        }
    }
}
