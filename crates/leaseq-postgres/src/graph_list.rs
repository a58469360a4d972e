//! Jobs that wait for other jobs on Postgres, the listing side an operator reads: the
//! queue's workflows and batches in id order, and a batch's callback.

use leaseq_async::dependencies::{BatchId, BatchOn, DependencyError, NodeId, WorkflowId};

use crate::graph::id64;
use crate::store::PgStore;

impl<T: Clone + Send + Sync + 'static> PgStore<T> {
    /// Ids of one of the graph's tables (`graph_workflows` / `graph_batches`) of this queue
    /// after `after`, at most `limit`, in id order.
    async fn graph_ids_after(
        &self,
        what: &str,
        table: &str,
        column: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<u64>, DependencyError> {
        let s = &self.db.options.schema;
        let after = after.map_or(-1, |a| i64::try_from(a).unwrap_or(i64::MAX));
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self
            .graph_query(
                what,
                &format!(
                    "SELECT {column} FROM \"{s}\".{table}
                     WHERE queue = $1 AND {column} > $2 ORDER BY {column} LIMIT $3"
                ),
                &[&self.db.queue, &after, &limit],
            )
            .await?;
        Ok(rows.iter().map(|r| id64(r.get(0))).collect())
    }

    /// [`DependencyStore::workflows`](leaseq_async::dependencies::DependencyStore::workflows).
    pub(crate) async fn graph_workflows(
        &self,
        after: Option<WorkflowId>,
        limit: usize,
    ) -> Result<Vec<WorkflowId>, DependencyError> {
        let after = after.map(WorkflowId::get);
        let ids = self
            .graph_ids_after("workflows", "graph_workflows", "workflow", after, limit)
            .await?;
        Ok(ids.into_iter().map(WorkflowId::new).collect())
    }

    /// [`DependencyStore::batches`](leaseq_async::dependencies::DependencyStore::batches).
    pub(crate) async fn graph_batches(
        &self,
        after: Option<BatchId>,
        limit: usize,
    ) -> Result<Vec<BatchId>, DependencyError> {
        let after = after.map(BatchId::get);
        let ids = self
            .graph_ids_after("batches", "graph_batches", "batch", after, limit)
            .await?;
        Ok(ids.into_iter().map(BatchId::new).collect())
    }

    /// [`DependencyStore::batch_callback`](leaseq_async::dependencies::DependencyStore::batch_callback).
    pub(crate) async fn graph_batch_callback(
        &self,
        batch: BatchId,
    ) -> Result<Option<(NodeId, BatchOn)>, DependencyError> {
        let s = &self.db.options.schema;
        let rows = self
            .graph_query(
                "batch_callback",
                &format!("SELECT callback, on_success FROM \"{s}\".graph_batches WHERE batch = $1"),
                &[&(batch.get() as i64)],
            )
            .await?;
        Ok(rows.first().map(|r| {
            let on = if r.get::<_, bool>(1) {
                BatchOn::Success
            } else {
                BatchOn::Complete
            };
            (NodeId::new(id64(r.get(0))), on)
        }))
    }
}
