//! [`Options`]: where the queue lives in the database and how often the store talks to it.

use std::time::Duration;

/// How a [`PgStore`](crate::PgStore) runs: the schema its tables live in, and the periods
/// and batch sizes of its background work. Every field has a default meant for production;
/// tests shorten the periods.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// The schema holding leaseq's tables (created if missing). Default `"leaseq"`. Several
    /// named queues share one schema's tables.
    pub schema: String,
    /// How often the heartbeat extends every held lease (one statement for all of them).
    /// Default: a third of the visibility. The queue builder's `heartbeat_every`, if set,
    /// replaces it.
    pub heartbeat_every: Option<Duration>,
    /// How often the rescuer looks for leases that ran out (in any process) and items whose
    /// time to live passed. Default: the heartbeat period, at most one second.
    pub rescue_every: Option<Duration>,
    /// How long a waiting receiver goes without asking the database when no notification
    /// came (items made visible by another process's nack or backoff are seen by then).
    /// Default 1 s.
    pub poll_interval: Duration,
    /// Most items one claim statement takes (the receivers waiting in this process share
    /// it). Default 256.
    pub max_claim: usize,
    /// Claims running at once (each on its own pooled connection), so that receivers do not
    /// wait in lockstep behind one round trip. Default 4.
    pub claims_in_flight: usize,
    /// Ack batches running at once (each on its own pooled connection). Default 4. Of
    /// them, at most half (rounded up) carry acks of jobs with dependencies (their told
    /// statement's fixed work is paid per statement, so those acks are taken together:
    /// `settler.rs`); acks of jobs without dependencies may use every one.
    pub acks_in_flight: usize,
    /// Leases to claim ahead of the receivers waiting, kept in the process for the next
    /// receives (which then need no round trip): for code that receives one item at a
    /// time without a [`Pool`](leaseq_async::Pool) (a pool's fetcher prefetches itself, see
    /// [`PoolBuilder::prefetch`](leaseq_async::PoolBuilder::prefetch); both together only
    /// hold more leases idle). A lease claimed
    /// ahead runs from its claim, so one with less than half its visibility left is put
    /// back (attempt not counted) instead of handed out; all go back when the queue
    /// closes. Default 0 (none).
    pub prefetch: usize,
    /// Most rows one insert statement carries. Default 2,048.
    pub max_push_batch: usize,
    /// Pushes accepted but not yet committed, past which `try_push` refuses with
    /// [`PushError::Full`](leaseq_async::PushError::Full) and `push` waits: backpressure
    /// when the database is slower than the producers (or down). Default 65,536.
    pub max_pending_pushes: usize,
    /// Connections in the store's pool (the claimer, the writer, the settler, the driver and
    /// the operator's calls share it; the notification listener has one of its own).
    /// Default 12: the writer, `claims_in_flight` claims, `acks_in_flight` ack batches, the
    /// driver and two to spare.
    pub pool_size: usize,
    /// How long to wait for a connection to the server. Default 5 s.
    pub connect_timeout: Duration,
    /// How often, at most, the driver counts the queue's rows for the stats' gauges while
    /// someone reads the stats (a count reads every row of the queue; a wait for an empty
    /// queue counts every rescue tick regardless). Default 2 s.
    pub stats_every: Duration,
    /// The oldest the stats' row counts (`ready`, `delayed`, `in_flight`, `dead`) may get:
    /// the driver counts the queue's rows at its first rescue tick after the last count is
    /// this old, whether or not anyone reads the stats. So while the driver runs and the
    /// database answers, `stats()` is never older than this plus one rescue period (and the
    /// count's own statement); [`PgStore::stats_age`](crate::PgStore::stats_age) says how
    /// old it is. `None`: counted only while someone reads the stats (see
    /// [`stats_every`](Self::stats_every)) or waits for an empty queue. Each count reads
    /// every row of the queue, once per process. Default 10 s.
    pub stats_max_age: Option<Duration>,
    /// After this many rows removed by this process, the store runs a `VACUUM` of the items
    /// table (one process at a time, by an advisory lock), so acked rows do not pile up as
    /// dead tuples between autovacuum runs. `0` turns it off. Default 5,000.
    pub vacuum_after_rows: u64,
    /// After each of its `VACUUM`s, the store rebuilds (`REINDEX INDEX CONCURRENTLY`: pushes,
    /// claims and acks go on meanwhile) every index of the items table that takes more than
    /// about twice the space its live entries need: B-tree indexes whose keys only grow do not
    /// shrink back by `VACUUM` alone. Needs the table's owner (or `MAINTAIN`). Default `true`.
    pub rebuild_bloated_indexes: bool,
    /// How long an awaited push (or an ack) waits while the store's statements fail (the
    /// server unreachable, connections reset) before it fails with an "outcome unknown"
    /// [`StoreError`](leaseq_async::StoreError): a push with
    /// [`PushError::Unconfirmed`](leaseq_async::PushError::Unconfirmed) (its row stays
    /// queued and is inserted once the server answers), an ack with `SettleError::Store`
    /// (not done if it was never sent; the lease then runs out and the item comes back).
    /// Healthy statements are never timed out, however slow. Default: 30 s.
    pub commit_timeout: Duration,
    /// The largest item accepted, in bytes of its encoded form (the codec's output): a
    /// larger push is refused with [`PushError::TooLarge`](leaseq_async::PushError::TooLarge),
    /// the item handed back and nothing stored. A row read back larger than this (written
    /// by a process with a higher limit, or by hand) is never loaded: a claim dead-letters
    /// it (reason `Undecodable`, the sizes in its error) and the dead-letter listing shows
    /// its item as a decode error. Default 256 KiB: SQS's limit for years (1 MiB since
    /// 2025; Pub/Sub's is 10 MB), and it keeps one claim's reply within
    /// [`max_claim`](Self::max_claim) x 256 KiB (64 MiB at the default); large payloads
    /// belong in object storage, the queue carrying their key.
    pub max_item_size: usize,
    /// Whether opening records the queue's limits ([`max_item_size`](Self::max_item_size)
    /// and the `Config`'s capacity) in the schema's `queue_settings` table, where the SQL
    /// functions `push_item` and `push_job` read them (the crate docs, "Push in your
    /// transaction"). Every process of a queue should open it with the same limits; the
    /// last open's are recorded. Turn it off for a tool that opens a queue with limits of
    /// its own (the `leaseq` command line does). Default `true`.
    pub record_limits: bool,
    /// How long the record of finished jobs keeps each entry (`None`: no record, the
    /// default). With it, every ack, dead letter, cancel and expiry of this process writes
    /// an entry in the schema's `history` table in its own statement (the item's kind,
    /// attempts, pushed / first started / finished times, last attempt's duration, outcome
    /// and last error), read with [`PgStore::history`](crate::PgStore::history) and
    /// [`PgInspector::history`](crate::PgInspector::history); the store's driver removes
    /// entries older than this, a batch at a time. Every process of a queue should open it
    /// with the same setting (a process without it writes no entry, and its claims do not
    /// note a first start). Off by default: the table then grows with the throughput times
    /// the window, and each finish costs an insert (BENCHMARKS.md, "Postgres: the record of
    /// finished jobs").
    pub retention: Option<Duration>,
    /// The TLS parameters an open of a [`Postgres`](crate::Postgres) given a connection
    /// string read from it (which `tokio-postgres`'s configuration cannot carry); `None`:
    /// from the configuration's `sslmode` ([`open_with`](crate::open::open_with)).
    pub(crate) tls: Option<crate::conninfo::TlsParams>,
}

