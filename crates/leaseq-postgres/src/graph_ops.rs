//! Jobs that wait for other jobs on Postgres, an operator's calls: cancel what is left of a
//! workflow, retry a failed step, forget a finished workflow or batch. Each one transaction;
//! the cancels tell the graph as every cancel does (`graph_told.rs`).

use leaseq_async::dependencies::{BatchId, DependencyError, NodeId, WorkflowId};
use leaseq_core::graph::GraphError;
use leaseq_core::{MessageId, RedriveError};
use tokio_postgres::Transaction;

use crate::graph::{commit, id64, Fail};
use crate::graph_read::step_state;
use crate::store::PgStore;

impl<T: Clone + Send + Sync + 'static> PgStore<T> {
    /// [`DependencyStore::cancel_workflow`](leaseq_async::dependencies::DependencyStore::cancel_workflow):
    /// pending steps cancelled in the graph, queued ones deleted from `items` (the
    /// delete tells the graph, which cancels their nodes, keeping the payload for a retry); the steps that were
    /// open and are cancelled after, in node order.
    pub(crate) async fn graph_cancel_workflow(
        &self,
        workflow: WorkflowId,
    ) -> Result<Vec<NodeId>, DependencyError> {
        let s = &self.db.options.schema;
        let wf = workflow.get() as i64;
        async {
            let mut client = self.graph_client().await?;
            let tx = client.transaction().await?;
            let open = steps(&tx, s, wf, "state <= 1").await?;
            let cancel = crate::graph_told::told(
                &crate::plain_sql::keeping(
                    &format!("DELETE FROM \"{s}\".items WHERE id = $1"),
                    "",
                    crate::plain_sql::Leaving::Deleted,
                    &format!("\"{s}\""),
                ),
                "",
                s,
                crate::graph_told::Fate::Cancelled,
            );
            for (node, state, message) in &open {
                if *state == 0 {
                    tx.execute(
                        &format!("SELECT \"{s}\".graph_move($1, 4::smallint)"),
                        &[node],
                    )
                    .await?;
                } else if let Some(m) = message {
                    // A windowed key stays held (`plain_sql.rs`); the delete tells the graph
                    // (`graph_told.rs`).
                    tx.execute(&cancel, &[m]).await?;
                }
            }
            // An operator's cancel: none of them comes back by itself when a parent does.
            tx.execute(
                &format!(
                    "UPDATE \"{s}\".graph_nodes SET by_parent = false
                     WHERE workflow = $1 AND state = 4 AND by_parent AND node = ANY($2)"
                ),
                &[&wf, &open.iter().map(|o| o.0).collect::<Vec<i64>>()],
            )
            .await?;
            let cancelled: Vec<i64> = steps(&tx, s, wf, "state = 4")
                .await?
                .iter()
                .map(|r| r.0)
                .filter(|n| open.iter().any(|o| o.0 == *n))
                .collect();
            commit(tx).await?;
            Ok::<_, Fail>(
                cancelled
                    .into_iter()
                    .map(|n| NodeId::new(id64(n)))
                    .collect(),
            )
        }
        .await
        .map_err(|f| f.into_error("cancel_workflow"))
    }

    /// [`DependencyStore::retry_step`](leaseq_async::dependencies::DependencyStore::retry_step):
    /// a dead letter redriven (its redrive reopens its node), a cancelled step pending
    /// again with its counters recounted from its parents (and released if none is open).
    pub(crate) async fn graph_retry_step(
        &self,
        workflow: WorkflowId,
        step: &str,
    ) -> Result<(), DependencyError> {
        let db = &*self.db;
        let s = &db.options.schema;
        let wf = workflow.get() as i64;
        async {
            let mut client = self.graph_client().await?;
            let tx = client.transaction().await?;
            let known = tx
                .query_opt(
                    &format!("SELECT 1 FROM \"{s}\".graph_workflows WHERE workflow = $1"),
                    &[&wf],
                )
                .await?;
            if known.is_none() {
                return Err(DependencyError::Graph(GraphError::UnknownWorkflow(workflow)).into());
            }
            let found = tx
                .query_opt(
                    &format!(
                        "SELECT node, state, policy, failed, message, payload IS NOT NULL
                         FROM \"{s}\".graph_nodes WHERE workflow = $1 AND step = $2 FOR UPDATE"
                    ),
                    &[&wf, &step],
                )
                .await?;
            let Some(row) = found else {
                return Err(DependencyError::Graph(GraphError::UnknownStep(step.into())).into());
            };
            let node: i64 = row.get(0);
            let id = NodeId::new(id64(node));
            match row.get::<_, i16>(1) {
                3 => {
                    let m: i64 = row.get::<_, Option<i64>>(4).unwrap_or(0);
                    let n = tx.execute(&db.sql.op.redrive, &[&db.queue, &m]).await?;
                    if n == 0 {
                        let gone = RedriveError::NotFound(MessageId::new(id64(m)));
                        return Err(DependencyError::Redrive(gone).into());
                    }
                }
                4 if !row.get::<_, bool>(5) => {
                    return Err(DependencyError::Graph(GraphError::PayloadGone(id)).into());
                }
                4 => {
                    // Recounted from the parents as they stand (the core's weights).
                    let r = tx
                        .query_one(
                            &format!(
                                "SELECT coalesce(sum(x.w), 0)::int, coalesce(sum(x.f), 0)::int,
                                        min(x.p) FILTER (WHERE x.f > 0)
                                 FROM (SELECT e.parent AS p,
                                              \"{s}\".graph_w(c.policy, \"{s}\".graph_class(g.state)) AS w,
                                              \"{s}\".graph_f(c.policy, \"{s}\".graph_class(g.state)) AS f
                                       FROM \"{s}\".graph_nodes c
                                       JOIN \"{s}\".graph_edges e ON e.child = c.node
                                       JOIN \"{s}\".graph_nodes g ON g.node = e.parent
                                       WHERE c.node = $1) x"
                            ),
                            &[&node],
                        )
                        .await?;
                    let (_waiting, failed, parent): (i32, i32, Option<i64>) =
                        (r.get(0), r.get(1), r.get(2));
                    if failed > 0 && row.get::<_, i16>(2) == 0 {
                        let parent = NodeId::new(id64(parent.unwrap_or(node)));
                        return Err(DependencyError::Graph(GraphError::ParentFailed {
                            node: id,
                            parent,
                        })
                        .into());
                    }
                    tx.execute(
                        &format!(
                            "UPDATE \"{s}\".graph_nodes SET by_parent = false WHERE node = $1;"
                        ),
                        &[&node],
                    )
                    .await?;
                    tx.execute(&format!("SELECT \"{s}\".graph_recount($1)"), &[&node])
                        .await?;
                    tx.execute(
                        &format!(
                            "SELECT \"{s}\".graph_move($1, 0::smallint), \"{s}\".graph_judge($1)"
                        ),
                        &[&node],
                    )
                    .await?;
                }
                _ => {
                    let state = step_state(&row, 1);
                    return Err(
                        DependencyError::Graph(GraphError::WrongState { node: id, state }).into(),
                    );
                }
            }
            commit(tx).await?;
            Ok::<_, Fail>(())
        }
        .await
        .map_err(|f| f.into_error("retry_step"))
    }

    /// [`DependencyStore::forget_workflow`](leaseq_async::dependencies::DependencyStore::forget_workflow).
    pub(crate) async fn graph_forget_workflow(
        &self,
        workflow: WorkflowId,
    ) -> Result<(), DependencyError> {
        let wf = workflow.get() as i64;
        let unknown = DependencyError::Graph(GraphError::UnknownWorkflow(workflow));
        self.graph_forget(
            "forget_workflow",
            "workflow = $1",
            wf,
            "graph_workflows",
            "workflow",
            unknown,
        )
        .await
    }

    /// [`DependencyStore::forget_batch`](leaseq_async::dependencies::DependencyStore::forget_batch):
    /// its children and its callback.
    pub(crate) async fn graph_forget_batch(&self, batch: BatchId) -> Result<(), DependencyError> {
        let b = batch.get() as i64;
        let unknown = DependencyError::Graph(GraphError::UnknownBatch(batch));
        let s = self.db.options.schema.clone();
        let which = format!(
            "(batch = $1 OR node = (SELECT callback FROM \"{s}\".graph_batches WHERE batch = $1))"
        );
        self.graph_forget("forget_batch", &which, b, "graph_batches", "batch", unknown)
            .await
    }

    /// Forgets the nodes `which` selects (of the workflow or batch `id` in `table`) once
    /// every one is finished and no node outside waits for one still: their edges, their
    /// dead letters' rows, the workflow's or batch's row.
    async fn graph_forget(
        &self,
        what: &str,
        which: &str,
        id: i64,
        table: &str,
        key: &str,
        unknown: DependencyError,
    ) -> Result<(), DependencyError> {
        let s = &self.db.options.schema;
        async {
            let mut client = self.graph_client().await?;
            let tx = client.transaction().await?;
            let known = tx
                .query_opt(
                    &format!("SELECT 1 FROM \"{s}\".{table} WHERE {key} = $1 FOR UPDATE"),
                    &[&id],
                )
                .await?;
            if known.is_none() {
                return Err(unknown.into());
            }
            let nodes = format!("SELECT node FROM \"{s}\".graph_nodes WHERE {which}");
            let open = tx
                .query_opt(
                    &format!(
                        "SELECT node FROM \"{s}\".graph_nodes WHERE {which} AND state <= 1
                         UNION ALL
                         SELECT e.parent FROM \"{s}\".graph_edges e
                         JOIN \"{s}\".graph_nodes c ON c.node = e.child
                         WHERE e.parent IN ({nodes}) AND e.child NOT IN ({nodes}) AND c.state <= 1
                         LIMIT 1"
                    ),
                    &[&id],
                )
                .await?;
            if let Some(r) = open {
                let node = NodeId::new(id64(r.get(0)));
                return Err(DependencyError::Graph(GraphError::Unfinished(node)).into());
            }
            tx.execute(
                &format!(
                    "WITH n AS ({nodes}),
                     d AS (DELETE FROM \"{s}\".items WHERE node IN (SELECT node FROM n)),
                     x AS (DELETE FROM \"{s}\".graph_shards WHERE node IN (SELECT node FROM n)),
                     e AS (DELETE FROM \"{s}\".graph_edges
                           WHERE parent IN (SELECT node FROM n) OR child IN (SELECT node FROM n))
                     DELETE FROM \"{s}\".graph_nodes WHERE node IN (SELECT node FROM n)"
                ),
                &[&id],
            )
            .await?;
            tx.execute(
                &format!("DELETE FROM \"{s}\".{table} WHERE {key} = $1"),
                &[&id],
            )
            .await?;
            commit(tx).await?;
            Ok::<_, Fail>(())
        }
        .await
        .map_err(|f| f.into_error(what))
    }
}

/// The workflow's nodes matching `filter`, locked, in node order: node, state, message.
async fn steps(
    tx: &Transaction<'_>,
    s: &str,
    wf: i64,
    filter: &str,
) -> Result<Vec<(i64, i16, Option<i64>)>, Fail> {
    Ok(tx
        .query(
            &format!(
                "SELECT node, state, message FROM \"{s}\".graph_nodes
                 WHERE workflow = $1 AND {filter} ORDER BY node"
            ),
            &[&wf],
        )
        .await?
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect())
}
