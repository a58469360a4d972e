//! The small trait an async runtime implements to drive a queue.

use std::future::Future;
use std::pin::Pin;

use leaseq_core::Timestamp;

/// A boxed, sendable future, as spawned on a [`Runtime`].
pub type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// What leaseq needs from an async runtime: a clock, timers, tasks and blocking threads.
///
/// That is all the runtime-specific code there is; everything else (queues, deliveries,
/// heartbeats, pools, watchdog) is written once on top of it. `leaseq-tokio` and
/// `leaseq-smol` implement it in a few dozen lines each, and `SimRuntime` (feature `sim`)
/// implements it on virtual time for tests and simulations.
///
/// Time is a [`Timestamp`]: nanoseconds since an epoch the runtime value picks when it is
/// created (clones share it). It must be monotonic.
pub trait Runtime: Clone + Send + Sync + 'static {
    /// A spawned task. Awaiting it waits for the task to end (a panic inside counts as an
    /// end); dropping it lets the task run on.
    type Task: Future<Output = ()> + Send + Unpin + 'static;

    /// The runtime this thread is running in, if any: what a queue built without an
    /// explicit runtime uses.
    fn current() -> Option<Self>;

    /// The current time.
    fn now(&self) -> Timestamp;

    /// A future that completes at `deadline` (at once if it has passed). A deadline beyond
    /// what the runtime's clock can represent, `Timestamp::MAX` included, never completes
    /// (and must not drive a virtual clock there).
    fn sleep_until(&self, deadline: Timestamp) -> impl Future<Output = ()> + Send + 'static;

    /// A sleep that can be moved: each queue's driver keeps one and resets it to its next
    /// deadline rather than building a new sleep on every wake-up.
    type Timer: Future<Output = ()> + Send + Unpin + 'static;

    /// A [`Timer`](Self::Timer) that completes at `deadline`, with the same rules as
    /// [`sleep_until`](Self::sleep_until) (`Timestamp::MAX` never comes).
    fn timer(&self, deadline: Timestamp) -> Self::Timer;

    /// Moves `timer` to complete at `deadline` instead, whether or not it had completed.
    fn reset_timer(&self, timer: &mut Self::Timer, deadline: Timestamp);

    /// Runs `future` concurrently.
    fn spawn(&self, future: BoxFuture) -> Self::Task;

    /// Stops a task at its next await point (its locals are dropped, so a delivery it held
    /// goes back to its queue). Awaiting the task afterwards must complete only once its
    /// future has been dropped, so that a caller who aborts and then awaits sees every
    /// hand-back done.
    fn abort(&self, task: &mut Self::Task);

    /// Runs `work` on a thread where blocking is allowed; the future completes when it ends.
    fn spawn_blocking(&self, work: Box<dyn FnOnce() + Send + 'static>) -> Self::Task;
}

/// Spawns one of leaseq's own tasks so that a panic inside it ends the task like a crash
/// (its locals, deliveries included, are dropped and so handed back) instead of unwinding
/// into the runtime's thread: some executors (async-executor) would lose that thread.
pub(crate) fn spawn_guarded<R: Runtime>(
    rt: &R,
    future: impl Future<Output = ()> + Send + 'static,
) -> R::Task {
    use futures::FutureExt;
    rt.spawn(Box::pin(
        std::panic::AssertUnwindSafe(future)
            .catch_unwind()
            .map(|_| ()),
    ))
}
