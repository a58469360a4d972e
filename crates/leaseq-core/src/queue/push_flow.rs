//! Push with flow keys: a push as `push_take` makes it, then the item tagged with its kind
//! and partition (see `limits`). Apart from the other pushes, so that they carry nothing
//! for it.

use super::{Queue, State, NIL};
use crate::error::PushError;
use crate::flow::FlowKeys;
use crate::id::MessageId;
use crate::outcome::{KeyOption, PushOptions, Pushed};
use crate::time::Timestamp;

impl<T> Queue<T> {
    /// [`push_with`](Self::push_with) with flow keys: the item counts against the
    /// concurrency limits of its kind and partition ([`set_limit`](Self::set_limit)) for
    /// life. Refused exactly as `push_with` refuses.
    pub fn push_flow(
        &mut self,
        item: T,
        now: Timestamp,
        options: PushOptions,
        keys: FlowKeys,
    ) -> Result<MessageId, PushError<T>> {
        self.push_flow_take(item, now, options, keys).map(|p| p.id)
    }

    /// [`push_flow`](Self::push_flow) that hands out a replaced item, as
    /// [`push_take`](Self::push_take) does.
    pub fn push_flow_take(
        &mut self,
        item: T,
        now: Timestamp,
        options: PushOptions,
        keys: FlowKeys,
    ) -> Result<Pushed<T>, PushError<T>> {
        if keys.is_empty() {
            return self.push_take(item, now, options);
        }
        let free = self.free;
        let pushed = self.push_take(item, now, options)?;
        let slot = self.slot_of(pushed.id, free, &options);
        self.tag(slot, keys);
        Ok(pushed)
    }

    /// [`push_flow_take`](Self::push_flow_take) under an id the caller chose, as
    /// [`push_with_id_take`](Self::push_with_id_take) takes it (refused with
    /// [`PushError::IdOutOfOrder`] below [`next_id`](Self::next_id); a refused push does not
    /// use up `id`).
    pub fn push_flow_with_id_take(
        &mut self,
        id: MessageId,
        item: T,
        now: Timestamp,
        options: PushOptions,
        keys: FlowKeys,
    ) -> Result<Pushed<T>, PushError<T>> {
        self.under_id(id, item, |q, item| {
            q.push_flow_take(item, now, options, keys)
        })
    }

    /// The slot of the item just pushed as `id` (the free list's head was `free`): that
    /// head, or a new slot, or (a replacement) the key holder's.
    pub(super) fn slot_of(&self, id: MessageId, free: u32, options: &PushOptions) -> usize {
        let is = |slot: usize| {
            self.slots
                .get(slot)
                .is_some_and(|s| s.id == id.0 && s.state != State::Free)
        };
        let keyed = match options.key_option() {
            KeyOption::Key(k) => self.keys.find(k, k.hash64()).map(|s| s as usize),
            _ => None,
        };
        [
            (free != NIL).then_some(free as usize),
            Some(self.slots.len().wrapping_sub(1)),
            keyed,
        ]
        .into_iter()
        .flatten()
        .find(|&s| is(s))
        .or_else(|| (0..self.slots.len()).find(|&s| is(s)))
        .expect("the item just pushed holds a slot")
    }
}
