//! The smol side of leaseq's `Runtime` trait: the only smol-specific code there is.

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use async_executor::Executor;
use async_io::Timer;
use leaseq_async::{BoxFuture, ExecutorTask, Runtime, Timestamp};

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

/// A task spawned by [`SmolRuntime`]: dropping it detaches the task, [`Runtime::abort`]
/// cancels it.
pub type SmolTask = ExecutorTask;

/// [`SmolRuntime`]'s resettable timer (see [`Runtime::Timer`]): an async-io `Timer`, moved
/// with `set_at`.
#[derive(Debug)]
pub struct SmolTimer(Timer);

impl Future for SmolTimer {
    type Output = ();
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        std::pin::Pin::new(&mut self.0).poll(cx).map(|_| ())
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

    type Timer = SmolTimer;

    fn timer(&self, deadline: Timestamp) -> SmolTimer {
        let mut timer = SmolTimer(Timer::never());
        self.reset_timer(&mut timer, deadline);
        timer
    }

    fn reset_timer(&self, timer: &mut SmolTimer, deadline: Timestamp) {
        match self.epoch.checked_add(deadline.as_duration()) {
            Some(at) if deadline != Timestamp::MAX => timer.0.set_at(at),
            _ => timer.0 = Timer::never(),
        }
    }

    fn spawn(&self, future: BoxFuture) -> SmolTask {
        ExecutorTask::new(self.executor.spawn(future))
    }

    fn abort(&self, task: &mut SmolTask) {
        task.abort();
    }

    fn spawn_blocking(&self, work: Box<dyn FnOnce() + Send + 'static>) -> SmolTask {
        let task = blocking::unblock(move || {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
        });
        ExecutorTask::new(task)
    }
}
