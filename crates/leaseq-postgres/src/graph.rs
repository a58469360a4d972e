//! Jobs that wait for other jobs on Postgres, the pushing side: `push_after`, workflows and
//! batches, each one transaction over the schema's graph functions (`graph_sql.rs`), so a
//! call is all done or (refused, failed) not at all. The reads, results and operator calls
//! are in `graph_read.rs` and `graph_ops.rs`; the trait `DependencyStore` in `graph_impl.rs`.

use leaseq_async::dependencies::{
    BatchId, BatchOn, DependencyError, NodeId, OnFailedParent, Parent, WorkflowId,
};
use leaseq_async::{ErrorChain, StoreError};
use leaseq_core::graph::GraphError;
use tokio_postgres::Transaction;

use crate::db::Db;
use crate::store::PgStore;

/// Why a graph call failed: refused (nothing changed), or the database failed (`true`
/// once the commit was sent: its reply may be what was lost).
pub(crate) enum Fail {
    Refused(DependencyError),
    Db(tokio_postgres::Error, bool),
}

impl From<tokio_postgres::Error> for Fail {
    fn from(e: tokio_postgres::Error) -> Self {
        Fail::Db(e, false)
    }
}

impl From<DependencyError> for Fail {
    fn from(e: DependencyError) -> Self {
        Fail::Refused(e)
    }
}

impl Fail {
    /// The caller's error: a refusal as it is; a failed statement not done, a failed
    /// commit whose reply may have been lost outcome unknown.
    pub(crate) fn into_error(self, what: &str) -> DependencyError {
        match self {
            Fail::Refused(e) => e,
            Fail::Db(e, committing) => {
                let message = format!("{what}: {}", ErrorChain(&e));
                DependencyError::Store(if committing && crate::outcome::maybe_made(&e) {
                    StoreError::outcome_unknown(message)
                } else {
                    StoreError::not_done(message)
                })
            }
        }
    }
}

/// A policy's code in `graph_nodes.policy`.
pub(crate) fn policy_code(policy: OnFailedParent) -> i16 {
    match policy {
        OnFailedParent::Run => 1,
        OnFailedParent::Hold => 2,
        _ => 0,
    }
}

/// A database id as the graph's (ids are never negative).
pub(crate) fn id64(n: i64) -> u64 {
    n.max(0) as u64
}

/// The statement calling the schema's `graph_add`.
fn add_sql(schema: &str) -> String {
    format!("SELECT \"{schema}\".graph_add($1, $2, $3, $4, $5, $6, $7)")
}

