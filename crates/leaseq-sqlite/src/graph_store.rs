//! [`DependencyStore`] for the SQLite store: each call runs on the memory store (its
//! graph, `leaseq_async::dependencies`) under the journal's lock, and what it changed (the
//! graph's rows, the jobs it released, the items it cancelled or redrove) is queued in the
//! same batch, so it lands in one group commit; `Ok` once that is committed, a commit
//! failing for the commit timeout [`DependencyError::Store`], outcome unknown.
//!
//! From the graph's first use (or an open that read graph rows) the memory store notes
//! every node a change touches (`MemoryStore::journal_graph`), and every journaled change
//! that may touch the graph takes those notes into its own ops ([`with_graph`]): an ack
//! (`seam.rs`, under the journal's lock, so a dependent it released, which a receiver may
//! take at once, is inserted in the ack's own commit and before that receiver's attempt),
//! dead letters (`journal_events`), cancels, redrives and purges.
//!
//! [`with_graph`]: SqliteStore::with_graph

use std::future::Future;
use std::sync::atomic::Ordering;

use leaseq_async::dependencies::{
    BatchCounts, BatchId, BatchOn, DependencyError, DependencyStore, NodeId, OnFailedParent,
    Parent, ParentOutcome, Refused, StepState, WorkflowId, WorkflowSpec, WorkflowStep,
};
use leaseq_async::{Codec, FinishOutcome, Runtime, StoreError};
use leaseq_core::{MessageId, PushOptions};

use crate::op::Op;
use crate::store::{ready_now, SqliteStore};

impl<T: Clone + Send + 'static, R: Runtime, C: Codec<T>> SqliteStore<T, R, C> {
    /// Turns the graph's journal on (before the memory store's graph is first changed).
    pub(crate) fn start_graph(&self) {
        if !self.graph_on.load(Ordering::Relaxed) {
            self.inner.journal_graph();
            self.graph_on.store(true, Ordering::Relaxed);
        }
    }

    /// `change` made on the memory store and the ops `ops` names for its outcome queued,
    /// with the sequence to wait for: while the graph is in use, both under the journal's
    /// lock with what the change did to the graph ([`with_graph`](Self::with_graph): a
    /// dependent it released goes in the same commit, before any receiver's attempt);
    /// else the change first, and its ops queued after it only when `changed` says the
    /// outcome changed something (a plain settle never holds the journal's lock).
    pub(crate) fn journaled<U>(
        &self,
        change: impl FnOnce() -> U,
        ops: impl FnOnce(&U) -> Vec<Op>,
        changed: impl FnOnce(&U) -> bool,
    ) -> (U, Option<u64>) {
        if self.graph_on.load(Ordering::Relaxed) {
            let (out, seq) = self.journal.submit_all_with(|| {
                let out = change();
                let ops = self.with_graph(ops(&out));
                (out, ops)
            });
            (out, Some(seq))
        } else {
            let out = change();
            let seq = changed(&out).then(|| self.journal.submit(ops(&out)));
            (out, seq)
        }
    }

    /// `ops` followed by what the graph changed since the last take (nothing while the
    /// graph is not in use): each released job's insert, then each changed node's row.
    pub(crate) fn with_graph(&self, mut ops: Vec<Op>) -> Vec<Op> {
        if !self.graph_on.load(Ordering::Relaxed) {
            return ops;
        }
        let changes = self.inner.take_graph_changes();
        let priority = PushOptions::new().priority;
        for (m, item) in changes.released {
            // Checked when the graph took it (`check_items`): the same codec encodes it.
            let payload = self.codec.encode(&item).unwrap_or_default();
            ops.push(Op::Insert {
                id: m.get(),
                payload,
                visible_at: 0,
                expires_at: None,
                priority,
                key: None,
                flow: None,
                window: None,
            });
        }
        for (node, row) in changes.records {
            // An acked job's row is left as it was written when it was queued: the restore
            // reads a queued job whose item the file no longer holds as acked (the ack's
            // delete is in this same commit), so an ack writes no row of its own.
            if let Some((record, _)) = &row {
                if matches!(record.state, StepState::Acked(m) if record.message == Some(m)) {
                    continue;
                }
            }
            let row = row.map(|(record, payload)| {
                let payload = payload.and_then(|p| self.codec.encode(&p).ok());
                (crate::graph::encode(&record), payload)
            });
            ops.push(Op::Graph {
                node: node.get(),
                row,
            });
        }
        ops
    }

    /// Runs `step` on the memory store under the journal's lock, its ops (from `step`,
    /// then the graph's) queued with it; its output and the sequence to wait for.
    pub(crate) fn graph_step<U>(&self, step: impl FnOnce() -> (U, Vec<Op>)) -> (U, u64) {
        self.start_graph();
        self.journal.submit_all_with(|| {
            let (out, ops) = step();
            (out, self.with_graph(ops))
        })
    }

    /// Refused, nothing taken, while commits fail or for an item the file cannot hold.
    fn check_items<'a>(&self, items: impl IntoIterator<Item = &'a T>) -> Result<(), DependencyError>
    where
        T: 'a,
    {
        if self.journal.failing() {
            return Err(DependencyError::Store(self.journal.refusal()));
        }
        for item in items {
            let size = match self.codec.encode(item) {
                Ok(bytes) => bytes.len(),
                Err(e) => return Err(not_done(format!("cannot encode a job: {e}"))),
            };
            if size > self.max_item_size {
                let max = self.max_item_size;
                return Err(not_done(format!("a job of {size} bytes, above {max}")));
            }
        }
        Ok(())
    }

    /// A change's answer once its ops (`seq`) are committed.
    async fn committed<U>(&self, seq: u64, out: U) -> Result<U, DependencyError> {
        self.journal.committed(seq).await?;
        Ok(out)
    }

    /// A push's answer: refused at once, or `Ok` once committed; a commit failing for the
    /// commit timeout hands back a copy of what was pushed (outcome unknown: it may land).
    #[allow(clippy::type_complexity)]
    async fn pushed<U: Send + 'static, P: Send + 'static>(
        &self,
        r: Result<(Result<U, Refused<P>>, u64, P), Refused<P>>,
    ) -> Result<U, Refused<P>> {
        let (r, seq, copy) = r?;
        let out = r?;
        match self.journal.committed(seq).await {
            Ok(()) => Ok(out),
            Err(e) => Err(Refused::new(DependencyError::Store(e), copy)),
        }
    }

    /// Each step of `workflow` and its state now.
    fn steps_now(&self, workflow: WorkflowId) -> Vec<WorkflowStep> {
        ready_now(self.inner.workflow_steps(workflow))
            .ok()
            .flatten()
            .unwrap_or_default()
    }
}

