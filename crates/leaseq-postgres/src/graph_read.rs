//! Jobs that wait for other jobs on Postgres, the reading side: a job's state, the job a
//! message is, a workflow's steps, a batch's counts, a job's parents and their results,
//! and the result a job records (one fenced `UPDATE`: only while its row is queued).

use leaseq_async::dependencies::{
    BatchCounts, BatchId, DependencyError, NodeId, ParentOutcome, StepState, WorkflowId,
    WorkflowStep, MAX_RESULT_LEN,
};
use leaseq_core::graph::ResultError;
use leaseq_core::MessageId;
use tokio_postgres::Row;

use crate::graph::{id64, Fail};
use crate::store::PgStore;

/// A node's state from its row's `state`, `policy`, `failed` and `message` (columns `at`
/// to `at + 3`).
pub(crate) fn step_state(row: &Row, at: usize) -> StepState {
    let state: i16 = row.get(at);
    let policy: i16 = row.get(at + 1);
    let failed: i32 = row.get(at + 2);
    let message = MessageId::new(id64(row.get::<_, Option<i64>>(at + 3).unwrap_or(0)));
    match state {
        0 if failed > 0 && policy == 2 => StepState::Held,
        0 => StepState::Pending,
        1 => StepState::Queued(message),
        2 => StepState::Acked(message),
        3 => StepState::DeadLettered(message),
        _ => StepState::Cancelled,
    }
}

