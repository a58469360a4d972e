//! `leaseq-core`: the lease state machine behind leaseq's in-process work queues.
//!
//! A worker that takes an item from a plain channel owns the only copy: if it hangs, panics or
//! gives up, the item is gone. A lease queue hands out **leases** instead. A received item
//! stays in the queue, invisible for a *visibility timeout*, and comes back unless the holder
//! acks it with the [`Receipt`] it was given. Attempts are counted in the queue, failed items
//! wait out a [`Backoff`], and an item that keeps failing goes to the [dead
//! letters](DeadLetter) with its attempt count, reason and last error.
//!
//! This crate is only the state machine: `#![no_std]` with `alloc`, no unsafe code, no
//! clock, no timers, no threads, no I/O. The same inputs always give the same outputs.
//! The async adapters (`leaseq-tokio`, `leaseq-smol`) drive it for you; embed it directly to
//! run it on your own executor, in a simulation, or on a microcontroller.
//!
//! # Driving rules
//!
//! 1. **Pass the time.** Every operation takes `now`, a [`Timestamp`] in nanoseconds since
//!    an epoch you pick, from a monotonic clock. A `now` earlier than one already seen is
//!    taken as the latest seen: time never runs backwards inside the queue.
//! 2. **Wake when asked.** [`Queue::poll_timeout`] gives the earliest moment at which
//!    something changes by itself (a lease deadline, the end of a delay or backoff, an item's
//!    expiry). Call [`Queue::handle_timeout`] at or after it. Re-read `poll_timeout` after
//!    every operation that can move it (push, receive, extend, nack, release, redrive, and
//!    `handle_timeout` itself). Calling `handle_timeout` early or twice does nothing.
//! 3. **Everything due is applied first.** Every operation first applies all that is due at
//!    its `now`, exactly as `handle_timeout` would. So the state after a sequence of calls
//!    does not depend on how punctually the driver woke; waking on time only keeps events and
//!    redeliveries from being late.
//! 4. **Drain events.** [`Queue::poll_event`] returns what happened ([`Event`]) in order.
//!    Unpolled events are bounded ([`Config::with_event_capacity`]); the oldest are dropped
//!    and counted.
//!
//! # Order
//!
//! Every item has a **priority level**, `0..=`[`MAX_PRIORITY`] (8 levels), set on push with
//! [`PushOptions::priority`]; 0, the default, is the lowest. A receive serves the **highest
//! level that has a visible item**; within a level, visible items are delivered in the order
//! they became visible. An item pushed, nacked without delay or released becomes visible
//! during that call. An item whose delay, backoff or lease ends becomes visible at that
//! scheduled instant; such items are applied in order of (instant, message id) before the
//! calling operation does anything else. So within a level the order is FIFO by visibility
//! time with ties in push order, and a call's own item comes after everything that became
//! visible by itself at the same instant. An item keeps its level for life: redeliveries,
//! backoffs and redrives do not change it.
//!
//! **Starvation.** Levels are strict: a level is served only while every higher level has
//! no visible item, so a lower level waits as long as higher levels keep receivers busy. The
//! core does not age priorities. Aging would make the order depend on how long items have
//! waited, not only on (level, visibility time, push order): harder to predict and to
//! check, and it hides an overload instead of showing it. This is the rule of BullMQ, River
//! and Oban too. [`Queue::ready_per_level`] shows a backlog building at a level; give work
//! that must progress under load its own queue, or push it at a level computed from its
//! age.
//!
//! # Unique keys
//!
//! A push can carry a [`UniqueKey`] ([`PushOptions::key`], at most
//! [`UniqueKey::MAX_LEN`] bytes). While an item with that key is **ready, delayed or in
//! flight**, another push with the same key is refused with [`PushError::DuplicateKey`],
//! which names the item holding it and hands the new item back. With
//! [`PushOptions::replace_pending`], a holder that is ready or delayed is replaced instead
//! (removed and counted as cancelled, [`Event::Replaced`]; the new item gets a new id and its
//! own options); a holder in flight is never replaced. The key is free again as soon as its
//! item is acked, dead-lettered (expiry included) or cancelled; a redelivery keeps it. A dead
//! letter keeps its key: [`Queue::redrive`] takes the key again, or is refused with
//! [`RedriveError::KeyTaken`] while a live item pushed since holds it. Pushes without a key
//! never touch the key table.
//!
//! # Cancel
//!
//! [`Queue::cancel`] removes a ready or delayed item by id and hands it back; an item in
//! flight is refused with [`CancelError::InFlight`] and left to its holder.
//! [`Queue::cancel_leased`] cancels it anyway: the lease ends, and the holder's ack, nack,
//! extend or dead-letter is refused with [`ReceiptError::Cancelled`]. A cancelled item's key
//! is free at once. Cancelled items are counted in [`Stats::cancelled`], which joins the
//! conservation law: `pushed + restored + restored_dead = acked + ready + delayed +
//! in_flight + dead + taken + cancelled` (`restored` and `restored_dead`: what a durable
//! store put back when it was opened).
//!
//! # Snooze
//!
//! [`Queue::snooze`] puts a running lease back for a delay **without counting its attempt**
//! (the next delivery has the same attempt number): for a handler that finds the item not
//! ready for it yet. Bounded so that an item cannot snooze forever unnoticed: at most
//! [`Config::with_max_snoozes`] uncounted snoozes per item life (default 25; a redrive
//! starts afresh), after which each snooze counts as a failed attempt ([`Reason::Released`],
//! last error `"snooze limit reached"`) and the item ends in the dead letters once its
//! attempts are spent. Counted in [`Stats::snoozed`].
//!
//! # Concurrency limits
//!
//! [`Queue::set_limit`] caps the items in flight: for the whole queue
//! ([`LimitScope::Queue`]), per job kind or per partition (a customer, a tenant) given at
//! push with [`Queue::push_flow`] and [`FlowKeys`]. A receive leases the first item, in the
//! usual order (highest level first, then visibility order), that no full limit holds back;
//! a held-back item stays ready in its place and those behind it go. A limit set, raised or
//! lowered takes effect at the next receive (lowered below what is in flight, it takes no
//! lease back). [`Queue::waiting_on_limits`] counts the ready items held back;
//! [`Queue::in_flight_of`] the items in flight of a scope. Cost: none for a queue that
//! never set a limit nor pushed flow keys (the receive's level-0 test covers it); with them,
//! a receive takes a step per held-back item ahead of the one it leases, and a
//! `BTreeMap` lookup per flow key.
//!
//! # Ordered groups
//!
//! A push with [`FlowKeys::group`] puts the item in an ordered group: the group's items are
//! handed out strictly in push order, one at a time (the next waits until the one before is
//! acked, dead-lettered or cancelled; a failed or snoozed item keeps its group waiting
//! through its backoff or delay). Groups take turns: when a group's next item becomes
//! eligible it goes behind the items ready then, so one large group cannot starve the
//! others. **A dead letter releases its group** (as SQS FIFO does when a message moves to
//! its dead-letter queue); a redrive puts the item back at its place in push order, where it
//! is the group's head again once nothing of the group is in flight. Cost: a group's items
//! behind its head stay in the ready lists and a receive walks past them.
//!
//! # Items
//!
//! A [`Lease`] carries a clone of the item (`T: Clone` is needed by receive only); the queue
//! keeps the original until ack or dead-letter, so a redelivery hands out the same item.
//! Queue `Arc<T>` for items that are expensive to clone.
//!
//! # Attempts and receipts
//!
//! `max_attempts` is the number of deliveries an item gets. Every way an attempt ends
//! without an ack counts: lease expiry, [`nack`](Queue::nack) (errors, item timeouts, dropped
//! holders), [`release`](Queue::release). The failure of the last allowed attempt
//! dead-letters the item instead of returning it. A receipt is stale forever once its item
//! was leased again, handed back, dead-lettered or acked; the [`ReceiptError`] says which.
//! An ack after the deadline for an item nobody has leased again is still accepted: it saves
//! a duplicate run, and is counted apart ([`Stats::late_acks_unclaimed`]).
//!
//! # Cost
//!
//! Push, receive, ack, nack and extend are O(1) amortized with one visibility for all leases
//! and no or fixed backoff (deadlines then arrive in order: leases on a list linked through
//! the slots, delays in a FIFO); a timer that arrives out of order (capped extension,
//! exponential backoff, expiry) costs O(log n).
//! Each level has its own ready list and a bitmask says which levels have ready items, so a
//! receive finds the highest one in O(1); a queue that uses level 0 only takes a branch of
//! its own. A key costs a hash and one table lookup on push and one removal when its item
//! leaves; [`Queue::cancel`] finds the item with a pass over the slots (O(items)), since the
//! hot paths keep no index by id.
//! An extend that moves a deadline later only updates the lease's slot: the index entry
//! catches up when it surfaces. Acks and extends that shorten a lease leave stale index
//! entries behind; each index compacts itself when it exceeds twice its live entries plus 64,
//! so memory stays O(items). Receipts and ids are small `Copy` values checked in O(1).
//!
//! # Determinism and replay
//!
//! The queue holds no hidden inputs: jitter comes from a PRNG seeded in the [`Config`], and
//! ids are assigned in push order. Replaying the same calls with the same `now`s into a fresh
//! queue reproduces the same state, results and events (receipts differ only in the queue
//! tag that tells queues apart).
//!
//! # Retry rules per job kind
//!
//! A failed attempt's fate is the [`RetryPolicy`] of the queue's [`Config`], unless the
//! holder says otherwise: [`Failure::retry_after`] retries after exactly its delay,
//! [`Failure::permanent`] ([`Retry::Never`]) dead-letters at once. A [`KindPolicy`] gives one
//! kind of job its own max attempts, backoff and item timeout: a pure function that turns a
//! kind's failure into the [`Failure`] to nack with, so every store applies it unchanged.
//!
//! # Periodic jobs
//!
//! The [`schedule`] module is the policy of periodic jobs: a [`schedule::Schedule`] on an
//! interval or on calendar ticks computed outside the core (cron, time zones), which ticks
//! to push after a gap ([`schedule::CatchUp`]), and each tick's unique key, so that several
//! processes pushing one schedule land each tick once. Its times are wall-clock.
//!
//! # Jobs that wait for jobs
//!
//! The [`graph`] module holds jobs that wait for other jobs (dependencies, workflows of
//! named steps, batches with a completion callback) beside the queue: a [`graph::Graph`]
//! keeps a waiting job's payload and hands it back exactly once, when its parents are
//! acked (or, by its policy, have failed), for the driver to push in the same step as the
//! parent's ack. Jobs without dependencies never touch it.
//!
//! # Latency advisor
//!
//! [`LatencyAdvisor`] records handling times per item type in bounded [`Histogram`]s and
//! suggests item timeouts (`max(floor, multiplier × p99)`), with timeout rates per type.
//!
//! # Features
//!
//! - `serde`: `Serialize` and `Deserialize` for what observers keep or ship: [`Stats`],
//!   [`DeadLetter`] (when its item is), [`Config`] (with [`Backoff`], [`Jitter`],
//!   [`EventMask`]), [`Event`], [`Reason`], [`LateAckKind`], [`MessageId`], [`Timestamp`]
//!   (as nanoseconds), [`UniqueKey`] (a string when it is UTF-8, else bytes), [`ItemView`],
//!   [`Outcome`] and [`TypeReport`]. `no_std`: serde with `alloc` only.
//!
//! # Performance
//!
//! In steady state, one push + receive + ack of a `u64` item costs about 19 ns, with 1k items
//! queued and with 1M items queued; priority levels added 0.4 to 0.5 ns to it (a mask check
//! on receive, a byte per slot, a key check on ack). A bare `VecDeque` `push_back` +
//! `pop_front` costs 2.1 ns at 1k and 5.1 ns at 1M in the same run. With `Arc<[u8; 64]>`
//! items the figure is about 21 ns. An extend costs about 9 ns. (Those times are from
//! before the lists linked through the slots, which took the round trip from 335 to 245
//! instructions: see BENCHMARKS.md.) Each queued item takes its slot, 80 bytes with a `u64`
//! item, and nothing more while ready or in flight with the uniform visibility (its place
//! on the ready or in-flight list is the slot's links).
//!
//! With the items spread over the 8 levels and pushes at level 7, the round trip costs 25 to
//! 31 ns from 1k to 1M queued. With a unique key on every item it costs about 48 ns at 1k,
//! 72 ns at 100k and 360 ns at 1M: the key table holds an entry per live item, so at 1M a
//! push's lookup and an ack's removal each touch a random cache line of a 32 MB table, a
//! cache and TLB miss each (a dependent random read in 32 MB takes about 180 ns on this
//! machine). A keyed item takes about 120 bytes more (the key inline, its table entry).
//!
//! Measured with `cargo bench --features bench --bench core` on a shared 2-core AMD EPYC (Zen 4). See
//! `BENCHMARKS.md` in the repository for every figure, the machine and what limits the cost.
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

