//! Arguments and results of push, ack, nack and extend.

use alloc::string::String;
use core::time::Duration;

use crate::event::Reason;
use crate::id::MessageId;
use crate::key::UniqueKey;
use crate::time::Timestamp;

/// The number of priority levels: `0..PRIORITY_LEVELS`.
pub const PRIORITY_LEVELS: usize = 8;

/// The highest priority level. Level 0, the default, is the lowest; a higher level is
/// delivered first (see the crate docs, "Order").
pub const MAX_PRIORITY: u8 = (PRIORITY_LEVELS - 1) as u8;

/// Options for [`Queue::push_with`](crate::Queue::push_with).
///
/// ```
/// use core::time::Duration;
/// use leaseq_core::PushOptions;
///
/// let o = PushOptions::new()
///     .delay(Duration::from_secs(5))
///     .priority(6)
///     .key("invoice:42")
///     .replace_pending();
/// assert_eq!((o.priority, o.replace_pending), (6, true));
/// assert_eq!(o.key_bytes(), Some(&b"invoice:42"[..]));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PushOptions {
    /// Invisible until `now + delay`.
    pub delay: Duration,
    /// After this instant the item is never delivered again: it goes to the dead letters with
    /// [`Reason::Expired`], and no lease outlives it.
    pub expires_at: Option<Timestamp>,
    /// The priority level, `0..=`[`MAX_PRIORITY`]; 0 (the default) is the lowest. A push
    /// with a level above [`MAX_PRIORITY`] is refused with
    /// [`PushError::PriorityOutOfRange`](crate::PushError::PriorityOutOfRange).
    pub priority: u8,
    /// With a key: if the item holding it is ready or delayed, replace that item rather
    /// than refuse the push (see [`replace_pending`](Self::replace_pending)).
    pub replace_pending: bool,
    /// The caller waits for room and pushes again when the queue is full: a
    /// [`PushError::Full`](crate::PushError::Full) refusal is not counted in
    /// [`Stats::rejected`](crate::Stats::rejected) (see [`waits_for_room`](Self::waits_for_room)).
    pub waits_for_room: bool,
    key: KeyOption,
}

/// The key of a push, as given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum KeyOption {
    #[default]
    None,
    Key(UniqueKey),
    /// Longer than [`UniqueKey::MAX_LEN`]: the push is refused. The length given.
    TooLong(usize),
}

impl PushOptions {
    /// Visible at once, never expires, level 0, no key.
    pub const fn new() -> Self {
        PushOptions {
            delay: Duration::ZERO,
            expires_at: None,
            priority: 0,
            replace_pending: false,
            waits_for_room: false,
            key: KeyOption::None,
        }
    }
    /// Invisible for `delay`.
    pub const fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
    /// Useless after `at`.
    pub const fn expires_at(mut self, at: Timestamp) -> Self {
        self.expires_at = Some(at);
        self
    }
    /// Delivered at priority `level`: `0..=`[`MAX_PRIORITY`], higher first. Checked at push:
    /// a level out of range hands the item back with
    /// [`PushError::PriorityOutOfRange`](crate::PushError::PriorityOutOfRange).
    pub const fn priority(mut self, level: u8) -> Self {
        self.priority = level;
        self
    }
    /// A unique key of at most [`UniqueKey::MAX_LEN`] bytes. While an item pushed with the
    /// same key is ready, delayed or in flight, the push is refused with
    /// [`PushError::DuplicateKey`](crate::PushError::DuplicateKey), which names that item.
    /// Once it is acked, dead-lettered or cancelled the key is free again. A longer key is
    /// refused at push with [`PushError::KeyTooLong`](crate::PushError::KeyTooLong).
    pub fn key(mut self, key: impl AsRef<[u8]>) -> Self {
        let bytes = key.as_ref();
        self.key = match UniqueKey::new(bytes) {
            Some(k) => KeyOption::Key(k),
            None => KeyOption::TooLong(bytes.len()),
        };
        self
    }
    /// With a [`key`](Self::key): if the item holding the key is **ready or delayed**, it is
    /// removed (counted in [`Stats::cancelled`](crate::Stats::cancelled) and
    /// [`Stats::replaced`](crate::Stats::replaced), reported as
    /// [`Event::Replaced`](crate::Event::Replaced)) and this push goes in as a new item with
    /// a new id and its own delay, expiry and level. An item **in flight** is never replaced:
    /// the push is refused with [`PushError::DuplicateKey`](crate::PushError::DuplicateKey)
    /// as without this option. Without a key it does nothing.
    pub const fn replace_pending(mut self) -> Self {
        self.replace_pending = true;
        self
    }
    /// The caller waits for room when the queue is full and pushes again (an awaited push
    /// of the async layer does): refused as [`Full`](crate::PushError::Full), the push is
    /// not counted in [`Stats::rejected`](crate::Stats::rejected), which counts refusals
    /// returned to whoever asked. Every other refusal is counted as without it.
    pub const fn waits_for_room(mut self) -> Self {
        self.waits_for_room = true;
        self
    }
    /// The key's bytes, if a key of at most [`UniqueKey::MAX_LEN`] bytes was given.
    pub fn key_bytes(&self) -> Option<&[u8]> {
        match &self.key {
            KeyOption::Key(k) => Some(k.as_bytes()),
            _ => None,
        }
    }
    /// Whether a unique key was given, of any length (a key too long for
    /// [`key_bytes`](Self::key_bytes) included: the push will be refused, not made keyless).
    pub const fn has_key(&self) -> bool {
        !matches!(self.key, KeyOption::None)
    }
    pub(crate) const fn key_option(&self) -> &KeyOption {
        &self.key
    }

