//! Fetching ahead: one task takes items for all the receivers waiting (a pool's workers, or
//! a [`Consumer`](crate::Consumer)'s callers), plus a prefetch, in one step of the store
//! (one lock, one commit, one claim statement), and the receivers take them from a shared
//! buffer.
//!
//! A receiver that finds the buffer empty says it waits and sleeps; the fetcher then asks
//! the store for as many items as receivers wait plus the prefetch, less what the buffer
//! holds, and wakes one receiver per item. So a worker that finishes an item finds the next
//! one leased already, and a durable store commits the attempts of many items at once.
//!
//! A lease in the buffer runs from its claim. None is handed out with less than half its
//! visibility left: a worker that pops one that old puts it back (its attempt not
//! counted, see [`Store::put_back`]), and the fetcher sweeps the buffer at that age when
//! every worker is busy, so a prefetched item is never held (nor heart-beaten) for long
//! while others could take it. At shutdown whatever is left goes back the same way.
//!
//! Under a concurrency limit that binds (the store says a take was held back by it,
//! [`Store::limit_binds`]) the fetcher leases ahead less (halved at each such take, one
//! more at each full one, AIMD) and refills as soon as it is short, not at half: the
//! leases under the limit are then those being worked on, and a slot an ack freed is
//! asked for at once.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use event_listener::{Event, IntoNotification};
use futures::future::{select, Either};
use leaseq_core::Timestamp;

use crate::delivery::Delivery;
use crate::queue::LeaseQueue;
use crate::runtime::Runtime;
use crate::stop::{Stop, Stopping};
use crate::store::{StopWaiting, Store};

/// The buffer between the fetcher task and its receivers.
pub(crate) struct Fetcher<T, R: Runtime, S: Store<T, Runtime = R>> {
    /// Leased items, oldest claim first.
    buffer: Mutex<VecDeque<Delivery<T, R, S>>>,
    /// Workers waiting for an item.
    waiting: AtomicUsize,
    /// Notified when items arrive or the fetcher ends.
    arrived: Event,
    /// Notified when a worker starts waiting or takes an item.
    wanted: Event,
    /// The fetcher ended (the queue closed or the pool stopped): no more items come.
    ended: AtomicBool,
    /// Items leased ahead beyond the workers waiting, at most.
    prefetch: usize,
    /// Items leased ahead now: `prefetch`, less while a concurrency limit binds.
    ahead: AtomicUsize,
    /// The last take was held back by a concurrency limit.
    bound: AtomicBool,
    /// Half the queue's visibility: the age past which a lease is not handed out.
    max_age: Duration,
    /// Leases taken with a heartbeat.
    heartbeat: bool,
    /// Asked to stop: the task ends, putting back what it holds; receivers get `None`.
    stop: Arc<Stop>,
}

impl<T, R: Runtime, S: Store<T, Runtime = R>> Fetcher<T, R, S> {
    pub(crate) fn new(prefetch: usize, visibility: Duration, heartbeat: bool) -> Self {
        Fetcher {
            buffer: Mutex::new(VecDeque::new()),
            waiting: AtomicUsize::new(0),
            arrived: Event::new(),
            wanted: Event::new(),
            ended: AtomicBool::new(false),
            prefetch,
            ahead: AtomicUsize::new(prefetch),
            bound: AtomicBool::new(false),
            max_age: visibility / 2,
            heartbeat,
            stop: Arc::new(Stop::default()),
        }
    }

    /// Asks the fetcher to stop: receivers get `None`, the task puts back what it holds.
    pub(crate) fn stop(&self) {
        self.stop.ask();
    }

