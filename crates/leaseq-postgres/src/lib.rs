//! `leaseq-postgres`: a leaseq store on PostgreSQL. Many processes on many machines share
//! one queue, with the same [`LeaseQueue`], [`Delivery`](leaseq_async::Delivery) and
//! [`Pool`](leaseq_async::Pool) API as the in-memory queue: receipt-checked (fenced) acks,
//! exact late-ack accounting, heartbeats with a lease-lost signal and a lifetime cap,
//! attempts counted on every way back, backoff with jitter, dead letters with reason and
//! error, per-item timeouts, the watchdog and the stats.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use leaseq_postgres::{Options, PgQueue, PostcardCodec, Postgres};
//! use leaseq_tokio::{Config, LeaseQueue};
//!
//! let config = Config::new(Duration::from_secs(30)).with_max_attempts(5);
//! let url = "host=127.0.0.1 user=postgres dbname=app";
//! let queue: PgQueue<String> = LeaseQueue::builder(config)
//!     .name("invoices")
//!     .codec(PostcardCodec)
//!     .open(Postgres::url(url).options(Options::new()))
//!     .await?;
//! queue.push("send invoice 981".to_string()).await?; // committed once it returns
//! let delivery = queue.receive().await.unwrap(); // leased to this process, fenced
//! delivery.ack().await?; // the row is gone once it returns (if the lease was still ours)
//! # Ok(()) }
//! ```
//!
//! # Runtime
//!
//! tokio only, and not by a small change. The client itself needs only a socket
//! (`tokio_postgres::Config::connect_raw` takes any stream with tokio's I/O traits, which a
//! smol `TcpStream` gets through a compat layer), but the store around it is tokio's
//! throughout: its connections are pooled by `deadpool-postgres`, whose manager connects
//! with tokio's `TcpStream` and `tokio::spawn`s each connection's future; the store's own
//! tasks (writer, claimer, settler, listener) are spawned on the tokio handle and pace
//! their retries and waits with `tokio::time` (twenty-odd call sites in twelve files); and
//! `try_receive` and keyed pushes run on a helper thread with its own current-thread tokio
//! runtime. Running on smol would mean a pool of our own over `connect_raw` and every timer
//! moved onto the [`Runtime`](leaseq_async::Runtime) seam: the direction of STYLE.md 1, not
//! a small change. The queue, deliveries and pools are the runtime-agnostic ones of
//! `leaseq-async` on [`TokioRuntime`]; the open runs on the builder's tokio runtime
//! whichever executor awaits it.
//!
//! # How it works
//!
//! One table (`items`, in [`Options::schema`]) holds every queue of the schema; a row is an
//! item, waiting (`state` 0, claimable from `visible_at`), leased (1, until `deadline`) or
//! a dead letter (2); its `reason` is a [`Reason::code`](leaseq_async::Reason::code), named
//! for SQL readers by the `reasons` table and the `dead_letters` view of the schema. In each
//! process, per queue:
//!
//! - **Pushes** are queued with their id (an instance number from a database sequence,
//!   shifted, plus a counter: unique across processes with no round trip) and inserted by
//!   one writer task, everything queued in one statement (group commit).
//!   `push(..).await` returns once its row is committed; `try_push` is fire and forget.
//!   One `NOTIFY` per batch tells other processes. A failed insert is retried, and a retry
//!   after a lost reply never inserts a row twice, even one acked since: the same statement
//!   raises the writer instance's committed-id watermark (`writer_marks`) and inserts only
//!   ids above it (`writer.rs` says why this holds with concurrent processes).
//! - **Receives** post what they want on a claim board; one claimer task takes it all with
//!   one `UPDATE .. WHERE id = ANY(ARRAY(SELECT .. FOR UPDATE SKIP LOCKED LIMIT n))` (the
//!   form that keeps the index once prepared), bumping each row's **fencing token**
//!   (`lease`) and attempt. Undecodable rows become dead letters (reason `Undecodable`,
//!   the decode error kept) instead of deliveries. Idle, it waits for a push here, a
//!   notification (`LISTEN`), the soonest delayed item, or [`Options::poll_interval`].
//! - **Acks** of all workers are batched by a settler task into one
//!   `DELETE .. USING unnest(ids, tokens)`; nacks, dead letters and extensions are one
//!   statement each. Every one matches the fencing token: a holder whose lease was taken
//!   over changes nothing and gets the typed stale result
//!   (`SettleError::Stale(ReceiptError::Redelivered)`). A late ack is accepted
//!   while nobody claimed the item since (`Acked::LateUnclaimed`, counted).
//! - **The driver** (the shared layer's, one per queue) runs the **heartbeat**: every lease
//!   of this process that asked for one, extended in one statement per tick, never past
//!   `leased_at + max_lease` (so a hung handler that keeps heart-beating is still taken
//!   back); a refused lease fires its lease-lost signal. It also runs the **rescuer**: leases
//!   of any process that ran out (a killed process stops extending) go back with the
//!   attempt counted, after the core's backoff, or to the dead letters, by the core's own
//!   [`RetryPolicy`](leaseq_core::RetryPolicy) (no policy in SQL); items past their time to
//!   live become dead letters (`Expired`).
//! - **Ack in your transaction**: [`PgStore::ack_in`] runs the fenced delete on your
//!   `Transaction`, so the work's result and the ack commit together or not at all.
//! - **Push in your transaction**: [`PgStore::push_in`] inserts on your transaction (or
//!   SQL's `push_job` / `push_item` on any session), so the item exists only if it commits
//!   (below).
//! - **Schedules** (`leaseq_async::Scheduler`): each schedule's cursor is a row of the
//!   `schedules` table (schema version 7). A scheduler step is one transaction: the row
//!   updated only where its cursor is the one the step read (or inserted if it read none),
//!   the ticks inserted as keyed pushes, the stale ticks pushed ahead dead-lettered
//!   (`Expired`); a step another process overtook changes nothing and plans again. So any
//!   number of processes run one schedule, each tick inserted once, and a restart after
//!   every process died resumes from the row.
//!
//! Every deadline is the database's clock (`clock_timestamp()`); durations travel as
//! microseconds, so the machines' clocks may disagree.
//!
//! # Push in your transaction
//!
//! A job that must exist if and only if the application's own change commits (an order
//! paid, then its receipt mailed) is pushed in the same transaction, as River's
//! `InsertTx`, graphile-worker's `add_job` or Oban's inserts in a transaction do:
//!
//! ```no_run
//! # async fn f(queue: leaseq_postgres::PgQueue<String>, mut db: tokio_postgres::Client)
//! # -> Result<(), Box<dyn std::error::Error>> {
//! use leaseq_async::Push;
//!
//! let tx = db.transaction().await?;
//! tx.execute("UPDATE orders SET paid = true WHERE id = $1", &[&981_i64]).await?;
//! let id = queue
//!     .store()
//!     .push_in(&tx, "mail receipt 981".to_string(), Push::new().key("receipt:981"))
//!     .await?;
//! tx.commit().await?; // the order and its job, together; a rollback leaves neither
//! # let _ = id; Ok(()) }
//! ```
//!
//! [`PgStore::push_in`] and [`PgStore::push_batch_in`] take a [`TxClient`]: a
//! `tokio_postgres` or `deadpool_postgres` transaction (or client: then the push commits
//! by itself), and with the feature `sqlx` a `&mut sqlx::Transaction<'_, Postgres>` or
//! `&mut PgConnection`. The item is encoded by the queue's codec and checked as every push
//! is ([`TxPushError`], the item handed back, the transaction left usable): the size limit,
//! the priority, the key's length, the time to live before anything is sent, then, in one
//! statement on your transaction, the capacity (room taken from the queue's ledger, as
//! `capacity.rs` does for every insert; your transaction's own pushes count, and it holds
//! the ledger's row until it ends: keep it short, and await no plain push of that queue
//! inside it) and a held key ([`TxPushError::DuplicateKey`] names the
//! holder). The `NOTIFY` that wakes idle workers of every process is sent in your
//! transaction, so Postgres delivers it at the commit, and never on a rollback.
//!
//! Ids: a transactional push's id comes from the schema's `tx_ids` sequence, from `2^62`
//! up, while a store's ids are `instance << 32 | counter` with instances capped below
//! `2^30` (schema version 6): the two never meet, and no writer's committed-id watermark
//! covers a transactional id.
//!
//! **From SQL** (a trigger, `psql`, another language), the schema's functions push one
//! item in the caller's transaction and return its id:
//!
//! ```sql
//! -- A job of a router queue (leaseq_async::router): its kind and JSON args, stored in the
//! -- envelope the router reads (the kind's length, the kind, the args' JSON text).
//! SELECT leaseq.push_job('emails', 'send_email', '{"to": "ann@example.com"}',
//!                        delay => '5 minutes', priority => 3, key => 'welcome:ann',
//!                        ttl => '1 day', replace_pending => false);
//! -- Bytes, for a queue of another codec (the codec's encoding, made by the caller).
//! SELECT leaseq.push_item('thumbnails', '\x0a0b0c'::bytea);
//! -- A throttle: the key held for an hour after the push, whatever the job does
//! -- (key_window: 'live' (the default), 'queued', 'period' or 'live_then', as
//! -- Push::key_window; key_period for the last two).
//! SELECT leaseq.push_job('reports', 'daily', '{}', key => 'report:7',
//!                        key_window => 'period', key_period => '1 hour');
//! -- In a trigger: the job commits or rolls back with the row.
//! CREATE FUNCTION order_paid() RETURNS trigger LANGUAGE plpgsql AS $$
//! BEGIN
//!     PERFORM leaseq.push_job('emails', 'receipt', jsonb_build_object('order', NEW.id));
//!     RETURN NEW;
//! END $$;
//! ```
//!
//! ```text
//! $ psql "host=db user=app dbname=app" -c "SELECT leaseq.push_job('emails', 'send_email', '{\"to\": \"ann@example.com\"}')"
//!       push_job
//! ---------------------
//!  4611686018427387905
//! (1 row)
//! ```
//!
//! Every parameter after the first three has a default (no delay, priority 0, no key, no
//! time to live, the key held while the item is live). The functions apply the Rust API's checks and raise each refusal as an
//! error with a message naming the limit and its own SQLSTATE: `42704` a queue no process
//! has opened (or a mistyped name), `54000` over the queue's max item size, `53400` the
//! queue is full, `23505` the key is held (the holder's id in the message and `DETAIL`),
//! `22003` a priority outside 0..7, `22001` a key over 64 bytes, `22023` a negative delay,
//! a time to live not longer than the delay, an unknown key window or one without its period, or a kind not 1 to 255 bytes, `22004` NULL
//! args or payload, `0A000` a bounded queue's push outside `READ COMMITTED`, `40001` a
//! key's holder that kept changing (retry). The limits are the queue's processes': each
//! open records [`Options::max_item_size`] and the `Config`'s capacity in the schema's
//! `queue_settings` table (one row per queue; the last open's; see
//! [`Options::record_limits`]), which an operator may also write by hand. Both functions
//! call `push_rows` (the statement the Rust API runs with its own limits), so the two
//! paths share one implementation.
//!
//! # Jobs that wait for other jobs
//!
//! [`PgStore`] implements [`DependencyStore`](leaseq_async::dependencies::DependencyStore)
//! (issue 33): a job pushed after others ([`push_after`](leaseq_async::dependencies::DependencyStore::push_after)),
//! a workflow of named steps pushed in one transaction (checked for cycles by the core's
//! [`WorkflowSpec`](leaseq_async::dependencies::WorkflowSpec) before anything is sent), a
//! batch with one callback, and small results its dependents read. The graph lives in the
//! schema's own tables (step 10: `graph_nodes`, `graph_edges`, `graph_shards`,
//! `graph_workflows`, `graph_batches`), shared by every process of the queue, with the core's rules for when a
//! job runs and what a failed parent does to it.
//!
//! A job that waits is not an `items` row yet. Each released job's row carries its node
//! (`items.node`), and every statement that deletes a row or moves it to or from the dead
//! letters returns the row's node and, when one of its rows has one, tells the graph in that
//! same statement (schema step 13, `graph_told`, once per statement, set-based): the ack that
//! deletes a last parent's row also inserts the dependent's row (and counts a batch child),
//! in the same transaction; a dead letter, a cancel or a redrive moves it too. So no receiver
//! sees a parent's ack without its dependents, a crash or a lost reply never releases a job
//! before the ack commits, and nothing is released twice (the re-run ack is fenced and finds
//! no row). Jobs without dependencies have `node` NULL: no trigger runs for them (step 13
//! dropped step 10's two), their statements call no graph function and touch no graph table
//! (BENCHMARKS.md, round 9, measures it).
//!
//! ```no_run
//! # async fn f(queue: leaseq_postgres::PgQueue<String>) -> Result<(), Box<dyn std::error::Error>> {
//! use leaseq_async::dependencies::{BatchOn, DependencyStore};
//!
//! let emails: Vec<String> = (0..500).map(|i| format!("mail {i}")).collect();
//! let batch = queue.store().push_batch(emails, "report".into(), BatchOn::Complete).await?;
//! // ... workers ack the mails; the report runs once, after the last one, in its commit.
//! let counts = queue.store().batch_counts(batch).await?;
//! # let _ = counts; Ok(()) }
//! ```
//!
//! Deletes that are not acks (a cancel, a purge, a replaced keyed push) say so to the
//! trigger with the transaction-local setting `leaseq.fate = 'cancel'`; a row deleted from
//! SQL by other means counts as acked. A bounded queue refuses dependencies
//! ([`DependencyError::Bounded`](leaseq_async::dependencies::DependencyError::Bounded)),
//! as the memory store does. A worker role needs the step's grants ([`WORKER_GRANTS`]).
//!
//! # Table size
//!
//! Acked rows are deleted, never kept; claims and settles update rows in place. Dead
//! tuples are reclaimed by autovacuum, tuned per table (a fixed threshold of 5,000 dead
//! rows instead of a fraction of the table), and by the store itself, as autovacuum may be
//! off: after [`Options::vacuum_after_rows`] rows removed by a process, it runs its upkeep
//! off the hot path (one per process at a time, one per schema by an advisory lock):
//! `VACUUM (INDEX_CLEANUP ON, TRUNCATE OFF)`, with `ANALYZE` one time in 8 (never skipping the indexes, as the
//! default may for small `VACUUM`s, and never waiting to cut the table's emptied last
//! pages, which a queue refills at once), then `REINDEX INDEX CONCURRENTLY` of each index past twice the size a
//! fresh build would take ([`Options::rebuild_bloated_indexes`]), since B-tree indexes whose
//! keys only grow keep a few `VACUUM` periods' worth of emptied pages. Measured
//! (BENCHMARKS.md): after 1M items pushed and acked the table was 1.87x its size with 10k
//! live items (2.23x without the rebuilds, 8.0x with the default `INDEX_CLEANUP`).
//! [`PgStore::run_upkeep`] runs it on demand.
//!
//! # The record of finished jobs
//!
//! With [`Options::retention`] (off by default), every statement that finishes an item (the
//! ack batch, `ack_in`, a nack or dead letter to the dead letters, the rescuer's dead letters
//! and expiries, a cancel) writes the item's entry in the schema's `history` table (schema
//! version 8) in the same statement (a `WITH .. INSERT`), so an entry exists exactly when
//! the finish committed; claims note each row's first start (`items.started_at`) and every
//! insert its push time (`items.pushed_at`, a column default). An entry holds the router
//! job's kind (the envelope's kind bytes, read in SQL), the outcome, the reason, attempts,
//! the pushed / first started / finished times, the last attempt's duration and the last
//! error. The queue's `history` (the seam's), [`PgStore::history`] and
//! [`PgInspector::history`] read it oldest first, paged by
//! the entry's `seq`, filtered by kind and outcome in SQL. The driver removes entries that
//! finished more than the window ago (by the database's clock), every tenth of the window
//! (at least every rescue period, at most every minute), looking at the 10,000 oldest
//! entries a statement (one index, by `(queue, seq)`, serves the paging and the removal:
//! entries are written in finish order, but for commits that overlap).
//!
//! It is off by default: the table then holds throughput x window rows, and each finish
//! costs an insert and one index entry (BENCHMARKS.md has the pool's rate with it on).
//! Every process of a queue should open it with the same setting.
//!
//! # Operator calls
//!
//! On the queue, as on every store: `peek` and `dead_letters` (paged, in id order, times on
//! the queue's clock; an undecodable payload shows as its `CodecError`), `redrive`,
//! `redrive_all` and `redrive_matching` (one statement; a `DeadFilter`'s reason and job
//! kind in its `WHERE`), `purge`, `purge_dead_letters` and `purge_dead_matching`, `cancel`,
//! `refresh_stats`, `checkpoints` (handlers' checkpoints, also the `progress` column of the
//! `dead_letters` view, schema version 5), `schedules` (the queue's schedules, their last and
//! next tick). A failed read is "not done"; a write whose reply
//! was lost is "outcome unknown" ([`StoreError`](leaseq_async::StoreError)), never a wrong
//! definite answer. A checkpoint is one `UPDATE` fenced like an extension (the lease token,
//! the lease still running); the claim returns it with the row.
//!
//! Tools that must change nothing (the `leaseq` command line's reads) use
//! [`PgInspector`]: no store, no migration, no background task, every read in a
//! `BEGIN READ ONLY` transaction with the store's statements (the schema's queues with
//! their counts, a queue's live rows and dead letters with their bytes, its schedules).
//!
//! # Plans
//!
//! A claim reads the claim index in its order and only the rows it takes, whatever the
//! table's statistics say, and is planned once per connection. The store's own sessions
//! (and only those) never sort, bitmap-scan or seq-scan where an index will do
//! (`enable_sort`, `enable_bitmapscan`, `enable_seqscan` off) and keep one generic plan per
//! prepared statement (`plan_cache_mode = force_generic_plan`; `jit` off): statistics
//! taken while a queue was drained (`reltuples = 0`) otherwise made every claim sort the
//! whole backlog, and a plan made while the table was small made it seq-scan the table.
//! The claim's `ORDER BY` is the claim index's, its largest limit is written in the text
//! ([`Options::max_claim`]). [`PgStore::explain_claim`] shows the plan the store's
//! connections get; a test checks it on a fresh table and after a `VACUUM ANALYZE` of a
//! drained queue refilled (BENCHMARKS.md, round 3: no collapse in 30 such rounds).
//!
#![doc = include_str!("operating.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod ack_plain;
mod admin;
mod blocking;
mod board;
mod capacity;
mod claim;
mod claimer;
mod connect_error;
mod conninfo;
mod counters;
mod db;
mod driver_wake;
mod error;
mod extend;
mod flow;
mod flow_claim;
mod flow_groups_lean;
mod flow_groups_plans;
mod flow_groups_sql;
mod flow_insert;
mod flow_plain_sql;
mod flow_slots_pk_sql;
mod flow_slots_sql;
mod flow_sql;
mod flow_walk_pk_sql;
mod graph;
mod graph_fanout;
mod graph_impl;
mod graph_list;
mod graph_ops;
mod graph_read;
mod graph_slots;
mod graph_sql;
mod graph_told;
mod graph_told_lean;
mod history;
mod history_sql;
mod inspect;
mod keeper;
mod keyed;
mod leases;
mod life;
mod listen;
mod op_sql;
mod open;
mod operator;
mod options;
mod outcome;
mod pause;
mod pause_sql;
#[cfg(feature = "operator")]
mod pg_operator;
mod plain_sql;
mod plan;
mod postgres;
mod progress;
mod push;
mod pushes;
mod receive;
mod room_sql;
mod schedule;
mod schema;
mod seam;
mod settle;
mod settle_sql;
mod settler;
mod settles;
mod snooze;
mod sql;
mod stale;
mod store;
mod ticket;
mod tls;
mod tx_client;
mod tx_error;
mod tx_push;
mod tx_sql;
mod upkeep;
mod writer;

