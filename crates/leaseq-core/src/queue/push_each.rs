//! Pushing a run of items under ids the caller chose, in one call.

use super::Queue;
use crate::error::PushError;
use crate::id::MessageId;
use crate::time::Timestamp;

impl<T> Queue<T> {
    /// [`push_with_id`](Self::push_with_id) with [`PushOptions::new`](crate::PushOptions::new)
    /// for each of `items`, in order, after one time step to `now` (made first, even for no
    /// items, as by [`receive_many`](Self::receive_many)): the same checks and outcome per
    /// item, each refusal handed to `refused` as `push_with_id` returns it. For a driver
    /// that moves a batch of pushes in at once (an inbox filled without the queue's lock,
    /// drained into it): one call for the batch, the push's steps inlined into its loop.
    pub fn push_each_with_id(
        &mut self,
        now: Timestamp,
        items: impl IntoIterator<Item = (MessageId, T)>,
        mut refused: impl FnMut(PushError<T>),
    ) {
        // One step for all: a plain push schedules no timer, so a step per item would find
        // nothing more due.
        let now = self.advance(now);
        for (id, item) in items {
            if let Err(e) = self.push_plain_with_id_inlined(id, item, now, false, false) {
                refused(e);
            }
        }
    }
}
