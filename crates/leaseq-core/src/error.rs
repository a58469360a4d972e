//! Typed errors for operations that can be refused.

use core::fmt;
use core::time::Duration;

use crate::id::MessageId;

/// A push that was refused. The item is inside: nothing is lost.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PushError<T> {
    /// The queue holds its configured capacity already.
    Full(T),
    /// The item's expiry is not after `now`: it could never be delivered.
    AlreadyExpired(T),
    /// [`Queue::push_with_id`](crate::Queue::push_with_id) was given an id below one
    /// already used: ids must increase.
    IdOutOfOrder(T),
    /// The priority level is above [`MAX_PRIORITY`](crate::MAX_PRIORITY).
    PriorityOutOfRange {
        /// The item, handed back.
        item: T,
        /// The level asked for.
        level: u8,
    },
    /// The unique key is longer than [`UniqueKey::MAX_LEN`](crate::UniqueKey::MAX_LEN).
    KeyTooLong {
        /// The item, handed back.
        item: T,
        /// The key's length in bytes.
        len: usize,
    },
    /// An item with the same unique key is ready, delayed or in flight (in flight even with
    /// [`replace_pending`](crate::PushOptions::replace_pending)).
    DuplicateKey {
        /// The item, handed back.
        item: T,
        /// The live item that holds the key.
        existing: MessageId,
    },
}

impl<T> PushError<T> {
    /// The refused item, handed back.
    pub fn into_item(self) -> T {
        match self {
            PushError::Full(t) | PushError::AlreadyExpired(t) | PushError::IdOutOfOrder(t) => t,
            PushError::PriorityOutOfRange { item, .. }
            | PushError::KeyTooLong { item, .. }
            | PushError::DuplicateKey { item, .. } => item,
        }
    }

    /// For [`DuplicateKey`](Self::DuplicateKey): the live item that holds the key.
    pub fn existing(&self) -> Option<MessageId> {
        match self {
            PushError::DuplicateKey { existing, .. } => Some(*existing),
            _ => None,
        }
    }
}

impl<T> fmt::Debug for PushError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PushError::Full(_) => f.write_str("Full(..)"),
            PushError::AlreadyExpired(_) => f.write_str("AlreadyExpired(..)"),
            PushError::IdOutOfOrder(_) => f.write_str("IdOutOfOrder(..)"),
            PushError::PriorityOutOfRange { level, .. } => {
                write!(f, "PriorityOutOfRange {{ level: {level}, .. }}")
            }
            PushError::KeyTooLong { len, .. } => write!(f, "KeyTooLong {{ len: {len}, .. }}"),
            PushError::DuplicateKey { existing, .. } => {
                write!(f, "DuplicateKey {{ existing: {existing:?}, .. }}")
            }
        }
    }
}

impl<T> fmt::Display for PushError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PushError::Full(_) => f.write_str("queue is at capacity; item handed back"),
            PushError::AlreadyExpired(_) => {
                f.write_str("item expiry is not in the future; item handed back")
            }
            PushError::IdOutOfOrder(_) => {
                f.write_str("message id below one already used; item handed back")
            }
            PushError::PriorityOutOfRange { level, .. } => write!(
                f,
                "priority level {level} is above {}; item handed back",
                crate::MAX_PRIORITY
            ),
            PushError::KeyTooLong { len, .. } => write!(
                f,
                "unique key of {len} bytes is longer than {}; item handed back",
                crate::UniqueKey::MAX_LEN
            ),
            PushError::DuplicateKey { existing, .. } => write!(
                f,
                "unique key is held by {existing}, still queued or in flight; item handed back"
            ),
        }
    }
}

impl<T> core::error::Error for PushError<T> {}

/// Why a receipt no longer settles anything. Returned by ack, nack, extend and dead-letter.
///
/// A stale receipt is stale forever: no later event makes it valid again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReceiptError {
    /// The item was delivered to another holder after this lease ended.
    Redelivered(MessageId),
    /// The item was dead-lettered (attempts used up, declared poison, or expired).
    DeadLettered(MessageId),
    /// The item was acked already.
    AlreadyAcked(MessageId),
    /// This holder already handed the item back (nack, release, drop); it waits for its
    /// next delivery.
    Released(MessageId),
    /// The lease ran out. Nobody has the item yet, so an ack or dead-letter with this receipt
    /// is still accepted, but the attempt has already been counted as expired: it can no
    /// longer be extended, nacked or released.
    LeaseExpired(MessageId),
    /// The item was cancelled ([`Queue::cancel`](crate::Queue::cancel),
    /// [`Queue::cancel_leased`](crate::Queue::cancel_leased), or replaced by a push with
    /// [`replace_pending`](crate::PushOptions::replace_pending)): nothing is left to settle.
    Cancelled(MessageId),
    /// The receipt is from another queue, forged, or so old that its slot has since held
    /// other items and its fate is no longer known (it was acked or its dead letter taken).
    Unknown,
}

