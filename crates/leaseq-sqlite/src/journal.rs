//! The journal: what the store and its writer thread share. Operations queue their durable
//! facts ([`Op`]) with a sequence number; the writer (`writer.rs`) commits everything
//! queued in one transaction and publishes "committed up to N"; waiters complete on that.
//!
//! A commit that fails is kept and retried (`writer.rs`): `committed` never passes a failed
//! op, so nothing later lands past it. While commits fail, `failing` is set (new pushes are
//! refused, receives wait). The writer numbers its commit attempts (`attempts`) and
//! publishes `timed_out`, the last failed attempt that began at least
//! [`Options::commit_timeout`](crate::Options::commit_timeout) ago. A waiter notes the
//! attempt number when it starts waiting; every later attempt holds its op, so once one of
//! them has timed out the waiter fails with "outcome unknown" (the op stays queued and
//! lands if the file recovers). So a wait lasts at most the commit timeout, plus a backoff
//! (at most 1 s) and a busy timeout, from when it started.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::Duration;

use std::future::Future;

use event_listener::{Event, EventListener, Listener};
use leaseq_async::StoreError;
use parking_lot::{Condvar, Mutex};
use rusqlite::Connection;

use crate::commit_error::CommitError;
use crate::lock::OwnerLock;
use crate::op::Op;

/// Work run on the writer's connection before its next commit (fault injection).
pub(crate) type Hook = Box<dyn FnOnce(&Connection) + Send>;

/// What the store hands the writer. Written by the store's operations, read by the writer.
pub(crate) struct Queued {
    pub(crate) ops: Vec<Op>,
    /// The sequence number of the last op queued.
    pub(crate) seq: u64,
    /// Commit what is queued (within the commit timeout), checkpoint, and end.
    pub(crate) stop: bool,
    /// End at once, committing nothing more (a simulated crash).
    pub(crate) halt: bool,
    /// Checkpoints (TRUNCATE) asked for; the writer runs one after its next commit.
    pub(crate) checkpoints_asked: u64,
    pub(crate) hooks: Vec<Hook>,
}

/// What the store and the writer thread share.
pub(crate) struct Journal {
    pub(crate) queued: Mutex<Queued>,
    pub(crate) wake: Condvar,
    /// Every op up to this sequence number is committed. Written by the writer.
    pub(crate) committed: AtomicU64,
    /// Commit attempts begun. Written by the writer.
    pub(crate) attempts: AtomicU64,
    /// The last failed attempt that began `commit_timeout` ago or more (`u64::MAX` once
    /// the writer gave up at stop): waiters that began before it give up. Written by the
    /// writer.
    pub(crate) timed_out: AtomicU64,
    /// Commits are failing now (set on a failure, cleared on the next success).
    pub(crate) failing: AtomicBool,
    /// The last commit failure (kept after a recovery, for the operator).
    pub(crate) last_error: Mutex<Option<CommitError>>,
    /// Notified after each commit, each failure and each change of `timed_out`.
    pub(crate) on_commit: Event,
    /// The writer ended (stopped, halted, or gave up at stop): nothing more is committed.
    pub(crate) ended: AtomicBool,
    /// Commits made.
    pub(crate) commits: AtomicU64,
    /// Commits that failed (each retry counts).
    pub(crate) failures: AtomicU64,
    /// Checkpoints done (those asked for with `checkpoint`).
    pub(crate) checkpoints: AtomicU64,
    /// How long a waiter waits for a failing commit.
    pub(crate) commit_timeout: Duration,
    /// The owner lock's flag: the last handle is gone, the lock will be released soon.
    closing: Arc<AtomicBool>,
    writer: Mutex<Option<JoinHandle<()>>>,
}

impl Journal {
    /// Starts the writer thread on `conn`; it holds `lock` (the file's owner lock) until
    /// it ends, after the connection is closed.
    pub(crate) fn start(
        conn: Connection,
        lock: OwnerLock,
        commit_timeout: Duration,
    ) -> std::io::Result<Arc<Journal>> {
        let journal = Arc::new(Journal {
            queued: Mutex::new(Queued {
                ops: Vec::new(),
                seq: 0,
                stop: false,
                halt: false,
                checkpoints_asked: 0,
                hooks: Vec::new(),
            }),
            wake: Condvar::new(),
            committed: AtomicU64::new(0),
            attempts: AtomicU64::new(0),
            timed_out: AtomicU64::new(0),
            failing: AtomicBool::new(false),
            last_error: Mutex::new(None),
            on_commit: Event::new(),
            ended: AtomicBool::new(false),
            commits: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            checkpoints: AtomicU64::new(0),
            commit_timeout,
            closing: lock.closing(),
            writer: Mutex::new(None),
        });
        let writer = journal.clone();
        let handle = std::thread::Builder::new()
            .name("leaseq-sqlite-writer".into())
            .spawn(move || writer.run(conn, lock))?;
        *journal.writer.lock() = Some(handle);
        Ok(journal)
    }

