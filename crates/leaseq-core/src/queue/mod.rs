//! The lease queue state machine.
//!
//! `Queue` itself lives here, its slots and their states in `slot`; its operations are
//! split by concept into the child modules, which see the private fields as descendants.

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, BTreeSet, VecDeque};
use alloc::vec::Vec;
use core::num::NonZeroU32;

use crate::config::Config;
use crate::dead_letter::DeadLetter;
use crate::error::ConfigError;
use crate::event::Event;
use crate::id::MessageId;
use crate::key::UniqueKey;
use crate::key_table::KeyTable;
use crate::outcome::PRIORITY_LEVELS;
use crate::policy::RetryPolicy;
use crate::stats::Stats;
use crate::time::Timestamp;
use crate::timer_index::{Timer, TimerIndex};
use crate::view::{ItemState, ItemView};

mod cancel;
mod dead_lend;
mod dead_letters;
mod flight;
mod flow_view;
mod groups;
mod invariants;
mod key_windows;
mod limits;
mod links;
mod pause;
mod push;
mod push_each;
mod push_flow;
mod push_window;
mod rates;
mod receipts;
mod receive;
mod receive_run;
mod restore;
mod settle;
mod side;
mod slot;
mod slots;
mod snooze;
mod tags;
mod timers;

use limits::Flow;
use links::List;
use side::Side;
use slot::{Fate, LeaseEnd, Slot, State, COUNTED, KEYED, LEVEL_BITS, LISTED, NIL, TAGGED};

/// `Queue::ready_mask`'s bit 0: the queue is paused (`pause`) or has flow control
/// (`limits`), so a receive never takes the level-0 fast path, and leaves the levels' path
/// for the checks these need (`receive::lease_limited`). Set while either holds.
const SLOW: u8 = 1;

pub use invariants::IndexSizes;
pub use restore::{RestoreError, Restored, RestoredDeadLetter};
pub use snooze::Snoozed;

/// A lease queue: the whole state machine, with no clock, no timers and no I/O.
///
/// See the [crate docs](crate) for the driving rules. In short: pass the current time to
/// every call, call [`handle_timeout`](Self::handle_timeout) when
/// [`poll_timeout`](Self::poll_timeout) says, and drain [`poll_event`](Self::poll_event).
///
/// ```
/// use core::time::Duration;
/// use leaseq_core::{Config, Queue, Timestamp};
///
/// let mut q = Queue::new(Config::new(Duration::from_secs(1)).with_max_attempts(2)).unwrap();
/// let t0 = Timestamp::ZERO;
/// let id = q.push("job", t0).unwrap();
///
/// let lease = q.receive(t0).unwrap();
/// assert_eq!((lease.item, lease.id, lease.attempt), ("job", id, 1));
///
/// // The worker hangs; the lease runs out and the item comes back after its backoff (by
/// // default 1 s, of which the jitter takes off up to half).
/// let t1 = lease.deadline;
/// assert_eq!(q.poll_timeout(), Some(t1));
/// q.handle_timeout(t1);
/// assert!(q.receive(t1).is_none());
/// let t2 = q.poll_timeout().unwrap();
/// let waited = t2.saturating_duration_since(t1);
/// assert!(waited >= Duration::from_millis(500) && waited <= Duration::from_secs(1));
/// q.handle_timeout(t2);
/// let again = q.receive(t2).unwrap();
/// assert_eq!((again.id, again.attempt), (id, 2));
///
/// // The first holder wakes up and acks with its old receipt: refused and counted.
/// assert!(q.ack(lease.receipt, t2).is_err());
/// q.ack(again.receipt, t2).unwrap();
/// assert_eq!(q.stats().late_acks_stale, 1);
/// assert!(q.check_invariants().is_ok());
/// ```
pub struct Queue<T> {
    config: Config,
    tag: NonZeroU32,
    now: Timestamp,
    next_id: u64,
    slots: Vec<Slot<T>>,
    /// The free slots, last freed first, linked through `Slot::next` (`NIL`: none).
    free: u32,
    /// Ready items of each priority level in delivery order, linked through their slots.
    ready: [List; PRIORITY_LEVELS],
    /// Ready items of levels 1 to 7 (the live entries of `ready[level]`). Index 0 stays 0:
    /// level 0 has `stats.ready` minus the others, so that a queue that uses level 0 only
    /// keeps exactly the counters it kept before levels existed.
    ready_count: [u64; PRIORITY_LEVELS],
    /// Bit `l` (1 to 7) is set while `ready_count[l] > 0`. A receive serves the highest set
    /// bit, or level 0 when none is set (one load and one predicted branch for a queue
    /// without levels). Bit 0 is `SLOW`: the queue is paused (`pause`) or has flow control
    /// (`limits`), and every receive leaves the fast paths for the checks they need.
    ready_mask: u8,
    /// The live items that hold a unique key.
    keys: KeyTable,
    /// Lease deadlines that are not on the in-flight list (see `flight`).
    leases: TimerIndex,
    /// Leases in flight that are not on the in-flight list: the live entries of `leases`,
    /// whose bound (`2 × indexed + 64`) a listed lease leaving flight cannot break.
    indexed: u64,
    /// Leases in deadline order (see `flight`).
    flight: List,
    delays: TimerIndex,
    expiries: TimerIndex,
    /// Live items (ready, delayed, in flight) that have an expiry.
    expiring: u64,
    /// No timer in any index (stale ones included) is earlier than this; `Timestamp::MAX`
    /// when there are none. Lowered on every insert, made exact by `run_due` and
    /// `poll_timeout`, so that `advance` is one compare while nothing is due.
    due: Timestamp,
    /// `config.visibility` in nanoseconds (saturated), for the receive path.
    visibility_ns: u64,
    /// `config.max_lease` in nanoseconds; `u64::MAX` for none.
    max_lease_ns: u64,
    dead: BTreeMap<MessageId, DeadLetter<T>>,
    /// Dead letters lent out (`lend_dead_letter`) and not returned yet: still dead letters
    /// for the gauges and a cancel, out of `dead` meanwhile.
    lent: BTreeSet<MessageId>,
    /// What few live items have, by slot: a last error, snoozes (see `side`). Kept out of
    /// the slots, which would otherwise each carry it.
    side: BTreeMap<u32, Side>,
    events: VecDeque<Event>,
    stats: Stats,
    /// Dead letters by reason (`Reason::index`), for `dead_lettered_by`.
    dead_by_reason: [u64; crate::event::Reason::ALL.len()],
    /// What failed attempts become (max attempts, backoff, jitter and its PRNG).
    retry: RetryPolicy,
    /// Concurrency limits and the flow keys of items (see `limits`), once used.
    flow: Option<Box<Flow>>,
    /// The ids of items buried since the driver last took them, while asked for
    /// (`note_dead_letters`): a store's record of finished jobs.
    noted_dead: Option<Vec<MessageId>>,
    /// The keys of items that left within their key's window (see `key_windows`), once
    /// used.
    gone_keys: Option<Box<key_windows::GoneKeys>>,
}