impl fmt::Display for ReceiptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReceiptError::Redelivered(id) => {
                write!(f, "stale receipt: {id} was delivered to another holder")
            }
            ReceiptError::DeadLettered(id) => write!(f, "stale receipt: {id} was dead-lettered"),
            ReceiptError::AlreadyAcked(id) => write!(f, "stale receipt: {id} was acked already"),
            ReceiptError::Released(id) => {
                write!(f, "stale receipt: {id} was handed back by its holder")
            }
            ReceiptError::LeaseExpired(id) => write!(f, "the lease on {id} has run out"),
            ReceiptError::Cancelled(id) => write!(f, "stale receipt: {id} was cancelled"),
            ReceiptError::Unknown => {
                f.write_str("unknown receipt: from another queue, or its item is long gone")
            }
        }
    }
}

impl core::error::Error for ReceiptError {}

/// A redrive that was refused; the dead letter stays where it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RedriveError {
    /// No dead letter has this id.
    NotFound(MessageId),
    /// The queue is at capacity.
    Full(MessageId),
    /// The item's own deadline has passed; it would only expire again.
    Expired(MessageId),
    /// The dead letter's unique key is held by a live item pushed since: two live items
    /// never share a key. Redrive it once `holder` is acked, dead-lettered or cancelled.
    KeyTaken {
        /// The dead letter.
        id: MessageId,
        /// The live item that holds its key.
        holder: MessageId,
    },
}

impl fmt::Display for RedriveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RedriveError::NotFound(id) => write!(f, "no dead letter {id}"),
            RedriveError::Full(id) => write!(f, "queue is at capacity; {id} stays dead-lettered"),
            RedriveError::Expired(id) => write!(f, "{id} has expired; it stays dead-lettered"),
            RedriveError::KeyTaken { id, holder } => write!(
                f,
                "the unique key of {id} is held by {holder}; it stays dead-lettered"
            ),
        }
    }
}

impl core::error::Error for RedriveError {}

/// A cancel that was refused; nothing changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CancelError {
    /// The item is leased: [`Queue::cancel`](crate::Queue::cancel) leaves it to its holder.
    /// [`Queue::cancel_leased`](crate::Queue::cancel_leased) cancels it anyway.
    InFlight(MessageId),
    /// The item is a dead letter: take it with
    /// [`Queue::take_dead_letter`](crate::Queue::take_dead_letter).
    DeadLettered(MessageId),
    /// No live item has this id: never pushed, or acked, cancelled, or its dead letter
    /// taken.
    NotFound(MessageId),
}

impl fmt::Display for CancelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CancelError::InFlight(id) => write!(f, "{id} is in flight; it was not cancelled"),
            CancelError::DeadLettered(id) => {
                write!(f, "{id} is a dead letter; take it instead of cancelling it")
            }
            CancelError::NotFound(id) => write!(f, "no item {id} is queued"),
        }
    }
}

impl core::error::Error for CancelError {}

/// Why a [`Config`](crate::Config) was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// A zero visibility timeout would make every lease expire as it is handed out.
    ZeroVisibility,
    /// Zero attempts would dead-letter every item unseen.
    ZeroAttempts,
    /// The lease lifetime cap is shorter than the visibility timeout.
    MaxLeaseBelowVisibility {
        /// The configured cap.
        max_lease: Duration,
        /// The configured visibility.
        visibility: Duration,
    },
    /// A capacity of zero accepts nothing.
    ZeroCapacity,
    /// Exponential backoff with a cap below its base delay.
    BackoffCapBelowBase {
        /// The first delay.
        base: Duration,
        /// The cap.
        max: Duration,
    },
    /// Exponential backoff with a factor below 1 would shrink.
    BackoffFactorBelowOne(u32),
    /// Jitter is a percentage of the delay: at most 100.
    JitterAbove100Percent(u8),
    /// A latency advisor's multiplier must be finite and at least 1.
    InvalidMultiplier,
    /// A [`KindPolicy`](crate::KindPolicy) item timeout of zero would time out every
    /// handler as it starts.
    ZeroItemTimeout,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::ZeroVisibility => f.write_str("visibility timeout must be above zero"),
            ConfigError::ZeroAttempts => f.write_str("max attempts must be at least 1"),
            ConfigError::MaxLeaseBelowVisibility {
                max_lease,
                visibility,
            } => write!(
                f,
                "max lease lifetime {max_lease:?} is below the visibility timeout {visibility:?}"
            ),
            ConfigError::ZeroCapacity => f.write_str("capacity must be at least 1"),
            ConfigError::BackoffCapBelowBase { base, max } => {
                write!(f, "backoff cap {max:?} is below its base delay {base:?}")
            }
            ConfigError::BackoffFactorBelowOne(x) => {
                write!(f, "backoff factor {x} must be at least 1")
            }
            ConfigError::JitterAbove100Percent(p) => {
                write!(f, "jitter of {p}% is above 100%")
            }
            ConfigError::InvalidMultiplier => {
                f.write_str("timeout multiplier must be a finite number of at least 1")
            }
            ConfigError::ZeroItemTimeout => f.write_str("item timeout must be above zero"),
        }
    }
}

impl core::error::Error for ConfigError {}
