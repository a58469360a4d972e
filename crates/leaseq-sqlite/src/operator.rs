//! [`SqliteOperator`]: a SQLite queue file as a [`leaseq_async::operator::Operator`] (feature
//! `operator`), for the `leaseq` command line and the `leaseq-web` dashboard.
//!
//! Reads go through [`FileView`] (no owner lock taken, nothing written: they work while the
//! queue runs in another process), on the runtime's blocking threads. Actions, where asked
//! for ([`SqliteOperator::with_actions`]), open the file as its owner for each one (the
//! leases of a process that died holding it come back first, as at its next start) and
//! close it before answering, so the owner lock is free again; refused
//! ([`OperatorError::InUse`]) while another process owns the file.
//!
//! Workflows and batches (the dependency graph, format 8) are offered with the actions:
//! the graph is kept as records the owner's open derives its state from (a step's item
//! gone from the file means acked), so every workflow or batch call, reads included,
//! opens the file as its owner as the actions do, reads or changes the graph through the
//! store ([`graph_calls`]), each step's message read back through the view, and closes
//! it (that open, like any, first brings back the leases of a process that died holding
//! the file). A SQLite file has one owner process: while a service runs on it these calls are
//! refused ([`OperatorError::InUse`]); the service's own dashboard
//! (`LocalOperator::add_with_graph`) shows them then.

use std::marker::PhantomData;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use leaseq_async::operator::{
    cancel_matching, graph_calls, on_blocking_thread, queue_calls, BatchView, Capabilities,
    DeadQuery, LiveQuery, Operator, OperatorError, WorkflowView,
};
use leaseq_async::{
    Config, Finished, HistoryQuery, LeaseQueue, Page, Runtime, ScheduleState, StoredCounts,
    StoredItem,
};
use leaseq_core::graph::{BatchId, WorkflowId};
use leaseq_core::MessageId;
use parking_lot::Mutex;

use crate::{BytesCodec, FileView, OpenError, Sqlite, SqliteQueue};

/// The name a file's queue is shown under when the file has none recorded (a file from
/// before opens recorded it).
pub const UNNAMED: &str = "-";

/// A SQLite queue file as an [`Operator`]: its one queue, under the name its last open
/// recorded ([`UNNAMED`] when none is), on the runtime `R` (the one running when each call
/// is made: its blocking threads read the file, and an action's queue runs on it).
///
/// ```no_run
/// # fn main() -> Result<(), leaseq_sqlite::OpenError> {
/// # fn with<R: leaseq_async::Runtime>() -> Result<(), leaseq_sqlite::OpenError> {
/// let view = leaseq_sqlite::FileView::open("jobs.db")?;
/// let op = leaseq_sqlite::SqliteOperator::<R>::with_actions(view);
/// # Ok(()) }
/// # Ok(()) }
/// ```
pub struct SqliteOperator<R> {
    view: Arc<Mutex<FileView>>,
    /// The file the actions open as its owner (none: read-only).
    owner: Option<PathBuf>,
    runtime: PhantomData<fn() -> R>,
}

impl<R> Clone for SqliteOperator<R> {
    fn clone(&self) -> Self {
        SqliteOperator {
            view: Arc::clone(&self.view),
            owner: self.owner.clone(),
            runtime: PhantomData,
        }
    }
}

impl<R> std::fmt::Debug for SqliteOperator<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteOperator")
            .field("actions", &self.owner.is_some())
            .finish_non_exhaustive()
    }
}

/// The file opened as its owner.
type Owned<R> = SqliteQueue<Vec<u8>, R, BytesCodec>;

impl<R: Runtime> SqliteOperator<R> {
    /// The operator of the file `view` reads (read-only).
    pub fn new(view: FileView) -> Self {
        SqliteOperator {
            view: Arc::new(Mutex::new(view)),
            owner: None,
            runtime: PhantomData,
        }
    }

    /// The operator of the file `view` reads, which also acts (redrive, purge, pause and
    /// resume, cancel) by opening the file as its owner for each action. Refused
    /// ([`OperatorError::InUse`]) while another queue owns the file: a running service
    /// keeps its file to itself.
    pub fn with_actions(view: FileView) -> Self {
        let path = view.path().to_path_buf();
        SqliteOperator {
            view: Arc::new(Mutex::new(view)),
            owner: Some(path),
            runtime: PhantomData,
        }
    }

    /// The runtime running now.
    fn runtime() -> Result<R, OperatorError> {
        R::current().ok_or_else(|| OperatorError::Store("no runtime is running".into()))
    }

