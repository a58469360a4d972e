//! [`TokioRuntime`]: the tokio side of leaseq's `Runtime` trait. With its clock
//! (`clock.rs`) and the course of its sleeps (`timer.rs`, `precise.rs`), the only
//! tokio-specific code there is.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use leaseq_async::{BoxFuture, Runtime, Timestamp};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

use crate::clock::{Clock, TokioClock};
pub use timer::TokioTimer;

mod timer;

/// Tokio as a leaseq runtime: a clock, tokio's timer, `spawn`, `abort` and `spawn_blocking`
/// on the runtime of a [`Handle`].
///
/// # Clock
///
/// [`now`](Runtime::now) reads a [`TokioClock`]. [`TokioRuntime::new`] and
/// [`Runtime::current`] pick [`TokioClock::default`]: without this crate's `test-util`
/// feature that is the CPU's time-stamp counter ([`TokioClock::Tsc`], about 10 ns a read);
/// with it, tokio's own clock ([`TokioClock::Tokio`]), which follows a paused runtime.
/// On the TSC clock, time on a paused runtime does not stand still, and sleeps do not end
/// when tokio advances its clock; so a runtime whose clock is already paused when the
/// `TokioRuntime` is made (`#[tokio::test(start_paused = true)]`) gets tokio's clock in any
/// case. The `test-util` feature (in `[dev-dependencies]`:
/// `leaseq-tokio = { version = "…", features = ["test-util"] }`) also covers a clock paused
/// later. [`TokioRuntime::with_clock`] picks the clock explicitly, whatever the features and
/// the pause (a benchmark built with `test-util` on, say).
///
/// On the TSC clock, deadlines are measured on the TSC too. quanta calibrates the TSC's rate
/// against the OS's monotonic clock once per process, so the two can drift apart slowly (by
/// the calibration error and by NTP's slewing of the monotonic clock: parts per million).
/// Sleeps are therefore not converted to tokio instants as `epoch + deadline`, which a day of
/// drift could put many milliseconds off: each sleep is anchored when it is set, and again
/// 2 ms before its deadline, as *now + what is left* on the TSC; and it ends only once `now()`
/// reads its deadline (if the TSC is behind, it waits on for what is left). The TSC must also
/// agree across cores, which quanta's requirement of an invariant TSC assumes.
///
/// On tokio's clock, [`now`](Runtime::now) reads `tokio::time::Instant::now()`, which outside
/// a tokio context reads the real clock: on a paused runtime, clock reads from a thread
/// outside it (a `push` or `Delivery::is_lease_lost` there, say) see real time, not the
/// runtime's virtual time. (`now` is on the hot path, so it does not enter the runtime.)
///
/// # Timer
///
/// Sleeps are sharper than tokio's own: tokio's timer counts whole milliseconds and ends a
/// sleep up to about 2 ms late, so a sleep runs on it until 2 ms before its deadline, then
/// races it to the deadline against a process-wide timer thread that waits with the exact
/// timeout (and never polls). That thread waits on the real clock, so its win counts only
/// if the runtime's clock has reached the deadline too. On a real clock it has, and a lease
/// that runs out is back in a waiting receiver's hands about 0.15 ms after its deadline
/// rather than 1.2 ms. On a paused clock it need not have, and the sleep then ends on
/// tokio's timer, which auto-advance fires exactly at the deadline in virtual time. Far
/// deadlines are kept as they are (tokio's timer holds them); one too far off for an
/// [`Instant`](tokio::time::Instant), and `Timestamp::MAX`, never come.
///
/// The timer thread is on by default; [`TokioRuntime::with_precise_timer`]`(false)` leaves
/// it out (no thread is started for this runtime's sleeps), and sleeps then end on tokio's
/// timer alone, up to about 2 ms late.
///
/// A sleep enters this runtime to take its timer, so it can be awaited on any thread, a
/// tokio context or not (`Delivery::lease_lost` from `block_on`, say).
#[derive(Clone, Debug)]
pub struct TokioRuntime {
    pub(crate) handle: Handle,
    pub(crate) clock: Clock,
    /// Whether sleeps race the precise timer thread at their end.
    pub(crate) precise: bool,
}

impl TokioRuntime {
    /// The runtime of `handle`, on [`TokioClock::default`] (tokio's clock with the
    /// `test-util` feature, the TSC without), with its epoch now (for tokio's clock, on that
    /// runtime's clock, paused or not, wherever this is called).
    ///
    /// A runtime whose clock is paused at this call (`#[tokio::test(start_paused = true)]`,
    /// tokio's `test-util` turned on by any crate of the build) gets tokio's clock even
    /// without this crate's `test-util` feature: on the TSC its virtual time would not move
    /// and its sleeps would wait in real time. (A clock paused later, after this call, is not
    /// seen: pause it first, as `start_paused` does.)
    pub fn new(handle: Handle) -> Self {
        let clock = TokioClock::default_for(&handle);
        Self::with_clock(handle, clock)
    }

    /// The runtime of `handle` on `clock`, with its epoch now.
    pub fn with_clock(handle: Handle, clock: TokioClock) -> Self {
        TokioRuntime {
            clock: Clock::start(clock, &handle),
            handle,
            precise: true,
        }
    }

    /// Whether sleeps finish on the process-wide precise timer thread (`true`, the default)
    /// or on tokio's timer alone (`false`: no thread, sleeps up to about 2 ms late). See
    /// the type's docs.
    pub fn with_precise_timer(mut self, precise: bool) -> Self {
        self.precise = precise;
        self
    }

    /// The clock this runtime reads.
    pub fn clock(&self) -> TokioClock {
        self.clock.kind()
    }

    /// The handle of the tokio runtime this runs on.
    pub fn handle(&self) -> &Handle {
        &self.handle
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

    // Inlined into the queue's operations (two reads per item one at a time): no call,
    // and the clock's kind is matched where it is read.
    #[inline]
    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    fn sleep_until(&self, deadline: Timestamp) -> impl Future<Output = ()> + Send + 'static {
        timer::sleep_until(self.clone(), deadline)
    }

    type Timer = TokioTimer;

    fn timer(&self, deadline: Timestamp) -> TokioTimer {
        TokioTimer::new(self.clone(), deadline)
    }

    fn reset_timer(&self, timer: &mut TokioTimer, deadline: Timestamp) {
        // On the runtime the timer was made on (the same, or a clone of it).
        timer.set(deadline);
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
