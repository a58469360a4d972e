//! `leaseq-sqlite`: a durable leaseq store on one machine, in a SQLite file. No server to
//! run: the same [`LeaseQueue`], [`Delivery`](leaseq_async::Delivery) and
//! [`Pool`](leaseq_async::Pool) API as the in-memory queue, and a `kill -9` loses nothing
//! that was reported durable.
//!
//! ```no_run
//! # async fn demo(rt: impl leaseq_async::Runtime) -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use leaseq_async::{Config, LeaseQueue};
//! use leaseq_sqlite::{PostcardCodec, Sqlite, SqliteQueue};
//!
//! let config = Config::new(Duration::from_secs(30)).with_max_attempts(5);
//! let queue: SqliteQueue<String, _, _> = LeaseQueue::builder(config)
//!     .runtime(rt)
//!     .codec(PostcardCodec)
//!     .open(Sqlite::file("jobs.leaseq"))
//!     .await?;
//! queue.push("send invoice 981".to_string()).await?; // on disk once it returns
//! let delivery = queue.receive().await.unwrap(); // its attempt is on disk before it is handed out
//! delivery.ack().await?; // removed from the file once it returns
//! # Ok(()) }
//! ```
//!
//! # How it works
//!
//! [`SqliteStore`] wraps a [`MemoryStore`](leaseq_async::MemoryStore): the `no_std` core
//! does all the policy (leases, attempts, backoff, dead letters, keys, levels) and the store
//! *journals durable facts* from the results of each operation, never duplicating queue logic
//! in SQL: a push inserts a row (its payload encoded by the [`Codec`] before any lock); a
//! delivery records its attempt (the receive completes only once that is committed, so a
//! poison item that crashes the process on every delivery still reaches the dead letters
//! after max attempts); an ack deletes the row; a nack records attempts, next visibility
//! and error, or the dead letter; the driver journals dead letters made by leases or items
//! running out. Extensions and heartbeats write nothing: **leases are not durable**. On
//! restart every lease the dead process held comes back at once, its attempt counted
//! (error "process restart"; to the dead letters, reason "dropped", if it was the last).
//!
//! **Group commit**: one writer thread owns the SQLite connection. Operations queue their
//! changes with a sequence number; the writer commits everything queued in one
//! transaction, then publishes "committed up to N". `push(...).await`, receives, acks,
//! nacks and dead-letters complete once their change is committed; `try_push` is fire and
//! forget (committed with the next batch, not yet durable when it returns). So concurrent
//! producers and consumers share commits (and fsyncs), whatever the runtime: the writer is
//! a thread, so any runtime works.
//!
//! **Durability levels** ([`Durability`]): `ProcessCrash` (WAL, `synchronous=NORMAL`:
//! survives `kill -9`) and `PowerLoss` (WAL, `synchronous=FULL`: every commit fsynced).
//!
//! **Size**: acked rows are deleted, and SQLite reuses their pages; the WAL is checkpointed
//! back into the file every [`Options::wal_autocheckpoint`] pages (and truncated when the
//! store closes). So under steady push/ack the file holds the live items (plus free
//! pages up to its high-water mark) and does not grow with history; opening it reads only
//! the live rows and the dead letters.
//!
//! **Restart**: opening ([`Sqlite`]) checks the file read-only first (SQLite's header, an
//! `application_id`, a format version in `user_version`, a magic row), then reads every
//! row before it writes anything: a foreign, empty, corrupt, truncated, read-only or newer
//! file, or one with a row this version does not write, gives a typed [`OpenError`] naming
//! the file, with the system's or SQLite's error as its `source()`, and the directory is
//! left as it was found: the file byte-identical, no `-wal`, `-shm` or `-lock` file it did
//! not have, a `-wal` found there neither checkpointed nor removed (the check and every read
//! run on a read-only connection: a file without a `-wal` read `immutable`, one with a
//! `-wal` through it, its `-shm` mapped read-only or, if it had none, the one SQLite made
//! removed; a lock file the refused open made is removed). A dead letter whose reason code
//! this version does not know (a newer version's) is not refused: it reads as
//! `Reason::Dropped`, on purpose: a newer version's reason must not make a file
//! unopenable. Times are stored as wall-clock nanoseconds, so a delayed item keeps
//! its schedule across restarts. Ids are never reused (the file keeps their high-water
//! mark). A file of format 1 (before handlers' checkpoints) is migrated to format 2 (the
//! `progress` column), and one of format 2 to format 3 (the `schedules` table), once every
//! row is read.
//!
//! **Checkpoints** (`Delivery::checkpoint`, see `leaseq_async::progress`): checked on the
//! memory store, written to the item's row by the next group commit and answered once it
//! is committed; restored with the item at open, so a job cut by `kill -9` resumes.
//!
//! **Schedules** (`leaseq_async::Scheduler`): each schedule's cursor is a row of the file's
//! `schedules` table, back in the memory store at open. A scheduler step's compare-and-set
//! is made on the memory store (every scheduler of the file's queue is in its owner's
//! process); its ticks' inserts, the stale ticks taken back and the schedule's row go to
//! the writer as one batch, so one transaction commits them, and the step answers once it
//! is committed. A process killed before that loses the whole step: the next owner resumes
//! from the cursor before it. [`FileView::schedules`] shows them.
//!
//! **Flow control** (`leaseq_async::FlowControl`, `Push::kind` / `partition` / `group`):
//! the rules are the memory store's, in one process (the file has one owner). An item's
//! flow keys are kept in its row (format 7) and restored with it at open, so a limit
//! counts it and an ordered group keeps its push order across a restart (`kill -9`
//! included); the queue's concurrency limits and rates are rows of the `flow` table, set on
//! the memory store at once and answered once committed, back at open. A format-6 file is
//! migrated to 7 at open. **Snooze** (`Delivery::snooze`, `JobError::snooze`) is native:
//! the attempt taken back in the row and the item's snooze count kept there (`snooze.rs`),
//! so `Config::with_max_snoozes` bounds it across restarts. **Key windows**
//! (`Push::key_window`) are kept too: a live item's window in its row, the key of an item
//! that left within its window in the `gone_keys` table (`windows.rs`), both back at open,
//! so a throttle holds across a restart.
//!
//! **Jobs that wait for other jobs** (`leaseq_async::dependencies`, issue 33): the store
//! implements [`DependencyStore`](leaseq_async::dependencies::DependencyStore). The graph
//! (`leaseq_core::graph`) lives in the memory store; each node's record (parents, policy,
//! state, message, workflow step, batch, result) and the payload the graph holds is a row
//! of the file's `graph` table (format 8; a file of format 6 or 7 is migrated at open).
//! Every call is made on the memory store under the journal's lock and its rows go in the
//! same batch; an ack of a job the graph tracks is made the same way, so **the dependents
//! it releases (their items and rows) are in the ack's own group commit**, queued before
//! any receiver's attempt of them: a crash loses both or neither, and no dependent runs
//! before its parent's ack is on disk. Results and batch counts (derived from the rows)
//! are durable (an ack writes no row of its own: the job's row says queued, its item is
//! gone, and the restore reads that as acked); at open the rows are read back and the graph rebuilt, what they say is due
//! released, and a queued job whose item is gone from the file told acked (dead-lettered if
//! it is a dead letter). `Ok` from any call means committed; a commit failing for the
//! commit timeout is `DependencyError::Store`, outcome unknown (a push hands back a copy of
//! what it pushed). Reads answer from memory. Without a call of the trait (and with no
//! graph rows in the file) nothing of this runs: an ack tests one flag.
//!
//! **One owner per file**: opening takes an exclusive `flock` on the sidecar file
//! `<path>-lock` before it opens or creates the database, and the writer thread holds it
//! until it has closed the connection. A second open of the same file, from this process or
//! another, is refused with [`OpenError::Locked`] and touches nothing; the OS releases the
//! lock when the owner's process dies (`kill -9` included), so the next open succeeds. One
//! wait: an open that meets a queue of this same process whose last handle is gone (its
//! store kept a moment longer by the driver's step or a delivery still out) waits for it to
//! let go, up to [`Options::commit_timeout`] plus [`Options::busy_timeout`], so that dropping
//! a queue and opening its file again works. The lock file stays on disk after its owner
//! (not after a refused open).
//!
//! # When commits fail
//!
//! A commit can fail: the disk is full, another SQLite connection holds the file's write
//! lock past [`Options::busy_timeout`], an I/O error. The failed commit is kept, never
//! reported as committed: its changes stay queued, in order, with later ones appended
//! after them, and the whole batch is retried with a backoff of 10 ms doubling to 1 s, so
//! nothing later reaches the file past a failed change (no gaps). Meanwhile:
//!
//! - new pushes are refused at once, the item handed back:
//!   [`PushError::Store`](leaseq_async::PushError::Store) with a "not done"
//!   [`StoreError`](leaseq_async::StoreError) (`try_push`, batches and `push(..).await`
//!   alike);
//! - operations waiting on a commit (an awaited push, an ack, nack, dead letter or
//!   extension, [`SqliteStore::sync`]) fail once commits have failed for
//!   [`Options::commit_timeout`] since they started waiting (plus at most one backoff and
//!   one busy timeout), with an "outcome unknown" `StoreError` that carries SQLite's
//!   words: an awaited push with [`PushError::Unconfirmed`](leaseq_async::PushError),
//!   a settle with `SettleError::Store`. Their change stays queued and is written if
//!   the file recovers;
//! - receives take nothing new and wait; leases already taken are handed out only once
//!   their attempt is committed, as always (a dropped receive hands them back);
//! - [`SqliteStore::journal_failed`] says so, [`SqliteStore::last_commit_error`] says why
//!   (typed: [`CommitErrorKind`]), [`SqliteStore::commit_failures`] counts the attempts.
//!
//! Once a retry succeeds everything flows again: the queued changes land, waiters still
//! waiting complete, pushes are accepted.
//!
//! # Closing
//!
//! Dropping the last queue handle (the queue, its clones and streams) is a bounded flush:
//! it blocks until everything accepted so far (fire-and-forget pushes included) is
//! committed and the WAL checkpointed into the file and truncated, or until commits have
//! failed for the commit timeout. So a program that drops its queue and returns from `main`
//! loses nothing, even while a delivery still holds the store. When the store itself goes
//! (its deliveries too), the writer commits what came since (a failing commit retried for
//! up to the commit timeout), checkpoints again, closes the file and releases its lock;
//! that `drop` waits for it too.
//! `queue.close().await` ([`LeaseQueue::close`]) does the same while the queue is still
//! held: the queue closes at once, and the await waits until every push, settle and lease
//! accepted before it is committed, then checkpoints and truncates the WAL (or fails,
//! outcome unknown, once commits have failed for the commit timeout).
//!
//! # What a crash can and cannot lose
//!
//! Nothing reported durable is lost: an item whose `push(...).await` returned `Ok` is in
//! the file; an ack, nack, dead letter, cancel or redrive that returned is on disk; a
//! delivery's attempt was on disk before the delivery was handed out. At
//! [`Durability::ProcessCrash`] that holds for the process dying; at
//! [`Durability::PowerLoss`] for power loss and OS crashes too.
//!
//! A crash can lose what was not yet reported: items pushed with `try_push` (fire and
//! forget) whose commit had not happened, changes whose wait failed with "outcome
//! unknown", and settlements whose future had not returned (the item is then delivered
//! again: at least once, never silently dropped). Leases are not durable: a lease held at
//! the crash comes back at once on restart, its attempt counted, whatever its remaining
//! visibility or heartbeat. The [`Stats`] counters and latency histograms are not kept.
//!
//! # Known limits
//!
//! The owner lock is a Unix `flock`: on other systems a second opener is not detected.
//! The operator calls (`redrive`, `redrive_all` / `redrive_matching`, `purge`,
//! `purge_dead_letters` / `purge_dead_matching`, `cancel`; a `DeadFilter` applied to the
//! dead letters in memory) and [`SqliteStore::take_dead_letters`] answer once their change is committed, or with a
//! `StoreError` (outcome unknown) when commits fail for the commit timeout: their change
//! stays queued like any other. All live items are held in memory and read at open (about
//! 0.65 s for 1M small items here). A codec failure on push hands the item back
//! ([`PushError::Encode`](leaseq_async::PushError)); a receive cancelled while its leases'
//! attempts are being committed puts those leases back uncounted (nobody had them: the
//! attempt is taken back in the file too, journaled after the one it undoes); times are kept on the runtime's clock, which
//! starts with the process, so a dead letter's `at` from before the process started reads
//! as that start (the file keeps the wall-clock time). The counters of [`Stats`] start at
//! each open (the file keeps items, not history): items and dead letters reloaded at open
//! are counted in `restored` and `restored_dead`, not as pushed.
//!
//! # Size and files
//!
//! An item whose encoded form is over [`Options::max_item_size`] (default 256 KiB) is
//! refused with `PushError::TooLarge`, the item handed back, nothing journaled; a file
//! holding a larger one (written under a higher limit) is refused at open, naming the row,
//! without reading it (items are held decoded in memory and a dead letter holds its item,
//! so an unread row cannot become one). A new queue's files (the database, `-wal`, `-shm`,
//! `-lock`) are created readable and writable by the owner only ([`Options::file_mode`],
//! default `0o600`, on Unix).
//!
//! # Reading a file without opening it
//!
//! A file holds one queue; each open records the builder's name in it (the last opener's
//! name is the one [`FileView::queue_name`] reads; a file from before names were recorded
//! has none until its next open). Opening it as a queue
//! takes its owner lock and brings back the leases of a process that died holding it;
//! [`FileView`] does neither: the format check of an open, then a `query_only` connection
//! (the rows decoded as an open decodes them), so tools (the `leaseq` command line's reads)
//! look at a file, even one a running process owns, and change nothing: its counts, items,
//! dead letters and schedules.
//!
//! [`Stats`]: leaseq_core::Stats
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod admin;
mod check;
mod commit;
mod commit_error;
mod flow;
mod graph;
mod graph_store;
mod history;
mod inspect;
mod journal;
mod lock;
mod op;
mod open;
mod open_error;
#[cfg(feature = "operator")]
mod operator;
mod options;
mod pause;
mod push;
mod receive;
mod restore;
mod schedule;
mod seam;
mod settled;
mod snooze;
mod sqlite;
mod store;
mod view_retry;
mod windows;
mod writer;