mod advisor;
mod backoff;
mod config;
mod dead_letter;
mod error;
mod event;
mod flow;
pub mod graph;
mod histogram;
mod id;
mod key;
mod key_table;
mod key_window;
mod kind_policy;
mod lease;
mod outcome;
mod policy;
mod queue;
mod rate;
pub mod schedule;
mod stats;
mod time;
mod timer_index;
mod view;

pub use advisor::{LatencyAdvisor, Outcome, TypeReport};
pub use backoff::{Backoff, Jitter};
pub use config::Config;
pub use dead_letter::DeadLetter;
pub use error::{CancelError, ConfigError, PushError, ReceiptError, RedriveError};
pub use event::{Event, EventMask, LateAckKind, Reason};
pub use flow::{FlowKey, FlowKeys, GroupDeadLetter, LimitScope};
pub use histogram::Histogram;
pub use id::{MessageId, Receipt};
pub use key::UniqueKey;
pub use key_window::KeyWindow;
pub use kind_policy::KindPolicy;
pub use lease::Lease;
pub use outcome::{
    Acked, Extended, Failure, Nacked, PushOptions, Pushed, Retry, MAX_PRIORITY, PRIORITY_LEVELS,
};
pub use policy::{RetryPolicy, Verdict};
pub use queue::{IndexSizes, Queue, RestoreError, Restored, RestoredDeadLetter, Snoozed};
pub use rate::Rate;
pub use stats::{ConservationError, Stats};
pub use time::Timestamp;
pub use view::{ItemState, ItemView};
