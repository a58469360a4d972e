//! [`Operator`] for a PostgreSQL schema's queues, read through [`PgInspector`] (one
//! connection, every read a read-only transaction).

use std::sync::Arc;
use std::time::Duration;

use leaseq_async::{
    AdminError, Config, Finished, HistoryQuery, LeaseQueue, Page, ScheduleState, StoredCounts,
    StoredItem,
};
use leaseq_core::MessageId;
use leaseq_postgres::{BytesCodec, DbError, Options, PgInspector, PgQueue, Postgres};
use tokio::sync::Mutex;

use crate::operator::{Capabilities, Operator, OperatorError};
use crate::query::DeadQuery;

/// `e` and its causes in words.
fn chain(e: &dyn std::error::Error) -> String {
    match OperatorError::store(e) {
        OperatorError::Store(s) => s,
        other => other.to_string(),
    }
}

/// Each state's count on the overview, the queue pages and in `/metrics` is exact up to
/// this, estimated above it ([`PgInspector::queue_overview`],
/// [`PgInspector::queue_counts`]: no pass over the table).
const EXACT_UP_TO: u64 = 100;

/// A PostgreSQL schema as an [`Operator`]: its queues (those with rows, or opened, or
/// keeping a schedule), read one call at a time over the inspector's connection. The
/// queues' counts are exact up to 100 items a state and estimates above that
/// (shown as `~`) once the schema's table passes 3.2 MiB, so that the overview of a large
/// table costs no scan of it. Made
/// with [`with_actions`](Self::with_actions), it also redrives and deletes dead letters and
/// pauses and resumes queues, each through a store opened for the action (as `leaseq`'s
/// commands do).
///
/// ```no_run
/// # async fn run() -> Result<(), leaseq_postgres::OpenError> {
/// let inspector =
///     leaseq_postgres::PgInspector::connect("host=127.0.0.1 user=postgres", "leaseq").await?;
/// let app: axum::Router = leaseq_web::router(leaseq_web::PgOperator::new(inspector));
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
    /// The operator of the schema `inspector` reads.
    pub fn new(inspector: PgInspector) -> PgOperator {
        PgOperator {
            inspector: Arc::new(Mutex::new(inspector)),
            writer: None,
        }
    }

    /// The operator of the schema `inspector` reads, which also acts (redrive, delete dead
    /// letters) on the queues of `schema` at `url` (the inspector's own server and schema):
    /// each action opens a store for itself (a pool of two, its rescuer not due, attempts
    /// unlimited, limits not recorded) and closes it.
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

    /// `queue` opened for an action, after checking that the schema knows it.
    async fn open(&self, queue: &str) -> Result<PgQueue<Vec<u8>>, OperatorError> {
        let Some(writer) = &self.writer else {
            return Err(OperatorError::ReadOnly);
        };
        {
            let mut inspector = self.inspector.lock().await;
            self.check(&mut inspector, queue).await?;
        }
        let (url, schema) = &**writer;
        let options = Options::new()
            .schema(schema.as_str())
            .pool_size(2)
            .rescue_every(Duration::from_secs(24 * 3600))
            .record_limits(false);
        LeaseQueue::builder(Config::new(Duration::from_secs(30)).with_max_attempts(u32::MAX))
            .name(queue.to_string())
            .codec(BytesCodec)
            .open(Postgres::url(url).options(options))
            .await
            .map_err(|e| OperatorError::store(&e))
    }

    /// Refuses a queue the schema does not know.
    async fn check(&self, inspector: &mut PgInspector, queue: &str) -> Result<(), OperatorError> {
        if inspector.has_queue(queue).await.map_err(bad)? {
            Ok(())
        } else {
            Err(OperatorError::NoSuchQueue(queue.to_string()))
        }
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
        let acts = self.writer.is_some();
        Capabilities {
            redrive: acts,
            purge: acts,
            pause: acts,
            history: true,
        }
    }

    async fn redrive(&self, queue: &str, id: MessageId) -> Result<(), OperatorError> {
        let q = self.open(queue).await?;
        let done = q.redrive(id).await;
        let closed = q.close().await;
        match done {
            Ok(_) => {}
            Err(AdminError::Refused(e)) => return Err(OperatorError::Refused(chain(&e))),
            Err(e) => return Err(OperatorError::store(&e)),
        }
        closed.map_err(|e| OperatorError::store(&e))
    }

    async fn redrive_dead(&self, queue: &str, query: &DeadQuery) -> Result<u64, OperatorError> {
        let filter = query.filter();
        let q = self.open(queue).await?;
        let done = q.redrive_matching(filter).await;
        let closed = q.close().await;
        let n = done.map_err(|e| OperatorError::store(&e))?;
        closed.map_err(|e| OperatorError::store(&e))?;
        Ok(n)
    }

    async fn set_paused(&self, queue: &str, paused: bool) -> Result<bool, OperatorError> {
        let q = self.open(queue).await?;
        let done = if paused {
            q.pause().await
        } else {
            q.resume().await
        };
        let closed = q.close().await;
        let changed = done.map_err(|e| OperatorError::store(&e))?;
        closed.map_err(|e| OperatorError::store(&e))?;
        Ok(changed)
    }

    async fn purge_dead(&self, queue: &str, query: &DeadQuery) -> Result<u64, OperatorError> {
        let filter = query.filter();
        let q = self.open(queue).await?;
        let done = q.purge_dead_matching(filter).await;
        let closed = q.close().await;
        let n = done.map_err(|e| OperatorError::store(&e))?;
        closed.map_err(|e| OperatorError::store(&e))?;
        Ok(n)
    }

    async fn queues(&self) -> Result<Vec<StoredCounts>, OperatorError> {
        let mut inspector = self.inspector.lock().await;
        inspector.queue_overview(EXACT_UP_TO).await.map_err(bad)
    }

    async fn counts(&self, queue: &str) -> Result<StoredCounts, OperatorError> {
        let mut inspector = self.inspector.lock().await;
        self.check(&mut inspector, queue).await?;
        inspector
            .queue_counts(queue, EXACT_UP_TO)
            .await
            .map_err(bad)
    }

    async fn items(&self, queue: &str, page: Page) -> Result<Vec<StoredItem>, OperatorError> {
        let mut inspector = self.inspector.lock().await;
        self.check(&mut inspector, queue).await?;
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
        self.check(&mut inspector, queue).await?;
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
        self.check(&mut inspector, queue).await?;
        inspector.history(queue, query).await.map_err(bad)
    }

    async fn schedules(&self, queue: &str) -> Result<Vec<ScheduleState>, OperatorError> {
        let mut inspector = self.inspector.lock().await;
        self.check(&mut inspector, queue).await?;
        inspector.schedules(queue).await.map_err(bad)
    }
}
