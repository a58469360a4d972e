//! The inbox: plain pushes of an unbounded queue, kept apart from the state lock.
//!
//! A producer's plain push takes only the inbox's own lock (a `Vec` push and an id), never
//! the state lock that receivers, acks and the driver take: pushes do not contend with
//! consumers. Whoever takes the state lock next moves the inbox's items into the core, in
//! push order, under the ids they were given (so a push still returns its `MessageId` at
//! once, and each producer's items keep its order; the ids are not stored: the waiting
//! items hold the ids just below `next_id`). A push made under the state lock moves the
//! waiting items in before it takes its id, so the core's ids stay in order. A bounded
//! queue does not use it: its
//! capacity is checked under the state lock, exactly, and a full queue refuses the push
//! synchronously.
//!
//! Lock order: state, then inbox (a drain holds the state lock and takes the inbox's; a
//! push takes the inbox's alone).

use std::sync::atomic::{AtomicBool, Ordering};

use leaseq_core::{MessageId, PushOptions};
use parking_lot::Mutex;

use super::State;

pub(crate) struct Inbox<T> {
    items: Mutex<Pending<T>>,
    /// Whether items wait: set under the inbox lock by a push, cleared under it by a drain,
    /// read without it by every taker of the state lock. `SeqCst`, like the receivers'
    /// listener count (`Signal`): a receiver counts itself then reads this; a push sets this
    /// then reads the count; in one total order at least one of them sees the other, so a
    /// push never slips past a receiver that is about to sleep.
    pending: AtomicBool,
    /// Whether plain pushes go through the inbox (unbounded queues).
    pub(crate) enabled: bool,
}

struct Pending<T> {
    /// The id the next push gets: every push, through the inbox or not, takes its id here.
    next_id: u64,
    /// The waiting pushes, in push order: their ids are the `items.len()` ids before
    /// `next_id` (not stored: a push under the state lock moves them into the core before
    /// it takes an id, so no id is taken in between).
    items: Vec<T>,
}

impl<T> Pending<T> {
    /// The id of the first waiting push.
    #[inline]
    fn first_id(&self) -> u64 {
        self.next_id - self.items.len() as u64
    }
}

impl<T> Inbox<T> {
    pub(crate) fn new(next_id: MessageId, enabled: bool) -> Self {
        Inbox {
            items: Mutex::new(Pending {
                next_id: next_id.get(),
                items: Vec::new(),
            }),
            pending: AtomicBool::new(false),
            enabled,
        }
    }

    /// Whether a drain has anything to do.
    #[inline]
    pub(crate) fn pending(&self) -> bool {
        self.pending.load(Ordering::SeqCst)
    }

    /// Queues a plain push; returns its id.
    #[inline]
    pub(crate) fn push(&self, item: T) -> MessageId {
        let mut p = self.items.lock();
        let id = MessageId::new(p.next_id);
        p.next_id += 1;
        p.items.push(item);
        self.pending.store(true, Ordering::SeqCst);
        id
    }

    /// Queues plain pushes, in order; returns their ids.
    pub(crate) fn push_all(&self, items: &mut dyn Iterator<Item = T>, ids: &mut Vec<MessageId>) {
        let mut p = self.items.lock();
        let Pending {
            next_id,
            items: queued,
        } = &mut *p;
        let first = *next_id;
        // Each id taken as its item is pulled: an iterator that panics part way leaves the
        // items it gave with their ids.
        queued.extend(items.inspect(|_| *next_id += 1));
        ids.extend((first..*next_id).map(MessageId::new));
        if !p.items.is_empty() {
            self.pending.store(true, Ordering::SeqCst);
        }
    }

    /// A push made into `core` under the state lock, by `push` with the next id: taken only
    /// if `push` accepts the item. Plain pushes queued here since the lock's holder drained
    /// the inbox have smaller ids: they go into `core` first, or the core would refuse them
    /// as out of order when drained (and they would be lost).
    pub(crate) fn push_direct<U>(
        &self,
        core: &mut leaseq_core::Queue<T>,
        push: impl FnOnce(&mut leaseq_core::Queue<T>, MessageId) -> Result<MessageId, U>,
    ) -> Result<MessageId, U> {
        let mut p = self.items.lock();
        if !p.items.is_empty() {
            self.pending.store(false, Ordering::SeqCst);
            let now = core.now();
            let first = p.first_id();
            core.push_each_with_id(now, with_ids(first, p.items.drain(..)), |e| {
                debug_assert!(false, "an inbox push was refused: {e:?}");
            });
        }
        let id = push(core, MessageId::new(p.next_id))?;
        p.next_id = id.get() + 1;
        Ok(id)
    }

    /// Moves every waiting push into the core, in push order. Called with the state lock
    /// held.
    #[inline]
    pub(crate) fn drain_into(&self, st: &mut State<T>) {
        let mut p = self.items.lock();
        self.pending.store(false, Ordering::SeqCst);
        // One item (one at a time, a consumer per push): popped where it is, with no
        // vectors swapped and no `Drain` to set up and close.
        if p.items.len() == 1 {
            let id = MessageId::new(p.first_id());
            let one = p.items.pop();
            drop(p);
            if let Some(item) = one {
                let now = st.core.now();
                push_one(&mut st.core, id, item, now);
            }
            return;
        }
        drain_many(p, st);
    }
}

/// [`Inbox::drain_into`] of several items (or none): the vectors swapped, the inbox's lock
/// released, then all pushed in one call into the core (its push inlined into the loop
/// there). Out of line, so that the drain of one item saves no registers for this one.
#[inline(never)]
fn drain_many<T>(mut p: parking_lot::MutexGuard<'_, Pending<T>>, st: &mut State<T>) {
    let first = p.first_id();
    std::mem::swap(&mut p.items, &mut st.spare);
    drop(p);
    let now = st.core.now();
    let State { core, spare, .. } = st;
    core.push_each_with_id(now, with_ids(first, spare.drain(..)), |e| {
        // As `push_one`'s: an unbounded queue's slab never fills, the ids are in order.
        debug_assert!(false, "an inbox push was refused: {e:?}");
    });
}

/// `items` under consecutive ids from `first`.
#[inline]
fn with_ids<T>(first: u64, items: impl Iterator<Item = T>) -> impl Iterator<Item = (MessageId, T)> {
    (first..).map(MessageId::new).zip(items)
}

/// Pushes one of the inbox's items into the core.
#[inline(always)]
fn push_one<T>(
    core: &mut leaseq_core::Queue<T>,
    id: MessageId,
    item: T,
    now: leaseq_core::Timestamp,
) {
    // An unbounded queue refuses a push only when its slab of 2^32 slots is full; the ids
    // were handed out in order, so none is out of order.
    if let Err(e) = core.push_with_id(id, item, now, PushOptions::new()) {
        debug_assert!(false, "an inbox push was refused: {e:?}");
    }
}
