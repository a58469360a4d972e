//! [`PgOperator`]: a PostgreSQL schema's queues as a [`leaseq_async::operator::Operator`]
//! (feature `operator`), for the `leaseq` command line and the `leaseq-web` dashboard.
//!
//! Reads go through [`PgInspector`] (one connection, every read a read-only transaction),
//! one call at a time. Actions, where asked for ([`PgOperator::with_actions`]), each open
//! a store for the queue (a pool of two, its rescuer not due, attempts unlimited, limits
//! not recorded: the queue's own processes keep theirs) and close it before answering.
//!
//! Workflows and batches are offered with the actions: each call, reads included, goes
//! through a store opened the same way (its graph tables read and changed as `PgStore`'s
//! `DependencyStore` does, [`graph_calls`]), each step's message read back through the
//! inspector.

use std::sync::Arc;
use std::time::Duration;

use leaseq_async::operator::{
    cancel_matching, graph_calls, queue_calls, BatchView, Capabilities, DeadQuery, LiveQuery,
    Operator, OperatorError, WorkflowView,
};
use leaseq_async::{
    Config, Finished, HistoryQuery, LeaseQueue, Page, ScheduleState, StoredCounts, StoredItem,
};
use leaseq_core::graph::{BatchId, WorkflowId};
use leaseq_core::MessageId;
use tokio::sync::Mutex;

use crate::{BytesCodec, DbError, Options, PgInspector, PgQueue, Postgres};

/// Each state's count on the overview, the queue pages and in `/metrics` is exact up to
/// this, estimated above it ([`PgInspector::queue_overview`],
/// [`PgInspector::queue_counts`]: no pass over the table).
const EXACT_UP_TO: u64 = 100;

/// A PostgreSQL schema as an [`Operator`]: its queues (those with rows, or opened, or
/// keeping a schedule), read one call at a time over the inspector's connection. The
/// queues' counts are exact up to 100 items a state and estimates above that (shown as
/// `~`) once the schema's table passes 3.2 MiB, so that the overview of a large table
/// costs no scan of it. Made with [`with_actions`](Self::with_actions), it also acts
/// (redrive, purge, pause and resume, cancel), each action through a store opened for it.
///
/// ```no_run
/// # async fn run() -> Result<(), leaseq_postgres::OpenError> {
/// use leaseq_async::operator::Operator;
///
/// let url = "host=127.0.0.1 user=postgres";
/// let inspector = leaseq_postgres::PgInspector::connect(url, "leaseq").await?;
/// let op = leaseq_postgres::PgOperator::with_actions(inspector, url, "leaseq");
/// for counts in op.queues().await.unwrap() {
///     println!("{}: {} ready", counts.queue, counts.ready);
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PgOperator {
    inspector: Arc<Mutex<PgInspector>>,
    /// The server and schema the actions open a store on (none: read-only).
    writer: Option<Arc<(String, String)>>,
}

impl std::fmt::Debug for PgOperator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the connection string (it may hold a password).
        f.debug_struct("PgOperator")
            .field("actions", &self.writer.is_some())
            .finish_non_exhaustive()
    }
}

impl PgOperator {
    /// The operator of the schema `inspector` reads (read-only).
    pub fn new(inspector: PgInspector) -> PgOperator {
        PgOperator {
            inspector: Arc::new(Mutex::new(inspector)),
            writer: None,
        }
    }

    /// The operator of the schema `inspector` reads, which also acts on the queues of
    /// `schema` at `url` (the inspector's own server and schema).
    pub fn with_actions(
        inspector: PgInspector,
        url: impl Into<String>,
        schema: impl Into<String>,
    ) -> PgOperator {
        PgOperator {
            inspector: Arc::new(Mutex::new(inspector)),
            writer: Some(Arc::new((url.into(), schema.into()))),
        }
    }

    /// Runs `action` on `queue` opened for it (after checking that the schema knows it),
    /// then closes it.
    async fn act<T, F>(&self, queue: &str, action: F) -> Result<T, OperatorError>
    where
        F: AsyncFnOnce(&PgQueue<Vec<u8>>) -> Result<T, OperatorError>,
    {
        let Some(writer) = &self.writer else {
            return Err(OperatorError::ReadOnly);
        };
        check(&mut *self.inspector.lock().await, queue).await?;
        let (url, schema) = &**writer;
        let options = Options::new()
            .schema(schema.as_str())
            .pool_size(2)
            .rescue_every(Duration::from_secs(24 * 3600))
            .record_limits(false);
        let q: PgQueue<Vec<u8>> =
            LeaseQueue::builder(Config::new(Duration::from_secs(30)).with_max_attempts(u32::MAX))
                .name(queue.to_string())
                .codec(BytesCodec)
                .open(Postgres::url(url).options(options))
                .await
                .map_err(|e| OperatorError::store(&e))?;
        let done = action(&q).await;
        let closed = q.close().await;
        let done = done?;
        closed.map_err(|e| OperatorError::store(&e))?;
        Ok(done)
    }
}

