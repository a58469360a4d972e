//! [`SqliteStore`]: the in-memory store, journaled into SQLite: the struct, its ticket, and
//! how results of the core become journal ops. The `Store` impl is in `seam.rs`, pushing
//! (encoded and size-checked, then journaled) in `push.rs`, receiving (attempts committed
//! before deliveries are handed out) in `receive.rs`, settles' durable answers in
//! `settled.rs`, the operator's methods in `admin.rs`.

use std::future::Future;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leaseq_async::{Codec, MemoryStore, MemoryTicket, Runtime};
use leaseq_core::{Event, MessageId, Nacked, Timestamp};

use crate::journal::Journal;
use crate::op::Op;

/// A lease held from a [`SqliteStore`].
#[derive(Debug)]
pub struct SqliteTicket {
    pub(crate) inner: MemoryTicket,
    pub(crate) id: MessageId,
    /// The lease's attempt, as journaled when it was taken.
    pub(crate) attempt: u32,
}

/// A durable store on one machine: a [`MemoryStore`] (the core does all the policy:
/// leases, attempts, backoff, dead letters, keys, levels) whose durable facts are journaled
/// into a SQLite file by one writer thread with group commit. Open one with
/// [`Sqlite`](crate::Sqlite) and `QueueBuilder::open`.
pub struct SqliteStore<T, R, C> {
    pub(crate) inner: Arc<MemoryStore<T, R>>,
    pub(crate) codec: C,
    pub(crate) journal: Arc<Journal>,
    /// Wall-clock nanoseconds minus the runtime's clock, fixed at open: times on disk are
    /// wall-clock, so that they mean the same to the next process.
    pub(crate) offset: i128,
    /// Live queue handles (clones and streams; deliveries do not count), as the memory
    /// store counts them: the last one's drop flushes.
    pub(crate) handles: AtomicUsize,
    /// [`Options::max_item_size`](crate::Options::max_item_size).
    pub(crate) max_item_size: usize,
    /// Held while a schedule step or a pause flag is made and journaled, so that steps and
    /// flags reach the file in the order they were made (`schedule.rs`, `pause.rs`).
    pub(crate) schedule_lock: parking_lot::Mutex<()>,
    /// [`Options::retention`](crate::Options::retention).
    pub(crate) retention: Option<Duration>,
    /// When the upkeep last removed old entries of the record (`None`: not yet).
    pub(crate) last_prune: parking_lot::Mutex<Option<Timestamp>>,
    /// The queue file, for the record's reads.
    pub(crate) path: std::path::PathBuf,
    /// Whether unique keys' windows are in use (`windows.rs`).
    pub(crate) windows: std::sync::atomic::AtomicBool,
    /// The dependency graph is in use (a `DependencyStore` call, or graph rows read at
    /// open): its changes are journaled (`graph_store.rs`). Read `Relaxed`: set before the
    /// memory store's graph is first changed, by the thread that changes it.
    pub(crate) graph_on: std::sync::atomic::AtomicBool,
}

impl<T, R, C> std::fmt::Debug for SqliteStore<T, R, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

/// The store itself is gone (its last handle and delivery, and the driver's step): the
/// writer commits everything queued (a failing commit retried for up to
/// [`Options::commit_timeout`](crate::Options)), checkpoints and truncates the WAL, closes
/// the file and releases its owner lock; `drop` waits for it. (The drop of the last queue
/// handle flushed already: see `handle_dropped` in `seam.rs`.)
impl<T, R, C> Drop for SqliteStore<T, R, C> {
    fn drop(&mut self) {
        self.journal.stop();
    }
}

pub(crate) fn wall_now() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

pub(crate) fn ready_now<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    match f
        .as_mut()
        .poll(&mut Context::from_waker(std::task::Waker::noop()))
    {
        Poll::Ready(out) => out,
        Poll::Pending => unreachable!("the memory store's futures are ready on their first poll"),
    }
}