impl<T> Queue<T> {
    /// An empty queue, or the reason `config` cannot work.
    pub fn new(config: Config) -> Result<Self, ConfigError> {
        config.validate()?;
        let visibility_ns = Timestamp::ZERO.saturating_add(config.visibility).as_nanos();
        let max_lease_ns = config
            .max_lease
            .map_or(u64::MAX, |m| Timestamp::ZERO.saturating_add(m).as_nanos());
        let retry = RetryPolicy::new(&config);
        Ok(Queue {
            retry,
            visibility_ns,
            max_lease_ns,
            config,
            tag: next_tag(),
            now: Timestamp::ZERO,
            next_id: 0,
            slots: Vec::new(),
            free: NIL,
            ready: [List::EMPTY; PRIORITY_LEVELS],
            ready_count: [0; PRIORITY_LEVELS],
            ready_mask: 0,
            keys: KeyTable::default(),
            leases: TimerIndex::default(),
            indexed: 0,
            flight: List::EMPTY,
            delays: TimerIndex::default(),
            expiries: TimerIndex::default(),
            expiring: 0,
            due: Timestamp::MAX,
            dead: BTreeMap::new(),
            lent: BTreeSet::new(),
            side: BTreeMap::new(),
            events: VecDeque::new(),
            stats: Stats::default(),
            dead_by_reason: [0; crate::event::Reason::ALL.len()],
            noted_dead: None,
            flow: None,
            gone_keys: None,
        })
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The latest time the queue has seen. Earlier times passed later are taken as this one.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// Gauges and totals. See [`Stats`] for the conservation law they obey. O(1): a copy
    /// (how many ready items wait on a concurrency limit is
    /// [`waiting_on_limits`](Self::waiting_on_limits), a pass over them).
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Ready items at each priority level (index = level): the backlog by level. The sum is
    /// [`Stats::ready`].
    pub fn ready_per_level(&self) -> [u64; PRIORITY_LEVELS] {
        let mut r = self.ready_count;
        r[0] = self.ready_at_0();
        r
    }

    /// When the oldest ready item became ready (pushed, its delay or backoff over, its lease
    /// run out, nacked, put back, redriven; an item a durable store restored: when it was
    /// restored), paused or not; `None` when nothing is ready. A look at the head of each
    /// level's ready list (they are in the order their items became ready): for gauges
    /// (feature `ready-since`, which keeps that instant in each ready item's slot).
    #[cfg(feature = "ready-since")]
    pub fn oldest_ready_since(&self) -> Option<Timestamp> {
        self.ready
            .iter()
            .filter(|list| list.head != NIL)
            .map(|list| self.slots[list.head as usize].lease_cap)
            .min()
    }

    /// Ready items of level 0.
    #[inline]
    fn ready_at_0(&self) -> u64 {
        // Wrapping: `check_invariants` reports a miscount instead of panicking on it.
        (self.stats.ready).wrapping_sub(self.ready_count[1..].iter().sum::<u64>())
    }

    /// The item that holds unique key `key` at the queue's time, if any: the live item
    /// (ready, delayed or in flight) that holds it, or the one that left within its key's
    /// window ([`KeyWindow`](crate::KeyWindow)). O(1) without windows; a key longer than
    /// [`UniqueKey::MAX_LEN`] is never held.
    pub fn key_holder(&self, key: impl AsRef<[u8]>) -> Option<MessageId> {
        let key = UniqueKey::new(key)?;
        self.holder_of(&key)
    }

    /// Items ready, delayed or in flight.
    pub fn len(&self) -> usize {
        self.live() as usize
    }

    /// Whether no item is ready, delayed or in flight (dead letters are not counted).
    pub fn is_empty(&self) -> bool {
        self.live() == 0
    }

    /// Every live item (ready, delayed or in flight) in slot order, as of the queue's
    /// latest time: call [`handle_timeout`](Self::handle_timeout) first to bring it up to
    /// date. Costs a pass over every slot; for admin tools and checks, not the hot path.
    pub fn items(&self) -> impl Iterator<Item = ItemView> + '_ {
        self.slots.iter().enumerate().filter_map(|(slot, s)| {
            let state = match s.state {
                State::Free => return None,
                State::Ready => ItemState::Ready,
                State::Delayed => ItemState::Delayed,
                State::InFlight => ItemState::InFlight {
                    deadline: s.last_deadline,
                },
            };
            Some(ItemView {
                id: MessageId(s.id),
                state,
                attempts: s.attempts,
                expires_at: (s.expires_at != Timestamp::MAX).then_some(s.expires_at),
                priority: s.level() as u8,
                key: s.keyed().then(|| self.keys.key_of(slot as u32)),
            })
        })
    }

