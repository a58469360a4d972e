//! The tokio side of leaseq's `Runtime` trait: the only tokio-specific code there is.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use leaseq_async::{BoxFuture, Runtime, Timestamp};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Tokio as a leaseq runtime: tokio's clock (paused time works), `tokio::time::sleep_until`,
/// `spawn`, `abort` and `spawn_blocking` on the runtime of a [`Handle`].
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
        tokio::time::sleep_until(at)
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
