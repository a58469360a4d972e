//! Snooze on the SQLite store, native: the memory store snoozes (its core puts the item back
//! for the delay, the attempt not counted, within `Config::max_snoozes`), and the row
//! records it (`Op::Snoozed`: the attempt taken back, the next visibility, the item's
//! uncounted snoozes so far, format 7's `snoozes` column), so that the bound holds across
//! a reopen (`restore.rs` gives the count back to the core). A snooze past the bound is
//! the core's counted failure, journaled as a nack's retry or dead letter.

use std::time::Duration;

use leaseq_async::{Codec, Runtime, SettleError, Store};
use leaseq_core::Snoozed;

use crate::op::Op;
use crate::store::{ready_now, SqliteStore, SqliteTicket};

impl<T: Clone + Send + 'static, R: Runtime, C: Codec<T>> SqliteStore<T, R, C> {
    /// `Store::snooze`: made on the memory store at once, answered once its row is
    /// committed.
    pub(crate) async fn snooze_journaled(
        &self,
        ticket: SqliteTicket,
        delay: Duration,
    ) -> Result<Snoozed, SettleError> {
        let (id, attempt) = (ticket.id, ticket.attempt);
        let r = ready_now(self.inner.snooze(ticket.inner, delay));
        let seq = r.as_ref().ok().map(|s| match *s {
            Snoozed::Later {
                visible_at,
                snoozes,
            } => self.journal.submit([Op::Snoozed {
                id: id.get(),
                // The attempt journaled when the lease was taken, taken back.
                attempts: attempt.saturating_sub(1),
                visible_at: self.to_disk(visible_at),
                snoozes,
            }]),
            Snoozed::Counted(n) => {
                self.journal_nacked(id, &n, Some("snooze limit reached".to_string()))
            }
            _ => self.journal_events(),
        });
        self.settled(seq, r).await
    }
}