impl<T: Clone + Send + Sync + 'static> PgStore<T> {
    /// Refused before any round trip: a closed store, a bounded queue.
    pub(crate) fn graph_open(&self) -> Result<(), DependencyError> {
        if self.life.is_closed() || self.life.is_stopped() {
            return Err(DependencyError::Closed);
        }
        if self.db.config.capacity().is_some() {
            return Err(DependencyError::Bounded);
        }
        Ok(())
    }

    /// The item's bytes as the claim decodes them, within the size limit.
    pub(crate) fn graph_encode(&self, item: &T) -> Result<Vec<u8>, DependencyError> {
        let db = &self.db;
        let bytes = db
            .codec
            .encode(item)
            .map_err(|e| DependencyError::Store(StoreError::not_done(format!("encode: {e}"))))?;
        if bytes.len() > db.options.max_item_size {
            return Err(DependencyError::Store(StoreError::not_done(format!(
                "the item is {} bytes, over max_item_size ({})",
                bytes.len(),
                db.options.max_item_size
            ))));
        }
        Ok(bytes)
    }

    /// A pooled connection for a graph call.
    pub(crate) async fn graph_client(&self) -> Result<deadpool_postgres::Object, Fail> {
        self.db.client().await.map_err(|e| {
            Fail::Refused(DependencyError::Store(StoreError::not_done(format!(
                "no connection: {}",
                ErrorChain(&e)
            ))))
        })
    }

    /// [`DependencyStore::push_after`](leaseq_async::dependencies::DependencyStore::push_after).
    pub(crate) async fn graph_push_after(
        &self,
        payload: Vec<u8>,
        parents: &[Parent],
        policy: OnFailedParent,
    ) -> Result<NodeId, DependencyError> {
        let db = &*self.db;
        let node = async {
            let mut client = self.graph_client().await?;
            let tx = client.transaction().await?;
            let nodes = adopt_all(&tx, db, parents).await?;
            let node = add(&tx, db, &payload, &nodes, policy, None, None).await?;
            commit(tx).await?;
            Ok::<_, Fail>(node)
        }
        .await
        .map_err(|f| f.into_error("push_after"))?;
        Ok(NodeId::new(id64(node)))
    }

    /// [`DependencyStore::push_workflow`](leaseq_async::dependencies::DependencyStore::push_workflow),
    /// the spec already checked and encoded: (name, payload, parents as indexes, policy),
    /// parents first, and the names in the spec's order.
    pub(crate) async fn graph_push_workflow(
        &self,
        steps: Vec<(String, Vec<u8>, Vec<usize>, OnFailedParent)>,
        names: Vec<String>,
    ) -> Result<WorkflowId, DependencyError> {
        let db = &*self.db;
        let id = async {
            {
                let mut client = self.graph_client().await?;
                let owned = client.transaction().await?;
                let tx = &owned;
                let s = &db.options.schema;
                let row = tx
                    .query_one(
                        &format!(
                            "INSERT INTO \"{s}\".graph_workflows (workflow, queue, steps)
                                 VALUES (nextval('\"{s}\".graph_ids'), $1, $2) RETURNING workflow"
                        ),
                        &[&db.queue, &names],
                    )
                    .await?;
                let wf: i64 = row.get(0);
                let mut nodes: Vec<i64> = Vec::with_capacity(steps.len());
                for (name, payload, parents, policy) in &steps {
                    let ps: Vec<i64> = parents.iter().map(|&p| nodes[p]).collect();
                    let n = add(tx, db, payload, &ps, *policy, Some(wf), Some(name)).await?;
                    nodes.push(n);
                }
                commit(owned).await?;
                Ok::<_, Fail>(wf)
            }
        }
        .await
        .map_err(|f| f.into_error("push_workflow"))?;
        Ok(WorkflowId::new(id64(id)))
    }

    /// [`DependencyStore::push_batch`](leaseq_async::dependencies::DependencyStore::push_batch),
    /// encoded: the children's rows and their nodes in one statement, the callback added
    /// under them (`graph_add_fresh`: none of them locked or read).
    pub(crate) async fn graph_push_batch(
        &self,
        children: Vec<Vec<u8>>,
        callback: Vec<u8>,
        on: BatchOn,
    ) -> Result<BatchId, DependencyError> {
        let db = &*self.db;
        let id = async {
                {
                    let mut client = self.graph_client().await?;
                    let owned = client.transaction().await?;
                    let tx = &owned;
                    let s = &db.options.schema;
                    let batch: i64 = tx
                        .query_one(&format!("SELECT nextval('\"{s}\".graph_ids')"), &[])
                        .await?
                        .get(0);
                    // The children's rows inserted with their nodes (a keyless, unbounded
                    // push as `push_rows` makes it: ids of `tx_ids`, visible now, one
                    // notification at commit), and their nodes, in one statement.
                    let nodes: Vec<i64> = tx
                        .query(
                            &format!(
                                "WITH c AS MATERIALIZED (
                                    SELECT nextval('\"{s}\".tx_ids') AS id,
                                           nextval('\"{s}\".graph_ids') AS node, u.p, u.o
                                    FROM unnest($2::bytea[]) WITH ORDINALITY AS u(p, o) ORDER BY u.o),
                                 i AS (INSERT INTO \"{s}\".items (id, queue, priority, visible_at, payload, node)
                                       SELECT c.id, $1, 0, statement_timestamp(), c.p, c.node FROM c),
                                 n AS (INSERT INTO \"{s}\".graph_nodes (node, queue, state, policy, message, batch)
                                       SELECT c.node, $1, 1, 0, c.id, $3 FROM c)
                                 SELECT c.node FROM c ORDER BY c.o"
                            ),
                            &[&db.queue, &children, &batch],
                        )
                        .await?
                        .iter()
                        .map(|r| r.get(0))
                        .collect();
                    if nodes.len() != children.len() {
                        return Err(Fail::Refused(DependencyError::Store(StoreError::not_done(
                            format!("push_batch: {} of {} children pushed", nodes.len(), children.len()),
                        ))));
                    }
                    tx.execute(&db.sql.op.notify, &[&db.sql.channel, &db.queue])
                        .await?;
                    let policy = match on {
                        BatchOn::Success => OnFailedParent::Hold,
                        _ => OnFailedParent::Run,
                    };
                    let cb: i64 = tx
                        .query_one(
                            &format!("SELECT \"{s}\".graph_add_fresh($1, $2, $3, $4)"),
                            &[&db.queue, &callback, &nodes, &policy_code(policy)],
                        )
                        .await?
                        .get(0);
                    let total = nodes.len() as i64;
                    tx.execute(
                        &format!(
                            "INSERT INTO \"{s}\".graph_batches (batch, queue, callback, on_success, total)
                             VALUES ($1, $2, $3, $4, $5)"
                        ),
                        &[&batch, &db.queue, &cb, &matches!(on, BatchOn::Success), &total],
                    )
                    .await?;
                    commit(owned).await?;
                    Ok::<_, Fail>(batch)
                }
        }
        .await
        .map_err(|f| f.into_error("push_batch"))?;
        Ok(BatchId::new(id64(id)))
    }
}

