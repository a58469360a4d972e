//! Errors of the async layer: a refused push (its item inside) and a queue that could not
//! be made. (A handler's `JobError` is in `job_error.rs`.)

use std::fmt;

use leaseq_core::{ConfigError, MessageId};

use crate::store_error::StoreError;

/// A push that was refused; the item is inside.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PushError<T> {
    /// The queue was closed.
    Closed(T),
    /// The queue holds its configured capacity.
    Full(T),
    /// The time to live was zero.
    AlreadyExpired(T),
    /// The priority level is above [`MAX_PRIORITY`](leaseq_core::MAX_PRIORITY).
    PriorityOutOfRange {
        /// The item, handed back.
        item: T,
        /// The level asked for.
        level: u8,
    },
    /// The unique key is longer than [`UniqueKey::MAX_LEN`](leaseq_core::UniqueKey::MAX_LEN).
    KeyTooLong {
        /// The item, handed back.
        item: T,
        /// The key's length in bytes.
        len: usize,
    },
    /// An item with the same unique key is ready, delayed or in flight.
    DuplicateKey {
        /// The item, handed back.
        item: T,
        /// The live item that holds the key.
        existing: MessageId,
    },
    /// A durable store could not encode the item with its codec.
    Encode {
        /// The item, handed back.
        item: T,
        /// The codec's error.
        error: String,
    },
    /// The item's encoded form (its codec's output) is larger than the queue's maximum item
    /// size (a durable store's `Options::max_item_size`, named in the message): nothing was
    /// stored, the item is handed back. The in-memory store holds items, not bytes, and
    /// never says this.
    TooLarge {
        /// The item, handed back.
        item: T,
        /// Its encoded size in bytes.
        size: usize,
        /// The queue's maximum, in bytes.
        max: usize,
    },
    /// The store does not offer what the push asks for (flow keys beside a unique key on
    /// the Postgres store, say).
    Unsupported {
        /// The item, handed back.
        item: T,
        /// What was asked for, in words.
        what: &'static str,
    },
    /// The store cannot take pushes now (a durable store whose commits fail: disk full, file
    /// locked; a database it cannot reach). Nothing was queued; the item is handed back.
    Store {
        /// The item, handed back.
        item: T,
        /// What failed (always "not done" here).
        error: StoreError,
    },
    /// The item was accepted (it holds `id`) but the store could not confirm it durable
    /// before its commit timeout ran out: it stays queued in this process and reaches disk
    /// if the store recovers before the process ends. The outcome is unknown: pushing it
    /// again may make a second item. Only `push(..).await` and its variants say this; there
    /// is no item to hand back.
    Unconfirmed {
        /// The id the item was given.
        id: MessageId,
        /// What failed (outcome unknown).
        error: StoreError,
    },
}

impl<T> PushError<T> {
    /// The refused item, handed back; `None` only for
    /// [`Unconfirmed`](Self::Unconfirmed), whose item the queue kept.
    pub fn into_item(self) -> Option<T> {
        match self {
            PushError::Closed(t) | PushError::Full(t) | PushError::AlreadyExpired(t) => Some(t),
            PushError::PriorityOutOfRange { item, .. }
            | PushError::KeyTooLong { item, .. }
            | PushError::DuplicateKey { item, .. }
            | PushError::Encode { item, .. }
            | PushError::TooLarge { item, .. }
            | PushError::Unsupported { item, .. }
            | PushError::Store { item, .. } => Some(item),
            PushError::Unconfirmed { .. } => None,
        }
    }

    /// The store's error, for [`Store`](Self::Store) and [`Unconfirmed`](Self::Unconfirmed).
    pub fn store_error(&self) -> Option<&StoreError> {
        match self {
            PushError::Store { error, .. } | PushError::Unconfirmed { error, .. } => Some(error),
            _ => None,
        }
    }

    /// For [`DuplicateKey`](Self::DuplicateKey): the live item that holds the key.
    pub fn existing(&self) -> Option<MessageId> {
        match self {
            PushError::DuplicateKey { existing, .. } => Some(*existing),
            _ => None,
        }
    }

