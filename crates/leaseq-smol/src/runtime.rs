//! The smol side of leaseq's `Runtime` trait: the only smol-specific code there is.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use async_executor::Executor;
use async_io::Timer;
use leaseq_async::{BoxFuture, Runtime, Timestamp};

/// smol as a leaseq runtime: async-io's `Timer`, an `async-executor` [`Executor`], and the
/// `blocking` crate's thread pool.
///
/// [`SmolRuntime::global`] runs tasks on a process-wide executor driven by background
/// threads (one per core), like `smol::spawn`. [`SmolRuntime::with_executor`] spawns onto an
/// executor you drive yourself (for example with `executor.run(...)` inside
/// `smol::block_on`).
#[derive(Clone, Debug)]
pub struct SmolRuntime {
    executor: Arc<Executor<'static>>,
    epoch: Instant,
}

impl SmolRuntime {
    /// The process-wide executor, started on first use with one thread per core.
    pub fn global() -> Self {
        static GLOBAL: OnceLock<Arc<Executor<'static>>> = OnceLock::new();
        let executor = GLOBAL
            .get_or_init(|| {
                let ex = Arc::new(Executor::new());
                let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
                for i in 0..threads {
                    let ex = ex.clone();
                    std::thread::Builder::new()
                        .name(format!("leaseq-smol-{i}"))
                        .spawn(move || async_io::block_on(ex.run(std::future::pending::<()>())))
                        .expect("spawn leaseq-smol executor thread");
                }
                ex
            })
            .clone();
        Self::with_executor(executor)
    }

    /// Spawns onto `executor`, which the caller drives.
    pub fn with_executor(executor: Arc<Executor<'static>>) -> Self {
        SmolRuntime {
            executor,
            epoch: Instant::now(),
        }
    }
}

/// A task spawned by [`SmolRuntime`]. Dropping it lets the task run on (it is detached);
/// [`Runtime::abort`] cancels it, and awaiting it then waits until its future is dropped.
pub struct SmolTask(TaskState);

enum TaskState {
    Running(async_task::Task<()>),
    /// Aborted: completes once the executor has dropped the task's future.
    Cancelling(Pin<Box<dyn Future<Output = Option<()>> + Send>>),
    Done,
}

impl std::fmt::Debug for SmolTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            TaskState::Running(_) => "SmolTask(running)",
            TaskState::Cancelling(_) => "SmolTask(cancelling)",
            TaskState::Done => "SmolTask(done)",
        })
    }
}

impl Future for SmolTask {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let ready = match &mut self.0 {
            TaskState::Done => return Poll::Ready(()),
            TaskState::Running(task) => Pin::new(task).poll(cx).is_ready(),
            TaskState::Cancelling(cancel) => cancel.as_mut().poll(cx).is_ready(),
        };
        if ready {
            self.0 = TaskState::Done;
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl Drop for SmolTask {
    fn drop(&mut self) {
        if let TaskState::Running(task) = std::mem::replace(&mut self.0, TaskState::Done) {
            task.detach();
        }
    }
}

impl Runtime for SmolRuntime {
    type Task = SmolTask;

    fn current() -> Option<Self> {
        Some(SmolRuntime::global())
    }

    fn now(&self) -> Timestamp {
        Timestamp::from_duration(self.epoch.elapsed())
    }

    fn sleep_until(&self, deadline: Timestamp) -> impl Future<Output = ()> + Send + 'static {
        let timer = match self.epoch.checked_add(deadline.as_duration()) {
            Some(at) => Timer::at(at),
            None => Timer::never(),
        };
        async move {
            timer.await;
        }
    }

    fn spawn(&self, future: BoxFuture) -> SmolTask {
        SmolTask(TaskState::Running(self.executor.spawn(future)))
    }

    fn abort(&self, task: &mut SmolTask) {
        // Cancelling an async-task only marks it: an executor thread drops its future at its
        // next turn (or when its current poll ends). So that awaiting the aborted task waits
        // for that drop (and for the delivery it held to be handed back), keep `cancel()`'s
        // future, polled once now to mark the task.
        if let TaskState::Running(t) = std::mem::replace(&mut task.0, TaskState::Done) {
            let mut cancel: Pin<Box<dyn Future<Output = Option<()>> + Send>> = Box::pin(t.cancel());
            if cancel
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop()))
                .is_pending()
            {
                task.0 = TaskState::Cancelling(cancel);
            }
        }
    }

    fn spawn_blocking(&self, work: Box<dyn FnOnce() + Send + 'static>) -> SmolTask {
        let task = blocking::unblock(move || {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
        });
        SmolTask(TaskState::Running(task))
    }
}
