//! Push with a key window: a push as `push_take` makes it, its unique key held for a
//! [`KeyWindow`] rather than while the item is live (see `key_windows`). Apart from the
//! other pushes, as `push_flow` is, so that their options carry nothing for it.

use super::Queue;
use crate::error::PushError;
use crate::id::MessageId;
use crate::key_window::KeyWindow;
use crate::outcome::{PushOptions, Pushed};
use crate::time::Timestamp;

impl<T> Queue<T> {
    /// [`push_with`](Self::push_with) whose unique key ([`PushOptions::key`]) is held for
    /// `window` (see [`KeyWindow`]: a throttle, a debounce with
    /// [`replace_pending`](PushOptions::replace_pending), ...). Without a key the window
    /// does nothing. Refused exactly as `push_with` refuses; a key held by an item that left
    /// within its window is refused as [`PushError::DuplicateKey`] naming that item.
    ///
    /// ```
    /// use core::time::Duration;
    /// use leaseq_core::{Config, KeyWindow, PushOptions, Queue, Timestamp};
    ///
    /// let mut q = Queue::new(Config::new(Duration::from_secs(30))).unwrap();
    /// let t0 = Timestamp::ZERO;
    /// let queued = KeyWindow::Queued;
    /// let key = PushOptions::new().key("sync:42");
    /// q.push_windowed("a", t0, key, queued).unwrap();
    /// assert!(q.push_windowed("b", t0, key, queued).is_err()); // "a" waits: held
    /// let a = q.receive(t0).unwrap();
    /// q.push_windowed("c", t0, key, queued).unwrap(); // "a" runs: the key is free
    /// # let _ = a;
    /// ```
    pub fn push_windowed(
        &mut self,
        item: T,
        now: Timestamp,
        options: PushOptions,
        window: KeyWindow,
    ) -> Result<MessageId, PushError<T>> {
        self.push_windowed_take(item, now, options, window)
            .map(|p| p.id)
    }

    /// [`push_windowed`](Self::push_windowed) that hands out a replaced item, as
    /// [`push_take`](Self::push_take) does.
    pub fn push_windowed_take(
        &mut self,
        item: T,
        now: Timestamp,
        options: PushOptions,
        window: KeyWindow,
    ) -> Result<Pushed<T>, PushError<T>> {
        let now = self.advance(now);
        self.push_options(item, now, &options, window)
    }

    /// [`push_windowed_take`](Self::push_windowed_take) under an id the caller chose, as
    /// [`push_with_id_take`](Self::push_with_id_take) takes it (refused with
    /// [`PushError::IdOutOfOrder`] below [`next_id`](Self::next_id); a refused push does not
    /// use up `id`).
    pub fn push_windowed_with_id_take(
        &mut self,
        id: MessageId,
        item: T,
        now: Timestamp,
        options: PushOptions,
        window: KeyWindow,
    ) -> Result<Pushed<T>, PushError<T>> {
        self.under_id(id, item, |q, item| {
            q.push_windowed_take(item, now, options, window)
        })
    }
}

/// A push's key window as `push_options` takes it: `NoWindow` (a plain push with options:
/// `KeyWindow::Live`, known at compile time) or a `KeyWindow`.
pub(super) trait WindowArg: Copy {
    /// The window.
    fn window(self) -> KeyWindow;
}

/// No window: the key held while the item is live.
#[derive(Clone, Copy)]
pub(super) struct NoWindow;

impl WindowArg for NoWindow {
    #[inline(always)]
    fn window(self) -> KeyWindow {
        KeyWindow::Live
    }
}

impl WindowArg for KeyWindow {
    #[inline(always)]
    fn window(self) -> KeyWindow {
        self
    }
}
