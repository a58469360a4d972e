//! Restoring what flow control keeps of an item for a durable store: its flow keys (live
//! items and dead letters) and its snoozes so far, beside `restore`'s fields.

use super::tags::Tags;
use super::Queue;
use crate::flow::FlowKeys;
use crate::id::MessageId;
use crate::key::UniqueKey;
use crate::key_window::KeyWindow;
use crate::outcome::PushOptions;
use crate::queue::{Restored, RestoredDeadLetter};
use crate::time::Timestamp;
use crate::RestoreError;

impl<T> Queue<T> {
    /// [`restore`](Self::restore) with the item's flow keys (as
    /// [`push_flow`](Self::push_flow) gave them; empty: none) and its uncounted snoozes so
    /// far (see [`snooze`](Self::snooze): the bound holds across the restore). A restored
    /// item of an ordered group takes its place in push order (by id).
    ///
    /// ```
    /// use core::time::Duration;
    /// use leaseq_core::{Config, FlowKey, FlowKeys, MessageId, Queue, Restored, Timestamp};
    ///
    /// let mut q = Queue::new(Config::new(Duration::from_secs(30))).unwrap();
    /// let t = Timestamp::ZERO;
    /// let group = FlowKeys::new().group(FlowKey::new(1));
    /// for (id, item) in [(3, "b"), (2, "a")].into_iter().rev() {
    ///     let r = Restored {
    ///         id: MessageId::new(id),
    ///         item,
    ///         attempts: 0,
    ///         visible_at: t,
    ///         expires_at: None,
    ///         priority: 0,
    ///         key: None,
    ///         last_error: None,
    ///     };
    ///     q.restore_flow(r, t, group, 0).unwrap();
    /// }
    /// let a = q.receive(t).unwrap();
    /// assert_eq!(a.item, "a");
    /// assert!(q.receive(t).is_none(), "b waits for a");
    /// ```
    pub fn restore_flow(
        &mut self,
        r: Restored<T>,
        now: Timestamp,
        keys: FlowKeys,
        snoozes: u32,
    ) -> Result<(), RestoreError> {
        let (id, free) = (r.id, self.free);
        self.restore(r, now)?;
        if keys.is_empty() && snoozes == 0 {
            return Ok(());
        }
        let slot = self.slot_of(id, free, &PushOptions::new());
        if !keys.is_empty() {
            self.tag(slot, keys);
        }
        if snoozes > 0 {
            self.side.entry(slot as u32).or_default().snoozes = snoozes;
        }
        Ok(())
    }

    /// [`restore_dead_letter`](Self::restore_dead_letter) with the item's flow keys, kept
    /// for a redrive (and, with [`GroupDeadLetter::Block`](crate::GroupDeadLetter::Block),
    /// its place in its group).
    pub fn restore_dead_letter_flow(
        &mut self,
        r: RestoredDeadLetter<T>,
        keys: FlowKeys,
    ) -> Result<(), RestoreError> {
        let id = r.id;
        self.restore_dead_letter(r)?;
        if !keys.is_empty() {
            self.tag_dead(id, keys);
        }
        Ok(())
    }

    /// Records the flow keys of the dead letter `id`.
    fn tag_dead(&mut self, id: MessageId, keys: FlowKeys) {
        let block = self.dead_blocks_group();
        let tags = Tags {
            kind: keys.kind_key(),
            partition: keys.partition_key(),
            group: keys.group_key(),
            slot: u32::MAX,
        };
        let flow = self.flow_mut();
        flow.tags.insert(id.get(), tags);
        if let Some(g) = tags.group.filter(|_| block) {
            flow.groups.entry(g).or_default().insert(id.get());
        }
    }

    /// The window of the restored live item `id`'s unique `key`, as pushed at `pushed_at`
    /// (a `Period` ends then plus the period). Nothing unless `id` is the live holder of
    /// `key`; `KeyWindow::Live` changes nothing.
    pub fn restore_key_window(
        &mut self,
        id: MessageId,
        key: &UniqueKey,
        window: KeyWindow,
        pushed_at: Timestamp,
    ) {
        let Some(slot) = self.keys.find(key, key.hash64()) else {
            return;
        };
        if self.slots[slot as usize].id == id.get() && window != KeyWindow::Live {
            self.set_window_cold(slot as usize, window, pushed_at);
        }
    }

    /// The key of an item `id` that left within its window, held until `until` (the
    /// queue's time): a push with `key` is refused naming `id` until then.
    pub fn restore_gone_key(&mut self, key: UniqueKey, until: Timestamp, id: MessageId) {
        if until > self.now {
            let gone = self.gone_keys.get_or_insert_with(Default::default);
            gone.insert(key, until, id);
        }
    }
}
