//! [`StopWaiting`]: a wait's registration given back to its store however its future ends.

use super::Store;

/// Gives a wait's registration back to its store when the waiting future ends or is
/// dropped.
pub(crate) struct StopWaiting<'a, T, S: Store<T>>(pub(crate) &'a S, pub(crate) &'a mut S::Waiting);

impl<T, S: Store<T>> Drop for StopWaiting<'_, T, S> {
    fn drop(&mut self) {
        self.0.stop_waiting(self.1);
    }
}
