//! [`PgStore`]: the state one process keeps for one queue, shared with its background
//! tasks, and [`PgTicket`], a held lease. The `Store` impl is in `seam.rs`; the tasks in
//! `writer.rs`, `claim.rs`, `settle.rs`; the driver step in `keeper.rs`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Object, Pool};
use event_listener::Event;
use leaseq_async::{Codec, LeaseSignal, Runtime};
use leaseq_core::{Config, RetryPolicy, Timestamp};
use leaseq_tokio::TokioRuntime;
use parking_lot::Mutex;

use crate::claim::ClaimBoard;
use crate::counters::Counters;
use crate::error::DbError;
use crate::options::Options;
use crate::settle::SettleQueue;
use crate::sql::Sql;
use crate::writer::PushBuffer;

/// A lease held from a [`PgStore`]: the row and its fencing token. Every statement that
/// settles or extends it matches the token, so a holder whose lease was taken over by
/// another worker changes nothing.
#[derive(Debug)]
pub struct PgTicket {
    pub(crate) id: i64,
    pub(crate) lease: i64,
    pub(crate) attempts: u32,
    pub(crate) expires_at: Option<Timestamp>,
    /// The lease-lost signal, while the heartbeat keeps this lease.
    pub(crate) beat: Option<Arc<LeaseSignal>>,
    /// The item's checkpoint as the claim read it, then as this holder recorded it.
    pub(crate) progress: Option<leaseq_async::Progress>,
}

impl PgTicket {
    /// The fencing token: the number of leases issued on the item, this one included (a
    /// redrive from the dead letters counts as one, so that no earlier lease settles it).
    pub fn fencing_token(&self) -> i64 {
        self.lease
    }
}

/// A lease the heartbeat keeps alive.
#[derive(Debug)]
pub(crate) struct Held {
    pub(crate) lease: i64,
    pub(crate) signal: Arc<LeaseSignal>,
}

/// What the process's background tasks share with the store handles.
pub(crate) struct Shared<T: 'static> {
    pub(crate) queue: String,
    pub(crate) sql: Sql,
    pub(crate) pool: Pool,
    pub(crate) rt: TokioRuntime,
    pub(crate) config: Config,
    pub(crate) options: Options,
    pub(crate) codec: Box<dyn Codec<T>>,
    pub(crate) policy: Mutex<RetryPolicy>,
    pub(crate) counters: Counters,
    /// Set when the last store handle is gone: the tasks finish what was queued and end.
    pub(crate) stopped: AtomicBool,
    pub(crate) closed: AtomicBool,
    pub(crate) pushes: Mutex<PushBuffer>,
    /// Wakes the writer (rows queued, or stop).
    pub(crate) push_queued: Event,
    /// Wakes whoever waits for a commit of pushes or for room to push.
    pub(crate) push_committed: Event,
    pub(crate) board: Mutex<ClaimBoard<T>>,
    /// Wakes the claimer (a receiver waits, items may have come, or stop).
    pub(crate) claim_wake: Event,
    pub(crate) settles: Mutex<SettleQueue>,
    /// Wakes the settler.
    pub(crate) settle_queued: Event,
    /// Settling batches running now (at most `acks_in_flight`).
    pub(crate) settling: AtomicUsize,
    /// Leases kept alive by the heartbeat, by row id.
    pub(crate) held: Mutex<HashMap<i64, Held>>,
    /// Wakes the driver.
    pub(crate) driver_wake: Event,
    /// Waiters for an empty queue (the driver counts rows while there are any).
    pub(crate) empty_waiters: AtomicUsize,
    pub(crate) empty: Event,
    /// Set when someone read the stats: the driver counts rows at its next rescue tick.
    pub(crate) stats_wanted: AtomicBool,
    /// How to connect (the listener and `try_take`'s thread make their own connections).
    pub(crate) pg_config: tokio_postgres::Config,
    /// The TLS connector of every connection (`tls.rs`).
    pub(crate) tls: crate::tls::MakeRustlsConnect,
    /// The last database error a background task met (it retries), for operators.
    pub(crate) last_error: Mutex<Option<String>>,
}

