//! What few live items carry beside their slot: a last error, a snooze count and a key's
//! window, kept in
//! one map by slot (`Queue::side`) so that the slots stay small and an item leaving costs
//! one emptiness check for both.

use alloc::string::String;

use super::key_windows::Held;
use super::Queue;

/// The side record of one live item.
#[derive(Debug, Default)]
pub(super) struct Side {
    /// The item's last error, if it has one.
    pub(super) error: Option<String>,
    /// Snoozes so far (not counted as attempts; see `snooze`).
    pub(super) snoozes: u32,
    /// The window of its unique key, if not "while live" (see `key_windows`).
    pub(super) window: Option<Held>,
}

impl<T> Queue<T> {
    /// Records `error` as the last error of the item in `slot`.
    pub(super) fn set_error(&mut self, slot: usize, error: String) {
        self.side.entry(slot as u32).or_default().error = Some(error);
    }

    /// The snoozes of the item in `slot` so far.
    pub(super) fn snoozes_of(&self, slot: usize) -> u32 {
        self.side.get(&(slot as u32)).map_or(0, |s| s.snoozes)
    }
}
