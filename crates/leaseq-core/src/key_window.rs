//! How long a unique key stays held: the windows of
//! [`Queue::push_windowed`](crate::Queue::push_windowed).

use core::time::Duration;

/// How long a push's unique key ([`PushOptions::key`](crate::PushOptions::key)) is held
/// ([`Queue::push_windowed`](crate::Queue::push_windowed); a plain keyed push holds it
/// [`Live`](Self::Live)):
/// while a push with the same key is refused with
/// [`PushError::DuplicateKey`](crate::PushError::DuplicateKey) (or, with
/// [`replace_pending`](crate::PushOptions::replace_pending), replaces the holder if it is
/// ready or delayed).
///
/// Every window is measured in the queue's time, which never goes back: a driver's clock
/// that steps back never frees a key early.
///
/// | Window | Held | BullMQ deduplication | River / Oban |
/// |---|---|---|---|
/// | [`Live`](Self::Live) (default) | while ready, delayed or in flight | simple mode | `ByState` (all live states) |
/// | [`Queued`](Self::Queued) | while ready or delayed | — | `ByState` (available, scheduled, retryable) |
/// | [`Period`](Self::Period) | from the push for the period, whatever the item does | throttle mode (`ttl`) | `ByPeriod` / Oban `period` |
/// | [`LiveThen`](Self::LiveThen) | while live, and for the period after it leaves | — | `ByState` with completed, bounded |
/// | `Period` + `replace_pending` | as `Period`; a push replaces a waiting holder and restarts the window | debounce mode (`extend` and `replace`) | — |
///
/// **Debounce.** BullMQ's debounce replaces the pending job's data and delay on each push
/// within the window. Here the same is `Period(d)` with
/// [`replace_pending`](crate::PushOptions::replace_pending): a push while the holder is
/// ready or delayed removes it and goes in as a new item (new id, its own data, delay,
/// expiry and level), whose window starts at its own push. Unlike BullMQ, a push while the
/// holder is in flight, or after it finished within its window, is refused (there is
/// nothing waiting to replace); the refusal names the holder.
///
/// **A redrive** puts a dead letter back holding its key while it is live, as
/// [`Live`](Self::Live): its window is not kept.
///
/// ```
/// use core::time::Duration;
/// use leaseq_core::{Config, KeyWindow, PushError, PushOptions, Queue, Timestamp};
///
/// let mut q = Queue::new(Config::new(Duration::from_secs(30))).unwrap();
/// let t0 = Timestamp::ZERO;
/// let minute = Duration::from_secs(60);
/// let throttle = KeyWindow::Period(minute);
/// let key = PushOptions::new().key("report:7");
/// let first = q.push_windowed("a", t0, key, throttle).unwrap();
/// let lease = q.receive(t0).unwrap();
/// q.ack(lease.receipt, t0).unwrap();
/// // Done, but the key is held for the minute after the push.
/// let again = q.push_windowed("b", t0.saturating_add(Duration::from_secs(59)), key, throttle);
/// assert!(matches!(again, Err(PushError::DuplicateKey { existing, .. }) if existing == first));
/// assert!(q.push_windowed("c", t0.saturating_add(minute), key, throttle).is_ok());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KeyWindow {
    /// While the item is ready, delayed or in flight; free once it is acked,
    /// dead-lettered, cancelled or expired.
    #[default]
    Live,
    /// While the item is ready or delayed (a retry waiting included). Once it is leased, a
    /// push with the key goes in and takes the key for good (the running item no longer
    /// holds it, even if it comes back).
    Queued,
    /// For this long after the push, whatever becomes of the item: after it finished too,
    /// and once the period is over a push goes in even if the item is still live (it then
    /// no longer holds the key).
    Period(Duration),
    /// While the item is live, and for this long after it leaves (acked, dead-lettered,
    /// cancelled or expired).
    LiveThen(Duration),
}
