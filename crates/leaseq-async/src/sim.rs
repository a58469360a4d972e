//! A runtime on virtual time, for tests and simulations.
//!
//! [`SimRuntime`] runs every task on the thread that calls [`SimRuntime::block_on`], on
//! `async-executor` (the executor smol uses), with a virtual clock. Whenever no task can
//! make progress, the clock jumps to the earliest pending timer. Hours of simulated queue
//! traffic run in milliseconds, and the same program gives the same result every run.
//!
//! Blocking work ([`Runtime::spawn_blocking`]) runs on real threads, and the virtual clock
//! does not wait for it: while a blocking job runs, the clock keeps jumping to the next timer
//! whenever the async tasks are idle. So blocking work races its own timers (an item timeout,
//! a lease deadline) and usually loses; only when no timer is pending does the simulation
//! wait for it in real time. Test blocking handlers on a real runtime.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use async_executor::Executor;
use leaseq_core::Timestamp;

use crate::executor_task::ExecutorTask;
use crate::runtime::{BoxFuture, Runtime};

thread_local! {
    static CURRENT: RefCell<Option<SimRuntime>> = const { RefCell::new(None) };
}

/// A single-threaded runtime on virtual time. Clones share the clock and the executor.
///
/// ```
/// use std::time::Duration;
/// use leaseq_async::{Runtime, SimRuntime};
///
/// let rt = SimRuntime::new();
/// let slept = rt.block_on({
///     let rt = rt.clone();
///     async move {
///         let start = rt.now();
///         rt.sleep_until(start.saturating_add(Duration::from_secs(3600))).await;
///         rt.now().saturating_duration_since(start)
///     }
/// });
/// assert_eq!(slept, Duration::from_secs(3600)); // instantly, in real time
/// ```
#[derive(Clone)]
pub struct SimRuntime {
    inner: Arc<Inner>,
}

struct Inner {
    now: AtomicU64,
    executor: Executor<'static>,
    timers: Mutex<Timers>,
    /// Blocking jobs still running on real threads.
    blocking: AtomicUsize,
    blocking_done: (Mutex<()>, Condvar),
}

#[derive(Default)]
struct Timers {
    next_seq: u64,
    queue: BinaryHeap<Reverse<(u64, u64)>>,
    wakers: HashMap<u64, Waker>,
}

impl Default for SimRuntime {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for SimRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimRuntime")
            .field("now", &self.now())
            .finish_non_exhaustive()
    }
}

impl SimRuntime {
    /// A runtime whose clock reads zero.
    pub fn new() -> Self {
        SimRuntime {
            inner: Arc::new(Inner {
                now: AtomicU64::new(0),
                executor: Executor::new(),
                timers: Mutex::new(Timers::default()),
                blocking: AtomicUsize::new(0),
                blocking_done: (Mutex::new(()), Condvar::new()),
            }),
        }
    }

    /// Runs `future` and every task spawned on this runtime until `future` completes,
    /// jumping the clock forward whenever nothing can run.
    ///
    /// # Panics
    ///
    /// If nothing can run, no timer is pending and no blocking job is outstanding while
    /// `future` is still pending: the program would wait forever.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        let previous = CURRENT.with(|c| c.borrow_mut().replace(self.clone()));
        let _restore = Restore(previous);
        let woken = Arc::new(Flag(AtomicBool::new(true)));
        let waker = Waker::from(woken.clone());
        let mut cx = Context::from_waker(&waker);
        let mut future = pin!(future);
        loop {
            if woken.0.swap(false, Ordering::AcqRel) {
                if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
                    return out;
                }
            }
            if self.inner.executor.try_tick() {
                continue;
            }
            if woken.0.load(Ordering::Acquire) {
                continue;
            }
            if !self.fire_next_timer() {
                if self.inner.blocking.load(Ordering::Acquire) > 0 {
                    let (lock, cv) = &self.inner.blocking_done;
                    let guard = lock.lock().unwrap_or_else(|e| e.into_inner());
                    let _ = cv
                        .wait_timeout(guard, std::time::Duration::from_millis(10))
                        .unwrap_or_else(|e| e.into_inner());
                    continue;
                }
                panic!("SimRuntime: deadlock: nothing can run and no timer is pending");
            }
        }
    }

    /// Moves the clock forward by `by` at once, without running any task: as if the thread
    /// had been busy that long. Timers that came due fire when the tasks next get to run.
    /// For tests of what happens when a queue's background work is starved.
    pub fn advance(&self, by: std::time::Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        let now = self.inner.now.load(Ordering::Acquire);
        self.inner
            .now
            .store(now.saturating_add(by), Ordering::Release);
    }

    /// Advances the clock to the earliest timer and wakes every timer due then. False when
    /// no timer is pending.
    fn fire_next_timer(&self) -> bool {
        let mut timers = self.inner.timers.lock().unwrap_or_else(|e| e.into_inner());
        let Some(&Reverse((at, _))) = timers.queue.peek() else {
            return false;
        };
        let now = self.inner.now.load(Ordering::Acquire).max(at);
        self.inner.now.store(now, Ordering::Release);
        let mut due = Vec::new();
        while let Some(&Reverse((t, seq))) = timers.queue.peek() {
            if t > now {
                break;
            }
            timers.queue.pop();
            if let Some(w) = timers.wakers.remove(&seq) {
                due.push(w);
            }
        }
        drop(timers);
        for w in due {
            w.wake();
        }
        true
    }
}