impl<T: 'static> Shared<T> {
    /// A connection from the pool.
    pub(crate) async fn client(&self) -> Result<Object, DbError> {
        self.pool.get().await.map_err(|e| match e {
            deadpool_postgres::PoolError::Backend(e) => DbError::Db(e),
            other => DbError::pool("no connection from the pool", other),
        })
    }

    /// Records a background task's error (it will retry), with its causes.
    pub(crate) fn failed(&self, what: &str, e: impl std::error::Error) {
        self.said(format!("{what}: {}", leaseq_async::ErrorChain(&e)));
    }

    /// Records what a background task has to say (as [`failed`](Self::failed) does).
    pub(crate) fn said(&self, message: String) {
        #[cfg(feature = "tracing")]
        tracing::warn!(queue = %self.queue, error = %message, "leaseq-postgres: database error, retrying");
        *self.last_error.lock() = Some(message);
    }

    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// The runtime's time `micros` from now (negative: in the past).
    pub(crate) fn local_in(&self, micros: i64) -> Timestamp {
        let now = self.rt.now();
        if micros >= 0 {
            now.saturating_add(Duration::from_micros(micros as u64))
        } else {
            now.saturating_sub(Duration::from_micros(micros.unsigned_abs()))
        }
    }

    /// The visibility, in microseconds.
    pub(crate) fn visibility_us(&self) -> i64 {
        micros(self.config.visibility())
    }

    /// The max lease, in microseconds (`i64::MAX / 2`: none).
    pub(crate) fn max_lease_us(&self) -> i64 {
        self.config.max_lease().map_or(i64::MAX / 2, micros)
    }

    /// Queues the leases claimed ahead to go back, their attempt not counted.
    pub(crate) fn put_back_prefetched(&self) {
        let ahead: Vec<(i64, i64)> = {
            let mut board = self.board.lock();
            let ahead = board.prefetched.drain(..);
            ahead.map(|t| (t.ticket.id, t.ticket.lease)).collect()
        };
        if !ahead.is_empty() {
            self.settles.lock().unclaims.extend(ahead);
            self.settle_queued.notify(1);
        }
    }

    /// Wakes every background task so that it notices `stopped` or `closed`.
    pub(crate) fn wake_all(&self) {
        self.push_queued.notify(usize::MAX);
        self.push_committed.notify(usize::MAX);
        self.claim_wake.notify(usize::MAX);
        self.settle_queued.notify(usize::MAX);
        self.driver_wake.notify(usize::MAX);
        self.empty.notify(usize::MAX);
    }
}

/// A duration in microseconds, saturating.
pub(crate) fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

/// A queue's store in one process: many processes on many machines open the same queue
/// (same schema and name) and share its items. Open one with [`Postgres`](crate::Postgres).
pub struct PgStore<T: 'static> {
    pub(crate) shared: Arc<Shared<T>>,
    pub(crate) handles: AtomicUsize,
    /// The queue's name as traces and metrics carry it (leaked once per open).
    pub(crate) name: &'static str,
    /// When the driver next beats, rescues, and refreshes the counts.
    pub(crate) schedule: Mutex<crate::keeper::Schedule>,
    pub(crate) blocking: crate::blocking::BlockingTaker<T>,
}

impl<T: 'static> std::fmt::Debug for PgStore<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("queue", &self.shared.queue)
            .field("schema", &self.shared.options.schema)
            .finish_non_exhaustive()
    }
}

impl<T: 'static> Drop for PgStore<T> {
    fn drop(&mut self) {
        // The settler drains its queue before it ends.
        self.shared.put_back_prefetched();
        self.shared.stopped.store(true, Ordering::Release);
        self.shared.wake_all();
    }
}