impl<T: Clone + Send + 'static, R: Runtime, C: Codec<T>> SqliteStore<T, R, C> {
    /// A time on the runtime's clock as wall-clock nanoseconds.
    pub(crate) fn to_disk(&self, t: Timestamp) -> i64 {
        (t.as_nanos() as i128 + self.offset).clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }

    /// Journals what the core's events say happened by itself (dead letters of leases or
    /// items that ran out, items replaced); returns the sequence number to wait for.
    pub(crate) fn journal_events(&self) -> u64 {
        if self.graph_on.load(std::sync::atomic::Ordering::Relaxed) {
            // The events and what they did to the graph, taken and queued together.
            return self
                .journal
                .submit_all_with(|| ((), self.with_graph(self.event_ops())))
                .1;
        }
        let ops = self.event_ops();
        if ops.is_empty() {
            return self.journal.last();
        }
        self.journal.submit(ops)
    }

    /// The ops of the core's events since the last take.
    pub(crate) fn event_ops(&self) -> Vec<Op> {
        let ops: Vec<Op> = self
            .inner
            .take_events()
            .into_iter()
            .filter_map(|(event, letter)| match (event, letter) {
                (Event::DeadLettered { .. }, Some(d)) => Some(Op::Dead {
                    id: d.id.get(),
                    attempts: d.attempts,
                    reason: d.reason.code(),
                    error: d.last_error,
                    at: self.to_disk(d.at),
                }),
                (Event::Replaced { id, .. }, _) => Some(Op::Delete { id: id.get() }),
                _ => None,
            })
            .collect();
        // A dead letter's key is kept for its window's rest.
        let ops = if self.windows.load(std::sync::atomic::Ordering::Relaxed) {
            let keep: Vec<Op> = ops
                .iter()
                .filter_map(|op| match *op {
                    Op::Dead { id, at, .. } => Some(Op::KeepWindow { id, at }),
                    _ => None,
                })
                .collect();
            ops.into_iter().chain(keep).collect()
        } else {
            ops
        };
        self.with_entries(ops)
    }

    /// `ops` with, when the record is kept, each dead letter's entry after its update.
    pub(crate) fn with_entries(&self, mut ops: Vec<Op>) -> Vec<Op> {
        if self.retention.is_some() {
            let entries: Vec<Op> = ops
                .iter()
                .filter_map(|op| match *op {
                    Op::Dead { id, reason, at, .. } => Some(Op::finished_dead(id, reason, at)),
                    _ => None,
                })
                .collect();
            ops.extend(entries);
        }
        ops
    }

    /// The ops of an ack (`Acked`) or cancel (`Cancelled`) of `id`: its entry, when the
    /// record is kept, then the delete.
    pub(crate) fn finish_ops(
        &self,
        id: MessageId,
        outcome: leaseq_async::FinishOutcome,
    ) -> Vec<Op> {
        let mut ops = self.finish_ops_plain(id, outcome);
        if let Some(keep) = self.keep_window_op(id) {
            ops.insert(0, keep);
        }
        ops
    }

    /// `finish_ops` without a key window's rest.
    fn finish_ops_plain(&self, id: MessageId, outcome: leaseq_async::FinishOutcome) -> Vec<Op> {
        let delete = Op::Delete { id: id.get() };
        if self.retention.is_none() {
            return vec![delete];
        }
        let at = self.to_disk(leaseq_async::Store::runtime(&*self.inner).now());
        vec![
            Op::Finished {
                id: id.get(),
                outcome: outcome.code(),
                at,
            },
            delete,
        ]
    }

    /// The upkeep's removal by age, when the record is kept: at most once per tenth of the
    /// window (and at least once a minute), the entries older than the window removed in
    /// the next commit; when it is due next (`Timestamp::MAX`: no record).
    pub(crate) fn prune_due(&self, now: Timestamp) -> Timestamp {
        let Some(window) = self.retention else {
            return Timestamp::MAX;
        };
        let every = (window / 10).clamp(Duration::from_millis(1), Duration::from_secs(60));
        let mut last = self.last_prune.lock();
        if last.is_some_and(|at| now < at.saturating_add(every)) {
            return last.map_or(Timestamp::MAX, |at| at.saturating_add(every));
        }
        *last = Some(now);
        // On the wall clock (a runtime's clock starts near zero: `now - window` would stop
        // at its start and take the entries of a run before this one that are younger than
        // the window).
        let window_ns = i64::try_from(window.as_nanos()).unwrap_or(i64::MAX);
        let before = self.to_disk(now).saturating_sub(window_ns);
        self.journal.submit([Op::Prune { before }]);
        now.saturating_add(every)
    }

    /// Journals a nack's result.
    pub(crate) fn journal_nacked(&self, id: MessageId, r: &Nacked, error: Option<String>) -> u64 {
        match *r {
            Nacked::Retrying { .. } => self.journal.submit(self.nacked_ops(id, r, error)),
            _ => self.journal_events(),
        }
    }

    /// The ops of a nack's result: its retry, or the dead letters the core recorded.
    pub(crate) fn nacked_ops(&self, id: MessageId, r: &Nacked, error: Option<String>) -> Vec<Op> {
        match *r {
            Nacked::Retrying {
                visible_at,
                attempts,
            } => vec![Op::Retry {
                id: id.get(),
                attempts,
                visible_at: self.to_disk(visible_at),
                error,
            }],
            _ => self.event_ops(),
        }
    }
}
