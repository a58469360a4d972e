//! The connection pool and the settings of one open queue: what every job of the store
//! reads and none changes after open (the queue's name, its statements, the pool, the
//! runtime, the config and options, the codec, the TLS connector), plus the two pieces
//! written while it runs, each behind its own lock:
//!
//! - `policy`: the core's retry policy (its jitter's state), written by whoever decides a
//!   failed attempt's fate: the fenced nack (`settle.rs`) and the rescuer (`keeper.rs`);
//! - `last_error`: written by every job through [`Db::failed`] (an error with its causes)
//!   or [`Db::said`], read by operators (`PgStore::last_error`) and by a push that gives up
//!   waiting for its commit.
//!
//! Also how a statement runs on a connection: pooled (prepared once per connection) or the
//! caller's own ([`run_on`]). A leaf: it names no other part and no job.

use std::time::Duration;

use deadpool_postgres::{Client, Object, Pool};
use leaseq_async::{Codec, Runtime};
use leaseq_core::{Config, RetryPolicy, Timestamp};
use leaseq_tokio::TokioRuntime;
use parking_lot::Mutex;
use tokio_postgres::types::ToSql;
use tokio_postgres::{GenericClient, Row};

use crate::error::DbError;
use crate::options::Options;
use crate::sql::Sql;

/// The pool and settings of one open queue (see the file's header for who writes what).
pub(crate) struct Db<T: 'static> {
    pub(crate) queue: String,
    pub(crate) sql: Sql,
    pub(crate) pool: Pool,
    pub(crate) rt: TokioRuntime,
    pub(crate) config: Config,
    pub(crate) options: Options,
    pub(crate) codec: Box<dyn Codec<T>>,
    pub(crate) policy: Mutex<RetryPolicy>,
    /// The TLS connector of every connection (`tls.rs`; the listener and the blocking
    /// thread make their own connections with it).
    pub(crate) tls: crate::tls::MakeRustlsConnect,
    /// The last database error a background task met (it retries), for operators.
    pub(crate) last_error: Mutex<Option<String>>,
    /// Whether the queue has flow control (a row in `flow_queues`): claims then go through
    /// the flow claim (`flow_claim.rs`). Read at open; written by the claimer when its probe
    /// or the flow claim says otherwise, and by this process's `FlowControl` calls.
    pub(crate) flowed: std::sync::atomic::AtomicBool,
    /// The flow claims in a row that a queue limit's full slots held back: the claimer's
    /// next look waits longer with each (`flow_claim.rs`). Written by the claimer only.
    pub(crate) held_in_a_row: std::sync::atomic::AtomicU32,
    /// Whether the last flow claim came back short because a concurrency limit held items
    /// back (`flow_claim.rs`): what `Store::limit_binds` answers, so that a pool's fetcher
    /// leases ahead less. Written by the flow claims, cleared when the store leaves them
    /// (`set_flowed(false)`).
    pub(crate) limit_binds: std::sync::atomic::AtomicBool,
}

impl<T: 'static> Db<T> {
    /// Whether claims go through the flow claim now.
    pub(crate) fn is_flowed(&self) -> bool {
        self.flowed.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Notes whether the queue has flow control. Without it no limit binds: only a flow
    /// claim says one does (`flow_claim.rs`), so the last one's word goes with it.
    pub(crate) fn set_flowed(&self, on: bool) {
        self.flowed.store(on, std::sync::atomic::Ordering::Relaxed);
        if !on {
            self.limit_binds
                .store(false, std::sync::atomic::Ordering::Relaxed);
        }
    }

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
}

/// A duration in microseconds, saturating.
pub(crate) fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

/// Runs `q`, one of this crate's statements, on a pooled connection (prepared once per
/// connection) or on the caller's own client or transaction (prepared each time).
pub(crate) async fn run_on<C: GenericClient + Sync>(
    client: Conn<'_, C>,
    q: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>, tokio_postgres::Error> {
    match client {
        Conn::Pooled(c) => {
            let stmt = c.prepare_cached(q).await?;
            c.query(&stmt, params).await
        }
        Conn::Caller(c) => c.query(q, params).await,
    }
}

/// A connection a statement runs on: pooled, or the caller's (its own transaction).
pub(crate) enum Conn<'a, C> {
    /// One of the store's pooled connections.
    Pooled(&'a Client),
    /// The caller's client or transaction.
    Caller(&'a C),
}

impl<C> Clone for Conn<'_, C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<C> Copy for Conn<'_, C> {}

/// A pooled connection as a [`Conn`].
pub(crate) fn pooled(client: &Client) -> Conn<'_, tokio_postgres::Client> {
    Conn::Pooled(client)
}
