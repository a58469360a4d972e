//! [`LocalOperator`]: the queues of this process as an [`Operator`], for the dashboard
//! mounted in a service's own app (and any tool written over the operator interface).
//!
//! - `mod.rs`: [`LocalOperator`], the queues by name, and its [`Operator`] impl.
//! - `handle.rs`: the object-safe adapter each queue is held behind.
//! - `graph.rs`: the object-safe adapter a queue's dependency graph is held behind.

mod graph;
mod handle;

use std::collections::BTreeMap;
use std::sync::Arc;

use leaseq_core::graph::{BatchId, WorkflowId};
use leaseq_core::MessageId;

use crate::dependencies::DependencyStore;
use crate::history::{Finished, HistoryQuery};
use crate::page::Page;
use crate::queue::LeaseQueue;
use crate::router::kind_of;
use crate::runtime::Runtime;
use crate::schedule_store::ScheduleState;
use crate::store::Store;
use crate::stored::{StoredCounts, StoredItem};

use super::cancel::each_listed;
use super::graph_views::{BatchView, WorkflowView};
use super::{Capabilities, DeadQuery, LiveQuery, Operator, OperatorError};
use graph::GraphHandle;
use handle::{Held, QueueHandle};

/// The queues of this process as an [`Operator`]: a service adds its [`LeaseQueue`]
/// handles (any item type, store and runtime, side by side), and the `leaseq-web`
/// dashboard mounted in its app reads and acts on them, as it does a SQLite file or a
/// Postgres schema from outside.
///
/// Each call goes through the queue's own methods (the ones every store has: stats, peek,
/// dead letters, redrive, purge, pause, schedules, history, cancel), so what it shows and
/// does is what the queue API shows and does. It offers every action (redrive, purge,
/// pause, cancel) and the record of finished jobs (held by a store that keeps one).
///
/// Items are shown as bytes: [`add`](Self::add) takes an item's bytes as they are
/// (`T: AsRef<[u8]>`; a job router's envelope then shows its kind and args, and dead letters
/// filter by that kind), [`add_rendered`](Self::add_rendered) takes a rendering of yours
/// (its queue's dead letters then have no kind to filter by: a kind filter takes none).
/// A live item (ready, delayed, in flight) is listed with its state, attempts and times
/// but no payload: the queue's `peek` does not read items.
///
/// A queue whose store keeps jobs that wait for jobs (a
/// [`DependencyStore`](crate::dependencies::DependencyStore): the memory store) added with
/// [`add_with_graph`](Self::add_with_graph) shows its workflows and batches too, and
/// offers to cancel a workflow and retry a step ([`Capabilities::workflows`]).
///
/// ```
/// # use leaseq_async::{Config, LeaseQueue, SimRuntime};
/// # use std::time::Duration;
/// use leaseq_async::operator::{LocalOperator, Operator};
///
/// # let rt = SimRuntime::new();
/// # rt.block_on(async {
/// let emails = LeaseQueue::builder(Config::new(Duration::from_secs(30)))
///     .name("emails")
///     .runtime(rt.clone())
///     .build()
///     .unwrap();
/// let ticks = LeaseQueue::builder(Config::new(Duration::from_secs(30)))
///     .name("ticks")
///     .runtime(rt.clone())
///     .build()
///     .unwrap();
/// emails.push(b"hello".to_vec()).await.unwrap();
/// ticks.push(7u64).await.unwrap();
///
/// let op = LocalOperator::new()
///     .with(emails.clone())
///     .with_rendered(ticks.clone(), |n: &u64| n.to_string().into_bytes());
/// let names: Vec<_> = op.queues().await.unwrap().into_iter().map(|c| c.queue).collect();
/// assert_eq!(names, ["emails", "ticks"]);
/// assert_eq!(op.counts("emails").await.unwrap().ready, 1);
///
/// assert_eq!(op.set_paused("ticks", true).await, Ok(true));
/// assert!(ticks.try_receive().is_none(), "paused through the operator");
/// # });
/// ```
#[derive(Clone, Default)]
pub struct LocalOperator {
    queues: BTreeMap<&'static str, Arc<dyn QueueHandle>>,
    /// The dependency graphs of the queues added with theirs, by the queue's name.
    graphs: BTreeMap<&'static str, Arc<dyn GraphHandle>>,
}

