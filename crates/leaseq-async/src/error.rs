//! Errors of the async layer.

use std::fmt;
use std::time::Duration;

use leaseq_core::{ConfigError, Failure, MessageId};

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
    /// size (a durable store's `max_item_size` option): nothing was stored, the item is
    /// handed back. The in-memory store holds items, not bytes, and never says this.
    TooLarge {
        /// The item, handed back.
        item: T,
        /// Its encoded size in bytes.
        size: usize,
        /// The queue's maximum, in bytes.
        max: usize,
    },
    /// The store does not offer what the push asks for (the Postgres store has no unique
    /// keys, say).
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
                "the item encodes to {size} bytes, over the queue's maximum of {max}; \
                 item handed back"
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

/// What a pool handler returns on failure: a message, and when (if ever) to try again.
///
/// Any error converts with `?` (as a retryable failure; see the `From` impl); say
/// [`JobError::permanent`] for bad input that will fail again: the item is then
/// dead-lettered at once instead of retried; say [`JobError::retry_after`] when the
/// handler knows when to try again (a rate limit's `Retry-After`, a resource busy until a
/// known time): the item is delivered again after exactly that delay, not the backoff.
///
/// ```
/// use std::time::Duration;
/// use leaseq_async::JobError;
///
/// let e = JobError::retry_after(Duration::from_secs(30), "429 Too Many Requests");
/// assert_eq!(e.retry_delay(), Some(Duration::from_secs(30)));
/// assert!(!e.is_permanent());
/// assert!(JobError::permanent("no such account").is_permanent());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobError {
    message: String,
    retry: JobRetry,
}

/// When a failed job is tried again, in 8 bytes (a `JobError` stays as small as a
/// `String` and a word: it is moved through every handling's result): the exact delay in
/// nanoseconds, or one of two markers above any delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct JobRetry(u64);

impl JobRetry {
    /// After the backoff (the job kind's, else the queue's).
    const BACKOFF: JobRetry = JobRetry(u64::MAX);
    /// Never: dead-lettered now.
    const NEVER: JobRetry = JobRetry(u64::MAX - 1);

    /// After exactly `delay` (at most `u64::MAX - 2` ns, about 584 years).
    fn after(delay: Duration) -> Self {
        JobRetry(u64::try_from(delay.as_nanos()).map_or(u64::MAX - 2, |n| n.min(u64::MAX - 2)))
    }

    /// The exact delay, if one was asked for.
    fn delay(self) -> Option<Duration> {
        (self.0 < u64::MAX - 1).then(|| Duration::from_nanos(self.0))
    }
}

impl JobError {
    /// A failure worth retrying, after the backoff: the job kind's
    /// ([`KindPolicy`](leaseq_core::KindPolicy), when the pool has one), else the queue's.
    pub fn retry(message: impl fmt::Display) -> Self {
        JobError {
            message: message.to_string(),
            retry: JobRetry::BACKOFF,
        }
    }

    /// A failure worth retrying after exactly `delay`, whatever the backoff (and with no
    /// jitter): the item is visible again `delay` after the failure is settled (a delay
    /// beyond 584 years is cut to that). The attempt still counts, so an item at its last
    /// attempt (the queue's, or its kind's) is dead-lettered instead; an item past its own
    /// expiry is dead-lettered as expired.
    pub fn retry_after(delay: Duration, message: impl fmt::Display) -> Self {
        JobError {
            message: message.to_string(),
            retry: JobRetry::after(delay),
        }
    }

    /// A failure that will repeat: dead-letter the item now, with reason
    /// [`Reason::Rejected`](leaseq_core::Reason::Rejected).
    pub fn permanent(message: impl fmt::Display) -> Self {
        JobError {
            message: message.to_string(),
            retry: JobRetry::NEVER,
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether retrying is pointless.
    pub fn is_permanent(&self) -> bool {
        self.retry == JobRetry::NEVER
    }

    /// The exact delay asked for with [`retry_after`](Self::retry_after), if any.
    pub fn retry_delay(&self) -> Option<Duration> {
        self.retry.delay()
    }

    /// The message, by value.
    pub(crate) fn into_message(self) -> String {
        self.message
    }

    /// As a boxed `Error`, for code that propagates errors that way.
    pub fn into_error(self) -> Box<dyn std::error::Error + Send + Sync> {
        self.message.into()
    }

    /// The core's [`Failure`] for this error: [`Reason::Nacked`](leaseq_core::Reason::Nacked)
    /// with the message, retried after the backoff or the exact delay asked for; a
    /// permanent one is [`Failure::permanent`].
    pub(crate) fn into_failure(self) -> Failure {
        if self.is_permanent() {
            return Failure::permanent(self.message);
        }
        match self.retry.delay() {
            Some(delay) => Failure::error(self.message).retry_after(delay),
            None => Failure::error(self.message),
        }
    }
}

/// `?` on anything that boxes into an error: every `Error` type, `Box<dyn Error + Send +
/// Sync>`, `anyhow::Error`, `String` and `&str`. A retryable failure whose message is the
/// error and its chain of causes ("outer: inner: root").
///
/// `JobError` is not itself an `Error`, like `anyhow::Error` and for the same reason (that
/// would clash with this conversion); [`into_error`](JobError::into_error) makes one.
impl<E: Into<Box<dyn std::error::Error + Send + Sync>>> From<E> for JobError {
    fn from(e: E) -> Self {
        let e: Box<dyn std::error::Error + Send + Sync> = e.into();
        let mut message = e.to_string();
        let mut cause = e.source();
        while let Some(c) = cause {
            message.push_str(": ");
            message.push_str(&c.to_string());
            cause = c.source();
        }
        JobError::retry(message)
    }
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::JobError;

    /// A delay is kept to the nanosecond, zero included; one beyond `u64` nanoseconds is
    /// cut, never taken for "backoff" or "never".
    #[test]
    fn a_retry_delay_is_kept_exactly_and_never_becomes_a_marker() {
        for delay in [
            Duration::ZERO,
            Duration::new(1, 234_567_891),
            Duration::from_secs(86_400),
        ] {
            let e = JobError::retry_after(delay, "later");
            assert_eq!((e.retry_delay(), e.is_permanent()), (Some(delay), false));
        }
        let huge = JobError::retry_after(Duration::MAX, "much later");
        assert_eq!(huge.retry_delay(), Some(Duration::from_nanos(u64::MAX - 2)));
        assert!(!huge.is_permanent());
        assert_eq!(JobError::retry("x").retry_delay(), None);
        assert_eq!(JobError::permanent("x").retry_delay(), None);
        assert!(JobError::permanent("x").is_permanent());
        let word = std::mem::size_of::<u64>();
        assert_eq!(
            std::mem::size_of::<JobError>(),
            std::mem::size_of::<String>() + word
        );
    }
}
