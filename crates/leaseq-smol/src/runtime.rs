//! The smol side of leaseq's `Runtime` trait: the only smol-specific code there is.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{ready, Context, Poll};
use std::time::Instant;

use async_executor::Executor;
use async_io::Timer;
use leaseq_async::{BoxFuture, ExecutorTask, Runtime, Timestamp};

/// smol as a leaseq runtime: the CPU's time-stamp counter for a clock, async-io's `Timer`,
/// smol's executor (or an `async-executor` [`Executor`] of your own), and the `blocking`
/// crate's thread pool.
///
/// # Executor
///
/// [`SmolRuntime::global`] spawns with [`smol::spawn`]: leaseq's tasks (each queue's
/// driver, which runs its leases' deadlines and heartbeats; pool workers; the watchdog) run
/// on smol's global executor, beside your own `smol::spawn` tasks, and leaseq starts no
/// executor threads of its own. smol drives that executor on background threads: one unless
/// the `SMOL_THREADS` environment variable asks for more, so by default a
/// [`Pool`](crate::Pool)'s async handlers take turns on one thread (blocking handlers run on
/// the `blocking` pool). Every handle to the global runtime (and [`Runtime::current`])
/// shares one epoch, taken on first use, so their timestamps compare.
///
/// [`SmolRuntime::with_executor`] spawns onto an executor you drive yourself (for example
/// with `executor.run(...)` inside `smol::block_on`, or on threads of your own), with an
/// epoch of its own.
///
/// # Clock
///
/// [`now`](Runtime::now) reads the TSC with [`quanta`](https://docs.rs/quanta) (about 10 ns
/// a read, against 25 ns or more for `Instant::now()`; quanta reads the OS's monotonic clock
/// where the CPU has no invariant TSC). quanta calibrates the TSC's rate against the
/// monotonic clock once per process (busy-waiting up to 200 ms on first use), so the two can
/// drift apart slowly: parts per million, from the calibration error and NTP's slewing of the
/// monotonic clock. Sleeps therefore do not convert a deadline to an [`Instant`] as
/// `epoch + deadline`, which a day of drift could put many milliseconds off: each sleep is
/// anchored when it is set, as *now + what is left* on the TSC, so only drift during the
/// sleep itself counts; and it ends only once `now()` reads its deadline (if the TSC is
/// behind the monotonic clock, the sleep waits on for what is left).
#[derive(Clone, Debug)]
pub struct SmolRuntime {
    /// The executor the caller drives, or `None` for smol's global one (`smol::spawn`).
    executor: Option<Arc<Executor<'static>>>,
    clock: Tsc,
}

/// The TSC clock: nanoseconds since the raw reading `base`.
#[derive(Clone, Copy, Debug)]
struct Tsc {
    clock: &'static quanta::Clock,
    base: u64,
}

impl Tsc {
    /// A clock whose epoch is now (the TSC is calibrated on first use, once per process).
    fn start() -> Self {
        static CLOCK: OnceLock<quanta::Clock> = OnceLock::new();
        let clock = CLOCK.get_or_init(quanta::Clock::new);
        Tsc {
            clock,
            base: clock.raw(),
        }
    }

    fn now(self) -> Timestamp {
        Timestamp::from_nanos(self.clock.delta_as_nanos(self.base, self.clock.raw()))
    }
}

impl SmolRuntime {
    /// smol's global executor, the one [`smol::spawn`] uses (smol starts it on the first
    /// spawn), on the process's global clock, whose epoch is the first call of this.
    pub fn global() -> Self {
        static GLOBAL: OnceLock<SmolRuntime> = OnceLock::new();
        GLOBAL
            .get_or_init(|| SmolRuntime {
                executor: None,
                clock: Tsc::start(),
            })
            .clone()
    }

    /// Spawns onto `executor`, which the caller drives, with the clock's epoch now.
    pub fn with_executor(executor: Arc<Executor<'static>>) -> Self {
        SmolRuntime {
            executor: Some(executor),
            clock: Tsc::start(),
        }
    }
}

/// A task spawned by [`SmolRuntime`]: dropping it detaches the task, [`Runtime::abort`]
/// cancels it.
pub type SmolTask = ExecutorTask;

/// [`SmolRuntime`]'s resettable timer (see [`Runtime::Timer`]): an async-io `Timer`, moved
/// with `set_at`, that completes once the runtime's clock reads its deadline.
#[derive(Debug)]
pub struct SmolTimer {
    timer: Timer,
    deadline: Timestamp,
    clock: Tsc,
}

impl SmolTimer {
    /// Sets the async-io timer to what is left until the deadline on the TSC, from now on
    /// the monotonic clock (see [`SmolRuntime`] on drift).
    fn aim(&mut self) {
        let left = self.deadline.saturating_duration_since(self.clock.now());
        match Instant::now().checked_add(left) {
            Some(at) if self.deadline != Timestamp::MAX => self.timer.set_at(at),
            _ => self.timer = Timer::never(),
        }
    }
}

impl Future for SmolTimer {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            ready!(Pin::new(&mut self.timer).poll(cx));
            if self.clock.now() >= self.deadline {
                return Poll::Ready(());
            }
            // The TSC is behind the monotonic clock: wait on for what is left.
            self.aim();
        }
    }
}

impl Runtime for SmolRuntime {
    type Task = SmolTask;

    fn current() -> Option<Self> {
        Some(SmolRuntime::global())
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    fn sleep_until(&self, deadline: Timestamp) -> impl Future<Output = ()> + Send + 'static {
        self.timer(deadline)
    }

    type Timer = SmolTimer;

    fn timer(&self, deadline: Timestamp) -> SmolTimer {
        let mut timer = SmolTimer {
            timer: Timer::never(),
            deadline,
            clock: self.clock,
        };
        timer.aim();
        timer
    }

    fn reset_timer(&self, timer: &mut SmolTimer, deadline: Timestamp) {
        timer.deadline = deadline;
        timer.aim();
    }

    fn spawn(&self, future: BoxFuture) -> SmolTask {
        ExecutorTask::new(match &self.executor {
            Some(executor) => executor.spawn(future),
            None => smol::spawn(future),
        })
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
