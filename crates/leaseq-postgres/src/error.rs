//! The store's typed errors: opening ([`OpenError`]), acking inside a transaction
//! ([`TxAckError`]) and the calls beyond the seam ([`DbError`]).
//!
//! Each says what failed at its own level in its `Display`, and hands what caused it (the
//! `tokio-postgres` error, under it the server's message or the I/O error) to
//! [`source`](std::error::Error::source), never both: print the chain to see it all (the
//! `leaseq` command line does: "cannot connect to PostgreSQL: authentication failed for
//! user \"x\": db error: FATAL: role \"x\" does not exist"), and so does
//! [`ErrorChain`](leaseq_async::ErrorChain) where this crate keeps an error in words
//! (`last_error`, a [`StoreError`](leaseq_async::StoreError)'s message).

use std::error::Error;
use std::fmt;

use leaseq_async::NewQueueError;
use leaseq_core::{ConfigError, ReceiptError};

/// Why opening a queue on [`Postgres`](crate::Postgres) failed. Nothing in the database is changed by a refused open,
/// except that a missing schema is created and an older one migrated.
#[derive(Debug)]
#[non_exhaustive]
pub enum OpenError {
    /// The connection string could not be parsed (by `tokio-postgres`: an unknown key, named,
    /// or an invalid value, never quoted).
    BadUrl(tokio_postgres::Error),
    /// The connection string could not be read: its syntax, or an invalid `sslmode`
    /// (the message never quotes a value of the string, which may hold a password).
    BadConnectionString(String),
    /// No server answers at the address: the connection was refused (nothing listens on
    /// that port), the host name is unknown, the connect timeout
    /// ([`Options::connect_timeout`](crate::Options::connect_timeout)) ran out, or the
    /// connection broke before the session began.
    Unreachable {
        /// Where it connected: `host:port`, each of the connection string's, in words.
        server: String,
        /// `tokio-postgres`'s error; the I/O error under it.
        source: tokio_postgres::Error,
    },
    /// The server refused the login (SQLSTATE `28P01`, a wrong password, or `28000`, no
    /// such role or a `pg_hba.conf` rule): check the user name and the password.
    AuthenticationFailed {
        /// The user name of the connection string.
        user: String,
        /// `tokio-postgres`'s error; the server's message under it.
        source: tokio_postgres::Error,
    },
    /// The database named does not exist on the server (SQLSTATE `3D000`).
    DatabaseMissing {
        /// The database name of the connection string (the user name when none is given).
        database: String,
        /// `tokio-postgres`'s error; the server's message under it.
        source: tokio_postgres::Error,
    },
    /// Connecting failed otherwise: the server turned the session away (too many
    /// connections, starting up, shutting down), the connection string lacks what the
    /// server asks for (a password), a protocol error, ... The cause: `tokio-postgres`'s
    /// error (or the connection pool's), which `downcast_ref` reaches.
    Connect(Box<dyn Error + Send + Sync + 'static>),
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
    /// `sslmode` is `require`, `verify-ca` or `verify-full` but the server does not offer
    /// TLS (its `ssl` setting is off).
    ServerWithoutTls,
    /// The server's certificate is not trusted: not signed by a root of `sslrootcert` (or
    /// of the platform's store), expired, or otherwise invalid (`verify-ca`,
    /// `verify-full`, or any mode with `sslrootcert`). The reason, in words.
    UntrustedCertificate(String),
    /// The server's certificate is trusted but not issued for the host connected to
    /// (`verify-full`): connect by the name the certificate carries. The reason, in words.
    NameMismatch(String),
    /// Another TLS failure: the handshake (no common protocol, an alert from the server),
    /// or the TLS settings (an unreadable `sslrootcert`, `sslcert` or `sslkey`). In words.
    Tls(String),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::BadUrl(_) => f.write_str("bad connection string"),
            OpenError::BadConnectionString(e) => write!(f, "bad connection string: {e}"),
            OpenError::Unreachable { server, .. } => write!(
                f,
                "cannot connect to PostgreSQL: no server answers at {server} (check the host, \
                 the port, and that the server runs and listens there)"
            ),
            OpenError::AuthenticationFailed { user, .. } => write!(
                f,
                "cannot connect to PostgreSQL: authentication failed for user {user:?}"
            ),
            OpenError::DatabaseMissing { database, .. } => write!(
                f,
                "cannot connect to PostgreSQL: database {database:?} does not exist (create \
                 it, or name another with dbname)"
            ),
            OpenError::Connect(_) => f.write_str("cannot connect to PostgreSQL"),
            OpenError::Db(_) => f.write_str("database error"),
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
            OpenError::Config(_) => f.write_str("invalid queue configuration"),
            OpenError::Unsupported(what) => {
                write!(f, "the Postgres store does not support {what}")
            }
            OpenError::NoRuntime => {
                f.write_str("no tokio runtime: open inside one, or give the builder a TokioRuntime")
            }
            OpenError::ServerWithoutTls => f.write_str(
                "the server does not offer TLS but sslmode requires it: turn ssl on at the \
                 server, or lower sslmode",
            ),
            OpenError::UntrustedCertificate(e) => write!(
                f,
                "the server's certificate is not trusted ({e}): check sslrootcert names the \
                 CA that signed it"
            ),
            OpenError::NameMismatch(e) => write!(
                f,
                "the server's certificate is not for this host name ({e}): connect by a name \
                 it carries, or use sslmode=verify-ca"
            ),
            OpenError::Tls(e) => write!(f, "TLS failed: {e}"),
        }
    }
}

impl Error for OpenError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            OpenError::BadUrl(e) | OpenError::Db(e) => Some(e),
            OpenError::Unreachable { source, .. }
            | OpenError::AuthenticationFailed { source, .. }
            | OpenError::DatabaseMissing { source, .. } => Some(source),
            OpenError::Connect(e) => Some(&**e),
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
            TxAckError::Stale(_) => f.write_str("the ack was refused: the lease is stale"),
            TxAckError::Db(_) => f.write_str("database error"),
        }
    }
}

impl Error for TxAckError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
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
    /// No connection could be had from the pool (it closed with the store), or the task
    /// running the call ended first. The cause: the pool's error or the task's.
    Pool(Box<dyn Error + Send + Sync + 'static>),
}

impl DbError {
    /// [`DbError::Pool`], caused by `e` while `what`.
    pub(crate) fn pool(
        what: &'static str,
        e: impl Into<Box<dyn Error + Send + Sync + 'static>>,
    ) -> DbError {
        DbError::Pool(Box::new(Because {
            what,
            cause: e.into(),
        }))
    }
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbError::Db(_) => f.write_str("database error"),
            DbError::Pool(_) => f.write_str("no database connection"),
        }
    }
}

impl Error for DbError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            DbError::Db(e) => Some(e),
            DbError::Pool(e) => Some(&**e),
        }
    }
}

impl From<tokio_postgres::Error> for DbError {
    fn from(e: tokio_postgres::Error) -> Self {
        DbError::Db(e)
    }
}

/// What was being done when `cause` happened (`what`: "the upkeep task ended", ...).
#[derive(Debug)]
pub(crate) struct Because {
    pub(crate) what: &'static str,
    pub(crate) cause: Box<dyn Error + Send + Sync + 'static>,
}

impl fmt::Display for Because {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.what)
    }
}

impl Error for Because {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&*self.cause)
    }
}
