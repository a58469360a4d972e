//! Heartbeat scheduling: which held leases to extend when, as pure logic over the core.
//!
//! A delivery that wants a heartbeat registers its receipt here (under the queue lock it
//! already holds). The queue's driver calls [`Heartbeats::run_due`] when the earliest beat is
//! due: it extends every due lease in that one lock acquisition, so 10,000 held deliveries
//! cost one task and one timer, not 10,000. A beat that is refused (the lease was lost anyway)
//! or that reaches the max lease lifetime marks the delivery's [`LeaseSignal`], so its holder
//! can stop work that will be redone elsewhere. No clock and no I/O here: `tests/beats_model.rs`
//! checks it against a plain reference model.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::Duration;

use leaseq_core::{Extended, Queue, Receipt, Timestamp};

use crate::lease_lost::LeaseSignal;

/// Identifies one registration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BeatKey {
    index: u32,
    generation: u32,
}

impl BeatKey {
    /// The key of a lease whose heartbeat has not started yet (its ticket holds its signal,
    /// unregistered): see [`Store::start_heartbeat`](crate::Store::start_heartbeat).
    pub(crate) const NOT_YET: BeatKey = BeatKey {
        index: u32::MAX,
        generation: 0,
    };
}

struct Beat {
    receipt: Receipt,
    signal: Arc<LeaseSignal>,
}

#[derive(Default)]
struct BeatSlot {
    generation: u32,
    beat: Option<Beat>,
    /// When this beat is next due: of its entries in the heap, only the one at this time
    /// counts (an earlier reschedule leaves the other behind, lazily deleted).
    next: Timestamp,
}

/// How many lease signals [`Heartbeats`] keeps for reuse at most.
const SPARE_SIGNALS: usize = 64;

/// Registered leases and when each is next due, kept behind the queue lock.
#[derive(Default)]
pub(crate) struct Heartbeats {
    slots: Vec<BeatSlot>,
    free: Vec<u32>,
    live: usize,
    due: BinaryHeap<Reverse<(Timestamp, u32, u32)>>,
    /// Signals of unregistered leases that nobody else held any more, reset (not lost):
    /// handed to new leases, so that a lease taken and settled before anyone looked at its
    /// signal costs no allocation. Only a signal no one else holds is kept, so no holder
    /// can see it reset.
    spare: Vec<Arc<LeaseSignal>>,
}

