//! Dead letters: burying an item, listing and taking dead letters, redriving them.

use alloc::vec::Vec;

use super::{Fate, Queue, KEYED, LEVEL_BITS};
use crate::dead_letter::DeadLetter;
use crate::error::RedriveError;
use crate::event::{Event, Reason};
use crate::id::MessageId;
use crate::time::Timestamp;

impl<T> Queue<T> {
    /// Moves an item that is out of every gauge to the dead letters.
    pub(super) fn bury(&mut self, slot: usize, at: Timestamp, reason: Reason) {
        let s = &mut self.slots[slot];
        let Some(item) = s.item.take() else { return };
        let key = s.keyed().then(|| self.keys.key_of(slot as u32));
        let letter = DeadLetter {
            item,
            id: MessageId(s.id),
            attempts: s.attempts,
            reason,
            // (The side record itself goes with the slot: it may hold the key's window.)
            last_error: self
                .side
                .get_mut(&(slot as u32))
                .and_then(|s| s.error.take()),
            at,
            expires_at: (s.expires_at != Timestamp::MAX).then_some(s.expires_at),
            leases: s.leases,
            priority: s.level() as u8,
            key,
        };
        let event = Event::DeadLettered {
            id: letter.id,
            attempts: letter.attempts,
            reason,
        };
        self.free_slot(slot, Fate::DeadLettered);
        if let Some(noted) = &mut self.noted_dead {
            noted.push(letter.id);
        }
        self.dead.insert(letter.id, letter);
        self.stats.dead += 1;
        self.stats.dead_lettered += 1;
        self.dead_by_reason[reason.index()] += 1;
        if reason == Reason::Expired {
            self.stats.expired += 1;
        }
        self.record(event);
    }

    /// From now on, notes the id of every item sent to the dead letters (for any reason: a
    /// last failed attempt, a lease that ran out, an expiry), for
    /// [`take_noted_dead`](Self::take_noted_dead): how a store that records finished jobs
    /// learns of the dead letters made inside any call. Off until asked (then one push per
    /// dead letter).
    pub fn note_dead_letters(&mut self) {
        if self.noted_dead.is_none() {
            self.noted_dead = Some(Vec::new());
        }
    }

    /// The ids noted since the last call (see [`note_dead_letters`](Self::note_dead_letters)),
    /// in the order they went; empty when nothing is noted.
    pub fn take_noted_dead(&mut self) -> Vec<MessageId> {
        self.noted_dead
            .as_mut()
            .map(core::mem::take)
            .unwrap_or_default()
    }

    /// Whether ids wait to be taken by [`take_noted_dead`](Self::take_noted_dead).
    #[inline]
    pub fn has_noted_dead(&self) -> bool {
        self.noted_dead.as_ref().is_some_and(|n| !n.is_empty())
    }

    /// Items sent to the dead letters for `reason` in the queue's life: over every
    /// [`Reason`], they add up to [`Stats::dead_lettered`](crate::Stats::dead_lettered).
    pub fn dead_lettered_by(&self, reason: Reason) -> u64 {
        self.dead_by_reason[reason.index()]
    }

    /// The dead letters, in id (push) order.
    pub fn dead_letters(&self) -> impl Iterator<Item = &DeadLetter<T>> + '_ {
        self.dead.values()
    }

    /// One dead letter.
    pub fn get_dead_letter(&self, id: MessageId) -> Option<&DeadLetter<T>> {
        self.dead.get(&id)
    }

    /// Removes one dead letter and hands it over.
    pub fn take_dead_letter(&mut self, id: MessageId) -> Option<DeadLetter<T>> {
        let letter = self.dead.remove(&id)?;
        self.forget_tags(core::iter::once(id.0));
        self.stats.dead -= 1;
        self.stats.taken += 1;
        Some(letter)
    }

    /// Removes every dead letter and hands them over, in id order.
    pub fn take_dead_letters(&mut self) -> Vec<DeadLetter<T>> {
        let all = core::mem::take(&mut self.dead);
        self.forget_tags(all.keys().map(|id| id.0));
        self.stats.dead -= all.len() as u64;
        self.stats.taken += all.len() as u64;
        all.into_values().collect()
    }

    /// Puts a dead letter back in the queue, visible at once, with its attempts reset and its
    /// id, expiry, priority level and unique key kept.
    ///
    /// Refused, the dead letter staying where it was, when: no dead letter has this id
    /// ([`RedriveError::NotFound`]); its expiry has passed ([`RedriveError::Expired`]); a
    /// live item pushed since holds its key ([`RedriveError::KeyTaken`]); the queue is at
    /// capacity ([`RedriveError::Full`]). They are checked in that order.
    pub fn redrive(&mut self, id: MessageId, now: Timestamp) -> Result<MessageId, RedriveError> {
        let now = self.advance(now);
        let Some(letter) = self.dead.get(&id) else {
            return Err(RedriveError::NotFound(id));
        };
        if letter.expires_at.is_some_and(|e| e <= now) {
            return Err(RedriveError::Expired(id));
        }
        let key = letter.key.map(|k| (k, k.hash64()));
        if let Some((k, hash)) = &key {
            if let Some(holder) = self.keys.find(k, *hash) {
                return Err(RedriveError::KeyTaken {
                    id,
                    holder: MessageId(self.slots[holder as usize].id),
                });
            }
        }
        if self.no_room() {
            return Err(RedriveError::Full(id));
        }
        let letter = self.dead.remove(&id).expect("checked above");
        self.stats.dead -= 1;
        self.stats.redriven += 1;
        let expires_at = letter.expires_at.unwrap_or(Timestamp::MAX);
        let meta = (letter.priority & LEVEL_BITS) | if key.is_some() { KEYED } else { 0 };
        let slot = self.occupy(letter.item, id.0, expires_at, letter.leases, 0, meta);
        if let Some((k, hash)) = key {
            self.keys.insert(slot as u32, &k, hash);
        }
        self.retag(slot);
        if let Some(error) = letter.last_error {
            self.set_error(slot, error);
        }
        self.make_visible(slot, now, now);
        Ok(id)
    }

    /// Redrives every dead letter that can go back, in id order; returns how many went.
    /// Stops at capacity; expired ones, and those whose key a live item holds, stay.
    pub fn redrive_all(&mut self, now: Timestamp) -> usize {
        self.redrive_all_ids(now).len()
    }

    /// [`redrive_all`](Self::redrive_all), returning the ids that went, in id order (for a
    /// store that journals each redrive).
    pub fn redrive_all_ids(&mut self, now: Timestamp) -> Vec<MessageId> {
        // Apply what is due first (driving rule 3): a lease that ran out on its last attempt
        // at `now` is a dead letter at `now`, and must be among those redriven.
        let now = self.advance(now);
        let ids: Vec<MessageId> = self.dead.keys().copied().collect();
        let mut went = Vec::new();
        for id in ids {
            match self.redrive(id, now) {
                Ok(id) => went.push(id),
                Err(RedriveError::Full(_)) => break,
                Err(_) => {}
            }
        }
        went
    }
}
