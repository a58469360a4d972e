//! Model-based property test: random operation streams run against the real [`Queue`] and
//! against a deliberately simple reference model kept here, and every result is compared.
//!
//! The model is a `Vec` of items scanned linearly. Due processing repeatedly picks the
//! minimum `(at, id, kind)` among the due timers, with kind order lease < delay < expiry, as
//! the crate docs ("Order") and `queue.rs` (`run_due`, `make_visible`, `fail_attempt`)
//! define it. Time is coarse (multiples of a few nanoseconds) so that ties are frequent.
//!
//! Priority levels, unique keys, replacement and cancel are in the model too: a receive
//! takes the ready item of the highest level with the smallest `ready_seq`; a key is held by
//! whichever live item carries it (a linear scan); cancel finds its item by id.
//!
//! Jitter is left out of the model; `jitter_is_deterministic` checks it separately.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::time::Duration;

use leaseq_core::{
    Acked, Backoff, CancelError, Config, DeadLetter, Event, EventMask, Extended, Failure, Jitter,
    LateAckKind, MessageId, Nacked, PushError, PushOptions, Queue, Reason, Receipt, ReceiptError,
    RedriveError, Stats, Timestamp, UniqueKey,
};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestRunner;

use leaseq_test_kit::seeded::seed_config;
use leaseq_test_kit::time::ts;

type Item = u32;

const NEVER: u64 = u64::MAX;

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn add(t: u64, d: Duration) -> u64 {
    t.saturating_add(nanos(d))
}

// ===================================================================================
// The reference model
// ===================================================================================

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Ready,
    Delayed,
    InFlight,
    /// Acked or dead-lettered: not in the queue.
    Gone,
}

/// How the item's latest lease ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    /// Running, or never leased.
    Running,
    /// Ran out; the receipt may still ack while nobody has leased the item again.
    Expired,
    /// Handed back by its holder (nack, release, extend to zero).
    Released,
    /// The item was dead-lettered and redriven since.
    Redriven,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Acked,
    DeadLettered,
    Cancelled,
}

#[derive(Clone, Debug)]
struct MItem {
    id: u64,
    item: Item,
    /// The queue slot the item sits in (slots matter only for telling how old a stale
    /// receipt is: the docs allow `Unknown` once the slot has held other items).
    slot: u32,
    state: St,
    attempts: u32,
    leases: u32,
    ended: End,
    /// In flight: lease deadline.
    deadline: u64,
    /// In flight: the latest deadline extensions may reach.
    lease_cap: u64,
    /// Deadline of the latest lease, kept after it ends.
    last_deadline: u64,
    /// Delayed: when it becomes visible.
    visible_at: u64,
    /// Ready: when (in order of events) it became visible.
    ready_seq: u64,
    /// `NEVER` for none.
    expires_at: u64,
    last_error: Option<String>,
    level: u8,
    key: Option<Vec<u8>>,
}

#[derive(Clone, Debug, PartialEq)]
struct MDead {
    item: Item,
    attempts: u32,
    reason: Reason,
    last_error: Option<String>,
    at: u64,
    expires_at: Option<u64>,
    priority: u8,
    key: Option<Vec<u8>>,
}

#[derive(Clone, Copy, Debug, Default)]
struct MSlot {
    prev: Option<(u64, Fate)>,
}

#[derive(Clone, Copy, Debug)]
enum MBackoff {
    None,
    Fixed(Duration),
    Exp {
        base: Duration,
        factor: u32,
        max: Duration,
    },
}

impl MBackoff {
    /// Delay after the `n`-th failure, computed independently of the crate.
    fn delay(self, n: u32) -> u128 {
        match self {
            MBackoff::None => 0,
            MBackoff::Fixed(d) => d.as_nanos(),
            MBackoff::Exp { base, factor, max } => {
                let max = max.as_nanos();
                let mut d = base.as_nanos();
                for _ in 1..n {
                    d = d.saturating_mul(factor as u128);
                    if d >= max {
                        break;
                    }
                }
                d.min(max)
            }
        }
    }
    fn to_crate(self) -> Backoff {
        match self {
            MBackoff::None => Backoff::None,
            MBackoff::Fixed(d) => Backoff::Fixed(d),
            MBackoff::Exp { base, factor, max } => Backoff::Exponential { base, factor, max },
        }
    }
}

