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

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use event_listener::Event;
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
    /// Items leased ahead beyond the workers waiting.
    prefetch: usize,
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
                // The fetcher acts only once half the prefetch is gone: no wake-up before.
                if left * 2 <= self.prefetch {
                    self.wanted.notify(1);
                }
                return Some((d, now));
            }
            d.put_back();
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
            // Refilled once half the prefetch is gone (or a receiver waits), so that each
            // claim takes many items: topping it up one by one would cost the store a step
            // per item, the very cost fetching ahead saves.
            let want = if waiting == 0 && buffered * 2 > self.prefetch {
                0
            } else {
                (waiting + self.prefetch).saturating_sub(buffered)
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
                let take = std::future::poll_fn(|cx| {
                    store.poll_take(&mut *wait.1, cx, want, self.heartbeat, &mut taken)
                });
                let take = std::pin::pin!(take);
                match select(take, self.stop.wait()).await {
                    Either::Left((took, _)) => took,
                    Either::Right(_) => false,
                }
            };
            let n = taken.len();
            self.lock()
                .extend(taken.into_iter().map(|t| Delivery::new(store.clone(), t)));
            self.arrived.notify(n);
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
