//! A handler's checkpoint: a small value it records while it works on an item, handed out
//! again with every later delivery of that item so that a long job resumes where it was
//! (River's and graphile-worker's "job output / progress", BullMQ's `updateProgress`).
//!
//! What a checkpoint is, on every store:
//!
//! - **Recorded** with [`Delivery::checkpoint`](crate::Delivery::checkpoint) or
//!   [`Job::checkpoint`](crate::Job::checkpoint) while the lease runs: `Ok` once it is
//!   durable (committed in the SQLite file, on the Postgres server; at once in memory); a
//!   lease no longer held is refused ([`CheckpointError::Stale`]), so a holder that lost
//!   its lease cannot overwrite the progress of the one that took the item over.
//! - **Kept** while the item lives, across every redelivery: a nack, a timeout, a lease
//!   running out, a process killed (SQLite and Postgres), a put-back, a dead letter and a
//!   redrive from the dead letters (the work done so far is still done).
//! - **Dropped** when the item leaves for good: an ack, a cancel, a purge, a replacement
//!   by key, a dead letter purged.
//! - **Shown** to operators: [`LeaseQueue::checkpoints`](crate::LeaseQueue::checkpoints)
//!   lists the checkpoints of the live items and dead letters of a page, beside
//!   [`peek`](crate::LeaseQueue::peek) and [`dead_letters`](crate::LeaseQueue::dead_letters).
//! - **At most [`MAX_PROGRESS_BYTES`]**: a larger one is refused, typed, nothing recorded.
//!
//! Free for code that never checkpoints: the memory store keeps checkpoints in a map beside
//! the core (never in the core's slots), looked at on an ack only when it is not empty; a
//! lease looks nothing up (a handler's `progress()` asks the store when called).

use std::fmt;
use std::sync::Arc;

use leaseq_core::ReceiptError;

use crate::codec::CodecError;
use crate::store_error::{SettleError, StoreError};

/// The largest checkpoint, in bytes (64 KiB): progress is a cursor, not a result store.
pub const MAX_PROGRESS_BYTES: usize = 64 * 1024;

/// A checkpoint's bytes, as a handler recorded them. Cheap to clone (shared), one pointer
/// wide.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Progress(Arc<Vec<u8>>);

impl Progress {
    /// Progress of `bytes`, or why not ([`CheckpointError::TooLarge`] past
    /// [`MAX_PROGRESS_BYTES`]).
    pub fn new(bytes: impl Into<Vec<u8>>) -> Result<Self, CheckpointError> {
        let bytes = bytes.into();
        if bytes.len() > MAX_PROGRESS_BYTES {
            return Err(CheckpointError::TooLarge {
                len: bytes.len(),
                max: MAX_PROGRESS_BYTES,
            });
        }
        Ok(Progress(Arc::new(bytes)))
    }

    /// Progress read back from a store (a row's column): no size check, so a store never
    /// refuses what it holds.
    pub fn from_stored(bytes: &[u8]) -> Self {
        Progress(Arc::new(bytes.to_vec()))
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The value a handler recorded with `checkpoint_as`, decoded with postcard.
    #[cfg(feature = "serde")]
    pub fn decode<P: serde::de::DeserializeOwned>(&self) -> Result<P, CodecError> {
        postcard::from_bytes(&self.0).map_err(|e| CodecError(e.to_string()))
    }

    /// `value` encoded with postcard, checked for size.
    #[cfg(feature = "serde")]
    pub fn encode<P: serde::Serialize + ?Sized>(value: &P) -> Result<Self, CheckpointError> {
        let bytes = postcard::to_allocvec(value)
            .map_err(|e| CheckpointError::Encode(CodecError(e.to_string())))?;
        Progress::new(bytes)
    }
}

impl AsRef<[u8]> for Progress {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Progress({} bytes)", self.0.len())
    }
}

/// Which lease a checkpoint is for, as a store recognizes it: a copy of what its ticket
/// says, so that a pool's job can record a checkpoint while the pool keeps the ticket
/// ([`Store::lease_key`](crate::Store::lease_key)). The memory store's is the core's
/// receipt; a database's, the row and its fencing token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseKey(Key);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    Receipt(leaseq_core::Receipt),
    Row(i64, i64),
}

impl LeaseKey {
    /// The key of a lease the core's `receipt` stands for.
    pub fn receipt(receipt: leaseq_core::Receipt) -> Self {
        LeaseKey(Key::Receipt(receipt))
    }

    /// The key of a lease on database row `id` with fencing token `token`.
    pub fn row(id: i64, token: i64) -> Self {
        LeaseKey(Key::Row(id, token))
    }

    /// The receipt, if this is a receipt's key.
    pub fn as_receipt(&self) -> Option<leaseq_core::Receipt> {
        match self.0 {
            Key::Receipt(r) => Some(r),
            Key::Row(..) => None,
        }
    }

    /// The row and token, if this is a row's key.
    pub fn as_row(&self) -> Option<(i64, i64)> {
        match self.0 {
            Key::Row(id, token) => Some((id, token)),
            Key::Receipt(_) => None,
        }
    }
}

/// Why a checkpoint was not recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CheckpointError {
    /// Larger than [`MAX_PROGRESS_BYTES`]: nothing recorded.
    TooLarge {
        /// Its size in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The value did not encode (`checkpoint_as`): nothing recorded.
    Encode(CodecError),
    /// The lease is no longer held (it ran out and the item went to someone else, it was
    /// settled, cancelled, ...): nothing recorded; the item's checkpoint is its new holder's.
    Stale(ReceiptError),
    /// The store failed: not recorded, or an outcome it cannot know
    /// ([`StoreError::is_outcome_unknown`]).
    Store(StoreError),
}

impl CheckpointError {
    /// Whether the checkpoint may have been recorded after all.
    pub fn is_outcome_unknown(&self) -> bool {
        matches!(self, CheckpointError::Store(e) if e.is_outcome_unknown())
    }
}

impl From<SettleError> for CheckpointError {
    fn from(e: SettleError) -> Self {
        match e {
            SettleError::Stale(r) => CheckpointError::Stale(r),
            SettleError::Store(s) => CheckpointError::Store(s),
            SettleError::Unsupported(what) => CheckpointError::Store(StoreError::not_done(what)),
        }
    }
}

impl From<ReceiptError> for CheckpointError {
    fn from(e: ReceiptError) -> Self {
        CheckpointError::Stale(e)
    }
}

impl fmt::Display for CheckpointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckpointError::TooLarge { len, max } => {
                write!(f, "checkpoint of {len} bytes refused: at most {max}")
            }
            CheckpointError::Encode(e) => write!(f, "checkpoint not encoded: {e}"),
            CheckpointError::Stale(e) => write!(f, "checkpoint refused: {e}"),
            CheckpointError::Store(e) => write!(f, "checkpoint: {e}"),
        }
    }
}

impl std::error::Error for CheckpointError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CheckpointError::Encode(e) => Some(e),
            CheckpointError::Stale(e) => Some(e),
            CheckpointError::Store(e) => Some(e),
            CheckpointError::TooLarge { .. } => None,
        }
    }
}
