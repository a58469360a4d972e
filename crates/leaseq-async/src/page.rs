//! [`Page`]: which part of a long listing (items, dead letters) an operator call returns.

use leaseq_core::MessageId;

/// A page of a listing in message-id order: at most `limit` entries with ids after
/// `after`. Start with [`Page::first`], then ask for [`Page::next`] after the last id
/// returned, until a page comes back shorter than its limit.
///
/// ```
/// use leaseq_async::Page;
/// use leaseq_async::core::MessageId;
///
/// let first = Page::first(100);
/// assert_eq!((first.after, first.limit), (None, 100));
/// let next = first.next(MessageId::new(7));
/// assert_eq!(next.after, Some(MessageId::new(7)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Page {
    /// Only entries with ids greater than this one (`None`: from the first).
    pub after: Option<MessageId>,
    /// At most this many entries.
    pub limit: usize,
}

impl Page {
    /// Every entry, in one page (for small queues and tests).
    pub const ALL: Page = Page {
        after: None,
        limit: usize::MAX,
    };

    /// The first `limit` entries.
    pub const fn first(limit: usize) -> Self {
        Page { after: None, limit }
    }

    /// The page after the entry `last` (the last id of this page), of the same size.
    pub const fn next(self, last: MessageId) -> Self {
        Page {
            after: Some(last),
            limit: self.limit,
        }
    }

    /// Whether `id` falls after this page's start.
    pub fn admits(&self, id: MessageId) -> bool {
        self.after.is_none_or(|after| id > after)
    }
}
