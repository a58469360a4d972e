//! What an operator or a test reads and does on a [`SqliteStore`] beyond the `Store` seam:
//! the memory store inside, commit figures, syncing, dead letters and redrive.

use std::sync::Arc;

use leaseq_async::{Codec, MemoryStore, Runtime};
use leaseq_core::{DeadLetter, MessageId, RedriveError};

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

    /// Whether a commit failed (I/O error, disk full): the file then no longer follows the
    /// queue (the queue itself goes on in memory).
    pub fn journal_failed(&self) -> bool {
        self.journal.failed()
    }

    /// Completes once every change so far is durable.
    pub async fn sync(&self) {
        self.journal.committed(self.journal.last()).await
    }

    /// The dead letters, oldest first: a snapshot (each item cloned).
    pub fn dead_letters(&self) -> Vec<DeadLetter<T>> {
        self.inner.dead_letters()
    }

    /// Puts a dead letter back, visible at once, attempts reset; durable once it returns.
    pub async fn redrive(&self, id: MessageId) -> Result<MessageId, RedriveError> {
        let id = self.inner.redrive(id)?;
        // Visible at once (0, as for an undelayed push).
        let seq = self.journal.submit([Op::Revive {
            id: id.get(),
            visible_at: 0,
        }]);
        self.journal.committed(seq).await;
        Ok(id)
    }

    /// Removes every dead letter and hands them over; durable once it returns.
    pub async fn take_dead_letters(&self) -> Vec<DeadLetter<T>> {
        let letters = self.inner.take_dead_letters();
        let seq = self
            .journal
            .submit(letters.iter().map(|l| Op::Delete { id: l.id.get() }));
        self.journal.committed(seq).await;
        letters
    }
}
