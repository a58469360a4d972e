//! The finish paths of a memory store that keeps a record of finished jobs (see
//! `history.rs`): taken instead of the plain ones only when the record is on, so that a
//! queue without it pays one branch on an `Option`.

use leaseq_core::{Acked, ReceiptError, Timestamp};

use super::history::{Entry, History};
use super::{MemoryStore, MemoryTicket, State};
use crate::history::FinishOutcome;
use crate::runtime::Runtime;

impl<T, R: Runtime> MemoryStore<T, R> {
    /// Acks as `ack_locked` does (`State::ack_ticket` under the lock), then records the ack from the item handed out (its kind
    /// read after the lock).
    #[cold]
    #[inline(never)]
    pub(super) fn ack_recorded(
        &self,
        ticket: MemoryTicket,
        now: Timestamp,
    ) -> Result<(Acked, T), ReceiptError> {
        let (id, attempts) = (ticket.receipt.id(), ticket.receipt.lease_number());
        // `ack_ticket` itself, not `ack_locked`: that one keeps one caller, the plain ack,
        // which inlines it (with a second caller it was left out of line: about 20
        // instructions an ack on `benches/instructions.sh path`).
        let r = self.lock().ack_ticket(ticket, now, &self.inbox);
        if let (Ok((_, item)), Some(h)) = (&r, &self.history) {
            let entry = Entry::plain(id, FinishOutcome::Acked, attempts, h.kind(item));
            if h.record(now, entry) {
                self.driver_wake.notify(1);
            }
        }
        r
    }

    /// Records a cancel of `item` (its deliveries read before it, `attempts`).
    #[cold]
    #[inline(never)]
    pub(super) fn record_cancel(
        &self,
        id: leaseq_core::MessageId,
        attempts: u32,
        item: &T,
        now: Timestamp,
    ) {
        if let Some(h) = &self.history {
            let entry = Entry::plain(id, FinishOutcome::Cancelled, attempts, h.kind(item));
            if h.record(now, entry) {
                self.driver_wake.notify(1);
            }
        }
    }

    /// Whether the record is kept.
    #[inline]
    pub(super) fn records(&self) -> bool {
        self.history.is_some()
    }

    /// The record's entries `query` asks for (none when it is not kept).
    pub(super) fn history_now(
        &self,
        query: &crate::history::HistoryQuery,
    ) -> Vec<crate::history::Finished> {
        let Some(h) = &self.history else {
            return Vec::new();
        };
        // The dead letters the driver has not recorded yet.
        drop(self.lock_recorded());
        h.read(query)
    }
}

impl<T, R> MemoryStore<T, R> {
    /// Under the lock (the driver's step, an operator's call): tells the dependency graph
    /// of the dead letters the core noted (see `graph.rs`) and records them, each finished when it was buried (their kinds read where the letters
    /// lie).
    #[cold]
    #[inline(never)]
    pub(super) fn record_dead(&self, st: &mut State<T>) {
        let ids = st.core.take_noted_dead();
        if let Some(h) = &self.history {
            self.record_dead_in(h, st, &ids);
        }
        // The noted ids' other reader: the dependency graph, when in use.
        if st.graph.on {
            st.graph_dead(&ids, &self.inbox);
        }
    }

    /// [`record_dead`](Self::record_dead)'s record of finished jobs.
    fn record_dead_in(&self, h: &History<T>, st: &State<T>, ids: &[leaseq_core::MessageId]) {
        let now = st.core.now();
        let mut woke = false;
        for &id in ids {
            let (at, entry) = match st.core.get_dead_letter(id) {
                Some(letter) => (letter.at, h.buried(letter)),
                // Gone again in the same section (purged): what the id says.
                None => (now, Entry::plain(id, FinishOutcome::DeadLettered, 0, None)),
            };
            woke |= h.record(at, entry);
        }
        if woke {
            self.driver_wake.notify(1);
        }
    }
}
