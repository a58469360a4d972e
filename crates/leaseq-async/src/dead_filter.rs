//! Which dead letters a bulk operator call takes ([`DeadFilter`]: all, by reason, by job
//! kind) and how an item names its kind ([`ItemKind`]).
//!
//! A reason filter is applied by the store where the dead letters are: under the memory
//! store's lock, in SQL on Postgres (`WHERE reason = ..`). A kind is the job router's
//! envelope kind: on the memory and SQLite stores (whose items are `T` in memory) the
//! item's [`ItemKind`] names it, outside any lock; on Postgres it is read from the stored
//! bytes in SQL (byte 0 the kind's length `L`, bytes `1..=L` the kind), which an
//! [`ItemKind`] impl must agree with: an item's kind is the one its codec's bytes begin with.

use leaseq_core::{DeadLetter, Reason};

/// How an item names its job kind, for [`DeadFilter::kind`]: the job router's envelope
/// (and raw bytes in the envelope format, `Vec<u8>` with the `router` feature) implement
/// it.
///
/// An implementation must agree with the item's encoded form: a durable store reads the
/// kind from the stored bytes (see `router::kind_of`, feature `router`), so `item_kind`
/// answers what those bytes begin with, or `None` for an item with no kind.
pub trait ItemKind {
    /// The item's job kind, if it has one.
    fn item_kind(&self) -> Option<&str>;
}

/// Which dead letters a bulk call ([`redrive_matching`](crate::LeaseQueue::redrive_matching),
/// [`purge_dead_matching`](crate::LeaseQueue::purge_dead_matching)) takes: every one
/// ([`all`](Self::all)), or those of one [`Reason`] and/or one job kind. Both given: those
/// of both.
///
/// ```
/// use leaseq_async::{DeadFilter, ItemKind, Reason};
///
/// struct Job { kind: &'static str }
/// impl ItemKind for Job {
///     fn item_kind(&self) -> Option<&str> { Some(self.kind) }
/// }
///
/// let timed_out_emails = DeadFilter::<Job>::all().reason(Reason::TimedOut).kind("email");
/// assert_eq!(timed_out_emails.wanted_reason(), Some(Reason::TimedOut));
/// assert_eq!(timed_out_emails.wanted_kind(), Some("email"));
/// ```
pub struct DeadFilter<T> {
    reason: Option<Reason>,
    kind: Option<(Box<str>, KindOf<T>)>,
}

/// How a filter names an item's kind: its [`ItemKind`] impl.
type KindOf<T> = fn(&T) -> Option<&str>;

impl<T> DeadFilter<T> {
    /// Every dead letter.
    pub fn all() -> Self {
        DeadFilter {
            reason: None,
            kind: None,
        }
    }

    /// Only the dead letters buried for `reason`.
    #[must_use]
    pub fn reason(mut self, reason: Reason) -> Self {
        self.reason = Some(reason);
        self
    }

    /// Only the dead letters whose item is of job kind `kind` (as its [`ItemKind`] says;
    /// an item with no kind never matches).
    #[must_use]
    pub fn kind(mut self, kind: &str) -> Self
    where
        T: ItemKind,
    {
        self.kind = Some((kind.into(), T::item_kind));
        self
    }

    /// Only the dead letters whose item `of` says is of job kind `kind`: for a holder of
    /// items whose kind is not their [`ItemKind`] (the operator of this process's queues,
    /// which names a kind from an item's bytes).
    #[cfg(feature = "operator")]
    #[must_use]
    pub(crate) fn kind_by(mut self, kind: &str, of: KindOf<T>) -> Self {
        self.kind = Some((kind.into(), of));
        self
    }

    /// The reason asked for, if any.
    pub fn wanted_reason(&self) -> Option<Reason> {
        self.reason
    }

    /// The job kind asked for, if any.
    pub fn wanted_kind(&self) -> Option<&str> {
        self.kind.as_ref().map(|(k, _)| &**k)
    }

    /// Whether it takes no dead letter whatever the store holds: a kind no envelope can
    /// carry (empty, or over 255 bytes).
    pub fn matches_none(&self) -> bool {
        self.wanted_kind()
            .is_some_and(|k| k.is_empty() || k.len() > usize::from(u8::MAX))
    }

    /// The bytes an envelope of the wanted kind begins with (the kind's length, then the
    /// kind), for a store that filters stored bytes (`None`: no kind asked for, or one no
    /// envelope can carry, see [`matches_none`](Self::matches_none)).
    pub fn kind_head(&self) -> Option<Vec<u8>> {
        let kind = self.wanted_kind()?;
        let len = u8::try_from(kind.len()).ok().filter(|&n| n > 0)?;
        Some([&[len][..], kind.as_bytes()].concat())
    }

    /// Whether it takes every dead letter.
    pub fn is_all(&self) -> bool {
        self.reason.is_none() && self.kind.is_none()
    }

    /// Whether it takes a dead letter of `reason` (the kind not looked at).
    pub fn admits_reason(&self, reason: Reason) -> bool {
        self.reason.is_none_or(|r| r == reason)
    }

    /// Whether it takes `item` by its kind (the reason not looked at).
    pub fn admits_item(&self, item: &T) -> bool {
        self.kind
            .as_ref()
            .is_none_or(|(kind, of)| of(item) == Some(&**kind))
    }

    /// Whether it takes `letter`.
    pub fn admits(&self, letter: &DeadLetter<T>) -> bool {
        self.admits_reason(letter.reason) && self.admits_item(&letter.item)
    }
}

impl<T> Clone for DeadFilter<T> {
    fn clone(&self) -> Self {
        DeadFilter {
            reason: self.reason,
            kind: self.kind.clone(),
        }
    }
}

impl<T> Default for DeadFilter<T> {
    fn default() -> Self {
        Self::all()
    }
}

impl<T> std::fmt::Debug for DeadFilter<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeadFilter")
            .field("reason", &self.reason)
            .field("kind", &self.wanted_kind())
            .finish()
    }
}
