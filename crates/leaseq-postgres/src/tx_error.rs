//! Why a push inside the caller's transaction was not made: [`TxPushError`] (one item),
//! [`TxBatchError`] (a batch stopped at a refusal), and [`TxDbError`] (the statement
//! failed, with the client library's own error as its `source()`). In its own file so that
//! `error.rs` (the store's other errors) need not know the transactional push.

use std::fmt;

use leaseq_async::CodecError;
use leaseq_core::{MessageId, UniqueKey, MAX_PRIORITY};

/// Why [`PgStore::push_in`](crate::PgStore::push_in) did not push its item. Every refusal
/// hands the item back ([`into_item`](Self::into_item)) and, except
/// [`Db`](Self::Db), leaves the caller's transaction as it was (nothing was sent, or the
/// statement answered the refusal without raising): the caller may go on and commit.
#[derive(Debug)]
#[non_exhaustive]
pub enum TxPushError<T> {
    /// The queue was closed (this process's handle): no push is taken.
    Closed(T),
    /// The queue's codec could not encode the item.
    Encode {
        /// The item, handed back.
        item: T,
        /// The codec's error.
        error: CodecError,
    },
    /// The encoded item is larger than
    /// [`Options::max_item_size`](crate::Options::max_item_size).
    TooLarge {
        /// The item, handed back.
        item: T,
        /// Its encoded size in bytes.
        size: usize,
        /// `Options::max_item_size`, in bytes.
        max: usize,
    },
    /// The priority level is above [`MAX_PRIORITY`].
    PriorityOutOfRange {
        /// The item, handed back.
        item: T,
        /// The level asked for.
        level: u8,
    },
    /// The unique key is longer than [`UniqueKey::MAX_LEN`] bytes.
    KeyTooLong {
        /// The item, handed back.
        item: T,
        /// The key's length in bytes (more than the most allowed, at least).
        len: usize,
    },
    /// The time to live is zero, or not longer than the delay.
    AlreadyExpired(T),
    /// A live (waiting or leased) item of the queue holds the unique key, committed or
    /// pushed earlier in this transaction.
    DuplicateKey {
        /// The item, handed back.
        item: T,
        /// The item holding the key.
        existing: MessageId,
    },
    /// The queue holds its capacity (`Config::with_capacity`), as its room ledger counts
    /// (exactly, near the bound): the rows this transaction pushed count too.
    Full(T),
    /// The holder of the key kept changing (acked and taken again) while the push looked
    /// for it: try again.
    KeyContended(T),
    /// The push asks for what the store cannot do here: a bounded queue's push outside a
    /// `READ COMMITTED` transaction (its count of live rows needs each statement's own
    /// snapshot).
    Unsupported {
        /// The item, handed back.
        item: T,
        /// What was asked for, in words.
        what: &'static str,
    },
    /// The statement failed: the caller's transaction is most likely aborted (roll it
    /// back). Nothing of this push can commit.
    Db {
        /// The item, handed back.
        item: T,
        /// The client library's error.
        error: TxDbError,
    },
}

impl<T> TxPushError<T> {
    /// The item, handed back.
    pub fn into_item(self) -> T {
        match self {
            TxPushError::Closed(item)
            | TxPushError::AlreadyExpired(item)
            | TxPushError::Full(item)
            | TxPushError::KeyContended(item)
            | TxPushError::Encode { item, .. }
            | TxPushError::TooLarge { item, .. }
            | TxPushError::PriorityOutOfRange { item, .. }
            | TxPushError::KeyTooLong { item, .. }
            | TxPushError::DuplicateKey { item, .. }
            | TxPushError::Unsupported { item, .. }
            | TxPushError::Db { item, .. } => item,
        }
    }

    /// Whether the caller's transaction is left as it was (every refusal but
    /// [`Db`](Self::Db)): it may go on and commit without this item.
    pub fn transaction_intact(&self) -> bool {
        !matches!(self, TxPushError::Db { .. })
    }
}