    /// Queues `ops`; returns the sequence number to wait for.
    pub(crate) fn submit(&self, ops: impl IntoIterator<Item = Op>) -> u64 {
        let mut q = self.queued.lock();
        let before = q.ops.len();
        q.ops.extend(ops);
        q.seq += (q.ops.len() - before) as u64;
        let seq = q.seq;
        drop(q);
        self.wake.notify_one();
        seq
    }

    /// Queues the op `change` returns, if any, with `change` run under the journal's lock:
    /// for a change of the memory store whose op must come before any op that follows
    /// that change (a lease put back, whose attempt count must not land after the next
    /// lease's count).
    /// Returns the op's sequence number, if there was one.
    pub(crate) fn submit_with(&self, change: impl FnOnce() -> Option<Op>) -> Option<u64> {
        let mut q = self.queued.lock();
        let op = change()?;
        q.ops.push(op);
        q.seq += 1;
        let seq = q.seq;
        drop(q);
        self.wake.notify_one();
        Some(seq)
    }

    /// Runs `change` under the journal's lock and queues the ops it returns (none: the
    /// last sequence number), so that they come before any op queued after the change:
    /// for a change of the memory store that others can see at once (a dependent released
    /// by an ack, which a receiver may take before the ack's ops would otherwise be
    /// queued). Returns `change`'s output and the sequence number to wait for.
    pub(crate) fn submit_all_with<U>(&self, change: impl FnOnce() -> (U, Vec<Op>)) -> (U, u64) {
        let mut q = self.queued.lock();
        let (out, ops) = change();
        q.seq += ops.len() as u64;
        q.ops.extend(ops);
        let seq = q.seq;
        drop(q);
        self.wake.notify_one();
        (out, seq)
    }

    /// The sequence number of the last op queued.
    pub(crate) fn last(&self) -> u64 {
        self.queued.lock().seq
    }

    /// Whether commits are failing now.
    pub(crate) fn failing(&self) -> bool {
        self.failing.load(Ordering::Acquire)
    }

    /// The last commit failure, if any.
    pub(crate) fn last_error(&self) -> Option<CommitError> {
        self.last_error.lock().clone()
    }

    /// The error of a push refused while commits fail.
    pub(crate) fn refusal(&self) -> StoreError {
        StoreError::not_done(format!(
            "the queue file is failing its commits ({}); nothing was queued",
            self.describe_failure()
        ))
    }

    fn describe_failure(&self) -> String {
        self.last_error()
            .map_or_else(|| "no commit yet".to_string(), |e| e.to_string())
    }

    /// The error of a wait that gave up.
    fn gave_up(&self) -> StoreError {
        if self.ended.load(Ordering::Acquire) {
            return StoreError::outcome_unknown(format!(
                "the queue file's writer has stopped before this change was committed ({})",
                self.describe_failure()
            ));
        }
        StoreError::outcome_unknown(format!(
            "not committed within {:?}: {}; the change stays queued and is written if the \
             file recovers",
            self.commit_timeout,
            self.describe_failure()
        ))
    }

    /// Wakes everyone waiting on the journal (to look again: the queue closed, say).
    pub(crate) fn wake_waiters(&self) {
        self.on_commit.notify(usize::MAX);
    }

    /// A listener notified after the writer's next commit, failure or give-up.
    pub(crate) fn listen(&self) -> EventListener {
        self.on_commit.listen()
    }

    /// Where a wait starting now stands: it gives up once an attempt after this one has
    /// timed out.
    pub(crate) fn wait_start(&self) -> u64 {
        self.attempts.load(Ordering::Acquire)
    }