    /// Completes once the fetcher is asked to stop (a [`Consumer`](crate::Consumer)'s).
    pub(crate) fn stopping(&self) -> Stopping {
        Stopping::new(self.stop.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Delivery<T, R, S>>> {
        self.buffer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next item with at least half its visibility left, and the clock reading that
    /// judged it (the moment its worker starts on it); older ones are put back.
    fn pop(&self, rt: &R) -> Option<(Delivery<T, R, S>, Timestamp)> {
        loop {
            let (d, left) = {
                let mut buffer = self.lock();
                (buffer.pop_front()?, buffer.len())
            };
            let now = rt.now();
            if self.fresh(&d, now) {
                // The fetcher acts only once it is short: no wake-up before.
                if self.short(left) {
                    self.wanted.notify(1);
                }
                return Some((d, now));
            }
            d.put_back();
        }
    }

    /// Whether a buffer of `buffered` leases is to be refilled: once half of what is leased
    /// ahead is gone; at once while a limit binds (a slot another process freed goes to
    /// whichever asks first).
    fn short(&self, buffered: usize) -> bool {
        let ahead = self.ahead.load(Ordering::Relaxed);
        if self.bound.load(Ordering::Relaxed) {
            buffered < ahead
        } else {
            buffered * 2 <= ahead
        }
    }

    /// Adapts what is leased ahead to the take just made (`n` leases of `want` asked):
    /// halved when a concurrency limit held it back, one more (up to the prefetch) when it
    /// came back full.
    fn adapt(&self, binds: bool, n: usize, want: usize) {
        let ahead = self.ahead.load(Ordering::Relaxed);
        if let Some((ahead, bound)) = lease_ahead(ahead, self.prefetch, binds, n >= want) {
            self.ahead.store(ahead, Ordering::Relaxed);
            self.bound.store(bound, Ordering::Relaxed);
        }
    }

    /// Whether `d` may still be handed out at `now`: its lease is younger than half the
    /// visibility (a capped deadline, nearer than that, is judged by the deadline itself).
    fn fresh(&self, d: &Delivery<T, R, S>, now: Timestamp) -> bool {
        d.deadline().saturating_duration_since(now) >= self.max_age
    }

    /// A receiver's next item: from the buffer, or once the fetcher brings one; `None` once
    /// the fetcher is stopping or ended (the queue closed).
    pub(crate) async fn next(&self, rt: &R) -> Option<(Delivery<T, R, S>, Timestamp)> {
        loop {
            if let Some(got) = self.pop(rt) {
                return Some(got);
            }
            if self.ended.load(Ordering::Acquire) || self.stop.is_asked() {
                return None;
            }
            let listener = self.arrived.listen();
            // Counted until this worker stops waiting, however that ends (an aborted worker
            // drops this future mid-wait).
            let _waits = Waits::new(&self.waiting);
            self.wanted.notify(1);
            let got = self.pop(rt);
            if got.is_some() {
                return got;
            }
            if !self.ended.load(Ordering::Acquire) {
                select(listener, self.stop.wait()).await;
            }
        }
    }

    /// Puts back the buffered leases older than half the visibility, oldest first (the
    /// buffer is in claim order; one whose deadline an expiry cut shorter is judged when it
    /// is popped); the instant the oldest kept one stops being fresh.
    fn sweep(&self, now: Timestamp) -> Option<Timestamp> {
        let mut old = Vec::new();
        let mut buffer = self.lock();
        while buffer.front().is_some_and(|d| !self.fresh(d, now)) {
            old.extend(buffer.pop_front());
        }
        let next = buffer.front().map(|d| {
            d.deadline()
                .saturating_sub(self.max_age)
                .saturating_add(Duration::from_nanos(1))
        });
        drop(buffer);
        old.into_iter().for_each(Delivery::put_back);
        next
    }

    /// The fetcher's task: fetches while receivers wait or the prefetch is short, until
    /// asked to stop or the queue closes; then puts back what is left.
    pub(crate) async fn run(self: Arc<Self>, queue: LeaseQueue<T, R, S>) {
        let rt = queue.runtime().clone();
        let store = queue.store.clone();
        loop {
            if self.stop.is_asked() {
                break;
            }
            let listener = self.wanted.listen();
            let buffered = self.lock().len();
            let waiting = self.waiting.load(Ordering::Acquire);
            // Refilled once half of what is leased ahead is gone (or a receiver waits), so
            // that each claim takes many items: topping it up one by one would cost the store
            // a step per item, the very cost fetching ahead saves. While a limit binds, at
            // once (`short`): the slots it frees are what is scarce then, not store steps.
            let want = if waiting == 0 && !self.short(buffered) {
                0
            } else {
                (waiting + self.ahead.load(Ordering::Relaxed)).saturating_sub(buffered)
            };
            if want == 0 {
                // Every worker busy and the prefetch full enough: wait for a worker, or until the
                // oldest buffered lease is too old to hand out.
                let wake = self.sweep(rt.now()).unwrap_or(Timestamp::MAX);
                let sleep = std::pin::pin!(rt.sleep_until(wake));
                let stop = self.stop.wait();
                select(listener, select(sleep, stop)).await;
                continue;
            }
            drop(listener);
            let mut taken = Vec::new();
            let mut waiting = S::Waiting::default();
            let took = {
                let wait = StopWaiting(&*store, &mut waiting);
                // The stop asked first, at every poll: an item put back since (a handler's
                // `JobError::stopped`) is not leased again only to be put back again.
                let take = std::future::poll_fn(|cx| {
                    if self.stop.is_asked() {
                        return std::task::Poll::Ready(false);
                    }
                    store.poll_take(&mut *wait.1, cx, want, self.heartbeat, &mut taken)
                });
                let take = std::pin::pin!(take);
                match select(take, self.stop.wait()).await {
                    Either::Left((took, _)) => took,
                    Either::Right(_) => false,
                }
            };
            let n = taken.len();
            if n > 0 {
                self.adapt(store.limit_binds(), n, want);
            }
            self.lock()
                .extend(taken.into_iter().map(|t| Delivery::new(store.clone(), t)));
            // `n` more receivers woken, whoever was woken before: a receiver woken for an
            // earlier take and not yet run counts for `notify(n)` alone, which then woke
            // nobody new and left a lease in the buffer beside a waiting worker.
            self.arrived.notify(n.additional());
            if !took && n == 0 {
                // The queue closed.
                break;
            }
        }
        self.ended.store(true, Ordering::Release);
        self.arrived.notify(usize::MAX);
        let left: Vec<_> = self.lock().drain(..).collect();
        left.into_iter().for_each(Delivery::put_back);
    }
}

/// The least a fetcher held back by a concurrency limit leases ahead (or its prefetch, if
/// smaller): a few workers' items, so that a worker does not wait a claim's round trip
/// (a commit's flush on Postgres) for each item.
const MIN_AHEAD: usize = 4;

/// What a fetcher leases ahead after a take, and whether it refills as soon as it is
/// short, from what it leased ahead (`ahead`, at most `prefetch`) and the take: held back
/// by a concurrency limit (`binds`): halved (AIMD's decrease, down to [`MIN_AHEAD`]),
/// refilled at once; else, if it came back `full`: one more, refilled at half again.
/// `None`: unchanged (a take short for want of items).
///
/// Why: under a limit shared by several processes, a lease waiting in one's buffer holds
/// a slot no other worker can use, and a fetcher refilling only at half leaves slots freed
/// by acks idle until it asks (BENCHMARKS.md, round 11).
fn lease_ahead(ahead: usize, prefetch: usize, binds: bool, full: bool) -> Option<(usize, bool)> {
    if binds {
        Some(((ahead / 2).max(MIN_AHEAD.min(prefetch)), true))
    } else if full {
        Some(((ahead + 1).min(prefetch), false))
    } else {
        None
    }
}

/// One worker counted as waiting while this lives.
struct Waits<'a>(&'a AtomicUsize);

impl<'a> Waits<'a> {
    fn new(waiting: &'a AtomicUsize) -> Self {
        waiting.fetch_add(1, Ordering::AcqRel);
        Waits(waiting)
    }
}

impl Drop for Waits<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl<T, R: Runtime, S: Store<T, Runtime = R>> Drop for Fetcher<T, R, S> {
    fn drop(&mut self) {
        let left: Vec<_> = self.lock().drain(..).collect();
        left.into_iter().for_each(Delivery::put_back);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_that_binds_halves_the_lease_ahead_and_full_takes_win_it_back() {
        // Held back: halved, refilled at once; never below the floor (nor above the prefetch).
        assert_eq!(lease_ahead(32, 32, true, false), Some((16, true)));
        assert_eq!(lease_ahead(16, 32, true, true), Some((8, true)));
        assert_eq!(lease_ahead(5, 32, true, false), Some((MIN_AHEAD, true)));
        assert_eq!(lease_ahead(2, 2, true, false), Some((2, true)));
        assert_eq!(lease_ahead(0, 0, true, false), Some((0, true)));
        // Full takes: one more each, up to the prefetch, refilled at half again.
        assert_eq!(lease_ahead(4, 32, false, true), Some((5, false)));
        assert_eq!(lease_ahead(32, 32, false, true), Some((32, false)));
        // Short for want of items: nothing learnt.
        assert_eq!(lease_ahead(8, 32, false, false), None);
        let mut ahead = MIN_AHEAD;
        for _ in 0..100 {
            ahead = lease_ahead(ahead, 32, false, true).unwrap().0;
        }
        assert_eq!(ahead, 32);
    }
}