// The codecs live in `leaseq-async`, shared by every durable store; re-exported here.
pub use check::{check_file, APPLICATION_ID, FORMAT_VERSION};
pub use commit_error::{CommitError, CommitErrorKind};
pub use inspect::FileView;
#[cfg(feature = "serde")]
pub use leaseq_async::PostcardCodec;
pub use leaseq_async::{BytesCodec, Codec, CodecError};
pub use open_error::{FileError, OpenError};
#[cfg(feature = "operator")]
pub use operator::{SqliteOperator, UNNAMED};
pub use options::{Durability, Options, DEFAULT_MAX_ITEM_SIZE};
pub use receive::SqliteWaiting;
pub use sqlite::Sqlite;
pub use store::{SqliteStore, SqliteTicket};

use leaseq_async::LeaseQueue;

/// A durable queue: a [`LeaseQueue`] on a [`SqliteStore`].
pub type SqliteQueue<T, R, C> = LeaseQueue<T, R, SqliteStore<T, R, C>>;

/// A delivery from a [`SqliteQueue`].
pub type SqliteDelivery<T, R, C> = leaseq_async::Delivery<T, R, SqliteStore<T, R, C>>;

/// A worker pool on a [`SqliteQueue`].
pub type SqlitePool<T, R, C> = leaseq_async::Pool<T, R, SqliteStore<T, R, C>>;
