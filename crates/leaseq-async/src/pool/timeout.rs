//! How long one item may take.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// The time limit put around each item's handling (never around the worker).
///
/// When it fires, the handler's future is dropped and the item goes back through the queue's
/// policy at once (backoff, attempts, dead letter with reason "timed out"), rather than
/// waiting for its lease to expire. Whatever the policy says, an item's limit never runs past
/// the item's own expiry.
pub enum ItemTimeout<T> {
    /// No limit (the lease deadline and the watchdog are the only guards).
    None,
    /// The same limit for every item.
    Fixed(Duration),
    /// A limit chosen per item (for example by its type).
    PerItem(Arc<dyn Fn(&T) -> Duration + Send + Sync>),
    /// The latency advisor's suggestion for the item's type (`max(100 ms, 3 × p99)`), from
    /// every worker's runs, once `min_samples` runs of that type have finished; `initial`
    /// before that. Each worker takes a fresh look at the pool's runs every 256 of its items
    /// or 10 ms, whichever comes first, and uses that look's limits in between, so the
    /// switch from `initial` and later changes of the suggestion reach it that much later.
    Advised {
        /// The limit until enough runs were measured.
        initial: Duration,
        /// Finished runs of a type before its suggestion is used.
        min_samples: u64,
    },
}

impl<T> ItemTimeout<T> {
    /// A limit chosen per item by `f`.
    pub fn per_item(f: impl Fn(&T) -> Duration + Send + Sync + 'static) -> Self {
        ItemTimeout::PerItem(Arc::new(f))
    }
}

impl<T> Clone for ItemTimeout<T> {
    fn clone(&self) -> Self {
        match self {
            ItemTimeout::None => ItemTimeout::None,
            ItemTimeout::Fixed(d) => ItemTimeout::Fixed(*d),
            ItemTimeout::PerItem(f) => ItemTimeout::PerItem(f.clone()),
            ItemTimeout::Advised {
                initial,
                min_samples,
            } => ItemTimeout::Advised {
                initial: *initial,
                min_samples: *min_samples,
            },
        }
    }
}

impl<T> fmt::Debug for ItemTimeout<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ItemTimeout::None => f.write_str("None"),
            ItemTimeout::Fixed(d) => write!(f, "Fixed({d:?})"),
            ItemTimeout::PerItem(_) => f.write_str("PerItem(..)"),
            ItemTimeout::Advised {
                initial,
                min_samples,
            } => write!(
                f,
                "Advised {{ initial: {initial:?}, min_samples: {min_samples} }}"
            ),
        }
    }
}

/// `fut`'s output, or `None` if `limit` (the item's timer) fires first: `fut` polled first,
/// then the timer, as `select(fut, limit)` would, without its `Either` (once per item).
pub(crate) async fn within<F, L>(fut: F, limit: L) -> Option<F::Output>
where
    F: std::future::Future + Unpin,
    L: std::future::Future + Unpin,
{
    let (mut fut, mut limit) = (fut, limit);
    std::future::poll_fn(move |cx| {
        if let std::task::Poll::Ready(out) = std::pin::Pin::new(&mut fut).poll(cx) {
            return std::task::Poll::Ready(Some(out));
        }
        std::pin::Pin::new(&mut limit).poll(cx).map(|_| None)
    })
    .await
}
