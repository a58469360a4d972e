//! A wake-up whose hot-path notification costs one atomic load when nobody listens, and a
//! fence and a load when a listener is already woken.

use std::sync::atomic::{fence, AtomicUsize, Ordering};

use event_listener::{Event, EventListener};

/// An [`Event`] whose hot-path notifications cost one atomic load when nobody listens.
///
/// `event_listener`'s `notify` takes the event's internal lock and issues a `SeqCst` fence
/// even with no listener; pushes, receives and acks notify on every item, nearly always
/// with nobody waiting. So the listeners taken through [`listen`](Self::listen) are counted,
/// and [`notify`](Self::notify) skips the event when the count is zero.
///
/// That is sound for conditions that change and are checked under the queue lock: a waiter
/// counts itself and registers its listener *before* it re-checks the condition under the
/// lock, and a notifier changes the condition under the lock and reads the count *after*.
/// If the waiter's check came after the change, it sees the change; if before, its count
/// and registration happen before the notifier's read (through the lock), so the notifier
/// sees it and wakes it. A condition changed outside the lock (the closed flag, the handle
/// count) is announced with [`notify_always`](Self::notify_always).
///
/// `notify(1)` also skips the event when one of its listeners is already notified and has not
/// yet taken the notification ([`Event::is_notified`]): the event's own `notify(1)` would do
/// nothing then, after taking its lock (about 90 instructions, once per push and once per
/// receive's hand-over on a busy queue, nearly always with a wake-up already under way).
/// Sound for the same conditions, by the fences on both sides: the notifier changes the
/// condition, issues a `SeqCst` fence, then reads the event's notified count; a woken
/// listener's notification is taken (its count lowered) inside the event, then
/// [`unlisten`](Self::unlisten) issues a `SeqCst` fence before the waiter re-checks the
/// condition. If the notifier read the count from before that lowering, its fence precedes
/// the waiter's in the single total order of `SeqCst` operations, so the waiter's re-check
/// sees the change; a listener registered after the read is inserted, then fenced by
/// [`listen`](Self::listen), before its owner re-checks, likewise. A woken listener that is
/// dropped unused passes its notification on inside the event (to a listener in the list, or,
/// with none, to nobody: then every waiter still to register re-checks as above).
#[derive(Debug, Default)]
pub(crate) struct Signal {
    event: Event,
    /// Listeners taken through `listen` and not yet given back with `unlisten`.
    listeners: AtomicUsize,
}

impl Signal {
    /// A listener, counted until [`unlisten`](Self::unlisten). Re-check the condition (under
    /// the queue lock) after this and before waiting.
    pub(crate) fn listen(&self) -> EventListener {
        self.listeners.fetch_add(1, Ordering::SeqCst);
        let listener = self.event.listen();
        // Orders the registration (inside the event) before the re-check that follows: see
        // the type's documentation (`event_listener` 5.4 fences no more after inserting).
        fence(Ordering::SeqCst);
        listener
    }

    /// Gives back a listener taken with [`listen`](Self::listen) (notified or not).
    pub(crate) fn unlisten(&self, listener: EventListener) {
        drop(listener);
        self.listeners.fetch_sub(1, Ordering::SeqCst);
        // Orders the notification taken (inside the event) before the re-check that follows:
        // see the type's documentation.
        fence(Ordering::SeqCst);
    }

    /// Whether any listener is counted: when not, [`notify`](Self::notify) does nothing
    /// (the same read, for a caller that skips its call).
    #[inline]
    pub(crate) fn is_listened(&self) -> bool {
        self.listeners.load(Ordering::SeqCst) != 0
    }

    /// Notifies up to `n` listeners, if any listen. Only for a condition changed under the
    /// queue lock, called after the change.
    #[inline]
    pub(crate) fn notify(&self, n: usize) {
        if self.is_listened() {
            if n == 1 {
                fence(Ordering::SeqCst);
                if self.event.is_notified() {
                    // A woken listener will look (see the type's documentation).
                    return;
                }
            }
            self.event.notify(n);
        }
    }

    /// Notifies up to `n` listeners unconditionally: for conditions changed outside the lock.
    pub(crate) fn notify_always(&self, n: usize) {
        self.event.notify(n);
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};

    use super::Signal;

    /// A waker that counts its wake-ups.
    #[derive(Default)]
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn poll(listener: &mut event_listener::EventListener, waker: &Waker) -> Poll<()> {
        Pin::new(listener).poll(&mut Context::from_waker(waker))
    }

    /// The skip's premise: while one listener holds an untaken notification, `notify(1)`
    /// does nothing more; the notification reaches the other listener when the first is
    /// given back unused, and a `notify(1)` after the first took its own wakes the other.
    #[test]
    fn a_skipped_notification_is_not_lost() {
        let signal = Signal::default();
        let (a_count, b_count) = (Arc::new(Count::default()), Arc::new(Count::default()));
        let (a_waker, b_waker) = (Waker::from(a_count.clone()), Waker::from(b_count.clone()));
        let mut a = signal.listen();
        let mut b = signal.listen();
        assert!(poll(&mut a, &a_waker).is_pending());
        assert!(poll(&mut b, &b_waker).is_pending());

        signal.notify(1);
        signal.notify(1);
        assert_eq!(
            a_count.0.load(Ordering::SeqCst),
            1,
            "the first listener is woken"
        );
        assert_eq!(
            b_count.0.load(Ordering::SeqCst),
            0,
            "the second notify is skipped"
        );

        // Given back unused: its notification passes to the other listener.
        signal.unlisten(a);
        assert_eq!(b_count.0.load(Ordering::SeqCst), 1);
        assert!(poll(&mut b, &b_waker).is_ready());
        signal.unlisten(b);

        // Taken, then a new notify wakes the next listener.
        let mut c = signal.listen();
        let mut d = signal.listen();
        let (c_count, d_count) = (Arc::new(Count::default()), Arc::new(Count::default()));
        let (c_waker, d_waker) = (Waker::from(c_count.clone()), Waker::from(d_count.clone()));
        assert!(poll(&mut c, &c_waker).is_pending());
        assert!(poll(&mut d, &d_waker).is_pending());
        signal.notify(1);
        assert!(poll(&mut c, &c_waker).is_ready());
        signal.unlisten(c);
        signal.notify(1);
        assert_eq!(
            d_count.0.load(Ordering::SeqCst),
            1,
            "the next listener is woken"
        );
        assert!(poll(&mut d, &d_waker).is_ready());
        signal.unlisten(d);
        assert_eq!(signal.listeners.load(Ordering::SeqCst), 0);
    }
}