/// The default [`Options::max_item_size`]: 256 KiB.
pub const DEFAULT_MAX_ITEM_SIZE: usize = 256 * 1024;

impl Default for Options {
    fn default() -> Self {
        Options {
            schema: "leaseq".to_string(),
            heartbeat_every: None,
            rescue_every: None,
            poll_interval: Duration::from_secs(1),
            max_claim: 256,
            claims_in_flight: 4,
            prefetch: 0,
            acks_in_flight: 4,
            max_push_batch: 2048,
            max_pending_pushes: 65_536,
            pool_size: 12,
            connect_timeout: Duration::from_secs(5),
            stats_every: Duration::from_secs(2),
            stats_max_age: Some(Duration::from_secs(10)),
            vacuum_after_rows: 5_000,
            rebuild_bloated_indexes: true,
            commit_timeout: Duration::from_secs(30),
            max_item_size: DEFAULT_MAX_ITEM_SIZE,
            record_limits: true,
            retention: None,
            tls: None,
        }
    }
}

impl Options {
    /// The default options.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets [`schema`](Self::schema).
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }
    /// Sets [`heartbeat_every`](Self::heartbeat_every).
    pub fn heartbeat_every(mut self, every: Duration) -> Self {
        self.heartbeat_every = Some(every);
        self
    }
    /// Sets [`rescue_every`](Self::rescue_every).
    pub fn rescue_every(mut self, every: Duration) -> Self {
        self.rescue_every = Some(every);
        self
    }
    /// Sets [`poll_interval`](Self::poll_interval).
    pub fn poll_interval(mut self, every: Duration) -> Self {
        self.poll_interval = every;
        self
    }
    /// Sets [`max_claim`](Self::max_claim).
    pub fn max_claim(mut self, n: usize) -> Self {
        self.max_claim = n;
        self
    }
    /// Sets [`max_push_batch`](Self::max_push_batch).
    pub fn max_push_batch(mut self, n: usize) -> Self {
        self.max_push_batch = n;
        self
    }
    /// Sets [`max_pending_pushes`](Self::max_pending_pushes).
    pub fn max_pending_pushes(mut self, n: usize) -> Self {
        self.max_pending_pushes = n;
        self
    }
    /// Sets [`claims_in_flight`](Self::claims_in_flight).
    pub fn claims_in_flight(mut self, n: usize) -> Self {
        self.claims_in_flight = n;
        self
    }
    /// Sets [`prefetch`](Self::prefetch).
    pub fn prefetch(mut self, n: usize) -> Self {
        self.prefetch = n;
        self
    }
    /// Sets [`acks_in_flight`](Self::acks_in_flight).
    pub fn acks_in_flight(mut self, n: usize) -> Self {
        self.acks_in_flight = n;
        self
    }
    /// Sets [`pool_size`](Self::pool_size).
    pub fn pool_size(mut self, n: usize) -> Self {
        self.pool_size = n;
        self
    }
    /// Sets [`connect_timeout`](Self::connect_timeout).
    pub fn connect_timeout(mut self, d: Duration) -> Self {
        self.connect_timeout = d;
        self
    }
    /// Sets [`stats_every`](Self::stats_every).
    pub fn stats_every(mut self, every: Duration) -> Self {
        self.stats_every = every;
        self
    }
    /// Sets [`stats_max_age`](Self::stats_max_age) (`None`: no count without a reader).
    pub fn stats_max_age(mut self, age: Option<Duration>) -> Self {
        self.stats_max_age = age;
        self
    }
    /// Sets [`vacuum_after_rows`](Self::vacuum_after_rows).
    pub fn vacuum_after_rows(mut self, n: u64) -> Self {
        self.vacuum_after_rows = n;
        self
    }
    /// Sets [`commit_timeout`](Self::commit_timeout).
    pub fn commit_timeout(mut self, d: Duration) -> Self {
        self.commit_timeout = d;
        self
    }
    /// Sets [`max_item_size`](Self::max_item_size) (at least 1).
    pub fn max_item_size(mut self, bytes: usize) -> Self {
        self.max_item_size = bytes.max(1);
        self
    }
    /// Sets [`record_limits`](Self::record_limits).
    pub fn record_limits(mut self, record: bool) -> Self {
        self.record_limits = record;
        self
    }
    /// Sets [`retention`](Self::retention): keep a record of finished jobs for `window`.
    pub fn retention(mut self, window: Duration) -> Self {
        self.retention = Some(window);
        self
    }
    /// Sets [`rebuild_bloated_indexes`](Self::rebuild_bloated_indexes).
    pub fn rebuild_bloated_indexes(mut self, rebuild: bool) -> Self {
        self.rebuild_bloated_indexes = rebuild;
        self
    }

    /// The heartbeat period for a visibility.
    pub(crate) fn beat_period(&self, visibility: Duration) -> Duration {
        self.heartbeat_every
            .unwrap_or(visibility / 3)
            .max(Duration::from_millis(1))
    }

    /// The rescuer period for a visibility.
    pub(crate) fn rescue_period(&self, visibility: Duration) -> Duration {
        self.rescue_every
            .unwrap_or_else(|| self.beat_period(visibility).min(Duration::from_secs(1)))
            .max(Duration::from_millis(1))
    }
}
