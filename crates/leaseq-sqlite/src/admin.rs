//! What an operator or a test reads and does on a [`SqliteStore`] beyond the `Store` seam:
//! the memory store inside, commit figures, syncing, dead letters and redrive.

use std::sync::Arc;

use leaseq_async::{AdminError, Codec, DeadFilter, MemoryStore, Runtime, StoreError};
use leaseq_core::{DeadLetter, MessageId, RedriveError};

use crate::commit_error::CommitError;
use crate::op::Op;
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

    /// Puts a dead letter back, visible at once, attempts reset; answers once the revive
    /// is committed (a store error, outcome unknown, if commits fail for the commit
    /// timeout: the revive stays queued and lands if the file recovers).
    pub(crate) async fn redrive_one(
        &self,
        id: MessageId,
    ) -> Result<MessageId, AdminError<RedriveError>> {
        let id = self.inner.redrive(id).map_err(AdminError::Refused)?;
        // Visible at once (0, as for an undelayed push).
        let seq = self.journal.submit(self.with_graph(vec![Op::Revive {
            id: id.get(),
            visible_at: 0,
        }]));
        self.journal.committed(seq).await?;
        Ok(id)
    }

    /// Redrives every dead letter `filter` takes that can go back, in one commit; how many.
    pub(crate) async fn redrive_every(&self, filter: &DeadFilter<T>) -> Result<u64, StoreError> {
        let ids = self.inner.redrive_matching(filter);
        let ops = ids.iter().map(|id| Op::Revive {
            id: id.get(),
            visible_at: 0,
        });
        let seq = self.journal.submit(self.with_graph(ops.collect()));
        self.journal.committed(seq).await?;
        Ok(ids.len() as u64)
    }

    /// Deletes every ready and delayed item, in one commit; how many.
    pub(crate) async fn purge_items(&self) -> Result<u64, StoreError> {
        let ids = self.inner.purge();
        let seq = self
            .journal
            .submit(self.with_graph(ids.iter().map(|id| Op::Delete { id: id.get() }).collect()));
        self.journal.committed(seq).await?;
        Ok(ids.len() as u64)
    }

    /// Removes every dead letter and hands them over, in one commit; answers once the
    /// deletes are committed (a store error, outcome unknown, if commits fail for the
    /// commit timeout: the deletes stay queued, and the dead letters are back in the file
    /// after a crash before they land).
    pub async fn take_dead_letters(&self) -> Result<Vec<DeadLetter<T>>, StoreError> {
        self.take_dead_matching(&DeadFilter::all()).await
    }

    /// [`take_dead_letters`](Self::take_dead_letters) for the dead letters `filter` takes.
    pub async fn take_dead_matching(
        &self,
        filter: &DeadFilter<T>,
    ) -> Result<Vec<DeadLetter<T>>, StoreError> {
        let letters = self.inner.take_dead_matching(filter);
        let seq = self.journal.submit(
            self.with_graph(
                letters
                    .iter()
                    .map(|l| Op::Delete { id: l.id.get() })
                    .collect(),
            ),
        );
        self.journal.committed(seq).await?;
        Ok(letters)
    }
}