fn not_done(why: String) -> DependencyError {
    DependencyError::Store(StoreError::not_done(why))
}

/// The ops of steps whose message left the queue or came back between `before` and
/// `after` (a cancel, a retry's redrive).
fn moved(before: &[WorkflowStep], after: &[WorkflowStep], ops: &mut Vec<Op>) {
    for (b, a) in before.iter().zip(after) {
        match (b.state, a.state) {
            (StepState::Queued(m), StepState::Cancelled) => {
                ops.push(Op::Delete { id: m.get() });
            }
            (StepState::DeadLettered(m), StepState::Queued(n)) if m == n => {
                ops.push(Op::Revive {
                    id: m.get(),
                    visible_at: 0,
                });
            }
            _ => {}
        }
    }
}

impl<T: Clone + Send + 'static, R: Runtime, C: Codec<T>> DependencyStore<T>
    for SqliteStore<T, R, C>
{
    fn push_after(
        &self,
        item: T,
        parents: &[Parent],
        policy: OnFailedParent,
    ) -> impl Future<Output = Result<NodeId, Refused<T>>> + Send {
        let r = match self.check_items([&item]) {
            Err(error) => Err(Refused::new(error, item)),
            Ok(()) => {
                let copy = item.clone();
                let (r, seq) = self.graph_step(|| {
                    (
                        ready_now(self.inner.push_after(item, parents, policy)),
                        Vec::new(),
                    )
                });
                Ok((r, seq, copy))
            }
        };
        self.pushed(r)
    }

    fn push_workflow(
        &self,
        spec: WorkflowSpec<T>,
    ) -> impl Future<Output = Result<WorkflowId, Refused<WorkflowSpec<T>>>> + Send {
        let r = match self.check_items(spec.payloads()) {
            Err(error) => Err(Refused::new(error, spec)),
            Ok(()) => {
                let copy = spec.clone();
                let (r, seq) =
                    self.graph_step(|| (ready_now(self.inner.push_workflow(spec)), Vec::new()));
                Ok((r, seq, copy))
            }
        };
        self.pushed(r)
    }

    fn workflow_steps(
        &self,
        workflow: WorkflowId,
    ) -> impl Future<Output = Result<Option<Vec<WorkflowStep>>, DependencyError>> + Send {
        self.inner.workflow_steps(workflow)
    }

    fn cancel_workflow(
        &self,
        workflow: WorkflowId,
    ) -> impl Future<Output = Result<Vec<NodeId>, DependencyError>> + Send {
        let (r, seq) = self.graph_step(|| {
            let before = self.steps_now(workflow);
            let r = ready_now(self.inner.cancel_workflow(workflow));
            let mut ops = Vec::new();
            moved(&before, &self.steps_now(workflow), &mut ops);
            let ops = ops
                .into_iter()
                .flat_map(|op| match op {
                    Op::Delete { id } => {
                        self.finish_ops(MessageId::new(id), FinishOutcome::Cancelled)
                    }
                    op => vec![op],
                })
                .collect();
            (r, ops)
        });
        async move { self.committed(seq, r?).await }
    }

    fn retry_step(
        &self,
        workflow: WorkflowId,
        step: &str,
    ) -> impl Future<Output = Result<(), DependencyError>> + Send {
        let (r, seq) = self.graph_step(|| {
            let before = self.steps_now(workflow);
            let r = ready_now(self.inner.retry_step(workflow, step));
            let mut ops = Vec::new();
            moved(&before, &self.steps_now(workflow), &mut ops);
            (r, ops)
        });
        async move { self.committed(seq, r?).await }
    }

    fn push_batch(
        &self,
        children: Vec<T>,
        callback: T,
        on: BatchOn,
    ) -> impl Future<Output = Result<BatchId, Refused<(Vec<T>, T)>>> + Send {
        let r = match self.check_items(children.iter().chain([&callback])) {
            Err(error) => Err(Refused::new(error, (children, callback))),
            Ok(()) => {
                let copy = (children.clone(), callback.clone());
                let (r, seq) = self.graph_step(|| {
                    let r = ready_now(self.inner.push_batch(children, callback, on));
                    (r, Vec::new())
                });
                Ok((r, seq, copy))
            }
        };
        self.pushed(r)
    }

    fn batch_counts(
        &self,
        batch: BatchId,
    ) -> impl Future<Output = Result<Option<BatchCounts>, DependencyError>> + Send {
        self.inner.batch_counts(batch)
    }

    fn forget_workflow(
        &self,
        workflow: WorkflowId,
    ) -> impl Future<Output = Result<(), DependencyError>> + Send {
        let (r, seq) =
            self.graph_step(|| (ready_now(self.inner.forget_workflow(workflow)), Vec::new()));
        async move { self.committed(seq, r?).await }
    }

    fn forget_batch(
        &self,
        batch: BatchId,
    ) -> impl Future<Output = Result<(), DependencyError>> + Send {
        let (r, seq) = self.graph_step(|| (ready_now(self.inner.forget_batch(batch)), Vec::new()));
        async move { self.committed(seq, r?).await }
    }

    fn record_result(
        &self,
        message: MessageId,
        result: &[u8],
    ) -> impl Future<Output = Result<(), DependencyError>> + Send {
        let (r, seq) = self.graph_step(|| {
            (
                ready_now(self.inner.record_result(message, result)),
                Vec::new(),
            )
        });
        async move { self.committed(seq, r?).await }
    }

    fn parent_outcomes(
        &self,
        message: MessageId,
    ) -> impl Future<Output = Result<Option<Vec<ParentOutcome>>, DependencyError>> + Send {
        self.inner.parent_outcomes(message)
    }

    fn job_state(
        &self,
        node: NodeId,
    ) -> impl Future<Output = Result<Option<StepState>, DependencyError>> + Send {
        self.inner.job_state(node)
    }

    fn job_of(
        &self,
        message: MessageId,
    ) -> impl Future<Output = Result<Option<NodeId>, DependencyError>> + Send {
        self.inner.job_of(message)
    }

    fn workflows(
        &self,
        after: Option<WorkflowId>,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<WorkflowId>, DependencyError>> + Send {
        self.inner.workflows(after, limit)
    }

    fn batches(
        &self,
        after: Option<BatchId>,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<BatchId>, DependencyError>> + Send {
        self.inner.batches(after, limit)
    }

    fn batch_callback(
        &self,
        batch: BatchId,
    ) -> impl Future<Output = Result<Option<(NodeId, BatchOn)>, DependencyError>> + Send {
        self.inner.batch_callback(batch)
    }
}
