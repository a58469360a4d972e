//! The tokio side of leaseq's `Runtime` trait: the only tokio-specific code there is.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use leaseq_async::{BoxFuture, Runtime, Timestamp};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::precise;

/// Whether tokio's clock is the process's real clock rather than a paused (virtual) one. An
/// unpaused tokio clock reads exactly `std`'s; a paused one stands still or jumps, and is
/// soon more than a millisecond off. (A virtual clock taken for real costs at most a short
/// real wait: tokio's timer still ends the sleep on its own clock.)
fn real_clock() -> bool {
    let virtual_now = Instant::now().into_std();
    let real_now = std::time::Instant::now();
    let off = real_now
        .checked_duration_since(virtual_now)
        .unwrap_or_else(|| virtual_now.duration_since(real_now));
    off < std::time::Duration::from_millis(1)
}

/// Tokio as a leaseq runtime: tokio's clock (paused time works), `tokio::time::sleep_until`,
/// `spawn`, `abort` and `spawn_blocking` on the runtime of a [`Handle`].
///
/// Sleeps are sharper than tokio's own: tokio's timer counts whole milliseconds and ends a
/// sleep up to about 2 ms late, so a sleep runs on it until 2 ms before its deadline and
/// the rest on a process-wide timer thread that waits with the exact timeout (it holds only
/// those last 2 ms of sleeps, and never polls). A lease that runs out is then back in a
/// waiting receiver's hands about 0.15 ms after its deadline rather than 1.2 ms. On a paused
/// clock the sleep is tokio's alone.
#[derive(Clone, Debug)]
pub struct TokioRuntime {
    handle: Handle,
    epoch: Instant,
}

impl TokioRuntime {
    /// The runtime of `handle`, with its clock's epoch now.
    pub fn new(handle: Handle) -> Self {
        TokioRuntime {
            handle,
            epoch: Instant::now(),
        }
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

impl Runtime for TokioRuntime {
    type Task = TokioTask;

    fn current() -> Option<Self> {
        Handle::try_current().ok().map(TokioRuntime::new)
    }

    fn now(&self) -> Timestamp {
        Timestamp::from_duration(Instant::now().saturating_duration_since(self.epoch))
    }

    fn sleep_until(&self, deadline: Timestamp) -> impl Future<Output = ()> + Send + 'static {
        // Far-future deadlines are clamped to what tokio's timer wheel can hold.
        let far = self.epoch + std::time::Duration::from_secs(86_400 * 365 * 30);
        let at = self
            .epoch
            .checked_add(deadline.as_duration())
            .map_or(far, |t| t.min(far));
        async move {
            // tokio's timer counts whole milliseconds and ends a sleep up to ~2 ms late: sleep
            // on it until `TAIL` before the deadline, and the rest on the precise timer.
            if let Some(early) = at.checked_sub(precise::TAIL) {
                if early > Instant::now() {
                    tokio::time::sleep_until(early).await;
                }
            }
            if real_clock() {
                precise::sleep_until(at.into_std()).await;
            }
            // On a paused (virtual) clock, and should the precise timer be unavailable or
            // early on tokio's clock, tokio's own timer has the last word.
            if Instant::now() < at {
                tokio::time::sleep_until(at).await;
            }
        }
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
