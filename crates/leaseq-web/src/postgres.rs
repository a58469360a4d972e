//! [`Operator`] for a PostgreSQL schema's queues, read through [`PgInspector`] (one
//! connection, every read a read-only transaction).

use std::sync::Arc;

use leaseq_async::{Page, ScheduleState, StoredCounts, StoredItem};
use leaseq_postgres::{DbError, PgInspector};
use tokio::sync::Mutex;

use crate::operator::{Operator, OperatorError};

/// A PostgreSQL schema as an [`Operator`]: its queues (those with rows, or opened, or
/// keeping a schedule), read one call at a time over the inspector's connection.
///
/// ```no_run
/// # async fn run() -> Result<(), leaseq_postgres::OpenError> {
/// let inspector =
///     leaseq_postgres::PgInspector::connect("host=127.0.0.1 user=postgres", "leaseq").await?;
/// let app: axum::Router = leaseq_web::router(leaseq_web::PgOperator::new(inspector));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct PgOperator {
    inspector: Arc<Mutex<PgInspector>>,
}

impl PgOperator {
    /// The operator of the schema `inspector` reads.
    pub fn new(inspector: PgInspector) -> PgOperator {
        PgOperator {
            inspector: Arc::new(Mutex::new(inspector)),
        }
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

    async fn queues(&self) -> Result<Vec<StoredCounts>, OperatorError> {
        self.inspector.lock().await.queues().await.map_err(bad)
    }

    async fn counts(&self, queue: &str) -> Result<StoredCounts, OperatorError> {
        let mut inspector = self.inspector.lock().await;
        self.check(&mut inspector, queue).await?;
        inspector.counts(queue).await.map_err(bad)
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
    ) -> Result<Vec<StoredItem>, OperatorError> {
        let mut inspector = self.inspector.lock().await;
        self.check(&mut inspector, queue).await?;
        inspector.dead_letters(queue, page).await.map_err(bad)
    }

    async fn schedules(&self, queue: &str) -> Result<Vec<ScheduleState>, OperatorError> {
        let mut inspector = self.inspector.lock().await;
        self.check(&mut inspector, queue).await?;
        inspector.schedules(queue).await.map_err(bad)
    }
}