    pub(crate) fn from_core(e: leaseq_core::PushError<T>) -> Self {
        use leaseq_core::PushError as Core;
        match e {
            Core::AlreadyExpired(item) => PushError::AlreadyExpired(item),
            Core::PriorityOutOfRange { item, level } => {
                PushError::PriorityOutOfRange { item, level }
            }
            Core::KeyTooLong { item, len } => PushError::KeyTooLong { item, len },
            Core::DuplicateKey { item, existing } => PushError::DuplicateKey { item, existing },
            // Full, and the slab of 2^32 slots full (ids are handed out in order here).
            other => PushError::Full(other.into_item()),
        }
    }
}

impl<T> fmt::Debug for PushError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PushError::Closed(_) => f.write_str("Closed(..)"),
            PushError::Full(_) => f.write_str("Full(..)"),
            PushError::AlreadyExpired(_) => f.write_str("AlreadyExpired(..)"),
            PushError::PriorityOutOfRange { level, .. } => {
                write!(f, "PriorityOutOfRange {{ level: {level}, .. }}")
            }
            PushError::KeyTooLong { len, .. } => write!(f, "KeyTooLong {{ len: {len}, .. }}"),
            PushError::DuplicateKey { existing, .. } => {
                write!(f, "DuplicateKey {{ existing: {existing:?}, .. }}")
            }
            PushError::Encode { error, .. } => write!(f, "Encode {{ error: {error:?}, .. }}"),
            PushError::TooLarge { size, max, .. } => {
                write!(f, "TooLarge {{ size: {size}, max: {max}, .. }}")
            }
            PushError::Unsupported { what, .. } => {
                write!(f, "Unsupported {{ what: {what:?}, .. }}")
            }
            PushError::Store { error, .. } => write!(f, "Store {{ error: {error:?}, .. }}"),
            PushError::Unconfirmed { id, error } => {
                write!(f, "Unconfirmed {{ id: {id:?}, error: {error:?} }}")
            }
        }
    }
}

impl<T> fmt::Display for PushError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PushError::Closed(_) => f.write_str("queue is closed; item handed back"),
            PushError::Full(_) => f.write_str("queue is at capacity; item handed back"),
            PushError::AlreadyExpired(_) => {
                f.write_str("item's time to live is zero; item handed back")
            }
            PushError::PriorityOutOfRange { level, .. } => write!(
                f,
                "priority level {level} is above {}; item handed back",
                leaseq_core::MAX_PRIORITY
            ),
            PushError::KeyTooLong { len, .. } => write!(
                f,
                "unique key of {len} bytes is longer than {}; item handed back",
                leaseq_core::UniqueKey::MAX_LEN
            ),
            PushError::DuplicateKey { existing, .. } => {
                write!(f, "{existing} holds this unique key; item handed back")
            }
            PushError::Encode { error, .. } => {
                write!(
                    f,
                    "the item could not be encoded ({error}); item handed back"
                )
            }
            PushError::TooLarge { size, max, .. } => write!(
                f,
                "the item encodes to {size} bytes, over the store's Options::max_item_size \
                 of {max}: raise it or push a smaller item; item handed back"
            ),
            PushError::Unsupported { what, .. } => {
                write!(f, "this store does not support {what}; item handed back")
            }
            PushError::Store { error, .. } => write!(f, "{error}; item handed back"),
            PushError::Unconfirmed { id, error } => write!(
                f,
                "{id} was accepted but not confirmed durable: {error}; the queue keeps it"
            ),
        }
    }
}

impl<T> std::error::Error for PushError<T> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.store_error().map(|e| e as _)
    }
}

/// Why a queue could not be created.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NewQueueError {
    /// The core configuration is invalid.
    Config(ConfigError),
    /// No runtime was given and this thread is not inside one.
    NoRuntime,
}

impl fmt::Display for NewQueueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NewQueueError::Config(e) => write!(f, "invalid queue config: {e}"),
            NewQueueError::NoRuntime => {
                f.write_str("no runtime: create the queue inside one, or pass one")
            }
        }
    }
}

impl std::error::Error for NewQueueError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            NewQueueError::Config(e) => Some(e),
            NewQueueError::NoRuntime => None,
        }
    }
}