    /// The oldest event not yet polled.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Whether an event waits to be polled: a cheap check for a driver deciding whether to
    /// wake the task that drains them.
    #[inline]
    pub fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// Appends `slot` to its level's ready list, ready since `since`.
    #[inline]
    fn enqueue_ready(&mut self, slot: u32, level: usize, since: Timestamp) {
        self.slots[slot as usize].note_ready(since);
        let level = level & LEVEL_BITS as usize;
        self.ready[level].push_back(&mut self.slots, slot);
        self.count_ready(level);
    }

    /// Counts an item just appended to the ready list of `level` (at most `LEVEL_BITS`).
    #[inline(always)]
    fn count_ready(&mut self, level: usize) {
        self.stats.ready += 1;
        if level != 0 {
            self.ready_count[level] += 1;
            self.ready_mask |= 1 << level;
        }
    }

    /// Items ready, delayed or in flight: a plain sum on the push path (each gauge counts
    /// slots, fewer than `u32::MAX`, so it cannot overflow; `Stats::live` saturates for
    /// snapshots built elsewhere).
    #[inline]
    fn live(&self) -> u64 {
        let s = &self.stats;
        s.ready + s.delayed + s.in_flight
    }

    fn record(&mut self, event: Event) {
        if self.config.events.bits() & event.kind_bit() == 0 {
            return;
        }
        if self.events.len() >= self.config.event_capacity {
            self.stats.events_dropped += 1;
            if self.events.pop_front().is_none() {
                return;
            }
        }
        self.events.push_back(event);
    }
}

impl<T> core::fmt::Debug for Queue<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Queue")
            .field("now", &self.now)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

fn timer_live<T>(slots: &[Slot<T>], t: &Timer, state: State) -> bool {
    let s = &slots[t.slot as usize];
    s.epoch == t.epoch && s.state == state
}

fn expiry_live<T>(slots: &[Slot<T>], t: &Timer) -> bool {
    let s = &slots[t.slot as usize];
    s.state != State::Free && s.id == t.id && s.expires_at == t.at
}

/// A per-queue tag, so that a receipt from one queue is never taken by another. Never zero
/// (the count skips it when it wraps): the niche of an `Option` that holds a receipt, so
/// that a lease's handle that may be settled (a delivery's) needs no word of its own for it.
fn next_tag() -> NonZeroU32 {
    #[cfg(target_has_atomic = "32")]
    {
        use core::sync::atomic::{AtomicU32, Ordering};
        static NEXT: AtomicU32 = AtomicU32::new(1);
        loop {
            if let Some(tag) = NonZeroU32::new(NEXT.fetch_add(1, Ordering::Relaxed)) {
                return tag;
            }
        }
    }
    #[cfg(not(target_has_atomic = "32"))]
    {
        NonZeroU32::MIN
    }
}
