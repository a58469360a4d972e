//! The last stretch of a sleep, timed to well under a millisecond.
//!
//! tokio's timer wheel counts whole milliseconds: a timer fires at the first 1 ms tick at or
//! after its deadline, and the driver parks for a whole number of ticks counted from the
//! current (already started) tick. A tokio sleep therefore ends between 0 and about 2 ms
//! after its deadline (about 1.15 ms in leaseq's redelivery probe), and for leaseq's reaper
//! that lateness *is* the redelivery latency.
//!
//! So [`TokioRuntime`](crate::TokioRuntime)'s sleeps and timers sleep on tokio's timer until
//! [`TAIL`] before the deadline, then race tokio's timer to the deadline against this one:
//! one process-wide thread keeps the pending deadlines in a heap and waits on a condition
//! variable with the exact timeout (a kernel high-resolution timer, tens of microseconds of
//! slack), then wakes the tasks that are due. There is no polling: the thread sleeps until
//! the earliest deadline or a new earlier one. It is started by the first sleep that reaches
//! its last [`TAIL`] on a runtime with the precise timer on (the default;
//! `TokioRuntime::with_precise_timer(false)` leaves it out).
//!
//! This timer runs on the process's real clock (`std::time::Instant`); the runtime's clock
//! may be tokio's, possibly paused, or the TSC. Its win counts only once the runtime's clock
//! reads the deadline too. On tokio's real clock it does; on a paused one its win does not
//! count, and tokio's timer, auto-advanced, ends the sleep exactly on time. On the TSC, the
//! sleep is aimed again at what is left if the TSC is behind. A sleep that ends either way
//! leaves the heap, so the heap stays small: it holds the last [`TAIL`] of sleeps on a real
//! clock, and sleeps on a paused one (whose real deadline may be far off) only until tokio's
//! timer ends them.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// How long before its deadline a sleep moves from tokio's timer alone to the race with this
/// one: tokio's timer can be up to about 2 ms late.
pub(crate) const TAIL: Duration = Duration::from_millis(2);

struct Entry {
    at: Instant,
    id: u64,
    waker: Waker,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.id) == (other.at, other.id)
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    /// Reversed: the heap's top is the earliest deadline.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.id).cmp(&(self.at, self.id))
    }
}

#[derive(Default)]
struct Heap {
    entries: BinaryHeap<Entry>,
    next_id: u64,
}

struct Timers {
    heap: Mutex<Heap>,
    changed: Condvar,
}

impl Timers {
    fn lock(&self) -> MutexGuard<'_, Heap> {
        self.heap.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The timer thread: wakes what is due, then waits until the earliest deadline or a
    /// registration of an earlier one.
    fn run(&self) {
        let mut due = Vec::new();
        let mut heap = self.lock();
        loop {
            let now = Instant::now();
            while heap.entries.peek().is_some_and(|e| e.at <= now) {
                if let Some(e) = heap.entries.pop() {
                    due.push(e.waker);
                }
            }
            if !due.is_empty() {
                drop(heap);
                due.drain(..).for_each(Waker::wake);
                heap = self.lock();
                continue;
            }
            heap = match heap.entries.peek().map(|e| e.at - now) {
                Some(wait) => {
                    self.changed
                        .wait_timeout(heap, wait)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
                None => self.changed.wait(heap).unwrap_or_else(|e| e.into_inner()),
            };
        }
    }
}

/// The process-wide timer thread, started on first use; `None` if it could not be started.
fn timers() -> Option<&'static Timers> {
    static TIMERS: OnceLock<Option<&'static Timers>> = OnceLock::new();
    *TIMERS.get_or_init(|| {
        let timers: &'static Timers = Box::leak(Box::new(Timers {
            heap: Mutex::new(Heap::default()),
            changed: Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("leaseq-tokio-timer".into())
            .spawn(move || timers.run())
            .ok()
            .map(|_| timers)
    })
}

/// Whether the timer thread runs (starting it if it has not yet been).
pub(crate) fn available() -> bool {
    timers().is_some()
}

/// Completes at `at` on the process's own (real) clock, to within the kernel's timer slack.
/// Falls back to completing at once when the timer thread cannot be started (the caller then
/// finishes on tokio's timer, since its clock has not reached the deadline).
pub(crate) fn sleep_until(at: Instant) -> PreciseSleep {
    PreciseSleep {
        at,
        registered: None,
    }
}

/// See [`sleep_until`].
#[derive(Debug)]
pub(crate) struct PreciseSleep {
    at: Instant,
    /// The id and waker of our heap entry, once registered.
    registered: Option<(u64, Waker)>,
}

impl Future for PreciseSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if Instant::now() >= this.at {
            return Poll::Ready(());
        }
        let Some(timers) = timers() else {
            return Poll::Ready(());
        };
        if let Some((_, waker)) = &this.registered {
            if waker.will_wake(cx.waker()) {
                return Poll::Pending;
            }
        }
        let mut heap = timers.lock();
        if let Some((id, _)) = this.registered.take() {
            heap.entries.retain(|e| e.id != id);
        }
        let id = heap.next_id;
        heap.next_id += 1;
        let earliest = heap.entries.peek().is_none_or(|e| this.at < e.at);
        heap.entries.push(Entry {
            at: this.at,
            id,
            waker: cx.waker().clone(),
        });
        drop(heap);
        this.registered = Some((id, cx.waker().clone()));
        if earliest {
            timers.changed.notify_one();
        }
        Poll::Pending
    }
}

impl Drop for PreciseSleep {
    fn drop(&mut self) {
        // A sleep dropped early (a reaper re-armed for an earlier deadline) leaves no entry
        // behind to wake its task for nothing.
        if let (Some((id, _)), Some(timers)) = (self.registered.take(), timers()) {
            timers.lock().entries.retain(|e| e.id != id);
        }
    }
}
