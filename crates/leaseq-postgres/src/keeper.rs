//! The driver step of a [`PgStore`](crate::PgStore) (`Store::drive`, run by the shared
//! layer's driver task): what is due by the keeper's schedule, the heartbeat (every held
//! lease of this process extended in one statement per tick; a lease refused or at its max
//! lifetime signalled lost), the rescuer (leases of any process that ran out go back with
//! the attempt counted, or to the dead letters, by the core's policy; items past their time
//! to live become dead letters), the row counts while someone waits for an empty queue or
//! reads the stats, and the table's upkeep when due (`upkeep.rs`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::Client;
use leaseq_async::{Drive, Runtime};
use leaseq_core::{Reason, Retry, Timestamp, Verdict};
use parking_lot::Mutex;

use crate::board::Board;
use crate::counters::{Counters, Gauges};
use crate::db::{micros, Db};
use crate::driver_wake::DriverWake;
use crate::error::DbError;
use crate::leases::Leases;
use crate::pushes::Pushes;
use crate::settles::Settles;

/// When each of the driver's jobs is next due.
#[derive(Debug, Default)]
pub(crate) struct Schedule {
    pub(crate) beat: Timestamp,
    pub(crate) rescue: Timestamp,
    /// When the record of finished jobs is next pruned (with retention on).
    pub(crate) prune: Timestamp,
    /// The soonest the stats' row counts are refreshed again for a reader.
    pub(crate) count: Timestamp,
}

/// Which jobs a driver step runs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Due {
    pub(crate) beat: bool,
    pub(crate) rescue: bool,
    pub(crate) count: bool,
    /// Remove the record's entries past the retention window.
    pub(crate) prune: bool,
}

/// The driver's jobs and the parts they use: the keeper owns its schedule and the
/// heartbeat's leases ([`Leases`]), answers the requests of [`DriverWake`], writes the row
/// counts ([`Counters::gauges`]), rings the claimer after a rescue and the settler once a
/// tick, and reads how far the writer got ([`Pushes`]) before it counts.
pub(crate) struct Keeper<T: 'static> {
    pub(crate) db: Arc<Db<T>>,
    pub(crate) counters: Arc<Counters>,
    pub(crate) leases: Arc<Leases>,
    pub(crate) pushes: Arc<Pushes>,
    pub(crate) board: Arc<Board<T>>,
    pub(crate) settles: Arc<Settles>,
    pub(crate) driver: Arc<DriverWake>,
    /// When the driver next beats, rescues, and refreshes the counts.
    pub(crate) schedule: Mutex<Schedule>,
}