struct Restore(Option<SimRuntime>);

impl Drop for Restore {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::Release);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::Release);
    }
}

/// A virtual-time sleep; also [`SimRuntime`]'s resettable [`Runtime::Timer`].
pub struct SimTimer(Sleep);

impl Future for SimTimer {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.0).poll(cx)
    }
}

impl std::fmt::Debug for SimTimer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimTimer").field("at", &self.0.at).finish()
    }
}

impl Sleep {
    /// Moves the deadline; the old registration, if any, is dropped.
    fn reset(&mut self, at: u64) {
        if let Some(seq) = self.seq.take() {
            let mut timers = self.rt.timers.lock().unwrap_or_else(|e| e.into_inner());
            timers.wakers.remove(&seq);
        }
        self.at = at;
    }
}

/// A virtual-time sleep.
struct Sleep {
    rt: Arc<Inner>,
    at: u64,
    seq: Option<u64>,
}

impl Future for Sleep {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.at == u64::MAX {
            // `Timestamp::MAX` is "never": no timer, so the clock is never driven there.
            return Poll::Pending;
        }
        if self.rt.now.load(Ordering::Acquire) >= self.at {
            return Poll::Ready(());
        }
        let mut timers = self.rt.timers.lock().unwrap_or_else(|e| e.into_inner());
        let seq = match self.seq {
            Some(seq) if timers.wakers.contains_key(&seq) => seq,
            _ => {
                let seq = timers.next_seq;
                timers.next_seq += 1;
                timers.queue.push(Reverse((self.at, seq)));
                seq
            }
        };
        timers.wakers.insert(seq, cx.waker().clone());
        drop(timers);
        self.seq = Some(seq);
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some(seq) = self.seq {
            let mut timers = self.rt.timers.lock().unwrap_or_else(|e| e.into_inner());
            timers.wakers.remove(&seq);
        }
    }
}

/// A task on a [`SimRuntime`].
pub type SimTask = ExecutorTask;

impl Runtime for SimRuntime {
    type Task = SimTask;

    fn current() -> Option<Self> {
        CURRENT.with(|c| c.borrow().clone())
    }

    fn now(&self) -> Timestamp {
        Timestamp::from_nanos(self.inner.now.load(Ordering::Acquire))
    }

    fn sleep_until(&self, deadline: Timestamp) -> impl Future<Output = ()> + Send + 'static {
        Sleep {
            rt: self.inner.clone(),
            at: deadline.as_nanos(),
            seq: None,
        }
    }

    type Timer = SimTimer;

    fn timer(&self, deadline: Timestamp) -> SimTimer {
        SimTimer(Sleep {
            rt: self.inner.clone(),
            at: deadline.as_nanos(),
            seq: None,
        })
    }

    fn reset_timer(&self, timer: &mut SimTimer, deadline: Timestamp) {
        timer.0.reset(deadline.as_nanos());
    }

    fn spawn(&self, future: BoxFuture) -> SimTask {
        ExecutorTask::new(self.inner.executor.spawn(future))
    }

    fn abort(&self, task: &mut SimTask) {
        task.abort();
    }

    fn spawn_blocking(&self, work: Box<dyn FnOnce() + Send + 'static>) -> SimTask {
        let inner = self.inner.clone();
        inner.blocking.fetch_add(1, Ordering::AcqRel);
        let (tx, rx) = futures::channel::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
            inner.blocking.fetch_sub(1, Ordering::AcqRel);
            let _ = tx.send(());
            inner.blocking_done.1.notify_all();
        });
        self.spawn(Box::pin(async move {
            let _ = rx.await;
        }))
    }
}
