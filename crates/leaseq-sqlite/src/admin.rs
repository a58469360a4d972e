//! What an operator or a test reads and does on a [`SqliteStore`] beyond the `Store` seam:
//! the memory store inside, commit figures, syncing, dead letters and redrive.

use std::sync::Arc;

use leaseq_async::{Codec, MemoryStore, Runtime, StoreError};
use leaseq_core::{DeadLetter, MessageId, RedriveError};

use crate::commit_error::CommitError;
use crate::journal::Op;
use crate::store::SqliteStore;

impl<T: Clone + Send + 'static, R: Runtime, C: Codec<T>> SqliteStore<T, R, C> {
    /// The memory store inside (for what only it shows: items, heartbeats, invariants).
    pub fn memory(&self) -> &Arc<MemoryStore<T, R>> {
        &self.inner
    }

    /// Transactions committed so far (each holds every change queued since the one before).
    pub fn commits(&self) -> u64 {
        self.journal
            .commits
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether commits are failing now (disk full, the file locked by another connection,
    /// an I/O error): the writer keeps the failed changes and retries them; meanwhile new
    /// pushes are refused, receives wait, and operations waiting on a commit fail after
    /// the commit timeout. `false` again once a retry succeeded.
    pub fn journal_failed(&self) -> bool {
        self.journal.failing()
    }

    /// Why the last failed commit failed (kept after a recovery), if any commit failed.
    pub fn last_commit_error(&self) -> Option<CommitError> {
        self.journal.last_error()
    }

    /// Commit attempts that failed so far (each retry counts).
    pub fn commit_failures(&self) -> u64 {
        self.journal
            .failures
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Completes once every change so far is durable; fails (outcome unknown) once they
    /// have waited the commit timeout while commits fail.
    pub async fn sync(&self) -> Result<(), StoreError> {
        self.journal.committed(self.journal.last()).await
    }

    /// Runs `hook` on the writer's SQLite connection before its next commit attempt
    /// (fault injection: `PRAGMA max_page_count` to fill the "disk", say).
    #[cfg(feature = "fault-injection")]
    pub fn on_writer(&self, hook: impl FnOnce(&rusqlite::Connection) + Send + 'static) {
        self.journal.hook(Box::new(hook))
    }

    /// Stops the writer at once, as if the process died: nothing queued since its last
    /// commit is written, the WAL is not checkpointed, and the file's owner lock is
    /// released (so a crash can be simulated in one process). The queue must not be used
    /// afterwards.
    #[cfg(feature = "fault-injection")]
    pub fn halt(&self) {
        self.journal.halt()
    }

    /// The dead letters, oldest first: a snapshot (each item cloned).
    pub fn dead_letters(&self) -> Vec<DeadLetter<T>> {
        self.inner.dead_letters()
    }

    /// Puts a dead letter back, visible at once, attempts reset; durable once it returns,
    /// unless commits are failing: then it returns after the commit timeout with the revive
    /// still queued (written if the file recovers; [`journal_failed`](Self::journal_failed)
    /// says so). `RedriveError` has no room for a store failure yet.
    pub async fn redrive(&self, id: MessageId) -> Result<MessageId, RedriveError> {
        let id = self.inner.redrive(id)?;
        // Visible at once (0, as for an undelayed push).
        let seq = self.journal.submit([Op::Revive {
            id: id.get(),
            visible_at: 0,
        }]);
        // Not awaited for an error: `RedriveError` has no room for a store failure; the
        // revive stays queued (see the crate's limits).
        let _ = self.journal.committed(seq).await;
        Ok(id)
    }

    /// Removes every dead letter and hands them over; durable once it returns, unless
    /// commits are failing (as for [`redrive`](Self::redrive): the deletes stay queued, and
    /// the dead letters are back in the file after a crash before they land).
    pub async fn take_dead_letters(&self) -> Vec<DeadLetter<T>> {
        let letters = self.inner.take_dead_letters();
        let seq = self
            .journal
            .submit(letters.iter().map(|l| Op::Delete { id: l.id.get() }));
        // As in `redrive`: the deletes stay queued if the commit is failing.
        let _ = self.journal.committed(seq).await;
        letters
    }
}
