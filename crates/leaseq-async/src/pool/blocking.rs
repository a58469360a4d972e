//! Blocking handlers on the runtime's blocking threads.
//!
//! A blocking handler cannot be stopped when its item times out: the worker hands the item
//! back and moves on, and the thread runs on. Such overruns are counted (in all, and still
//! running), and bounded: while `max_overruns` are still running, workers wait for one to
//! end before starting more blocking work.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use event_listener::Event;
use futures::channel::oneshot;

use crate::job_error::JobError;
use crate::pool::job::Job;
use crate::pool::stats::Counters;
use crate::pool::worker::panic_message;
use crate::runtime::Runtime;

const RUNNING: u8 = 0;
const FINISHED: u8 = 1;
const ABANDONED: u8 = 2;

/// Overrun accounting shared by a pool's workers and its blocking threads.
pub(crate) struct Overruns {
    pub(crate) counters: Arc<Counters>,
    pub(crate) max_running: u64,
    pub(crate) ended: Event,
}

/// Runs `handler(&job)` on a blocking thread; resolves with its result (a panic becomes an
/// error). If this future is dropped first (the item timed out), the run is counted as an
/// overrun until the thread finishes.
pub(crate) async fn run<T, R, H>(
    rt: R,
    overruns: Arc<Overruns>,
    handler: Arc<H>,
    job: Job<T>,
) -> Result<Result<(), JobError>, String>
where
    T: Send + Sync + 'static,
    R: Runtime,
    H: Fn(&Job<T>) -> Result<(), JobError> + Send + Sync + 'static,
{
    // Bound the threads left running by earlier time-outs.
    loop {
        let running = overruns
            .counters
            .blocking_overruns_running
            .load(Ordering::Acquire);
        if running < overruns.max_running {
            break;
        }
        let listener = overruns.ended.listen();
        if overruns
            .counters
            .blocking_overruns_running
            .load(Ordering::Acquire)
            < overruns.max_running
        {
            break;
        }
        listener.await;
    }
    let (tx, rx) = oneshot::channel();
    let state = Arc::new(AtomicU8::new(RUNNING));
    let thread_state = state.clone();
    let thread_overruns = overruns.clone();
    // The delivery's span (this future runs inside it), entered on the blocking thread too.
    #[cfg(feature = "tracing")]
    let span = tracing::Span::current();
    let task = rt.spawn_blocking(Box::new(move || {
        #[cfg(feature = "tracing")]
        let _entered = span.enter();
        let result = catch_unwind(AssertUnwindSafe(|| handler(&job))).map_err(panic_message);
        if thread_state.swap(FINISHED, Ordering::AcqRel) == ABANDONED {
            thread_overruns
                .counters
                .blocking_overruns_running
                .fetch_sub(1, Ordering::AcqRel);
            thread_overruns.ended.notify(1);
        }
        let _ = tx.send(result);
    }));
    drop(task);
    let mut guard = AbandonOnDrop {
        state,
        overruns,
        armed: true,
    };
    let result = match rx.await {
        Ok(r) => r,
        Err(_) => Err("blocking task was cancelled".into()),
    };
    guard.armed = false;
    result
}

/// Counts the thread as an overrun if the waiting future is dropped while it still runs.
struct AbandonOnDrop {
    state: Arc<AtomicU8>,
    overruns: Arc<Overruns>,
    armed: bool,
}

impl Drop for AbandonOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let c = &self.overruns.counters;
        // Count first, so the thread's decrement can never run ahead of the increment.
        c.blocking_overruns_running.fetch_add(1, Ordering::AcqRel);
        if self
            .state
            .compare_exchange(RUNNING, ABANDONED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            Counters::bump(&c.blocking_overruns);
        } else {
            c.blocking_overruns_running.fetch_sub(1, Ordering::AcqRel);
        }
    }
}