impl<T: Clone + Send + Sync + 'static> PgStore<T> {
    /// Rows of one read-only statement on a pooled connection.
    pub(crate) async fn graph_query(
        &self,
        what: &str,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<Row>, DependencyError> {
        async {
            let client = self.graph_client().await?;
            Ok::<_, Fail>(client.query(sql, params).await?)
        }
        .await
        .map_err(|f| f.into_error(what))
    }

    /// [`DependencyStore::job_state`](leaseq_async::dependencies::DependencyStore::job_state).
    pub(crate) async fn graph_job_state(
        &self,
        node: NodeId,
    ) -> Result<Option<StepState>, DependencyError> {
        let s = &self.db.options.schema;
        let rows = self
            .graph_query(
                "job_state",
                &format!(
                    "SELECT state, policy, failed, message FROM \"{s}\".graph_nodes WHERE node = $1"
                ),
                &[&(node.get() as i64)],
            )
            .await?;
        Ok(rows.first().map(|r| step_state(r, 0)))
    }

    /// [`DependencyStore::job_of`](leaseq_async::dependencies::DependencyStore::job_of).
    pub(crate) async fn graph_job_of(
        &self,
        message: MessageId,
    ) -> Result<Option<NodeId>, DependencyError> {
        let s = &self.db.options.schema;
        let rows = self
            .graph_query(
                "job_of",
                &format!("SELECT node FROM \"{s}\".graph_nodes WHERE message = $1"),
                &[&(message.get() as i64)],
            )
            .await?;
        Ok(rows.first().map(|r| NodeId::new(id64(r.get(0)))))
    }

    /// [`DependencyStore::workflow_steps`](leaseq_async::dependencies::DependencyStore::workflow_steps),
    /// in the spec's order.
    pub(crate) async fn graph_workflow_steps(
        &self,
        workflow: WorkflowId,
    ) -> Result<Option<Vec<WorkflowStep>>, DependencyError> {
        let s = &self.db.options.schema;
        let rows = self
            .graph_query(
                "workflow_steps",
                &format!(
                    "SELECT g.step, g.node, g.state, g.policy, g.failed, g.message
                     FROM \"{s}\".graph_workflows w
                     LEFT JOIN \"{s}\".graph_nodes g ON g.workflow = w.workflow
                     WHERE w.workflow = $1
                     ORDER BY array_position(w.steps, g.step)"
                ),
                &[&(workflow.get() as i64)],
            )
            .await?;
        if rows.is_empty() {
            return Ok(None);
        }
        Ok(Some(
            rows.iter()
                .filter(|r| r.get::<_, Option<i64>>(1).is_some())
                .map(|r| {
                    let name: String = r.get(0);
                    WorkflowStep::new(name, NodeId::new(id64(r.get(1))), step_state(r, 2))
                })
                .collect(),
        ))
    }

    /// [`DependencyStore::batch_counts`](leaseq_async::dependencies::DependencyStore::batch_counts).
    pub(crate) async fn graph_batch_counts(
        &self,
        batch: BatchId,
    ) -> Result<Option<BatchCounts>, DependencyError> {
        let s = &self.db.options.schema;
        let rows = self
            .graph_query(
                "batch_counts",
                &format!(
                    "SELECT b.total, count(g.node) FILTER (WHERE g.state <= 1),
                            count(g.node) FILTER (WHERE g.state = 2),
                            count(g.node) FILTER (WHERE g.state = 3),
                            count(g.node) FILTER (WHERE g.state = 4)
                     FROM \"{s}\".graph_batches b
                     LEFT JOIN \"{s}\".graph_nodes g ON g.batch = b.batch
                     WHERE b.batch = $1 GROUP BY b.total"
                ),
                &[&(batch.get() as i64)],
            )
            .await?;
        Ok(rows.first().map(|r| {
            let mut c = BatchCounts::default();
            c.total = id64(r.get(0));
            c.open = id64(r.get(1));
            c.acked = id64(r.get(2));
            c.dead_lettered = id64(r.get(3));
            c.cancelled = id64(r.get(4));
            c
        }))
    }

    /// [`DependencyStore::parent_outcomes`](leaseq_async::dependencies::DependencyStore::parent_outcomes),
    /// in the order the parents were given.
    pub(crate) async fn graph_parent_outcomes(
        &self,
        message: MessageId,
    ) -> Result<Option<Vec<ParentOutcome>>, DependencyError> {
        let s = &self.db.options.schema;
        let rows = self
            .graph_query(
                "parent_outcomes",
                &format!(
                    "SELECT p.node, p.state, p.policy, p.failed, p.message, p.result
                     FROM \"{s}\".graph_nodes c
                     LEFT JOIN \"{s}\".graph_edges e ON e.child = c.node
                     LEFT JOIN \"{s}\".graph_nodes p ON p.node = e.parent
                     WHERE c.message = $1
                     ORDER BY e.ord"
                ),
                &[&(message.get() as i64)],
            )
            .await?;
        if rows.is_empty() {
            return Ok(None);
        }
        Ok(Some(
            rows.iter()
                .filter(|r| r.get::<_, Option<i64>>(0).is_some())
                .map(|r| {
                    ParentOutcome::new(
                        NodeId::new(id64(r.get(0))),
                        step_state(r, 1),
                        r.get::<_, Option<Vec<u8>>>(5),
                    )
                })
                .collect(),
        ))
    }

    /// [`DependencyStore::record_result`](leaseq_async::dependencies::DependencyStore::record_result):
    /// kept only while the job's row is queued (before its ack), in one statement.
    pub(crate) async fn graph_record_result(
        &self,
        message: MessageId,
        result: &[u8],
    ) -> Result<(), DependencyError> {
        if result.len() > MAX_RESULT_LEN {
            let len = result.len();
            return Err(DependencyError::Result(ResultError::TooLong { len }));
        }
        let s = &self.db.options.schema;
        let rows = self
            .graph_query(
                "record_result",
                &format!(
                    "WITH u AS (UPDATE \"{s}\".graph_nodes SET result = $2
                                WHERE message = $1 AND state = 1 RETURNING node)
                     SELECT (SELECT count(*) FROM u),
                            (SELECT count(*) FROM \"{s}\".graph_nodes WHERE message = $1)"
                ),
                &[&(message.get() as i64), &result],
            )
            .await?;
        let (done, tracked): (i64, i64) = rows.first().map_or((0, 0), |r| (r.get(0), r.get(1)));
        match (done, tracked) {
            (1.., _) => Ok(()),
            (_, 0) => Err(DependencyError::Result(ResultError::Untracked(message))),
            _ => Err(DependencyError::Result(ResultError::NotQueued(message))),
        }
    }
}
