//! The driver step of a [`PgStore`](crate::PgStore): the heartbeat (every held lease of
//! this process extended in one statement per tick; a lease refused or at its max lifetime
//! signalled lost), the rescuer (leases of any process that ran out go back with the
//! attempt counted, or to the dead letters, by the core's policy; items past their time to
//! live become dead letters), the row counts while someone waits for an empty queue, and the
//! table's upkeep when due (`upkeep.rs`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::Client;
use leaseq_core::{Reason, Retry, Timestamp, Verdict};

use crate::counters::{Counters, Gauges};
use crate::error::DbError;
use crate::store::{micros, Shared};

/// When each of the driver's jobs is next due.
#[derive(Debug, Default)]
pub(crate) struct Schedule {
    pub(crate) beat: Timestamp,
    pub(crate) rescue: Timestamp,
    /// The soonest the stats' row counts are refreshed again for a reader.
    pub(crate) count: Timestamp,
}

/// Extends every lease the heartbeat keeps, in one statement; marks lost the ones refused.
pub(crate) async fn heartbeat<T>(shared: &Shared<T>, client: &Client) -> Result<(), DbError> {
    let (ids, leases): (Vec<i64>, Vec<i64>) = shared
        .held
        .lock()
        .iter()
        .map(|(id, h)| (*id, h.lease))
        .unzip();
    if ids.is_empty() {
        return Ok(());
    }
    let stmt = client.prepare_cached(&shared.sql.heartbeat).await?;
    let rows = client
        .query(
            &stmt,
            &[
                &ids,
                &leases,
                &shared.visibility_us(),
                &shared.max_lease_us(),
            ],
        )
        .await?;
    let kept: HashMap<i64, i64> = rows
        .iter()
        .map(|r| (r.get(0), r.get::<_, Option<i64>>(1).unwrap_or(0)))
        .collect();
    Counters::add(&shared.counters.extends, kept.len() as u64);
    let vis = shared.visibility_us();
    let capped = kept.values().filter(|us| **us < vis - vis / 10).count();
    Counters::add(&shared.counters.extends_capped, capped as u64);
    let mut held = shared.held.lock();
    for (id, lease) in ids.iter().zip(&leases) {
        if !kept.contains_key(id) {
            if let Some(h) = held.get(id).filter(|h| h.lease == *lease) {
                h.signal.mark_lost();
                held.remove(id);
            }
        }
    }
    Ok(())
}

/// Takes back leases of this queue that ran out, whoever held them, and buries items past
/// their time to live. Returns how many leases came back.
pub(crate) async fn rescue<T>(shared: &Shared<T>, client: &mut Client) -> Result<u64, DbError> {
    let tx = client.transaction().await?;
    let find = tx.prepare_cached(&shared.sql.expired_leases).await?;
    let rows = tx.query(&find, &[&shared.queue, &1000_i64]).await?;
    let (mut ids, mut states, mut delays, mut reasons) = (vec![], vec![], vec![], vec![]);
    let mut dead = 0;
    {
        let mut policy = shared.policy.lock();
        for r in &rows {
            let attempts = u32::try_from(r.get::<_, i32>(1)).unwrap_or(0);
            let expired: bool = r.get(2);
            ids.push(r.get::<_, i64>(0));
            match policy.after_failure(attempts, expired, Reason::LeaseExpired, Retry::Backoff) {
                Verdict::Retry { delay } => {
                    states.push(0_i16);
                    delays.push(micros(delay));
                    reasons.push(i16::from(Reason::LeaseExpired.code()));
                }
                Verdict::DeadLetter { reason } => {
                    dead += 1;
                    states.push(2_i16);
                    delays.push(0);
                    reasons.push(i16::from(reason.code()));
                }
            }
        }
    }
    if !ids.is_empty() {
        let apply = tx.prepare_cached(&shared.sql.rescue).await?;
        tx.execute(&apply, &[&ids, &states, &delays, &reasons])
            .await?;
    }
    let expire = tx.prepare_cached(&shared.sql.expire_items).await?;
    let expired = tx
        .execute(
            &expire,
            &[&shared.queue, &i16::from(Reason::Expired.code())],
        )
        .await?;
    tx.commit().await?;
    let c = &shared.counters;
    Counters::add(&c.lease_expired, ids.len() as u64);
    Counters::add(&c.dead_lettered, dead + expired);
    Counters::add(&c.expired, expired);
    if ids.len() as u64 > dead {
        // Back now or after their backoff: receivers here look, and other processes are
        // told once.
        shared.claim_wake.notify(usize::MAX);
        let _ = client
            .execute(
                "SELECT pg_notify($1, $2)",
                &[&shared.sql.channel, &shared.queue],
            )
            .await;
    }
    Ok(ids.len() as u64)
}

/// Counts the queue's rows by state (every process's).
pub(crate) async fn count<T>(shared: &Shared<T>, client: &Client) -> Result<Gauges, DbError> {
    // Read before the statement: every push committed by then is in its snapshot.
    let pushes_seen = shared.pushes.lock().committed;
    let stmt = client.prepare_cached(&shared.sql.counts).await?;
    let r = client.query_one(&stmt, &[&shared.queue]).await?;
    let n = |i: usize| r.get::<_, i64>(i).max(0) as u64;
    let g = Gauges {
        ready: n(0),
        delayed: n(1),
        in_flight: n(2),
        dead: n(3),
        pushes_seen,
    };
    *shared.counters.gauges.lock() = g;
    // Whoever waits for an empty queue looks at the new count.
    shared.empty.notify(usize::MAX);
    Ok(g)
}

/// The next instant `every` after `now`.
pub(crate) fn after(now: Timestamp, every: Duration) -> Timestamp {
    now.saturating_add(every)
}

/// One driver step: what is due, then when to run again.
pub(crate) async fn step<T: Send + 'static>(
    shared: &Arc<Shared<T>>,
    due: Due,
) -> Result<(), DbError> {
    let mut client = shared.client().await?;
    if due.beat {
        heartbeat(shared, &client).await?;
    }
    if due.rescue {
        rescue(shared, &mut client).await?;
    }
    if due.count {
        count(shared, &client).await?;
    }
    crate::upkeep::vacuum_if_due(shared);
    Ok(())
}

/// Which jobs a driver step runs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Due {
    pub(crate) beat: bool,
    pub(crate) rescue: bool,
    pub(crate) count: bool,
}
