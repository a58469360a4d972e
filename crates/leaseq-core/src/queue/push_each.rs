//! Pushes under ids the caller chose: plain ones, one (`push_with_id`'s plain case) or a run
//! of them in one call, and `under_id`, the id check and hand-back every other kind of push
//! under a chosen id runs through.

use super::Queue;
use crate::error::PushError;
use crate::id::MessageId;
use crate::outcome::Pushed;
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

    /// `push_with_id` with plain options (see `PushOptions::is_plain`): `push`'s steps
    /// under the caller's id, without building a `Pushed` (a plain push replaces nothing).
    /// The same checks in the same order as the general path: the id, then room. Always
    /// inlined, as `push_at` is: into `push_with_id`'s callers' loops.
    #[inline(always)]
    pub(super) fn push_plain_with_id(
        &mut self,
        id: MessageId,
        item: T,
        now: Timestamp,
        waits_for_room: bool,
    ) -> Result<MessageId, PushError<T>> {
        self.push_plain_with_id_inlined(id, item, now, waits_for_room, true)
    }
    /// `push_plain_with_id`'s body, inlined into `push_each_with_id`'s loop; without the
    /// time step (`advance`: false) when the caller made it (`now` is the queue's time).
    #[inline(always)]
    fn push_plain_with_id_inlined(
        &mut self,
        id: MessageId,
        item: T,
        now: Timestamp,
        waits_for_room: bool,
        advance: bool,
    ) -> Result<MessageId, PushError<T>> {
        if id.0 < self.next_id {
            self.stats.rejected += 1;
            return Err(PushError::IdOutOfOrder(item));
        }
        let now = if advance { self.advance(now) } else { now };
        let next = self.next_id;
        self.next_id = id.0;
        self.push_at(item, now, now, Timestamp::MAX)
            .map_err(|full| self.refused_with_id(full, next, waits_for_room))
    }

    /// A plain push under an id refused as full: the id is not used up, and the refusal
    /// counts unless its caller waits for room.
    #[cold]
    fn refused_with_id(&mut self, full: PushError<T>, next: u64, waits: bool) -> PushError<T> {
        self.next_id = next;
        self.refused_full(full, waits)
    }

    /// `push` run as if `id` were the next id: the plain, flow and windowed pushes under an
    /// id the caller chose (refused with [`PushError::IdOutOfOrder`] below `next_id`; a
    /// refused push gives `id` back).
    #[inline]
    pub(super) fn under_id(
        &mut self,
        id: MessageId,
        item: T,
        push: impl FnOnce(&mut Self, T) -> Result<Pushed<T>, PushError<T>>,
    ) -> Result<Pushed<T>, PushError<T>> {
        if id.0 < self.next_id {
            self.stats.rejected += 1;
            return Err(PushError::IdOutOfOrder(item));
        }
        let next = self.next_id;
        self.next_id = id.0;
        let pushed = push(self, item);
        if pushed.is_err() {
            self.next_id = next;
        }
        pushed
    }
}