impl std::fmt::Debug for LocalOperator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalOperator")
            .field("queues", &self.queues.keys().collect::<Vec<_>>())
            .field("graphs", &self.graphs.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// An item's bytes as they are.
fn bytes_of<T: AsRef<[u8]>>(item: &T) -> Vec<u8> {
    item.as_ref().to_vec()
}

/// The job kind an item's bytes begin with (a router envelope's).
fn kind_of_bytes<T: AsRef<[u8]>>(item: &T) -> Option<&str> {
    kind_of(item.as_ref())
}

impl LocalOperator {
    /// An operator over no queue yet.
    pub fn new() -> LocalOperator {
        LocalOperator::default()
    }

    /// Adds `queue`, under its name, its items shown as their bytes (and filtered by the
    /// job kind they begin with, a router envelope's). A queue added under a name already
    /// here takes that name's place.
    pub fn add<T, R, S>(&mut self, queue: LeaseQueue<T, R, S>) -> &mut Self
    where
        T: AsRef<[u8]> + Send + Sync + 'static,
        R: Runtime,
        S: Store<T, Runtime = R>,
    {
        self.hold(queue, Arc::new(bytes_of::<T>), Some(kind_of_bytes::<T>))
    }

    /// Adds `queue`, under its name, its items shown as the bytes `render` makes of them
    /// (a dead letter filter by kind takes none of them). A queue added under a name
    /// already here takes that name's place.
    pub fn add_rendered<T, R, S>(
        &mut self,
        queue: LeaseQueue<T, R, S>,
        render: impl Fn(&T) -> Vec<u8> + Send + Sync + 'static,
    ) -> &mut Self
    where
        T: Send + Sync + 'static,
        R: Runtime,
        S: Store<T, Runtime = R>,
    {
        self.hold(queue, Arc::new(render), None)
    }

    /// [`add`](Self::add), by value.
    #[must_use]
    pub fn with<T, R, S>(mut self, queue: LeaseQueue<T, R, S>) -> Self
    where
        T: AsRef<[u8]> + Send + Sync + 'static,
        R: Runtime,
        S: Store<T, Runtime = R>,
    {
        self.add(queue);
        self
    }

    /// [`add_rendered`](Self::add_rendered), by value.
    #[must_use]
    pub fn with_rendered<T, R, S>(
        mut self,
        queue: LeaseQueue<T, R, S>,
        render: impl Fn(&T) -> Vec<u8> + Send + Sync + 'static,
    ) -> Self
    where
        T: Send + Sync + 'static,
        R: Runtime,
        S: Store<T, Runtime = R>,
    {
        self.add_rendered(queue, render);
        self
    }

    /// [`add`](Self::add), with the queue's dependency graph: its workflows and batches
    /// are read ([`Operator::workflows`], [`Operator::batches`]) and acted on
    /// ([`Operator::cancel_workflow`], [`Operator::retry_step`]) through its store.
    ///
    /// ```
    /// # use leaseq_async::{Config, LeaseQueue, SimRuntime};
    /// # use std::time::Duration;
    /// use leaseq_async::dependencies::{DependencyStore, WorkflowSpec};
    /// use leaseq_async::operator::{LocalOperator, Operator};
    ///
    /// # let rt = SimRuntime::new();
    /// # rt.block_on(async {
    /// let media = LeaseQueue::builder(Config::new(Duration::from_secs(30)))
    ///     .name("media")
    ///     .runtime(rt.clone())
    ///     .build()
    ///     .unwrap();
    /// let spec = WorkflowSpec::new()
    ///     .step("resize", b"resize".to_vec(), &[])
    ///     .step("upload", b"upload".to_vec(), &["resize"]);
    /// let wf = media.store().push_workflow(spec).await.unwrap();
    ///
    /// let op = LocalOperator::new().with_graph(media.clone());
    /// assert!(op.capabilities().workflows);
    /// let shown = op.workflow("media", wf).await.unwrap().unwrap();
    /// let states: Vec<_> = shown.steps.iter().map(|s| s.status.as_str()).collect();
    /// assert_eq!(states, ["ready", "waiting"]);
    /// assert_eq!(shown.steps[1].after, ["resize"]);
    /// # });
    /// ```
    pub fn add_with_graph<T, R, S>(&mut self, queue: LeaseQueue<T, R, S>) -> &mut Self
    where
        T: AsRef<[u8]> + Send + Sync + 'static,
        R: Runtime,
        S: DependencyStore<T> + Store<T, Runtime = R>,
    {
        let name = queue.name();
        let held = Arc::new(Held {
            queue,
            render: Arc::new(bytes_of::<T>),
            kind: Some(kind_of_bytes::<T>),
        });
        self.queues.insert(name, held.clone());
        self.graphs.insert(name, held);
        self
    }

    /// [`add_with_graph`](Self::add_with_graph), by value.
    #[must_use]
    pub fn with_graph<T, R, S>(mut self, queue: LeaseQueue<T, R, S>) -> Self
    where
        T: AsRef<[u8]> + Send + Sync + 'static,
        R: Runtime,
        S: DependencyStore<T> + Store<T, Runtime = R>,
    {
        self.add_with_graph(queue);
        self
    }

    fn hold<T, R, S>(
        &mut self,
        queue: LeaseQueue<T, R, S>,
        render: handle::Render<T>,
        kind: Option<handle::KindOf<T>>,
    ) -> &mut Self
    where
        T: Send + Sync + 'static,
        R: Runtime,
        S: Store<T, Runtime = R>,
    {
        let name = queue.name();
        let held = Held {
            queue,
            render,
            kind,
        };
        self.queues.insert(name, Arc::new(held));
        self.graphs.remove(name);
        self
    }

    /// The queue named `queue`.
    fn queue(&self, queue: &str) -> Result<&dyn QueueHandle, OperatorError> {
        self.queues
            .get(queue)
            .map(|q| &**q)
            .ok_or_else(|| OperatorError::NoSuchQueue(queue.to_string()))
    }

    /// The dependency graph of the queue named `queue` (`None`: added without one).
    fn graph(&self, queue: &str) -> Result<Option<&dyn GraphHandle>, OperatorError> {
        self.queue(queue)?;
        Ok(self.graphs.get(queue).map(|g| &**g))
    }

    /// The graph of `queue` for an action, refused for a queue added without one.
    fn graph_to_act(&self, queue: &str) -> Result<&dyn GraphHandle, OperatorError> {
        self.graph(queue)?.ok_or_else(|| {
            OperatorError::Refused(format!(
                "queue {queue:?} was added without its dependency graph: no workflows"
            ))
        })
    }
}

impl Operator for LocalOperator {
    fn store_kind(&self) -> &'static str {
        "This process"
    }

    fn capabilities(&self) -> Capabilities {
        let mut c = Capabilities::every_action();
        c.history = true;
        c.workflows = !self.graphs.is_empty();
        c
    }

    async fn queues(&self) -> Result<Vec<StoredCounts>, OperatorError> {
        let mut all = Vec::with_capacity(self.queues.len());
        for q in self.queues.values() {
            all.push(q.counts().await?);
        }
        Ok(all)
    }

    async fn counts(&self, queue: &str) -> Result<StoredCounts, OperatorError> {
        self.queue(queue)?.counts().await
    }

    async fn items(&self, queue: &str, page: Page) -> Result<Vec<StoredItem>, OperatorError> {
        self.queue(queue)?.items(page).await
    }

    async fn dead_letters(
        &self,
        queue: &str,
        page: Page,
        query: &DeadQuery,
    ) -> Result<Vec<StoredItem>, OperatorError> {
        self.queue(queue)?.dead_letters(page, query).await
    }

    async fn schedules(&self, queue: &str) -> Result<Vec<ScheduleState>, OperatorError> {
        self.queue(queue)?.schedules().await
    }

    async fn history(
        &self,
        queue: &str,
        query: &HistoryQuery,
    ) -> Result<Vec<Finished>, OperatorError> {
        self.queue(queue)?.history(query).await
    }

    async fn redrive(&self, queue: &str, id: MessageId) -> Result<(), OperatorError> {
        self.queue(queue)?.redrive(id).await
    }

    async fn redrive_dead(&self, queue: &str, query: &DeadQuery) -> Result<u64, OperatorError> {
        self.queue(queue)?.redrive_dead(query).await
    }

    async fn purge_dead(&self, queue: &str, query: &DeadQuery) -> Result<u64, OperatorError> {
        self.queue(queue)?.purge_dead(query).await
    }

    async fn purge(&self, queue: &str) -> Result<u64, OperatorError> {
        self.queue(queue)?.purge().await
    }

    async fn set_paused(&self, queue: &str, paused: bool) -> Result<bool, OperatorError> {
        self.queue(queue)?.set_paused(paused).await
    }

    async fn workflows(
        &self,
        queue: &str,
        after: Option<WorkflowId>,
        limit: usize,
    ) -> Result<Vec<WorkflowView>, OperatorError> {
        match self.graph(queue)? {
            Some(g) => g.workflows(after, limit).await,
            None => Ok(Vec::new()),
        }
    }

    async fn batches(
        &self,
        queue: &str,
        after: Option<BatchId>,
        limit: usize,
    ) -> Result<Vec<BatchView>, OperatorError> {
        match self.graph(queue)? {
            Some(g) => g.batches(after, limit).await,
            None => Ok(Vec::new()),
        }
    }

    async fn cancel_workflow(&self, queue: &str, id: WorkflowId) -> Result<u64, OperatorError> {
        self.graph_to_act(queue)?.cancel_workflow(id).await
    }

    async fn retry_step(
        &self,
        queue: &str,
        id: WorkflowId,
        step: &str,
    ) -> Result<(), OperatorError> {
        self.graph_to_act(queue)?.retry_step(id, step).await
    }

    async fn cancel(&self, queue: &str, query: &LiveQuery) -> Result<u64, OperatorError> {
        let q = self.queue(queue)?;
        each_listed(self, queue, query, |id| q.cancel(id)).await
    }
}
