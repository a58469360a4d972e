//! The durable answers of the seam's settles: a settle (ack, a batch of acks, cancel,
//! checkpoint) made on the memory store answers once the journal has committed its change,
//! a refusal at once, and a commit failing for the commit timeout as a store error, outcome
//! unknown (the change stays queued).

use std::future::Future;

use leaseq_async::{
    AdminError, Checkpointing, Codec, FinishOutcome, LeaseKey, Progress, Runtime, SettleError,
    Store,
};
use leaseq_core::{Acked, CancelError, Failure, MessageId, Nacked};

use crate::op::Op;
use crate::store::{ready_now, SqliteStore, SqliteTicket};

impl<T: Clone + Send + 'static, R: Runtime, C: Codec<T>> SqliteStore<T, R, C> {
    /// A settle's answer: refused at once, or given once its change (`seq`) is committed;
    /// a store failure (the commit failing for the commit timeout) is `SettleError::Store`,
    /// outcome unknown (the change stays queued).
    pub(crate) async fn settled<U: Send + 'static>(
        &self,
        seq: Option<u64>,
        r: Result<U, SettleError>,
    ) -> Result<U, SettleError> {
        let done = r?;
        if let Some(seq) = seq {
            self.journal.committed(seq).await?;
        }
        Ok(done)
    }

    /// An ack made on the memory store with its durable change queued: the row's delete
    /// and, while the graph is in use, the graph's changes (the dependents it released,
    /// their rows), made and queued under the journal's lock so that they land in the
    /// ack's commit and before any op of a receiver that took a released dependent. The
    /// ack answers once that is committed (a refused one at once).
    pub(crate) fn ack_journaled(
        &self,
        ticket: SqliteTicket,
    ) -> impl Future<Output = Result<Acked, SettleError>> + Send + '_ {
        let id = ticket.id;
        let ops = |r: &Result<Acked, SettleError>| match r {
            Ok(_) => self.finish_ops(id, FinishOutcome::Acked),
            Err(_) => Vec::new(),
        };
        let (r, seq) = self.journaled(
            || ready_now(self.inner.ack(ticket.inner)),
            ops,
            Result::is_ok,
        );
        self.settled(seq, r)
    }

    /// A nack made on the memory store with its durable change queued (see
    /// [`ack_journaled`](Self::ack_journaled): with the graph in use, under the journal's
    /// lock with what its dead letter did to the graph).
    pub(crate) fn nack_journaled(
        &self,
        ticket: SqliteTicket,
        failure: Failure,
    ) -> impl Future<Output = Result<Nacked, SettleError>> + Send + '_ {
        let id = ticket.id;
        let error = failure.error.clone();
        let (r, seq) = if self.graph_on.load(std::sync::atomic::Ordering::Relaxed) {
            let (r, seq) = self.journal.submit_all_with(|| {
                let r = ready_now(self.inner.nack(ticket.inner, failure));
                let ops = match &r {
                    Ok(n) => self.nacked_ops(id, n, error),
                    Err(_) => Vec::new(),
                };
                (r, self.with_graph(ops))
            });
            (r, Some(seq))
        } else {
            let r = ready_now(self.inner.nack(ticket.inner, failure));
            let seq = r.as_ref().ok().map(|n| self.journal_nacked(id, n, error));
            (r, seq)
        };
        self.settled(seq, r)
    }

    /// A handler's dead letter made on the memory store with its durable change queued
    /// (as [`nack_journaled`](Self::nack_journaled)).
    pub(crate) fn dead_letter_journaled(
        &self,
        ticket: SqliteTicket,
        error: String,
    ) -> impl Future<Output = Result<u32, SettleError>> + Send + '_ {
        let (r, seq) = if self.graph_on.load(std::sync::atomic::Ordering::Relaxed) {
            let (r, seq) = self.journal.submit_all_with(|| {
                let r = ready_now(self.inner.dead_letter(ticket.inner, error));
                let ops = if r.is_ok() {
                    self.event_ops()
                } else {
                    Vec::new()
                };
                (r, self.with_graph(ops))
            });
            (r, Some(seq))
        } else {
            let r = ready_now(self.inner.dead_letter(ticket.inner, error));
            let seq = r.is_ok().then(|| self.journal_events());
            (r, seq)
        };
        self.settled(seq, r)
    }

    /// Several acks in one step: the rows of those the memory store accepted go in one
    /// submit, and every answer waits for that commit (refused ones answer as refused;
    /// accepted ones turn into a store error, outcome unknown, if commits fail for the
    /// commit timeout: the deletes stay queued).
    pub(crate) fn delete_acked_many(
        &self,
        tickets: Vec<SqliteTicket>,
    ) -> impl Future<Output = Vec<Result<Acked, SettleError>>> + Send + '_ {
        let ids: Vec<MessageId> = tickets.iter().map(|t| t.id).collect();
        let acks = || {
            ready_now(
                self.inner
                    .ack_many(tickets.into_iter().map(|t| t.inner).collect()),
            )
        };
        let ops = |results: &Vec<Result<Acked, SettleError>>| {
            ids.iter()
                .zip(results)
                .filter(|(_, r)| r.is_ok())
                .flat_map(|(id, _)| self.finish_ops(*id, FinishOutcome::Acked))
                .collect()
        };
        let any = |results: &Vec<Result<Acked, SettleError>>| results.iter().any(Result::is_ok);
        let (results, seq) = self.journaled(acks, ops, any);
        async move {
            let Some(seq) = seq else {
                return results; // all refused: nothing to wait for
            };
            match self.journal.committed(seq).await {
                Ok(()) => results,
                // The acks stay queued: their outcome is unknown.
                Err(e) => results
                    .into_iter()
                    .map(|r| r.and_then(|_| Err(SettleError::Store(e.clone()))))
                    .collect(),
            }
        }
    }

    /// A cancel made on the memory store: the row goes (with the graph in use, made and
    /// queued under the journal's lock with what it did to the graph, as
    /// [`ack_journaled`](Self::ack_journaled)), and the cancel answers once that is
    /// committed (a store error, outcome unknown, if commits fail for the commit timeout:
    /// the delete stays queued).
    pub(crate) fn cancel_journaled(
        &self,
        id: MessageId,
        leased: bool,
    ) -> impl Future<Output = Result<T, AdminError<CancelError>>> + Send + '_ {
        let ops = |r: &Result<T, _>| match r {
            Ok(_) => self.finish_ops(id, FinishOutcome::Cancelled),
            Err(_) => Vec::new(),
        };
        let cancel = || ready_now(self.inner.cancel(id, leased));
        let (r, seq) = self.journaled(cancel, ops, Result::is_ok);
        async move {
            if let Some(seq) = seq {
                self.journal.committed(seq).await?;
            }
            r
        }
    }

    /// A handler's checkpoint: checked and recorded on the memory store, its op queued
    /// under the journal's lock (so two holders' checkpoints land in the order they were
    /// accepted); `Ok` once committed, a refused lease at once.
    pub(crate) fn record_checkpoint(&self, lease: LeaseKey, progress: Progress) -> Checkpointing {
        let Some(receipt) = lease.as_receipt() else {
            let e = SettleError::Stale(leaseq_core::ReceiptError::Unknown);
            return Box::pin(std::future::ready(Err(e)));
        };
        let id = receipt.id().get();
        let mut refused = None;
        let seq = self.journal.submit_with(|| {
            let bytes = progress.as_bytes().to_vec();
            match self.inner.checkpoint_lease(receipt, progress) {
                Ok(()) => Some(Op::Progress {
                    id,
                    progress: bytes,
                }),
                Err(e) => {
                    refused = Some(e);
                    None
                }
            }
        });
        let journal = self.journal.clone();
        Box::pin(async move {
            match (refused, seq) {
                (Some(e), _) => Err(SettleError::Stale(e)),
                (None, Some(seq)) => journal.committed(seq).await.map_err(SettleError::Store),
                (None, None) => Ok(()),
            }
        })
    }
}