/// Commits a graph call's transaction: a failure may be a lost reply.
pub(crate) async fn commit(tx: deadpool_postgres::Transaction<'_>) -> Result<(), Fail> {
    tx.commit().await.map_err(|e| Fail::Db(e, true))
}

/// Each parent's node: a job's as given, a plain message adopted (skipped if gone: it is
/// finished, nothing to wait for).
pub(crate) async fn adopt_all<T>(
    tx: &Transaction<'_>,
    db: &Db<T>,
    parents: &[Parent],
) -> Result<Vec<i64>, Fail> {
    let s = &db.options.schema;
    let adopt = format!("SELECT \"{s}\".graph_adopt($1, $2)");
    let mut nodes = Vec::with_capacity(parents.len());
    for p in parents {
        match p {
            Parent::Job(n) => nodes.push(n.get() as i64),
            Parent::Message(m) => {
                let row = tx
                    .query_one(&adopt, &[&db.queue, &(m.get() as i64)])
                    .await?;
                if let Some(n) = row.get::<_, Option<i64>>(0) {
                    nodes.push(n);
                }
            }
            _ => {}
        }
    }
    Ok(nodes)
}

/// `graph_add`, its refusal named: a parent named twice, or unknown.
pub(crate) async fn add<T>(
    tx: &Transaction<'_>,
    db: &Db<T>,
    payload: &[u8],
    parents: &[i64],
    policy: OnFailedParent,
    workflow: Option<i64>,
    step: Option<&str>,
) -> Result<i64, Fail> {
    let mut sorted = parents.to_vec();
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        let dup = NodeId::new(id64(w[0]));
        return Err(DependencyError::Graph(GraphError::DuplicateParent(dup)).into());
    }
    let row = tx
        .query_one(
            &add_sql(&db.options.schema),
            &[
                &db.queue,
                &payload,
                &parents,
                &policy_code(policy),
                &workflow,
                &step,
                &None::<i64>,
            ],
        )
        .await?;
    if let Some(node) = row.get::<_, Option<i64>>(0) {
        return Ok(node);
    }
    let s = &db.options.schema;
    let known: Vec<i64> = tx
        .query(
            &format!("SELECT node FROM \"{s}\".graph_nodes WHERE node = ANY($1)"),
            &[&parents],
        )
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let unknown = parents.iter().find(|p| !known.contains(p)).copied();
    Err(
        DependencyError::Graph(GraphError::UnknownNode(NodeId::new(id64(
            unknown.unwrap_or(-1),
        ))))
        .into(),
    )
}
