//! The store's typed errors: opening ([`OpenError`]) and acking inside a transaction
//! ([`TxAckError`]).

use std::fmt;

use leaseq_async::NewQueueError;
use leaseq_core::{ConfigError, ReceiptError};

/// Why opening a queue on [`Postgres`](crate::Postgres) failed. Nothing in the database is changed by a refused open,
/// except that a missing schema is created and an older one migrated.
#[derive(Debug)]
#[non_exhaustive]
pub enum OpenError {
    /// The connection string could not be parsed.
    BadUrl(tokio_postgres::Error),
    /// The server could not be reached, or refused the connection.
    Connect(String),
    /// A statement failed (permissions, a broken connection, ...).
    Db(tokio_postgres::Error),
    /// The schema was set up by a newer leaseq: left untouched.
    SchemaTooNew {
        /// The version recorded in the database.
        found: i64,
        /// The newest version this library knows.
        supported: i64,
    },
    /// The schema's bookkeeping makes no sense (a hand-edited version, say).
    SchemaCorrupt(String),
    /// A schema or queue name that is not allowed (see [`Options::schema`](crate::Options)
    /// and [`MAX_QUEUE_NAME`](crate::MAX_QUEUE_NAME)).
    InvalidName(String),
    /// The queue's configuration is invalid.
    Config(ConfigError),
    /// The configuration asks for what this store does not offer (see the crate docs).
    Unsupported(&'static str),
    /// No tokio runtime was given and the open was not called inside one.
    NoRuntime,
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::BadUrl(e) => write!(f, "bad connection string: {e}"),
            OpenError::Connect(e) => write!(f, "cannot connect to PostgreSQL: {e}"),
            OpenError::Db(e) => write!(f, "database error: {e}"),
            OpenError::SchemaTooNew { found, supported } => write!(
                f,
                "the schema is at version {found}, newer than this library's {supported}: \
                 upgrade leaseq-postgres"
            ),
            OpenError::SchemaCorrupt(e) => write!(f, "the schema's bookkeeping is corrupt: {e}"),
            OpenError::InvalidName(n) => write!(
                f,
                "invalid name {n:?}: schema names are lower-case letters, digits and _ \
                 (at most 63 bytes); queue names are 1 to 200 bytes"
            ),
            OpenError::Config(e) => write!(f, "invalid queue configuration: {e}"),
            OpenError::Unsupported(what) => {
                write!(f, "the Postgres store does not support {what}")
            }
            OpenError::NoRuntime => {
                f.write_str("no tokio runtime: open inside one, or give the builder a TokioRuntime")
            }
        }
    }
}

impl std::error::Error for OpenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OpenError::BadUrl(e) | OpenError::Db(e) => Some(e),
            OpenError::Config(e) => Some(e),
            _ => None,
        }
    }
}

impl From<NewQueueError> for OpenError {
    fn from(e: NewQueueError) -> Self {
        match e {
            NewQueueError::Config(e) => OpenError::Config(e),
            _ => OpenError::NoRuntime,
        }
    }
}

impl From<tokio_postgres::Error> for OpenError {
    fn from(e: tokio_postgres::Error) -> Self {
        OpenError::Db(e)
    }
}

/// Why an ack inside the caller's transaction
/// ([`PgStore::ack_in`](crate::PgStore::ack_in)) was not made.
#[derive(Debug)]
#[non_exhaustive]
pub enum TxAckError {
    /// The lease is stale (taken over, dead-lettered, gone) or the delivery was settled.
    Stale(ReceiptError),
    /// The statement failed; the transaction is most likely aborted (roll it back).
    Db(tokio_postgres::Error),
}

impl fmt::Display for TxAckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TxAckError::Stale(e) => write!(f, "{e}"),
            TxAckError::Db(e) => write!(f, "database error: {e}"),
        }
    }
}

impl std::error::Error for TxAckError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TxAckError::Stale(e) => Some(e),
            TxAckError::Db(e) => Some(e),
        }
    }
}

/// A database error of a call on the store beyond the seam
/// ([`PgStore::run_upkeep`](crate::PgStore::run_upkeep),
/// [`PgStore::explain_claim`](crate::PgStore::explain_claim)).
#[derive(Debug)]
#[non_exhaustive]
pub enum DbError {
    /// A statement failed.
    Db(tokio_postgres::Error),
    /// No connection could be had from the pool (or a background step failed), in words.
    Pool(String),
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbError::Db(e) => write!(f, "database error: {e}"),
            DbError::Pool(e) => write!(f, "no database connection: {e}"),
        }
    }
}

impl std::error::Error for DbError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DbError::Db(e) => Some(e),
            DbError::Pool(_) => None,
        }
    }
}

impl From<tokio_postgres::Error> for DbError {
    fn from(e: tokio_postgres::Error) -> Self {
        DbError::Db(e)
    }
}

impl From<DbError> for String {
    fn from(e: DbError) -> Self {
        e.to_string()
    }
}
