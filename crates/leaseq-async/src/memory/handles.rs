//! The queue's life as its handles see it: the count of live handles (the driver ends with
//! the last) and the close, each waking whoever must look again.

use std::sync::atomic::Ordering;

use super::MemoryStore;

impl<T, R> MemoryStore<T, R> {
    /// [`Store::close`](crate::Store::close): the first call wakes every waiting receiver
    /// and pusher, and the driver.
    pub(super) fn close_now(&self) {
        if !self.closed.swap(true, Ordering::AcqRel) {
            self.available.notify_always(usize::MAX);
            self.space.notify_always(usize::MAX);
            self.driver_wake.notify(usize::MAX);
        }
    }

    /// [`Store::handle_added`](crate::Store::handle_added): one more live handle.
    pub(super) fn add_handle(&self) {
        self.handles.fetch_add(1, Ordering::Relaxed);
    }

    /// [`Store::handle_dropped`](crate::Store::handle_dropped): one handle less; the last
    /// one's going lets the driver see it and end, and waiting receivers look.
    pub(super) fn drop_handle(&self) {
        if self.handles.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.driver_wake.notify(usize::MAX);
            self.available.notify_always(usize::MAX);
        }
    }
}
