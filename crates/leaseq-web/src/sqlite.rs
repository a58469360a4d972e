//! [`Operator`] for a SQLite queue file, read through [`FileView`] (no owner lock taken,
//! nothing written; works while the queue runs in another process); its actions, where
//! asked for, through the file opened as its owner for each (refused while another
//! process owns it).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_async::{
    AdminError, Config, Finished, HistoryQuery, LeaseQueue, Page, ScheduleState, StoredCounts,
    StoredItem,
};
use leaseq_core::MessageId;
use leaseq_sqlite::{BytesCodec, FileView, OpenError, Sqlite, SqliteQueue};
use leaseq_tokio::TokioRuntime;

use crate::operator::{Capabilities, Operator, OperatorError};
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
    /// The file the actions open as its owner (none: read-only).
    owner: Option<PathBuf>,
}

impl SqliteOperator {
    /// The operator of the file `view` reads (read-only).
    pub fn new(view: FileView) -> SqliteOperator {
        SqliteOperator {
            view: Arc::new(Mutex::new(view)),
            owner: None,
        }
    }

    /// The operator of the file `view` reads, which also redrives and deletes dead letters,
    /// and pauses and resumes its queue, by opening the file as its owner for each action (as `leaseq sqlite FILE redrive`
    /// does: the leases of a process that died holding it come back first). Refused
    /// ([`OperatorError::Refused`]) while another queue owns the file: a running service
    /// keeps its file to itself.
    pub fn with_actions(view: FileView) -> SqliteOperator {
        let path = view.path().to_path_buf();
        SqliteOperator {
            view: Arc::new(Mutex::new(view)),
            owner: Some(path),
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

    /// The file opened as its owner, under its recorded queue name, for an action on
    /// `queue`.
    async fn open_owner(&self, queue: &str) -> Result<Owned, OperatorError> {
        let Some(path) = &self.owner else {
            return Err(OperatorError::ReadOnly);
        };
        self.check(queue).await?;
        let name = self.with(|v| v.queue_name()).await?;
        let config = Config::new(Duration::from_secs(30)).with_max_attempts(u32::MAX);
        let mut builder = LeaseQueue::builder(config);
        if let Some(name) = name {
            builder = builder.name(name);
        }
        builder
            .codec(BytesCodec)
            .open(Sqlite::file(path))
            .await
            .map_err(|e| {
                match e {
                OpenError::Locked(_) => OperatorError::Refused(
                    "the file is in use by another process: act from that process, or stop it first"
                        .into(),
                ),
                e => OperatorError::store(&e),
            }
            })
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

/// The file opened as its owner.
type Owned = SqliteQueue<Vec<u8>, TokioRuntime, BytesCodec>;

/// Closes `q` and waits (5 s at most) for its store to go, so that the file's owner lock is
/// released when the action's answer is sent.
async fn shut(q: Owned) -> Result<(), OperatorError> {
    let closed = q.close().await;
    let store = Arc::clone(q.store());
    drop(q);
    for _ in 0..5000 {
        if Arc::strong_count(&store) == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    drop(store);
    closed.map_err(|e| OperatorError::store(&e))
}

impl Operator for SqliteOperator {
    fn store_kind(&self) -> &'static str {
        "SQLite"
    }

    fn capabilities(&self) -> Capabilities {
        let acts = self.owner.is_some();
        Capabilities {
            redrive: acts,
            purge: acts,
            pause: acts,
            history: true,
        }
    }

    async fn redrive(&self, queue: &str, id: MessageId) -> Result<(), OperatorError> {
        let q = self.open_owner(queue).await?;
        let done = q.redrive(id).await;
        let closed = shut(q).await;
        match done {
            Ok(_) => closed,
            Err(AdminError::Refused(e)) => Err(OperatorError::Refused(e.to_string())),
            Err(e) => Err(OperatorError::store(&e)),
        }
    }

    async fn redrive_dead(&self, queue: &str, query: &DeadQuery) -> Result<u64, OperatorError> {
        let filter = query.filter();
        let q = self.open_owner(queue).await?;
        let done = q.redrive_matching(filter).await;
        let closed = shut(q).await;
        let n = done.map_err(|e| OperatorError::store(&e))?;
        closed.map(|()| n)
    }

    async fn set_paused(&self, queue: &str, paused: bool) -> Result<bool, OperatorError> {
        let q = self.open_owner(queue).await?;
        let done = if paused {
            q.pause().await
        } else {
            q.resume().await
        };
        let closed = shut(q).await;
        let changed = done.map_err(|e| OperatorError::store(&e))?;
        closed.map(|()| changed)
    }

    async fn purge_dead(&self, queue: &str, query: &DeadQuery) -> Result<u64, OperatorError> {
        let filter = query.filter();
        let q = self.open_owner(queue).await?;
        let done = q.purge_dead_matching(filter).await;
        let closed = shut(q).await;
        let n = done.map_err(|e| OperatorError::store(&e))?;
        closed.map(|()| n)
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

    async fn history(
        &self,
        queue: &str,
        query: &HistoryQuery,
    ) -> Result<Vec<Finished>, OperatorError> {
        self.check(queue).await?;
        let query = query.clone();
        self.with(move |v| v.history(&query)).await
    }
}