impl<T: Send + 'static> Keeper<T> {
    /// One driver step (`Store::drive`): the heartbeat when due (and leases are held), the
    /// rescuer when due, the row counts when someone waits for them. Done once no queue
    /// handle is left (`handles`) and no lease is kept alive.
    pub(crate) async fn drive(&self, handles: &AtomicUsize) -> Drive {
        let db = &*self.db;
        let driver = &*self.driver;
        let vis = db.config.visibility();
        let now = db.rt.now();
        let (due, next) = {
            let mut s = self.schedule.lock();
            let beat = now >= s.beat;
            let rescue = now >= s.rescue;
            if beat {
                s.beat = after(now, db.options.beat_period(vis));
            }
            if rescue {
                s.rescue = after(now, db.options.rescue_period(vis));
            }
            // Someone waiting for an empty queue: every rescue tick. Someone reading the
            // stats: at most every `stats_every` (a count reads every row of the queue).
            // Counts older than `stats_max_age`: whoever reads them or not.
            let waiting = driver.empty_waiters.load(Ordering::Relaxed) > 0;
            let reading = now >= s.count && driver.stats_wanted.load(Ordering::Relaxed);
            let count = rescue && (waiting || reading || self.stale(now));
            if count {
                driver.stats_wanted.store(false, Ordering::Relaxed);
                s.count = after(now, db.options.stats_every);
            }
            // The record of finished jobs: pruned every tenth of its window, at least every
            // rescue period and at most every minute.
            let prune = rescue && now >= s.prune && db.options.retention.is_some();
            if let (true, Some(window)) = (prune, db.options.retention) {
                let every =
                    (window / 10).clamp(db.options.rescue_period(vis), Duration::from_secs(60));
                s.prune = after(now, every);
            }
            (
                Due {
                    beat,
                    rescue,
                    count,
                    prune,
                },
                s.beat.min(s.rescue),
            )
        };
        // An ack whose future was dropped before its first poll queued its op and ran no
        // batch: the settler task looks at least once a tick.
        self.settles.wake.notify(1);
        if due.beat || due.rescue || due.count || due.prune {
            if let Err(e) = self.step(due).await {
                db.failed("driver", e);
            }
        }
        let done = handles.load(Ordering::Acquire) == 0 && self.leases.is_empty();
        Drive {
            next: if done { Timestamp::MAX } else { next },
            done,
        }
    }

    /// Runs the jobs that are due, then the upkeep if due.
    async fn step(&self, due: Due) -> Result<(), DbError> {
        let mut client = self.db.client().await?;
        if due.beat {
            self.heartbeat(&client).await?;
        }
        if due.rescue {
            self.rescue(&mut client).await?;
        }
        if due.count {
            self.count(&client).await?;
        }
        if let (true, Some(window)) = (due.prune, self.db.options.retention) {
            let db = &*self.db;
            prune(&client, db, window).await?;
        }
        crate::upkeep::vacuum_if_due(&self.db, &self.counters);
        Ok(())
    }

    /// Extends every lease the heartbeat keeps, in one statement; marks lost the ones refused.
    async fn heartbeat(&self, client: &Client) -> Result<(), DbError> {
        let db = &*self.db;
        let (ids, leases): (Vec<i64>, Vec<i64>) = self
            .leases
            .held
            .lock()
            .iter()
            .map(|(id, h)| (*id, h.lease))
            .unzip();
        if ids.is_empty() {
            return Ok(());
        }
        let stmt = client.prepare_cached(&db.sql.heartbeat).await?;
        let rows = client
            .query(
                &stmt,
                &[&ids, &leases, &db.visibility_us(), &db.max_lease_us()],
            )
            .await?;
        let kept: HashMap<i64, i64> = rows
            .iter()
            .map(|r| (r.get(0), r.get::<_, Option<i64>>(1).unwrap_or(0)))
            .collect();
        Counters::add(&self.counters.extends, kept.len() as u64);
        let vis = db.visibility_us();
        let capped = kept.values().filter(|us| **us < vis - vis / 10).count();
        Counters::add(&self.counters.extends_capped, capped as u64);
        let mut held = self.leases.held.lock();
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
    async fn rescue(&self, client: &mut Client) -> Result<u64, DbError> {
        let db = &*self.db;
        let tx = client.transaction().await?;
        let find = tx.prepare_cached(&db.sql.expired_leases).await?;
        let rows = tx.query(&find, &[&db.queue, &1000_i64]).await?;
        let (mut ids, mut states, mut delays, mut reasons) = (vec![], vec![], vec![], vec![]);
        let mut dead = 0;
        {
            let mut policy = db.policy.lock();
            for r in &rows {
                let attempts = u32::try_from(r.get::<_, i32>(1)).unwrap_or(0);
                let expired: bool = r.get(2);
                ids.push(r.get::<_, i64>(0));
                match policy.after_failure(attempts, expired, Reason::LeaseExpired, Retry::Backoff)
                {
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
            let apply = tx.prepare_cached(&db.sql.rescue).await?;
            tx.execute(&apply, &[&ids, &states, &delays, &reasons])
                .await?;
        }
        let expire = tx.prepare_cached(&db.sql.expire_items).await?;
        let expired = tx
            .execute(&expire, &[&db.queue, &i16::from(Reason::Expired.code())])
            .await?;
        tx.commit().await?;
        let c = &self.counters;
        Counters::add(&c.lease_expired, ids.len() as u64);
        Counters::add(&c.dead_lettered, dead + expired);
        Counters::add(&c.expired, expired);
        if ids.len() as u64 > dead {
            // Back now or after their backoff: receivers here look, and other processes are
            // told once.
            self.board.wake.notify(usize::MAX);
            let _ = client
                .execute("SELECT pg_notify($1, $2)", &[&db.sql.channel, &db.queue])
                .await;
        }
        Ok(ids.len() as u64)
    }

    /// Whether the row counts are older than `Options::stats_max_age` at `now` (or were
    /// never made).
    fn stale(&self, now: Timestamp) -> bool {
        let Some(max_age) = self.db.options.stats_max_age else {
            return false;
        };
        self.counters
            .gauges
            .lock()
            .counted_at
            .is_none_or(|at| now >= at.saturating_add(max_age))
    }

    /// Counts the queue's rows by state (every process's).
    pub(crate) async fn count(&self, client: &Client) -> Result<Gauges, DbError> {
        let db = &*self.db;
        // Read before the statement: every push committed by then is in its snapshot.
        let pushes_seen = self.pushes.buf.lock().committed;
        let counted_at = Some(db.rt.now());
        let stmt = client.prepare_cached(&db.sql.counts).await?;
        let r = client.query_one(&stmt, &[&db.queue]).await?;
        let n = |i: usize| r.get::<_, i64>(i).max(0) as u64;
        let g = Gauges {
            ready: n(0),
            delayed: n(1),
            in_flight: n(2),
            dead: n(3),
            paused: r.get(4),
            pushes_seen,
            counted_at,
        };
        *self.counters.gauges.lock() = g;
        // Whoever waits for an empty queue looks at the new count.
        self.driver.counted.notify(usize::MAX);
        Ok(g)
    }
}

/// The next instant `every` after `now`.
fn after(now: Timestamp, every: Duration) -> Timestamp {
    now.saturating_add(every)
}

/// Removes the queue's history entries that finished more than `window` ago (by the
/// database's clock): each statement looks at the 10,000 oldest, until one finds an entry
/// still within the window.
async fn prune<T>(client: &Client, db: &Db<T>, window: Duration) -> Result<u64, DbError> {
    let stmt = client.prepare_cached(&db.sql.history.prune).await?;
    let mut removed = 0;
    loop {
        let n = client.execute(&stmt, &[&db.queue, &micros(window)]).await?;
        removed += n;
        if n < 10_000 {
            return Ok(removed);
        }
    }
}