#[derive(Clone, Debug)]
struct MConfig {
    visibility: Duration,
    max_attempts: u32,
    backoff: MBackoff,
    max_lease: Option<Duration>,
    capacity: Option<usize>,
    event_capacity: usize,
}

impl MConfig {
    fn to_crate(&self) -> Config {
        let mut c = Config::new(self.visibility)
            .with_max_attempts(self.max_attempts)
            .with_backoff(self.backoff.to_crate())
            // No jitter (the default has 50 %): the model leaves it out, see the header.
            .without_jitter()
            .with_events(EventMask::ALL)
            .with_event_capacity(self.event_capacity);
        if let Some(m) = self.max_lease {
            c = c.with_max_lease(m);
        }
        if let Some(n) = self.capacity {
            c = c.with_capacity(n);
        }
        c
    }
}

/// The key of a push, as the model sees it.
#[derive(Clone, Debug)]
enum MKey {
    None,
    Key(Vec<u8>),
    TooLong(usize),
}

/// Why the model refused a push.
#[derive(Clone, Copy, Debug, PartialEq)]
enum MPushError {
    Level(u8),
    KeyTooLong(usize),
    Expired,
    Duplicate(u64),
    Full,
}

/// A receipt as the test knows it.
#[derive(Clone, Copy, Debug)]
struct RRec {
    receipt: Receipt,
    foreign: bool,
    id: u64,
    lease: u32,
    slot: u32,
}

enum MCheck {
    Held(usize),
    Unclaimed(usize),
    Stale(ReceiptError),
}

#[derive(Debug, PartialEq)]
struct MLease {
    item: Item,
    id: u64,
    attempt: u32,
    deadline: u64,
    expires_at: Option<u64>,
    lease: u32,
    slot: u32,
}

struct Model {
    cfg: MConfig,
    now: u64,
    items: Vec<MItem>,
    slots: Vec<MSlot>,
    free: Vec<u32>,
    dead: BTreeMap<u64, MDead>,
    events: VecDeque<Event>,
    /// Lifetime totals; the gauges are recounted from the items in `stats()`.
    totals: Stats,
    ready_seq: u64,
}

// ===================================================================================
// Operations
// ===================================================================================

#[derive(Clone, Debug)]
enum Time {
    Same,
    Fwd(u64),
    Back(u64),
}

#[derive(Clone, Debug)]
enum FailKind {
    Error,
    TimedOut,
    Dropped,
    Reason(Reason),
    ReasonAndError(Reason),
}

#[derive(Clone, Debug)]
enum Op {
    Push,
    PushDelayed(Duration),
    /// Expiry relative to the call's time (negative: already past), or `None` for
    /// `Timestamp::MAX`.
    PushWith(Duration, Option<i64>),
    Receive,
    ReceiveMany(usize),
    Ack(Index),
    AckMany(Vec<Index>),
    Nack(Index, FailKind, Option<Duration>),
    Extend(Index, Duration),
    Release(Index),
    DeadLetter(Index, bool),
    HandleTimeout,
    /// Jump the clock to `poll_timeout` and call `handle_timeout` there; to
    /// `Timestamp::MAX` ("never") only if the flag is set.
    Wake(bool),
    PollTimeout,
    PollEvents(usize),
    Redrive(Index),
    RedriveAll,
    TakeDeadLetter(Index),
    TakeDeadLetters,
    /// Push to and receive from a second queue, for a foreign receipt.
    Foreign,
    /// A push with a level (8: out of range), a key (see `key_of`), `replace_pending`, a
    /// delay and maybe an expiry.
    PushOpts {
        delay: Duration,
        expiry: Option<Option<i64>>,
        level: u8,
        key: Option<u8>,
        replace: bool,
    },
    /// Cancel a known id (or one past them); the flag: `cancel_leased`.
    Cancel(Index, bool),
}

#[derive(Clone, Debug)]
struct Case {
    cfg: MConfig,
    /// Compare `poll_timeout` after every step (it cleans index fronts, so half the cases
    /// leave it alone to keep stale entries around).
    poll_every_step: bool,
    steps: Vec<(Time, Op)>,
}

// ===================================================================================
// The runner
// ===================================================================================

struct Harness {
    q: Queue<Item>,
    other: Queue<Item>,
    m: Model,
    clock: u64,
    receipts: Vec<RRec>,
    next_item: Item,
}

mod coverage;
mod harness;
mod harness_step;
mod jitter;
mod ops;
mod reference;
mod reference_push;
mod reference_settle;
mod run;

use coverage::*;
use ops::*;
