//! Whether the store is still open: `closed` is set once by `Store::close` (`seam.rs`),
//! `stopped` once when the last store handle is dropped (`store.rs`); every job reads both
//! (a closed store takes no new receive or push; a stopped one's jobs finish what was queued
//! and end). Setting either rings [`Life::listen`]'s event, which the notification listener
//! waits on; the other jobs are woken on their own events by the store (`store.rs`,
//! `wake_all`). A leaf.

use std::sync::atomic::{AtomicBool, Ordering};

use event_listener::{Event, EventListener};

/// The store's stop and close flags (see the file's header).
#[derive(Default)]
pub(crate) struct Life {
    stopped: AtomicBool,
    closed: AtomicBool,
    /// Rung when either flag is set.
    changed: Event,
}

impl Life {
    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// The last store handle is gone: the jobs finish what was queued and end.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        self.changed.notify(usize::MAX);
    }

    /// Closes the store; `true` for the call that closed it.
    pub(crate) fn close(&self) -> bool {
        let first = !self.closed.swap(true, Ordering::AcqRel);
        self.changed.notify(usize::MAX);
        first
    }

    /// A listener rung when the store stops or closes (check the flags after making it).
    pub(crate) fn listen(&self) -> EventListener {
        self.changed.listen()
    }
}
