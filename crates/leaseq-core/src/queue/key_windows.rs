//! Unique keys' windows ([`KeyWindow`]): a key held by state (while queued) or for a
//! period (after the push, or after the item leaves), beside the key table's "while live".
//!
//! Kept off the paths of pushes without them: a live item's window is in its side record
//! (`Side::window`, looked at only when a keyed push finds the key held, or a keyed item
//! leaves while some side record exists), and the keys of items that left within their
//! window are in `GoneKeys`, made on first use. A window is checked when a push meets the
//! key, not by a timer: a holder whose window has passed (`Queued` and in flight, `Period`
//! over) lets the key go then, and a left item's key is pruned when a keyed push looks.
//! All in the queue's time, which never goes back, so a driver's clock stepping back never
//! frees a key early (it holds keys longer, until the clock is past the latest time seen).

use alloc::collections::{BTreeMap, BTreeSet};
use core::time::Duration;

use super::{Queue, State, KEYED};
use crate::id::MessageId;
use crate::key::UniqueKey;
use crate::key_window::KeyWindow;
use crate::time::Timestamp;

/// A live keyed item's window, in its side record (no record: `KeyWindow::Live`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Held {
    /// `KeyWindow::Queued`.
    Queued,
    /// `KeyWindow::Period`, ending at this instant.
    Until(Timestamp),
    /// `KeyWindow::LiveThen`.
    ThenFor(Duration),
}

/// The keys of items that left within their window, until the window ends.
#[derive(Debug, Default)]
pub(super) struct GoneKeys {
    by_key: BTreeMap<UniqueKey, (Timestamp, MessageId)>,
    by_time: BTreeSet<(Timestamp, UniqueKey)>,
}

impl GoneKeys {
    /// Forgets the keys whose window has ended at `now`.
    fn prune(&mut self, now: Timestamp) {
        while let Some(&(at, key)) = self.by_time.first() {
            if at > now {
                break;
            }
            self.by_time.pop_first();
            self.by_key.remove(&key);
        }
    }

    pub(super) fn insert(&mut self, key: UniqueKey, until: Timestamp, id: MessageId) {
        if let Some((old, _)) = self.by_key.insert(key, (until, id)) {
            self.by_time.remove(&(old, key));
        }
        self.by_time.insert((until, key));
    }

    fn remove(&mut self, key: &UniqueKey) {
        if let Some((at, _)) = self.by_key.remove(key) {
            self.by_time.remove(&(at, *key));
        }
    }

    /// The item that left holding `key` and holds it still at `now`.
    fn holder(&self, key: &UniqueKey, now: Timestamp) -> Option<MessageId> {
        self.by_key
            .get(key)
            .filter(|&&(until, _)| until > now)
            .map(|&(_, id)| id)
    }
}

impl<T> Queue<T> {
    /// Whether a key may be held by a window other than [`KeyWindow::Live`] now: a live
    /// item's (in its side record) or that of an item that left within its window. Windows
    /// are the one way time frees a key without a timer (a window's end is seen when a push
    /// meets the key): while there are none, a keyed push at [`now`](Self::now) is judged
    /// as at any later time, but for the timers due in between (an expiry, a lease's end),
    /// which the driver runs at their time anyway; a driver may then push it at `now`
    /// rather than read its clock. Erring on the side of true: so it is while any live item
    /// has a side record (a last error, a snooze count), and once a key was kept after its
    /// item left.
    #[inline]
    pub fn key_windows_in_use(&self) -> bool {
        !self.side.is_empty() || self.gone_keys.is_some()
    }

    /// Whether the live holder in `slot` has let its key go at `now`: `Queued` and in
    /// flight, or its `Period` over.
    pub(super) fn key_lapsed(&self, slot: usize, now: Timestamp) -> bool {
        if self.side.is_empty() {
            return false;
        }
        match self.side.get(&(slot as u32)).and_then(|s| s.window) {
            Some(Held::Queued) => self.slots[slot].state == State::InFlight,
            Some(Held::Until(end)) => end <= now,
            Some(Held::ThenFor(_)) | None => false,
        }
    }

    /// The live holder in `slot`, whose window has passed, lets its key go for good.
    pub(super) fn drop_key(&mut self, slot: usize) {
        self.keys.remove(slot as u32);
        self.slots[slot].meta &= !KEYED;
        if let Some(side) = self.side.get_mut(&(slot as u32)) {
            side.window = None;
        }
    }

    /// With no live holder of `key`: the item that left holding it within its window, if
    /// any (forgetting those whose window has ended).
    #[inline]
    pub(super) fn gone_holder(&mut self, key: &UniqueKey, now: Timestamp) -> Option<MessageId> {
        self.gone_keys.as_ref()?;
        self.gone_holder_cold(key, now)
    }

    #[cold]
    #[inline(never)]
    fn gone_holder_cold(&mut self, key: &UniqueKey, now: Timestamp) -> Option<MessageId> {
        let gone = self.gone_keys.as_deref_mut()?;
        gone.prune(now);
        gone.holder(key, now)
    }

    /// `key` passes to the item replacing its holder: the holder's window goes with it.
    pub(super) fn forget_gone(&mut self, key: &UniqueKey) {
        if let Some(gone) = self.gone_keys.as_deref_mut() {
            gone.remove(key);
        }
    }

    /// Records the window of the item just pushed into `slot` with a key at `now`.
    #[inline]
    pub(super) fn set_window(&mut self, slot: usize, window: &KeyWindow, now: Timestamp) {
        if *window != KeyWindow::Live {
            self.set_window_cold(slot, *window, now);
        }
    }

    #[cold]
    #[inline(never)]
    pub(super) fn set_window_cold(&mut self, slot: usize, window: KeyWindow, now: Timestamp) {
        let held = match window {
            KeyWindow::Live => return,
            KeyWindow::Queued => Held::Queued,
            KeyWindow::Period(d) => Held::Until(now.saturating_add(d)),
            KeyWindow::LiveThen(d) => Held::ThenFor(d),
        };
        self.side.entry(slot as u32).or_default().window = Some(held);
    }

    /// The item in `slot` (with a unique key or flow keys) is leaving, its key still in the
    /// table: its key is kept for the rest of its window, if any is left.
    #[cold]
    #[inline(never)]
    pub(super) fn keep_window(&mut self, slot: usize) {
        if self.slots[slot].meta & KEYED == 0 {
            return;
        }
        let Some(held) = self.side.get(&(slot as u32)).and_then(|s| s.window) else {
            return;
        };
        let now = self.now;
        let until = match held {
            Held::Queued => return,
            Held::Until(end) => end,
            Held::ThenFor(d) => now.saturating_add(d),
        };
        if until <= now {
            return;
        }
        let key = self.keys.key_of(slot as u32);
        let id = MessageId(self.slots[slot].id);
        let gone = self.gone_keys.get_or_insert_with(Default::default);
        gone.prune(now);
        gone.insert(key, until, id);
    }

    /// The item that holds `key` at the queue's time: the live holder unless its window
    /// has passed, else the one that left within its window.
    pub(super) fn holder_of(&self, key: &UniqueKey) -> Option<MessageId> {
        if let Some(slot) = self.keys.find(key, key.hash64()) {
            if !self.key_lapsed(slot as usize, self.now) {
                return Some(MessageId(self.slots[slot as usize].id));
            }
        }
        self.gone_keys.as_deref()?.holder(key, self.now)
    }
}