    /// Runs `f` on the view on the runtime's blocking threads.
    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&FileView) -> Result<T, OpenError> + Send + 'static,
    ) -> Result<T, OperatorError> {
        let view = Arc::clone(&self.view);
        on_blocking_thread(&Self::runtime()?, move || f(&view.lock()))
            .await?
            .map_err(|e| OperatorError::store(&e))
    }

    /// The file's counts, its queue named as shown.
    async fn named_counts(&self) -> Result<StoredCounts, OperatorError> {
        let mut counts = self.with(|v| v.counts()).await?;
        if counts.queue.is_empty() {
            counts.queue = UNNAMED.to_string();
        }
        Ok(counts)
    }

    /// Refuses a name that is not the file's queue's; answers its recorded name.
    async fn check(&self, queue: &str) -> Result<Option<String>, OperatorError> {
        let name = self.with(|v| v.queue_name()).await?;
        let name = name.filter(|n| !n.is_empty());
        if name.as_deref().unwrap_or(UNNAMED) == queue {
            Ok(name)
        } else {
            Err(OperatorError::NoSuchQueue(queue.to_string()))
        }
    }

    /// Runs `action` on the file opened as its owner, under its recorded queue name, then
    /// closes it (the owner lock released before this returns).
    async fn act<T, F>(&self, queue: &str, action: F) -> Result<T, OperatorError>
    where
        F: AsyncFnOnce(&Owned<R>) -> Result<T, OperatorError>,
    {
        let Some(path) = &self.owner else {
            return Err(OperatorError::ReadOnly);
        };
        let name = self.check(queue).await?;
        // Attempts unlimited: nothing this open does dead-letters.
        let config = Config::new(Duration::from_secs(30)).with_max_attempts(u32::MAX);
        let mut builder = LeaseQueue::builder(config);
        if let Some(name) = name {
            builder = builder.name(name);
        }
        let q: Owned<R> = builder
            .codec(BytesCodec)
            .open(Sqlite::file(path))
            .await
            .map_err(|e| match e {
                OpenError::Locked(_) => OperatorError::InUse,
                e => OperatorError::store(&e),
            })?;
        let done = action(&q).await;
        let closed = shut(q).await;
        let done = done?;
        closed.map(|()| done)
    }
}

/// Closes `q` and waits (5 s at most) for its store to go: its writer then closes the file
/// (removing the WAL it checkpointed) and releases the owner lock.
async fn shut<R: Runtime>(q: Owned<R>) -> Result<(), OperatorError> {
    let closed = q.close().await;
    let rt = q.runtime().clone();
    let store = Arc::clone(q.store());
    drop(q);
    for _ in 0..5000 {
        if Arc::strong_count(&store) == 1 {
            break;
        }
        rt.sleep_until(rt.now().saturating_add(Duration::from_millis(1)))
            .await;
    }
    drop(store);
    closed.map_err(|e| OperatorError::store(&e))
}

impl<R: Runtime> Operator for SqliteOperator<R> {
    fn store_kind(&self) -> &'static str {
        "SQLite"
    }

    fn capabilities(&self) -> Capabilities {
        let mut c = if self.owner.is_some() {
            Capabilities::every_action()
        } else {
            Capabilities::default()
        };
        c.history = true;
        // The graph is read through the file opened as its owner, as the actions open it.
        c.workflows = self.owner.is_some();
        c
    }

    async fn queues(&self) -> Result<Vec<StoredCounts>, OperatorError> {
        Ok(vec![self.named_counts().await?])
    }

    async fn counts(&self, queue: &str) -> Result<StoredCounts, OperatorError> {
        let counts = self.named_counts().await?;
        if counts.queue != queue {
            return Err(OperatorError::NoSuchQueue(queue.to_string()));
        }
        Ok(counts)
    }

    async fn items(&self, queue: &str, page: Page) -> Result<Vec<StoredItem>, OperatorError> {
        self.check(queue).await?;
        self.with(move |v| v.items(page)).await
    }

    async fn dead_letters(
        &self,
        queue: &str,
        page: Page,
        query: &DeadQuery,
    ) -> Result<Vec<StoredItem>, OperatorError> {
        self.check(queue).await?;
        let filter = query.filter();
        self.with(move |v| v.dead_letters_matching(page, &filter))
            .await
    }

    async fn schedules(&self, queue: &str) -> Result<Vec<ScheduleState>, OperatorError> {
        self.check(queue).await?;
        self.with(|v| v.schedules()).await
    }

    async fn history(
        &self,
        queue: &str,
        query: &HistoryQuery,
    ) -> Result<Vec<Finished>, OperatorError> {
        self.check(queue).await?;
        let query = query.clone();
        self.with(move |v| v.history(&query)).await
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