    /// Ready once `seq` is committed (`Ok`), or, with `give_up` (the waiter's
    /// [`wait_start`](Self::wait_start)), once a commit attempt begun after it has failed
    /// for the commit timeout (`Err`, outcome unknown); `listener` keeps the registration
    /// between polls.
    pub(crate) fn poll_committed(
        &self,
        seq: u64,
        give_up: Option<u64>,
        listener: &mut Option<EventListener>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), StoreError>> {
        loop {
            if self.committed.load(Ordering::Acquire) >= seq {
                *listener = None;
                return Poll::Ready(Ok(()));
            }
            if self.ended.load(Ordering::Acquire)
                || give_up.is_some_and(|start| self.timed_out.load(Ordering::Acquire) > start)
            {
                *listener = None;
                return Poll::Ready(Err(self.gave_up()));
            }
            match listener {
                Some(l) => {
                    if std::pin::Pin::new(l).poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    *listener = None;
                }
                None => *listener = Some(self.on_commit.listen()),
            }
        }
    }

    /// Completes once `seq` is committed, or fails once commits have been failing for the
    /// commit timeout since this call.
    pub(crate) fn committed(&self, seq: u64) -> impl Future<Output = Result<(), StoreError>> + '_ {
        let start = self.wait_start();
        let mut listener = None;
        std::future::poll_fn(move |cx| self.poll_committed(seq, Some(start), &mut listener, cx))
    }

    /// Blocks this thread until `seq` is committed, or commits have been failing for the
    /// commit timeout since this call.
    pub(crate) fn wait_blocking(&self, seq: u64) -> Result<(), StoreError> {
        let start = self.wait_start();
        loop {
            let l = self.on_commit.listen();
            if self.committed.load(Ordering::Acquire) >= seq {
                return Ok(());
            }
            if self.ended.load(Ordering::Acquire) || self.timed_out.load(Ordering::Acquire) > start
            {
                return Err(self.gave_up());
            }
            l.wait();
        }
    }

    /// Asks the writer for a WAL checkpoint (TRUNCATE) after its next commit; the number to
    /// wait for.
    fn ask_checkpoint(&self) -> u64 {
        let target = {
            let mut q = self.queued.lock();
            q.checkpoints_asked += 1;
            q.checkpoints_asked
        };
        self.wake.notify_one();
        target
    }

    /// Asks the writer for a WAL checkpoint (TRUNCATE) after everything queued so far is
    /// committed, and waits for it (or for the commit timeout).
    pub(crate) async fn checkpoint(&self) -> Result<(), StoreError> {
        let target = self.ask_checkpoint();
        self.committed(self.last()).await?;
        let mut listener: Option<EventListener> = None;
        std::future::poll_fn(|cx| loop {
            if self.checkpoints.load(Ordering::Acquire) >= target
                || self.ended.load(Ordering::Acquire)
            {
                return Poll::Ready(());
            }
            match &mut listener {
                Some(l) => {
                    if std::pin::Pin::new(l).poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    listener = None;
                }
                None => listener = Some(self.on_commit.listen()),
            }
        })
        .await;
        Ok(())
    }

    /// The last handle is gone: blocks until everything queued so far is committed and the
    /// WAL checkpointed (or the commit timeout ran out), then marks the owner closing.
    pub(crate) fn last_handle_gone(&self) {
        let target = self.ask_checkpoint();
        if self.wait_blocking(self.last()).is_ok() {
            loop {
                let l = self.on_commit.listen();
                if self.checkpoints.load(Ordering::Acquire) >= target
                    || self.ended.load(Ordering::Acquire)
                {
                    break;
                }
                l.wait();
            }
        }
        self.closing.store(true, Ordering::Release);
    }

    /// Runs `hook` on the writer's connection before its next commit attempt.
    #[cfg(feature = "fault-injection")]
    pub(crate) fn hook(&self, hook: Hook) {
        self.queued.lock().hooks.push(hook);
        self.wake.notify_one();
    }

    /// Asks the writer to commit what is queued (retrying a failing commit up to the commit
    /// timeout), checkpoint and truncate the WAL, close the file and release its lock; waits
    /// until it has.
    pub(crate) fn stop(&self) {
        self.queued.lock().stop = true;
        self.end();
    }

    /// Ends the writer at once, committing nothing more (as if the process died); waits.
    #[cfg(feature = "fault-injection")]
    pub(crate) fn halt(&self) {
        self.queued.lock().halt = true;
        self.end();
    }

    fn end(&self) {
        self.wake.notify_one();
        let handle = self.writer.lock().take();
        if let Some(handle) = handle {
            if handle.thread().id() != std::thread::current().id() {
                let _ = handle.join();
            }
        }
    }
}
