//! [`Operator`] for a SQLite queue file, read through [`FileView`] (read-only: no owner
//! lock taken, nothing written; works while the queue runs in another process).

use std::sync::{Arc, Mutex};

use leaseq_async::{Page, ScheduleState, StoredCounts, StoredItem};
use leaseq_sqlite::{FileView, OpenError};

use crate::operator::{Operator, OperatorError};
use crate::query::DeadQuery;

/// The name a file's queue is shown under when the file has none recorded (as the CLI
/// shows it).
pub const UNNAMED: &str = "-";

/// A SQLite queue file as an [`Operator`]: its one queue, under the name its last open
/// recorded ([`UNNAMED`] when none is). Each read runs on tokio's blocking pool.
///
/// ```no_run
/// # fn main() -> Result<(), leaseq_sqlite::OpenError> {
/// let view = leaseq_sqlite::FileView::open("jobs.db")?;
/// let app: axum::Router = leaseq_web::router(leaseq_web::SqliteOperator::new(view));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SqliteOperator {
    view: Arc<Mutex<FileView>>,
}

impl SqliteOperator {
    /// The operator of the file `view` reads.
    pub fn new(view: FileView) -> SqliteOperator {
        SqliteOperator {
            view: Arc::new(Mutex::new(view)),
        }
    }

    /// Runs `f` on the view on tokio's blocking pool.
    async fn with<R: Send + 'static>(
        &self,
        f: impl FnOnce(&FileView) -> Result<R, OpenError> + Send + 'static,
    ) -> Result<R, OperatorError> {
        let view = Arc::clone(&self.view);
        let joined = tokio::task::spawn_blocking(move || {
            // A read that panicked left no half-written state behind (reads only).
            let view = view.lock().unwrap_or_else(|p| p.into_inner());
            f(&view)
        })
        .await;
        match joined {
            Ok(result) => result.map_err(|e| OperatorError::store(&e)),
            Err(e) => Err(OperatorError::Store(format!(
                "the read did not finish: {e}"
            ))),
        }
    }

    /// The file's counts, named as shown, if `queue` is its queue's name.
    async fn counts_of(&self, queue: &str) -> Result<StoredCounts, OperatorError> {
        let mut counts = self.with(|v| v.counts()).await?;
        if counts.queue.is_empty() {
            counts.queue = UNNAMED.to_string();
        }
        if counts.queue != queue {
            return Err(OperatorError::NoSuchQueue(queue.to_string()));
        }
        Ok(counts)
    }

    /// Refuses a name that is not the file's queue's.
    async fn check(&self, queue: &str) -> Result<(), OperatorError> {
        let name = self.with(|v| v.queue_name()).await?;
        let name = name.filter(|n| !n.is_empty());
        if name.as_deref().unwrap_or(UNNAMED) == queue {
            Ok(())
        } else {
            Err(OperatorError::NoSuchQueue(queue.to_string()))
        }
    }
}

impl Operator for SqliteOperator {
    fn store_kind(&self) -> &'static str {
        "SQLite"
    }

    async fn queues(&self) -> Result<Vec<StoredCounts>, OperatorError> {
        let mut counts = self.with(|v| v.counts()).await?;
        if counts.queue.is_empty() {
            counts.queue = UNNAMED.to_string();
        }
        Ok(vec![counts])
    }

    async fn counts(&self, queue: &str) -> Result<StoredCounts, OperatorError> {
        self.counts_of(queue).await
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
}
