//! The writer thread: owns the SQLite connection (and the file's owner lock) and commits
//! everything queued since its last commit in one transaction (group commit).
//!
//! A commit that fails (disk full, write lock held by another connection past the busy
//! timeout, I/O error) is kept: its ops stay, in order, and ops queued since are appended
//! after them; the whole batch is retried after a backoff of 10 ms doubling to 1 s. So
//! `committed` never passes a failed op and nothing later is committed past it. While it
//! fails the writer publishes, between attempts, the last failed attempt that began
//! `commit_timeout` ago (waiters that began before it then fail, outcome unknown).
//!
//! At stop it commits what is queued (a failing commit retried until `commit_timeout`
//! after the stop), checkpoints and truncates the WAL, closes the connection and then
//! releases the lock.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::commit::{commit, Early};
use crate::commit_error::CommitError;
use crate::journal::Journal;
use crate::lock::OwnerLock;
use crate::op::Op;

const FIRST_BACKOFF: Duration = Duration::from_millis(10);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// What the writer took from the queue for one attempt.
struct Batch {
    seq: u64,
    stop: bool,
    halt: bool,
    checkpoint: u64,
}

impl Journal {
    pub(crate) fn run(&self, mut conn: Connection, lock: OwnerLock) {
        let mut early = Early::new();
        // Ops not yet committed: the failed batch, then what came since.
        let mut ops: Vec<Op> = Vec::new();
        let mut backoff = FIRST_BACKOFF;
        // Failed attempts not yet timed out: when each began, and its number.
        let mut attempts: VecDeque<(Instant, u64)> = VecDeque::new();
        let mut stop_by: Option<Instant> = None;
        let mut checkpointed = 0;
        loop {
            let batch = self.take(&mut ops, &conn, checkpointed);
            if batch.halt {
                break;
            }
            if batch.stop && stop_by.is_none() {
                stop_by = Some(Instant::now() + self.commit_timeout);
            }
            if !ops.is_empty() {
                let began = Instant::now();
                let attempt = self.attempts.fetch_add(1, Ordering::AcqRel) + 1;
                if let Err(e) = commit(&mut conn, &ops, &mut early) {
                    self.failed(&e);
                    attempts.push_back((began, attempt));
                    if !self.back_off(&mut attempts, backoff, stop_by) {
                        if self.queued.lock().halt {
                            break;
                        }
                        eprintln!(
                            "leaseq-sqlite: the queue closed with {} changes not written: {}",
                            ops.len(),
                            CommitError::from_sqlite(&e)
                        );
                        break;
                    }
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
                ops.clear();
                backoff = FIRST_BACKOFF;
                attempts.clear();
                self.commits.fetch_add(1, Ordering::Relaxed);
                self.failing.store(false, Ordering::Release);
            }
            self.committed.store(batch.seq, Ordering::Release);
            if batch.checkpoint > checkpointed || batch.stop {
                // Best effort: a reader in another connection can keep it from truncating.
                let _ = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);");
                checkpointed = batch.checkpoint;
                self.checkpoints.store(checkpointed, Ordering::Release);
            }
            self.on_commit.notify(usize::MAX);
            if batch.stop {
                break;
            }
        }
        drop(conn);
        drop(lock);
        // Whoever still waits will not see a commit.
        self.ended.store(true, Ordering::Release);
        self.on_commit.notify(usize::MAX);
    }

    /// Waits for work and moves what is queued onto `ops` (after any that failed).
    fn take(&self, ops: &mut Vec<Op>, conn: &Connection, checkpointed: u64) -> Batch {
        let mut q = self.queued.lock();
        while ops.is_empty()
            && q.ops.is_empty()
            && !q.stop
            && !q.halt
            && q.hooks.is_empty()
            && q.checkpoints_asked == checkpointed
        {
            self.wake.wait(&mut q);
        }
        let hooks = std::mem::take(&mut q.hooks);
        if ops.is_empty() {
            std::mem::swap(ops, &mut q.ops);
        } else {
            ops.append(&mut q.ops);
        }
        let batch = Batch {
            seq: q.seq,
            stop: q.stop,
            halt: q.halt,
            checkpoint: q.checkpoints_asked,
        };
        drop(q);
        for hook in hooks {
            hook(conn);
        }
        batch
    }

    fn failed(&self, e: &rusqlite::Error) {
        *self.last_error.lock() = Some(CommitError::from_sqlite(e));
        self.failures.fetch_add(1, Ordering::Relaxed);
        self.failing.store(true, Ordering::Release);
        self.on_commit.notify(usize::MAX);
    }

    /// Sleeps `backoff` after a failed attempt, publishing meanwhile which attempts have
    /// timed out. `false`: the stop's deadline passed (or a halt came); give up.
    fn back_off(
        &self,
        attempts: &mut VecDeque<(Instant, u64)>,
        backoff: Duration,
        stop_by: Option<Instant>,
    ) -> bool {
        let retry_at = Instant::now() + backoff;
        loop {
            let now = Instant::now();
            let mut timed_out = None;
            while let Some(&(began, attempt)) = attempts.front() {
                if began + self.commit_timeout > now {
                    break;
                }
                timed_out = Some(attempt);
                attempts.pop_front();
            }
            if let Some(attempt) = timed_out {
                self.timed_out.fetch_max(attempt, Ordering::AcqRel);
                self.on_commit.notify(usize::MAX);
            }
            if stop_by.is_some_and(|by| now >= by) {
                // Whoever still waits will not see this commit.
                self.timed_out.store(u64::MAX, Ordering::Release);
                self.on_commit.notify(usize::MAX);
                return false;
            }
            if now >= retry_at {
                return true;
            }
            let mut until = retry_at;
            if let Some(&(began, _)) = attempts.front() {
                until = until.min(began + self.commit_timeout);
            }
            if let Some(by) = stop_by {
                until = until.min(by);
            }
            let mut q = self.queued.lock();
            if q.halt {
                return false;
            }
            if !q.hooks.is_empty() {
                // Run them now (a test raising a limit): retry at once after.
                return true;
            }
            self.wake.wait_until(&mut q, until);
        }
    }
}
