//! The world of `async_chaos.rs`: its items (some panic when dropped), the lanes (a queue
//! and what the test holds of it), the pools' handlers, the checks made after every step,
//! and what the run met (`Coverage`).

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::pin;
use std::sync::{Arc, Mutex, Once};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures::future::{select, Either};
use leaseq_async::{
    Delivery, ItemState, ItemTimeout, JobError, LeaseQueue, MessageId, Pool, ReceiveStream,
    Runtime, SimRuntime,
};

pub(crate) const LANES: usize = 3;
pub(crate) const WORKERS: usize = 2;

/// An item; every copy of a `bomb` panics when dropped.
#[derive(Clone)]
pub(crate) struct Item {
    pub(crate) n: u64,
    pub(crate) bomb: bool,
}

impl Drop for Item {
    fn drop(&mut self) {
        if self.bomb && !std::thread::panicking() {
            panic!("chaos: bomb item {} dropped", self.n);
        }
    }
}

/// Held by a hanging handler: panics when the timed-out future is dropped.
struct Guard;

impl Drop for Guard {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("chaos: guard dropped");
        }
    }
}

pub(crate) type Q = LeaseQueue<Item, SimRuntime>;

/// (lane, id, attempt) of every item a pool handler is running now.
pub(crate) type Running = Arc<Mutex<Vec<(usize, MessageId, u32)>>>;

/// Removes its entry from `Running` when the handler's future ends or is dropped.
struct RunningEntry(Running, (usize, MessageId, u32));

impl Drop for RunningEntry {
    fn drop(&mut self) {
        let mut r = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = r.iter().position(|e| *e == self.1) {
            r.swap_remove(i);
        }
    }
}

/// One queue and what the test holds of it.
pub(crate) struct Lane {
    pub(crate) handle: Option<Q>,
    pub(crate) stream: Option<ReceiveStream<Item, SimRuntime>>,
    pub(crate) pool: Option<Pool<Item, SimRuntime>>,
    pub(crate) pushed: u64,
}

impl Lane {
    pub(crate) fn queue(&self) -> &Q {
        match (&self.handle, &self.stream) {
            (Some(q), _) => q,
            (None, Some(s)) => s.queue(),
            (None, None) => unreachable!("a lane always keeps a handle or a stream"),
        }
    }
}

pub(crate) struct Held {
    pub(crate) lane: usize,
    pub(crate) d: Delivery<Item, SimRuntime>,
}

/// How often the run met each case the test is about: a run that met none proves nothing.
#[derive(Debug, Default)]
pub(crate) struct Coverage {
    pub(crate) cancelled_receives: u64,
    pub(crate) foreign_refused: u64,
    pub(crate) shortened_extends: u64,
    pub(crate) stream_only_steps: u64,
    pub(crate) stream_items: u64,
    pub(crate) worker_panics: u64,
    pub(crate) pool_shutdowns: u64,
    pub(crate) worker_aborts: u64,
    pub(crate) bombs_caught: u64,
}

pub(crate) fn quiet_chaos_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let msg = info
                .payload()
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| info.payload().downcast_ref::<&str>().copied())
                .unwrap_or("");
            if !msg.starts_with("chaos:") || std::env::var_os("CHAOS_LOUD").is_some() {
                default(info);
            }
        }));
    });
}

/// Runs `f`, swallowing a panic from an item's or guard's `Drop` (which the layer lets
/// through to the caller once its state is consistent).
pub(crate) fn guarded<U>(f: impl FnOnce() -> U) -> Option<U> {
    let out = catch_unwind(AssertUnwindSafe(f)).ok();
    if out.is_none() {
        BOMBS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    out
}

pub(crate) static BOMBS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

pub(crate) async fn within<F: Future>(
    rt: &SimRuntime,
    limit: Duration,
    fut: F,
) -> Option<F::Output> {
    let sleep = pin!(rt.sleep_until(rt.now().saturating_add(limit)));
    match select(pin!(fut), sleep).await {
        Either::Left((out, _)) => Some(out),
        Either::Right(_) => None,
    }
}

/// Polls `fut` once and drops it: a receive cancelled mid-way unless it was ready.
pub(crate) fn poll_once<F: Future>(fut: F) -> Option<F::Output> {
    let mut cx = Context::from_waker(Waker::noop());
    match pin!(fut).poll(&mut cx) {
        Poll::Ready(out) => Some(out),
        Poll::Pending => None,
    }
}

pub(crate) fn start_pool(
    rt: &SimRuntime,
    lane: usize,
    q: &Q,
    running: &Running,
) -> Pool<Item, SimRuntime> {
    let (rt, running) = (rt.clone(), running.clone());
    Pool::builder(q.clone())
        .workers(WORKERS)
        // No heartbeat (the default is on): the checks count the heartbeats of the test's
        // own deliveries.
        .heartbeat(false)
        .item_timeout(ItemTimeout::Fixed(Duration::from_millis(50)))
        .spawn(move |job| {
            let entry = (lane, job.id, job.attempt);
            running
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(entry);
            let entry = RunningEntry(running.clone(), entry);
            let rt = rt.clone();
            // The job (and its copy of the item, which may be a bomb) is dropped inside the
            // future, where the pool catches a panic: a panic in a `Drop` as a function
            // returns leaks its return value (rust-lang/rust#47949), here the entry.
            async move {
                let _entry = entry;
                let n = job.item.n;
                drop(job);
                match n % 8 {
                    4 => return Err(JobError::retry("chaos: failed")),
                    5 => return Err(JobError::permanent("chaos: poison")),
                    6 => panic!("chaos: handler panicked"),
                    7 => {
                        let _guard = Guard;
                        std::future::pending::<()>().await;
                    }
                    _ => {
                        let pause = Duration::from_millis(1 + n % 30);
                        rt.sleep_until(rt.now().saturating_add(pause)).await;
                    }
                }
                Ok(())
            }
        })
}

/// The checks made after every step.
pub(crate) fn check(lanes: &[Lane], held: &[Held], running: &Running, step: usize) {
    let running = running.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for (i, lane) in lanes.iter().enumerate() {
        let q = lane.queue();
        if let Err(e) = q.check_invariants() {
            panic!("step {step}, lane {i}: {e}");
        }
        for item in q.store().peek() {
            if let ItemState::InFlight { .. } = item.state {
                let key = (i, item.id, item.attempts);
                let by_test = held
                    .iter()
                    .any(|h| (h.lane, h.d.id(), h.d.attempt()) == key);
                assert!(
                    by_test || running.contains(&key),
                    "step {step}, lane {i}: {item:?} is in flight with no live delivery"
                );
            }
        }
        let beating = held
            .iter()
            .filter(|h| h.lane == i && h.d.has_heartbeat() && !h.d.is_lease_lost())
            .count();
        assert_eq!(q.heartbeats(), beating, "step {step}, lane {i}: heartbeats");
        if let Some(pool) = &lane.pool {
            assert_eq!(
                pool.live_workers(),
                WORKERS,
                "step {step}, lane {i}: workers"
            );
        }
    }
}
