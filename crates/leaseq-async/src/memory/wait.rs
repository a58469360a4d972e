//! Waiting on a [`MemoryStore`]: its three signals (items to receive, room to push, an
//! empty queue), the counted listener a wait holds, and the wait loop every `poll_*` runs.

use std::task::{Context, Poll};

use event_listener::EventListener;

use super::MemoryStore;
use crate::runtime::Runtime;
use crate::signal::Signal;

/// A wait on a [`MemoryStore`]: a counted listener of one of its signals.
#[derive(Debug, Default)]
pub struct MemoryWaiting(Option<(EventListener, Wait)>);

/// Which signal a [`MemoryWaiting`] listens to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Wait {
    Available,
    Space,
    Emptied,
}

impl<T, R: Runtime> MemoryStore<T, R> {
    /// [`Store::poll_space`](crate::Store::poll_space): ready at once without a capacity;
    /// else when the live items are fewer than it, or the queue closed.
    pub(super) fn poll_space_now(
        &self,
        waiting: &mut MemoryWaiting,
        cx: &mut Context<'_>,
    ) -> Poll<()> {
        let Some(capacity) = self.lock().core.config().capacity() else {
            return Poll::Ready(());
        };
        self.poll_wait(waiting, Wait::Space, cx, || {
            let room = self.lock().core.stats().live() < capacity as u64;
            (room || self.closed()).then_some(())
        })
    }

    /// [`Store::poll_empty`](crate::Store::poll_empty): when nothing is ready, delayed or
    /// in flight, the time applied first.
    pub(super) fn poll_empty_now(
        &self,
        waiting: &mut MemoryWaiting,
        cx: &mut Context<'_>,
    ) -> Poll<()> {
        self.poll_wait(waiting, Wait::Emptied, cx, || {
            let now = self.rt.now();
            let mut st = self.lock();
            st.core.handle_timeout(now);
            st.core.is_empty().then_some(())
        })
    }

    fn signal(&self, wait: Wait) -> &Signal {
        match wait {
            Wait::Available => &self.available,
            Wait::Space => &self.space,
            Wait::Emptied => &self.emptied,
        }
    }

    /// Gives back `waiting`'s listener, if it holds one.
    pub(super) fn unlisten(&self, waiting: &mut MemoryWaiting) {
        if let Some((listener, wait)) = waiting.0.take() {
            self.signal(wait).unlisten(listener);
        }
    }

    /// The wait loop of every `poll_*`: `ready` (checked under the lock) until it holds,
    /// registering a counted listener on `wait`'s signal in between. Listen, then look
    /// again, so that a change in between is not missed.
    pub(super) fn poll_wait<U>(
        &self,
        waiting: &mut MemoryWaiting,
        wait: Wait,
        cx: &mut Context<'_>,
        mut ready: impl FnMut() -> Option<U>,
    ) -> Poll<U> {
        loop {
            if let Some(out) = ready() {
                self.unlisten(waiting);
                return Poll::Ready(out);
            }
            if self.wait_on(waiting, wait, cx) {
                return Poll::Pending;
            }
        }
    }

    /// The waiting half of [`poll_wait`](Self::poll_wait), after a look found nothing:
    /// `true` when `waiting` listens on `wait`'s signal and has not been notified (the
    /// poll is pending); `false` when the caller must look again (a new listener was just
    /// registered, or the one held was notified and given back).
    #[inline]
    pub(super) fn wait_on(
        &self,
        waiting: &mut MemoryWaiting,
        wait: Wait,
        cx: &mut Context<'_>,
    ) -> bool {
        use std::future::Future;
        use std::pin::Pin;
        match &mut waiting.0 {
            Some((listener, w)) if *w == wait => {
                if Pin::new(listener).poll(cx).is_pending() {
                    return true;
                }
                self.unlisten(waiting);
            }
            _ => {
                self.unlisten(waiting);
                waiting.0 = Some((self.signal(wait).listen(), wait));
            }
        }
        false
    }
}