pub use admin::Upkeep;
pub use error::{DbError, OpenError, TxAckError};
pub use inspect::PgInspector;
pub use open::MAX_QUEUE_NAME;
pub use options::{Options, DEFAULT_MAX_ITEM_SIZE};
#[cfg(feature = "operator")]
pub use pg_operator::PgOperator;
pub use postgres::Postgres;
pub use receive::PgWaiting;
pub use schema::{migrate, schema_version, SCHEMA_VERSION, WORKER_GRANTS};
pub use store::PgStore;
pub use ticket::PgTicket;
pub use tx_client::TxClient;
pub use tx_error::{TxBatchError, TxDbError, TxPushError};

#[cfg(feature = "serde")]
pub use leaseq_async::PostcardCodec;
pub use leaseq_async::{BytesCodec, Codec, CodecError};
pub use leaseq_async::{FinishOutcome, Finished, HistoryQuery};

use leaseq_async::LeaseQueue;
use leaseq_tokio::TokioRuntime;

/// A queue on PostgreSQL: a [`LeaseQueue`] on a [`PgStore`], on tokio.
pub type PgQueue<T> = LeaseQueue<T, TokioRuntime, PgStore<T>>;

/// A delivery from a [`PgQueue`].
pub type PgDelivery<T> = leaseq_async::Delivery<T, TokioRuntime, PgStore<T>>;

/// A worker pool on a [`PgQueue`].
pub type PgPool<T> = leaseq_async::Pool<T, TokioRuntime, PgStore<T>>;

/// A receiver with a prefetch on a [`PgQueue`] (`queue.consumer(n)`).
pub type PgConsumer<T> = leaseq_async::Consumer<T, TokioRuntime, PgStore<T>>;