    /// Whether these options are [`new`](Self::new)'s as far as a push goes (visible at
    /// once, no expiry, level 0, no key): such a push takes `push`'s steps. Constant-folded
    /// where the options are built in the caller.
    #[inline]
    pub(crate) fn is_plain(&self) -> bool {
        self.delay.is_zero()
            && self.expires_at.is_none()
            && self.priority == 0
            && matches!(self.key, KeyOption::None)
    }
}

/// When a failed item is visible again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Retry {
    /// After the queue's backoff policy (with jitter, if configured).
    Backoff,
    /// After exactly this delay.
    After(Duration),
    /// Never: the item is dead-lettered now with the failure's reason, whatever attempts it
    /// has left (an expired item still with [`Reason::Expired`]). A handler saying "do not
    /// retry" sends [`Failure::permanent`].
    Never,
}

/// How an attempt failed, for [`Queue::nack`](crate::Queue::nack).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Failure {
    /// Recorded as the dead-letter reason if this was the last attempt.
    pub reason: Reason,
    /// Recorded as the item's last error (kept if `None`).
    pub error: Option<String>,
    /// When to deliver again.
    pub retry: Retry,
}

impl Failure {
    /// A handler error: [`Reason::Nacked`], backoff policy.
    pub fn error(error: impl Into<String>) -> Self {
        Failure {
            reason: Reason::Nacked,
            error: Some(error.into()),
            retry: Retry::Backoff,
        }
    }
    /// The holder's item timeout fired: [`Reason::TimedOut`], backoff policy.
    pub fn timed_out() -> Self {
        Failure {
            reason: Reason::TimedOut,
            error: None,
            retry: Retry::Backoff,
        }
    }
    /// The holder's handler panicked with `message`: [`Reason::Panicked`], backoff policy.
    pub fn panicked(message: impl Into<String>) -> Self {
        Failure {
            reason: Reason::Panicked,
            error: Some(message.into()),
            retry: Retry::Backoff,
        }
    }
    /// The holder was dropped unsettled: [`Reason::Dropped`], backoff policy.
    pub fn dropped() -> Self {
        Failure {
            reason: Reason::Dropped,
            error: None,
            retry: Retry::Backoff,
        }
    }
    /// Any reason, no error, backoff policy.
    pub const fn with_reason(reason: Reason) -> Self {
        Failure {
            reason,
            error: None,
            retry: Retry::Backoff,
        }
    }
    /// Replaces the error.
    pub fn and_error(mut self, error: impl Into<String>) -> Self {
        self.error = Some(error.into());
        self
    }
    /// Deliver again after exactly `delay` instead of the backoff.
    pub fn retry_after(mut self, delay: Duration) -> Self {
        self.retry = Retry::After(delay);
        self
    }
}

/// An accepted ack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Acked {
    /// Before the deadline.
    OnTime,
    /// After the deadline, but nobody had leased the item again: a duplicate run saved.
    LateUnclaimed {
        /// How long after the deadline.
        late_by: Duration,
    },
}

/// What became of a handed-back item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Nacked {
    /// It will be delivered again.
    Retrying {
        /// From when.
        visible_at: Timestamp,
        /// Deliveries so far.
        attempts: u32,
    },
    /// That was its last attempt (or it has expired): it is in the dead letters.
    DeadLettered {
        /// Deliveries it had.
        attempts: u32,
    },
}

/// The result of [`Queue::extend`](crate::Queue::extend).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Extended {
    /// The lease now ends at `deadline`.
    Until {
        /// The new deadline.
        deadline: Timestamp,
        /// Whether the max lease lifetime or the item's expiry cut it short.
        capped: bool,
    },
    /// Visibility zero: the item was handed back.
    Released(Nacked),
}

/// The result of [`Queue::push_take`](crate::Queue::push_take) and
/// [`Queue::push_with_id_take`](crate::Queue::push_with_id_take).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Pushed<T> {
    /// The new item's id.
    pub id: MessageId,
    /// The pending item this push replaced ([`PushOptions::replace_pending`]): its id and the
    /// item itself, handed out so that its `Drop` runs where the caller chooses.
    pub replaced: Option<(MessageId, T)>,
}