impl<T> fmt::Display for TxPushError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TxPushError::Closed(_) => f.write_str("the queue is closed"),
            TxPushError::Encode { error, .. } => write!(f, "the item did not encode: {error}"),
            TxPushError::TooLarge { size, max, .. } => write!(
                f,
                "the item is {size} bytes encoded, over the queue's max_item_size of {max} bytes \
                 (Options::max_item_size)"
            ),
            TxPushError::PriorityOutOfRange { level, .. } => {
                write!(f, "priority {level} is out of range 0..={MAX_PRIORITY}")
            }
            TxPushError::KeyTooLong { len, .. } => write!(
                f,
                "the unique key is {len} bytes, longer than the most allowed ({})",
                UniqueKey::MAX_LEN
            ),
            TxPushError::AlreadyExpired(_) => {
                f.write_str("the time to live is not longer than the delay")
            }
            TxPushError::DuplicateKey { existing, .. } => {
                write!(f, "the unique key is held by item {}", existing.get())
            }
            TxPushError::Full(_) => f.write_str("the queue holds its capacity"),
            TxPushError::KeyContended(_) => {
                f.write_str("the unique key's holder kept changing: try again")
            }
            TxPushError::Unsupported { what, .. } => {
                write!(f, "not supported in a transactional push: {what}")
            }
            TxPushError::Db { error, .. } => {
                write!(
                    f,
                    "the push statement failed (roll the transaction back): {error}"
                )
            }
        }
    }
}

impl<T: fmt::Debug> std::error::Error for TxPushError<T> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TxPushError::Encode { error, .. } => Some(error),
            TxPushError::Db { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// A batch pushed inside the caller's transaction
/// ([`PgStore::push_batch_in`](crate::PgStore::push_batch_in)) stopped at a refusal: the
/// ids of the items pushed before it (in the transaction: they commit with it, unless it
/// rolls back), the refusal (the refused item inside), and the items after it, untried.
pub struct TxBatchError<T> {
    /// The ids of the items pushed before the refusal, in order (none if the statement
    /// failed: see [`TxPushError::Db`]).
    pub accepted: Vec<MessageId>,
    /// Why the next item was refused; the item is inside ([`TxPushError::into_item`]).
    pub error: TxPushError<T>,
    /// The items after the refused one, not tried, in order.
    pub rest: Vec<T>,
}

impl<T> TxBatchError<T> {
    /// Every item not pushed, in order: the refused one, then the rest.
    pub fn into_items(self) -> Vec<T> {
        let mut items = Vec::with_capacity(self.rest.len() + 1);
        items.push(self.error.into_item());
        items.extend(self.rest);
        items
    }
}

impl<T> fmt::Debug for TxBatchError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TxBatchError")
            .field("accepted", &self.accepted.len())
            .field("error", &self.error.to_string())
            .field("rest", &self.rest.len())
            .finish()
    }
}

impl<T> fmt::Display for TxBatchError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "transactional batch push stopped after {} item(s): {} ({} more handed back)",
            self.accepted.len(),
            self.error,
            self.rest.len()
        )
    }
}

impl<T: fmt::Debug + 'static> std::error::Error for TxBatchError<T> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// The push statement failed in the caller's client library, or answered what this
/// library does not know.
#[derive(Debug)]
#[non_exhaustive]
pub enum TxDbError {
    /// A `tokio-postgres` (or `deadpool-postgres`) client's error.
    Postgres(tokio_postgres::Error),
    /// An `sqlx` connection's error (feature `sqlx`).
    #[cfg(feature = "sqlx")]
    Sqlx(sqlx::Error),
    /// The schema's `push_rows` answered a refusal this library does not know (a schema
    /// of another leaseq version?), named.
    Unexpected(String),
}

impl TxDbError {
    /// The SQLSTATE the server sent, if the statement reached it and it refused.
    pub fn code(&self) -> Option<&str> {
        match self {
            TxDbError::Postgres(e) => e.code().map(|c| c.code()),
            #[cfg(feature = "sqlx")]
            TxDbError::Sqlx(e) => e
                .as_database_error()?
                .try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
                .map(|d| d.code()),
            TxDbError::Unexpected(_) => None,
        }
    }
}

impl fmt::Display for TxDbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TxDbError::Postgres(e) => write!(f, "{e}"),
            #[cfg(feature = "sqlx")]
            TxDbError::Sqlx(e) => write!(f, "{e}"),
            TxDbError::Unexpected(what) => write!(f, "unexpected answer from push_rows: {what}"),
        }
    }
}

impl std::error::Error for TxDbError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TxDbError::Postgres(e) => Some(e),
            #[cfg(feature = "sqlx")]
            TxDbError::Sqlx(e) => Some(e),
            TxDbError::Unexpected(_) => None,
        }
    }
}