impl Heartbeats {
    pub(crate) fn register(
        &mut self,
        receipt: Receipt,
        signal: Arc<LeaseSignal>,
        first_beat: Timestamp,
    ) -> BeatKey {
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(BeatSlot::default());
                (self.slots.len() - 1) as u32
            }
        };
        let slot = &mut self.slots[index as usize];
        slot.beat = Some(Beat { receipt, signal });
        self.live += 1;
        let key = BeatKey {
            index,
            generation: slot.generation,
        };
        self.schedule(key, first_beat);
        key
    }

    /// A lease signal not lost, for a lease about to be registered: a spare one if any.
    pub(crate) fn new_signal(&mut self) -> Arc<LeaseSignal> {
        self.spare.pop().unwrap_or_default()
    }

    /// How many signals are kept for reuse.
    #[cfg(test)]
    pub(crate) fn spare_len(&self) -> usize {
        self.spare.len()
    }

    /// Ends the heartbeat of a lease being settled: `signal` is its ticket's copy, dropped
    /// before the registration, so that the signal can be kept for reuse when the
    /// registration (or, before the heartbeat started, this copy) was its last holder.
    pub(crate) fn release(&mut self, key: BeatKey, signal: Arc<LeaseSignal>) {
        if key == BeatKey::NOT_YET {
            self.keep_spare(signal);
        } else {
            drop(signal);
            self.unregister(key);
        }
    }

    pub(crate) fn unregister(&mut self, key: BeatKey) {
        if let Some(slot) = self.slots.get_mut(key.index as usize) {
            if slot.generation != key.generation {
                return;
            }
            if let Some(beat) = slot.beat.take() {
                slot.generation = slot.generation.wrapping_add(1);
                self.free.push(key.index);
                self.live -= 1;
                self.keep_spare(beat.signal);
            }
        }
    }

    /// Keeps `signal` for reuse if no one else holds it (the registration was its last
    /// holder: its ticket's copy dropped first, no `LeaseLost` made from it alive).
    fn keep_spare(&mut self, mut signal: Arc<LeaseSignal>) {
        if self.spare.len() < SPARE_SIGNALS {
            if let Some(unique) = Arc::get_mut(&mut signal) {
                unique.reset();
                self.spare.push(signal);
            }
        }
    }

    fn schedule(&mut self, key: BeatKey, at: Timestamp) {
        self.slots[key.index as usize].next = at;
        self.due.push(Reverse((at, key.index, key.generation)));
        if self.due.len() > 2 * self.live + 64 {
            let slots = &self.slots;
            self.due.retain(|Reverse((at, i, g))| {
                let s = &slots[*i as usize];
                s.generation == *g && s.beat.is_some() && s.next == *at
            });
        }
    }

    /// Moves a registered beat earlier, to `at`, if it is due later: after its holder
    /// shortened the lease by hand, so that the heartbeat (which keeps the lease alive)
    /// beats before the new deadline. Returns whether it moved.
    pub(crate) fn bring_forward(&mut self, key: BeatKey, at: Timestamp) -> bool {
        let Some(slot) = self.slots.get(key.index as usize) else {
            return false;
        };
        if slot.generation != key.generation || slot.beat.is_none() || slot.next <= at {
            return false;
        }
        self.schedule(key, at);
        true
    }

    /// Registered leases.
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// When the earliest scheduled beat is due (possibly one since unregistered: it is then
    /// skipped when it comes up); `Timestamp::MAX` with none.
    #[inline]
    pub(crate) fn next_due(&self) -> Timestamp {
        self.due
            .peek()
            .map_or(Timestamp::MAX, |Reverse((at, _, _))| *at)
    }

    /// Extends every lease due by `now`, and those due within a short window after it
    /// ([`coalesce_window`]); returns when the next beat is due.
    ///
    /// Beating a little early is always safe (the lease is extended from `now`), and it lets
    /// one wake-up serve beats due microseconds apart, as leases received one after another
    /// are: on a timer precise to microseconds, each of those would otherwise wake the task
    /// on its own. The last beat of a capped lease (at its cap, where the holder is told it is
    /// lost) is not run early.
    pub(crate) fn run_due<T>(
        &mut self,
        core: &mut Queue<T>,
        now: Timestamp,
        every: Duration,
        visibility: Duration,
    ) -> Option<Timestamp> {
        let horizon = now.saturating_add(coalesce_window(every));
        let mut at_cap = Vec::new();
        while let Some(&Reverse((at, index, generation))) = self.due.peek() {
            if at > horizon {
                break;
            }
            self.due.pop();
            let key = BeatKey { index, generation };
            let slot = &self.slots[index as usize];
            let current = slot.generation == generation && slot.next == at;
            let Some(beat) = slot.beat.as_ref().filter(|_| current) else {
                continue;
            };
            match core.extend(beat.receipt, now, visibility) {
                Ok(Extended::Until {
                    capped: false,
                    deadline,
                }) => {
                    let next = now.saturating_add(every).min(deadline);
                    self.schedule(key, next);
                }
                Ok(Extended::Until {
                    capped: true,
                    deadline,
                }) => {
                    // No further extension can help: beat once more at the cap, where the
                    // lease ends and the holder is told (scheduled after this pass, so that
                    // a cap inside the window is not taken again now).
                    at_cap.push((key, deadline));
                }
                Ok(Extended::Released(_)) | Err(_) | Ok(_) => {
                    beat.signal.mark_lost();
                    self.unregister(key);
                }
            }
        }
        for (key, deadline) in at_cap {
            self.schedule(key, deadline);
        }
        self.due.peek().map(|Reverse((at, _, _))| *at)
    }
}

/// How far ahead of its time a beat may run to share a wake-up with an earlier one: an
/// eighth of the beat interval, at most 1 ms (tokio's old timer resolution, so no more
/// wake-ups than a millisecond timer gave).
fn coalesce_window(every: Duration) -> Duration {
    (every / 8).min(Duration::from_millis(1))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use leaseq_core::{Config, Queue, Timestamp};

    use super::Heartbeats;

    /// A signal is reused only once nobody else holds it, and then reset: a holder never
    /// sees its signal change, and a new lease never starts lost.
    #[test]
    fn signals_are_reused_only_when_no_one_holds_them() {
        let mut core = Queue::new(Config::new(Duration::from_secs(10))).unwrap();
        for n in 0..3u32 {
            core.push(n, Timestamp::ZERO).unwrap();
        }
        let mut beats = Heartbeats::default();
        let first = Timestamp::ZERO.saturating_add(Duration::from_secs(3));

        // Still held (a holder's copy): not kept for reuse.
        let lease = core.receive(Timestamp::ZERO).unwrap();
        let held = beats.new_signal();
        let key = beats.register(lease.receipt, held.clone(), first);
        beats.unregister(key);
        let other = beats.new_signal();
        assert!(!Arc::ptr_eq(&held, &other));

        // Marked lost, then unregistered with no other holder: kept, reset.
        let lease = core.receive(Timestamp::ZERO).unwrap();
        let key = beats.register(lease.receipt, other, first);
        beats.slots[0].beat.as_ref().unwrap().signal.mark_lost();
        let kept = Arc::as_ptr(&beats.slots[0].beat.as_ref().unwrap().signal);
        beats.unregister(key);
        let reused = beats.new_signal();
        assert_eq!(Arc::as_ptr(&reused), kept, "reused");
        assert!(!reused.is_lost(), "reset before reuse");
        assert!(!held.is_lost());
    }
}
