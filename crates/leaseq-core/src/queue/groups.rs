//! Ordered groups: a group's items are handed out strictly in push order, one at a time,
//! and groups take turns.
//!
//! `Flow::groups` holds each group's live items by id (push order). Only the first, the
//! group's head, may be leased, and only while no item of the group is in flight (counted
//! as a limit's keys are; tested by the limited receive as a limit is): a redriven item
//! that is the head again waits for the one in flight. The others wait in the ready lists,
//! walked past. When the head leaves for good
//! (acked, cancelled, or dead-lettered: **a dead letter releases its group**, as an SQS FIFO
//! message moved to its dead-letter queue does; a redrive puts it back at its place in push
//! order, where it is the head again), the next item becomes the head and, if it is ready,
//! moves to the back of its level's ready list: it became eligible now, so groups are
//! served in the order their heads became eligible, which is round robin for groups that
//! keep items ready. A head that fails or is snoozed stays the head: the group waits for it
//! (its backoff or delay included).
//!
//! With `GroupDeadLetter::Block` a dead letter stays in its group's set (its tags are kept
//! for a dead letter anyway): while it is the first, nothing of the group goes. A redrive
//! makes it live at its place again; a dead letter taken out for good (a purge,
//! `forget_tags`) leaves the group then, which lets the next one go.

use super::{Queue, State};
use crate::flow::{FlowKey, GroupDeadLetter};

impl super::limits::Flow {
    /// Whether `id` is the head of `group`.
    pub(super) fn is_head(&self, group: FlowKey, id: u64) -> bool {
        self.groups.get(&group).and_then(|s| s.first()) == Some(&id)
    }
}

impl<T> Queue<T> {
    /// Whether a dead letter keeps its place in its group (`GroupDeadLetter::Block`).
    pub(super) fn dead_blocks_group(&self) -> bool {
        self.config.group_dead_letter == GroupDeadLetter::Block
    }

    /// The item `id` left `group` for good: the next one, if any, becomes the head, moved
    /// to the back of its ready list if it is ready (it became eligible now).
    pub(super) fn leave_group(&mut self, group: FlowKey, id: u64) {
        let Some(flow) = self.flow.as_deref_mut() else {
            return;
        };
        let Some(set) = flow.groups.get_mut(&group) else {
            return;
        };
        let was_head = set.first() == Some(&id);
        set.remove(&id);
        let next = set.first().copied();
        if set.is_empty() {
            flow.groups.remove(&group);
        }
        let Some(next) = next.filter(|_| was_head) else {
            return;
        };
        let Some(slot) = flow.tags.get(&next).map(|t| t.slot) else {
            return;
        };
        let s = &self.slots[slot as usize];
        if s.state == State::Ready && s.id == next {
            let level = s.level();
            self.ready[level].unlink(&mut self.slots, slot);
            self.ready[level].push_back(&mut self.slots, slot);
        }
    }
}