/// Refuses a queue the schema does not know.
async fn check(inspector: &mut PgInspector, queue: &str) -> Result<(), OperatorError> {
    if inspector.has_queue(queue).await.map_err(bad)? {
        Ok(())
    } else {
        Err(OperatorError::NoSuchQueue(queue.to_string()))
    }
}

fn bad(e: DbError) -> OperatorError {
    OperatorError::store(&e)
}

impl Operator for PgOperator {
    fn store_kind(&self) -> &'static str {
        "PostgreSQL"
    }

    fn capabilities(&self) -> Capabilities {
        let mut c = if self.writer.is_some() {
            Capabilities::every_action()
        } else {
            Capabilities::default()
        };
        c.history = true;
        // The graph is read through a store opened for the call, as the actions open one.
        c.workflows = self.writer.is_some();
        c
    }

    async fn queues(&self) -> Result<Vec<StoredCounts>, OperatorError> {
        let mut inspector = self.inspector.lock().await;
        inspector.queue_overview(EXACT_UP_TO).await.map_err(bad)
    }

    async fn counts(&self, queue: &str) -> Result<StoredCounts, OperatorError> {
        let mut inspector = self.inspector.lock().await;
        check(&mut inspector, queue).await?;
        inspector
            .queue_counts(queue, EXACT_UP_TO)
            .await
            .map_err(bad)
    }

    async fn items(&self, queue: &str, page: Page) -> Result<Vec<StoredItem>, OperatorError> {
        let mut inspector = self.inspector.lock().await;
        check(&mut inspector, queue).await?;
        inspector.items(queue, page).await.map_err(bad)
    }

    async fn dead_letters(
        &self,
        queue: &str,
        page: Page,
        query: &DeadQuery,
    ) -> Result<Vec<StoredItem>, OperatorError> {
        let filter = query.filter();
        let mut inspector = self.inspector.lock().await;
        check(&mut inspector, queue).await?;
        inspector
            .dead_letters_matching(queue, page, &filter)
            .await
            .map_err(bad)
    }

    async fn oldest_ready_ages(
        &self,
        queues: &[String],
    ) -> Result<Option<Vec<(String, Duration)>>, OperatorError> {
        let mut inspector = self.inspector.lock().await;
        let ages = inspector.oldest_ready_ages(queues).await.map_err(bad)?;
        Ok(Some(ages))
    }

    async fn history(
        &self,
        queue: &str,
        query: &HistoryQuery,
    ) -> Result<Vec<Finished>, OperatorError> {
        let mut inspector = self.inspector.lock().await;
        check(&mut inspector, queue).await?;
        inspector.history(queue, query).await.map_err(bad)
    }

    async fn schedules(&self, queue: &str) -> Result<Vec<ScheduleState>, OperatorError> {
        let mut inspector = self.inspector.lock().await;
        check(&mut inspector, queue).await?;
        inspector.schedules(queue).await.map_err(bad)
    }

    async fn redrive(&self, queue: &str, id: MessageId) -> Result<(), OperatorError> {
        self.act(queue, async |q| queue_calls::redrive(q, id).await)
            .await
    }

    async fn redrive_dead(&self, queue: &str, query: &DeadQuery) -> Result<u64, OperatorError> {
        let filter = query.filter();
        self.act(queue, async |q| queue_calls::redrive_dead(q, filter).await)
            .await
    }

    async fn purge_dead(&self, queue: &str, query: &DeadQuery) -> Result<u64, OperatorError> {
        let filter = query.filter();
        self.act(queue, async |q| queue_calls::purge_dead(q, filter).await)
            .await
    }

    async fn purge(&self, queue: &str) -> Result<u64, OperatorError> {
        self.act(queue, async |q| queue_calls::purge(q).await).await
    }

    async fn set_paused(&self, queue: &str, paused: bool) -> Result<bool, OperatorError> {
        self.act(queue, async |q| queue_calls::set_paused(q, paused).await)
            .await
    }

    async fn cancel(&self, queue: &str, query: &LiveQuery) -> Result<u64, OperatorError> {
        self.act(queue, async |q| {
            cancel_matching(self, queue, query, q).await
        })
        .await
    }

    async fn workflows(
        &self,
        queue: &str,
        after: Option<WorkflowId>,
        limit: usize,
    ) -> Result<Vec<WorkflowView>, OperatorError> {
        self.act(queue, async |q| {
            graph_calls::workflows_of(self, queue, &**q.store(), after, limit).await
        })
        .await
    }

    async fn batches(
        &self,
        queue: &str,
        after: Option<BatchId>,
        limit: usize,
    ) -> Result<Vec<BatchView>, OperatorError> {
        self.act(queue, async |q| {
            graph_calls::batches_of(self, queue, &**q.store(), after, limit).await
        })
        .await
    }

    async fn cancel_workflow(&self, queue: &str, id: WorkflowId) -> Result<u64, OperatorError> {
        self.act(queue, async |q| {
            graph_calls::cancel_workflow(&**q.store(), id).await
        })
        .await
    }

    async fn retry_step(
        &self,
        queue: &str,
        id: WorkflowId,
        step: &str,
    ) -> Result<(), OperatorError> {
        self.act(queue, async |q| {
            graph_calls::retry_step(&**q.store(), id, step).await
        })
        .await
    }
}
