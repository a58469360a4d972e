//! Which items a list or a bulk operator call takes: [`DeadQuery`] (dead letters, by
//! reason and job kind) and [`LiveQuery`] (waiting items, by job kind and id range).

use leaseq_core::{MessageId, Reason};

use crate::dead_filter::DeadFilter;
use crate::router::kind_of;
use crate::stored::{StoredItem, StoredState};

/// Which dead letters a list or a bulk action takes: all by default, or those of one
/// [`Reason`], or one job kind (a router envelope's), or both.
///
/// ```
/// use leaseq_async::operator::DeadQuery;
/// use leaseq_async::Reason;
///
/// let q = DeadQuery::all().reason(Reason::Nacked).kind("email");
/// assert_eq!(q.filter().wanted_kind(), Some("email"));
/// assert!(!q.is_all());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeadQuery {
    /// Only those dead-lettered for this reason.
    pub reason: Option<Reason>,
    /// Only those whose item is a job of this kind.
    pub kind: Option<String>,
}

impl DeadQuery {
    /// Every dead letter.
    pub fn all() -> DeadQuery {
        DeadQuery::default()
    }

    /// Only those dead-lettered for `reason`.
    #[must_use]
    pub fn reason(mut self, reason: Reason) -> DeadQuery {
        self.reason = Some(reason);
        self
    }

    /// Only those whose item is a job of kind `kind`.
    #[must_use]
    pub fn kind(mut self, kind: impl Into<String>) -> DeadQuery {
        self.kind = Some(kind.into());
        self
    }

    /// Whether it takes every dead letter.
    pub fn is_all(&self) -> bool {
        self.reason.is_none() && self.kind.is_none()
    }

    /// The stores' filter for it.
    pub fn filter(&self) -> DeadFilter<Vec<u8>> {
        let mut f = DeadFilter::all();
        if let Some(r) = self.reason {
            f = f.reason(r);
        }
        if let Some(k) = &self.kind {
            f = f.kind(k);
        }
        f
    }
}

/// Which live items a bulk cancel ([`Operator::cancel`](super::Operator::cancel)) takes:
/// the waiting ones (ready or delayed; an item in flight is left to its holder, as
/// [`LeaseQueue::cancel`](crate::LeaseQueue::cancel) leaves it), all by default, or those
/// of one job kind (a router envelope's), or of ids in a range (both ends included), or
/// both.
///
/// ```
/// use leaseq_async::operator::LiveQuery;
/// use leaseq_async::{MessageId, StoredItem, StoredState};
///
/// let q = LiveQuery::all().kind("email").ids(MessageId::new(2), MessageId::new(9));
/// let mut item = StoredItem::new(MessageId::new(5), StoredState::Ready, 8);
/// item.payload = Some(b"\x05email{}".to_vec());
/// assert!(q.admits(&item));
/// item.state = StoredState::InFlight;
/// assert!(!q.admits(&item), "in flight: left to its holder");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LiveQuery {
    /// Only those whose item is a job of this kind.
    pub kind: Option<String>,
    /// Only ids from this one on.
    pub min_id: Option<MessageId>,
    /// Only ids up to this one.
    pub max_id: Option<MessageId>,
}

impl LiveQuery {
    /// Every waiting item.
    pub fn all() -> LiveQuery {
        LiveQuery::default()
    }

    /// Only those whose item is a job of kind `kind`.
    #[must_use]
    pub fn kind(mut self, kind: impl Into<String>) -> LiveQuery {
        self.kind = Some(kind.into());
        self
    }

    /// Only ids from `min` to `max`, both included.
    #[must_use]
    pub fn ids(mut self, min: MessageId, max: MessageId) -> LiveQuery {
        self.min_id = Some(min);
        self.max_id = Some(max);
        self
    }

    /// Whether it takes every waiting item.
    pub fn is_all(&self) -> bool {
        self.kind.is_none() && self.min_id.is_none() && self.max_id.is_none()
    }

    /// Whether `item` is waiting (ready or delayed) and taken by the kind and the range (an
    /// item whose payload was not read has no kind).
    pub fn admits(&self, item: &StoredItem) -> bool {
        matches!(item.state, StoredState::Ready | StoredState::Delayed)
            && self.min_id.is_none_or(|min| item.id >= min)
            && self.max_id.is_none_or(|max| item.id <= max)
            && self
                .kind
                .as_deref()
                .is_none_or(|want| item.payload.as_deref().and_then(kind_of) == Some(want))
    }

    /// Whether an id above `id` can still be taken (the range has no end below it).
    pub fn reaches_past(&self, id: MessageId) -> bool {
        self.max_id.is_none_or(|max| id < max)
    }
}
