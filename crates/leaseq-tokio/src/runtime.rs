//! The tokio side of leaseq's `Runtime` trait: the only tokio-specific code there is.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use leaseq_async::{BoxFuture, Runtime, Timestamp};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::precise;

/// The resolution of tokio's timer.
const TICK: std::time::Duration = std::time::Duration::from_millis(1);

/// Tokio as a leaseq runtime: tokio's clock (paused time works), tokio's timer, `spawn`,
/// `abort` and `spawn_blocking` on the runtime of a [`Handle`].
///
/// Sleeps are sharper than tokio's own: tokio's timer counts whole milliseconds and ends a
/// sleep up to about 2 ms late, so a sleep runs on it until 2 ms before its deadline, then
/// races it to the deadline against a process-wide timer thread that waits with the exact
/// timeout (and never polls). That thread waits on the real clock, so its win counts only
/// if tokio's clock has reached the deadline too. On a real clock it has, and a lease that
/// runs out is back in a waiting receiver's hands about 0.15 ms after its deadline rather
/// than 1.2 ms. On a paused clock it need not have, and the sleep then ends on tokio's
/// timer, which auto-advance fires exactly at the deadline in virtual time. Far deadlines
/// are kept as they are (tokio's timer holds them); one too far off for an [`Instant`]
/// never comes.
///
/// A sleep takes its timer from this runtime when it is created, so it can be awaited on
/// any thread, a tokio context or not (`Delivery::lease_lost` from `block_on`, say).
/// [`now`](Runtime::now), though, reads `tokio::time::Instant::now()`, which outside a
/// tokio context reads the real clock: on a paused runtime, clock reads from a thread
/// outside it (a `push` or `Delivery::is_lease_lost` there, say) see real time, not the
/// runtime's virtual time. (`now` is on the hot path, so it does not enter the runtime.)
#[derive(Clone, Debug)]
pub struct TokioRuntime {
    handle: Handle,
    epoch: Instant,
}

impl TokioRuntime {
    /// The runtime of `handle`, with its clock's epoch now (on that runtime's clock, paused
    /// or not, wherever this is called).
    pub fn new(handle: Handle) -> Self {
        let epoch = {
            let _in_runtime = handle.enter();
            Instant::now()
        };
        TokioRuntime { handle, epoch }
    }
}

/// A sleep as [`TokioRuntime::sleep_until`] plans it when it is created.
enum Plan {
    /// The deadline has passed.
    Done,
    /// The deadline is not a representable [`Instant`]: it never comes.
    Never,
    /// A sleep on tokio's timer until `TAIL` before the deadline if `coarse`, then to the
    /// deadline `at` in a race with the precise timer.
    Sleep {
        sleep: tokio::time::Sleep,
        coarse: bool,
        at: Instant,
        handle: Handle,
    },
}

/// The last stretch of a sleep: tokio's timer, reset to `at`, against the precise timer.
/// A win of the precise timer (on the real clock) counts once tokio's clock reads `at`.
async fn finish(sleep: Pin<&mut tokio::time::Sleep>, at: Instant, handle: Handle) {
    let mut sleep = sleep;
    let mut precise = std::pin::pin!(precise::sleep_until(at.into_std()));
    let tokio_won = std::future::poll_fn(|cx| {
        if sleep.as_mut().poll(cx).is_ready() {
            Poll::Ready(true)
        } else if precise.as_mut().poll(cx).is_ready() {
            Poll::Ready(false)
        } else {
            Poll::Pending
        }
    })
    .await;
    if tokio_won {
        return;
    }
    // Read tokio's clock in the runtime: this may be polled outside it, where it would
    // read the real clock even when the runtime's is paused.
    let early = {
        let _in_runtime = handle.enter();
        Instant::now() < at
    };
    if early {
        // A paused clock (or no precise timer): tokio's timer has the last word.
        sleep.await;
    }
}

/// A task spawned by [`TokioRuntime`].
#[derive(Debug)]
pub struct TokioTask(JoinHandle<()>);

impl Future for TokioTask {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // Ended, panicked or aborted: all the same to a joiner.
        Pin::new(&mut self.0).poll(cx).map(|_| ())
    }
}

/// [`TokioRuntime`]'s resettable timer (see [`Runtime::Timer`]).
pub struct TokioTimer(Pin<Box<dyn Future<Output = ()> + Send>>);

impl Future for TokioTimer {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0.as_mut().poll(cx)
    }
}

impl std::fmt::Debug for TokioTimer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokioTimer")
    }
}

impl Runtime for TokioRuntime {
    type Task = TokioTask;

    fn current() -> Option<Self> {
        Handle::try_current().ok().map(TokioRuntime::new)
    }

    fn now(&self) -> Timestamp {
        Timestamp::from_duration(Instant::now().saturating_duration_since(self.epoch))
    }

    fn sleep_until(&self, deadline: Timestamp) -> impl Future<Output = ()> + Send + 'static {
        // Planned here, in the runtime: a tokio `Sleep` takes its timer from the context it
        // is created in (and panics without one), and tokio's clock is the context's. The
        // guard is not `Send`, so it ends before the future begins.
        let plan = match self
            .epoch
            .checked_add(deadline.as_duration())
            // tokio's timer rounds a deadline up to its next millisecond.
            .filter(|at| at.checked_add(TICK).is_some())
        {
            None => Plan::Never,
            Some(at) => {
                let _in_runtime = self.handle.enter();
                let now = Instant::now();
                if at <= now {
                    Plan::Done
                } else {
                    // tokio's timer ends a sleep up to ~2 ms late: sleep on it until
                    // `TAIL` before the deadline, and race the rest (see `finish`). Far
                    // deadlines are tokio's timer's business: its wheel keeps timers
                    // beyond its range in its top level and re-files them as they near.
                    let early = at.checked_sub(precise::TAIL).filter(|&early| early > now);
                    Plan::Sleep {
                        sleep: tokio::time::sleep_until(early.unwrap_or(at)),
                        coarse: early.is_some(),
                        at,
                        handle: self.handle.clone(),
                    }
                }
            }
        };
        async move {
            match plan {
                Plan::Done => {}
                Plan::Never => std::future::pending().await,
                Plan::Sleep {
                    sleep,
                    coarse,
                    at,
                    handle,
                } => {
                    let mut sleep = std::pin::pin!(sleep);
                    if coarse {
                        sleep.as_mut().await;
                        // Resetting needs no context: the timer is the one taken above.
                        sleep.as_mut().reset(at);
                    }
                    finish(sleep, at, handle).await;
                }
            }
        }
    }

    type Timer = TokioTimer;

    fn timer(&self, deadline: Timestamp) -> TokioTimer {
        TokioTimer(Box::pin(self.sleep_until(deadline)))
    }

    fn reset_timer(&self, timer: &mut TokioTimer, deadline: Timestamp) {
        timer.0 = Box::pin(self.sleep_until(deadline));
    }

    fn spawn(&self, future: BoxFuture) -> TokioTask {
        TokioTask(self.handle.spawn(future))
    }

    fn abort(&self, task: &mut TokioTask) {
        task.0.abort();
    }

    fn spawn_blocking(&self, work: Box<dyn FnOnce() + Send + 'static>) -> TokioTask {
        TokioTask(self.handle.spawn_blocking(work))
    }
}
