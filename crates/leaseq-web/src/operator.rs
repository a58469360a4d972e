//! The operator interface the dashboard reads through, [`leaseq_async::operator`]'s (one
//! trait each store implements, so that a store implementing it gets the dashboard and the
//! `leaseq` command line at once), and the stores' operators under this crate's names.

pub use leaseq_async::operator::{Capabilities, LocalOperator, Operator, OperatorError};

/// A SQLite queue file as an [`Operator`] on tokio (`leaseq_sqlite::SqliteOperator`): its
/// reads on tokio's blocking pool, its actions through the file opened as its owner.
///
/// ```no_run
/// # fn main() -> Result<(), leaseq_sqlite::OpenError> {
/// let view = leaseq_sqlite::FileView::open("jobs.db")?;
/// let app: axum::Router = leaseq_web::router(leaseq_web::SqliteOperator::new(view));
/// # Ok(()) }
/// ```
pub type SqliteOperator = leaseq_sqlite::SqliteOperator<leaseq_tokio::TokioRuntime>;
