//! The tokio side of leaseq's `Runtime` trait: the only tokio-specific code there is.

use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use leaseq_async::{BoxFuture, Runtime, Timestamp};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;
use tokio::time::{Instant, Sleep};

use crate::precise::{self, PreciseSleep};

/// The resolution of tokio's timer.
const TICK: Duration = Duration::from_millis(1);

/// The clock a [`TokioRuntime`] reads for [`Runtime::now`] and measures deadlines on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokioClock {
    /// The CPU's time-stamp counter, read with [`quanta`](https://docs.rs/quanta): about
    /// 10 ns a read where `Instant::now()` takes 25 ns or more. Real time only: it does not
    /// follow tokio's paused clock. Where the CPU has no invariant TSC, quanta reads the
    /// OS's monotonic clock instead.
    Tsc,
    /// tokio's own clock, `tokio::time::Instant`: follows a paused clock
    /// (`#[tokio::test(start_paused = true)]`, `tokio::time::advance`), so tests run in
    /// virtual time. With tokio's `test-util` feature on, each read also locks the clock.
    Tokio,
}

impl Default for TokioClock {
    /// [`Tokio`](TokioClock::Tokio) with this crate's `test-util` feature (for paused-time
    /// tests), [`Tsc`](TokioClock::Tsc) without it.
    fn default() -> Self {
        if cfg!(feature = "test-util") {
            TokioClock::Tokio
        } else {
            TokioClock::Tsc
        }
    }
}

/// A [`TokioRuntime`]'s clock and its epoch.
#[derive(Clone, Copy, Debug)]
enum Clock {
    /// The TSC: nanoseconds since the raw reading `base`.
    Tsc {
        clock: &'static quanta::Clock,
        base: u64,
    },
    /// tokio's clock: the time since `epoch`.
    Tokio { epoch: Instant },
}

/// The process's TSC clock, calibrated on first use (quanta busy-waits up to 200 ms for
/// that, once per process).
fn tsc() -> &'static quanta::Clock {
    static CLOCK: OnceLock<quanta::Clock> = OnceLock::new();
    CLOCK.get_or_init(quanta::Clock::new)
}

/// Tokio as a leaseq runtime: a clock, tokio's timer, `spawn`, `abort` and `spawn_blocking`
/// on the runtime of a [`Handle`].
///
/// # Clock
///
/// [`now`](Runtime::now) reads a [`TokioClock`]. [`TokioRuntime::new`] and
/// [`Runtime::current`] pick [`TokioClock::default`]: without this crate's `test-util`
/// feature that is the CPU's time-stamp counter ([`TokioClock::Tsc`], about 10 ns a read);
/// with it, tokio's own clock ([`TokioClock::Tokio`]), which follows a paused runtime.
/// **Paused-time tests (`#[tokio::test(start_paused = true)]`) need the `test-util`
/// feature**, typically as `leaseq-tokio = { version = "…", features = ["test-util"] }` in
/// `[dev-dependencies]`: on the TSC clock, time on a paused runtime does not stand still, and
/// sleeps do not end when tokio advances its clock. [`TokioRuntime::with_clock`] picks the
/// clock explicitly, whatever the features (a benchmark built with `test-util` on, say).
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
/// [`Instant`], and `Timestamp::MAX`, never come.
///
/// The timer thread is on by default; [`TokioRuntime::with_precise_timer`]`(false)` leaves
/// it out (no thread is started for this runtime's sleeps), and sleeps then end on tokio's
/// timer alone, up to about 2 ms late.
///
/// A sleep enters this runtime to take its timer, so it can be awaited on any thread, a
/// tokio context or not (`Delivery::lease_lost` from `block_on`, say).
#[derive(Clone, Debug)]
pub struct TokioRuntime {
    handle: Handle,
    clock: Clock,
    precise: bool,
}

impl TokioRuntime {
    /// The runtime of `handle`, on [`TokioClock::default`] (tokio's clock with the
    /// `test-util` feature, the TSC without), with its epoch now (for tokio's clock, on that
    /// runtime's clock, paused or not, wherever this is called).
    pub fn new(handle: Handle) -> Self {
        Self::with_clock(handle, TokioClock::default())
    }

    /// The runtime of `handle` on `clock`, with its epoch now.
    pub fn with_clock(handle: Handle, clock: TokioClock) -> Self {
        let clock = match clock {
            TokioClock::Tsc => Clock::Tsc {
                clock: tsc(),
                base: tsc().raw(),
            },
            TokioClock::Tokio => {
                let _in_runtime = handle.enter();
                Clock::Tokio {
                    epoch: Instant::now(),
                }
            }
        };
        TokioRuntime {
            handle,
            clock,
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
        match self.clock {
            Clock::Tsc { .. } => TokioClock::Tsc,
            Clock::Tokio { .. } => TokioClock::Tokio,
        }
    }

    /// The handle of the tokio runtime this runs on.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Where a sleep to `deadline` stands on the clocks now: when tokio's timer should end
    /// it, and how much is left.
    fn aim(&self, deadline: Timestamp) -> Aim {
        if deadline == Timestamp::MAX {
            return Aim::Never;
        }
        let (at, left) = match self.clock {
            Clock::Tsc { .. } => {
                // The real clock, not tokio's (which, with tokio's `test-util`, takes a
                // lock): the same but for a paused runtime, which this clock ignores.
                let left = deadline.saturating_duration_since(self.now());
                let now = Instant::from_std(std::time::Instant::now());
                (now.checked_add(left), left)
            }
            Clock::Tokio { epoch } => {
                let Some(at) = epoch.checked_add(deadline.as_duration()) else {
                    return Aim::Never;
                };
                // Read tokio's clock in the runtime: this may run outside it, where it
                // would read the real clock even when the runtime's is paused.
                let now = {
                    let _in_runtime = self.handle.enter();
                    Instant::now()
                };
                (Some(at), at.saturating_duration_since(now))
            }
        };
        // tokio's timer rounds a deadline up to its next millisecond.
        match at.filter(|at| at.checked_add(TICK).is_some()) {
            None => Aim::Never,
            Some(_) if left.is_zero() => Aim::Passed,
            Some(at) => Aim::At { at, left },
        }
    }
}

/// See [`TokioRuntime::aim`].
enum Aim {
    Passed,
    Never,
    At { at: Instant, left: Duration },
}

/// Where a sleep is in its course.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Set to a deadline, not yet aimed: the next poll reads the clocks.
    Unaimed,
    /// On tokio's timer alone, until [`precise::TAIL`] before the deadline.
    Coarse,
    /// tokio's timer, set to the deadline, raced against the precise timer.
    Race,
    /// tokio's timer alone, set to the deadline: no precise timer, or it won on a paused
    /// clock, where tokio's timer has the last word.
    Last,
    /// The precise timer alone: on the TSC clock, tokio's timer ended before the TSC read
    /// the deadline (tokio's clock is paused, or ran ahead).
    Real,
    Done,
    Never,
}

/// Which stretch of a sleep [`Course::aim`] plans.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Leg {
    /// From the start: tokio's timer alone while the deadline is more than
    /// [`precise::TAIL`] away.
    First,
    /// The tail: tokio's timer raced against the precise timer.
    Tail,
    /// The precise timer alone (on the real clock), if it is on.
    Real,
}

/// The course of one sleep, shared by [`TokioRuntime::sleep_until`] and [`TokioTimer`]: a
/// state machine over a tokio [`Sleep`] that its owner keeps pinned (inline in a
/// `sleep_until` future, boxed in a timer), created on first need and then reset.
#[derive(Debug)]
struct Course {
    rt: TokioRuntime,
    deadline: Timestamp,
    stage: Stage,
    precise: Option<PreciseSleep>,
}

impl Course {
    fn new(rt: TokioRuntime, deadline: Timestamp) -> Self {
        Course {
            rt,
            deadline,
            stage: Stage::Unaimed,
            precise: None,
        }
    }

    /// Moves the course to `deadline`, to be aimed at the next poll.
    fn set(&mut self, deadline: Timestamp) {
        self.deadline = deadline;
        self.stage = Stage::Unaimed;
        self.precise = None;
    }

    /// Aims at the deadline from the clocks now, for the stretch `leg`.
    fn aim(&mut self, sleep: Pin<&mut Option<Sleep>>, leg: Leg) {
        self.precise = None;
        let (stage, timer_at) = match self.rt.aim(self.deadline) {
            Aim::Passed => (Stage::Done, None),
            Aim::Never => (Stage::Never, None),
            // Without the timer thread (off, or it could not be started), tokio's timer
            // alone.
            Aim::At { at, .. } if !self.rt.precise || !precise::available() => {
                (Stage::Last, Some(at))
            }
            // Far deadlines are tokio's timer's business: its wheel keeps timers beyond
            // its range in its top level and re-files them as they near.
            Aim::At { at, left } if leg == Leg::First && left > precise::TAIL => {
                (Stage::Coarse, Some(at - precise::TAIL))
            }
            Aim::At { at, .. } => {
                self.precise = Some(precise::sleep_until(at.into_std()));
                match leg {
                    Leg::Real => (Stage::Real, None),
                    _ => (Stage::Race, Some(at)),
                }
            }
        };
        self.settle(sleep, stage, timer_at);
    }

    /// Moves to `stage`, with tokio's timer set to `timer_at` (made if need be) or, if
    /// `None`, not pending.
    fn settle(
        &mut self,
        mut sleep: Pin<&mut Option<Sleep>>,
        stage: Stage,
        timer_at: Option<Instant>,
    ) {
        self.stage = stage;
        match (timer_at, sleep.as_mut().as_pin_mut()) {
            // Resetting needs no context: the sleep keeps the timer it was made with.
            (Some(at), Some(timer)) => timer.reset(at),
            (Some(at), None) => {
                // A tokio `Sleep` takes its timer from the context it is made in (and
                // panics without one). The guard is not `Send`: it ends here.
                let _in_runtime = self.rt.handle.enter();
                sleep.set(Some(tokio::time::sleep_until(at)));
            }
            // A sleep still pending at an old deadline would wake us for nothing (and
            // drive a paused clock there): drop it. An elapsed one is kept for reuse.
            (None, Some(timer)) if !timer.is_elapsed() => sleep.set(None),
            (None, _) => {}
        }
    }

    /// tokio's timer (`tokio_won`) or the precise one says the deadline has come: check it
    /// on the runtime's clock.
    fn fired(&mut self, sleep: Pin<&mut Option<Sleep>>, tokio_won: bool) {
        match self.rt.clock {
            Clock::Tokio { .. } if tokio_won => self.stage = Stage::Done,
            Clock::Tokio { .. } => match self.rt.aim(self.deadline) {
                // tokio's timer, still pending, is no longer needed.
                Aim::Passed => self.settle(sleep, Stage::Done, None),
                // A paused clock behind the real one: tokio's timer has the last word.
                _ => {
                    self.precise = None;
                    self.stage = Stage::Last;
                }
            },
            // Done once `now()` reads the deadline, else aimed again at what is left. If
            // tokio's timer ended first, tokio's clock is not the real one (a paused
            // runtime, which the TSC does not follow) or ran ahead: the precise timer, on
            // the real clock, finishes alone, rather than tokio's timer firing again and
            // again as a paused clock inches forward.
            Clock::Tsc { .. } => {
                let real = tokio_won || self.stage == Stage::Real;
                self.aim(sleep, if real { Leg::Real } else { Leg::Tail });
            }
        }
    }

    fn poll(&mut self, mut sleep: Pin<&mut Option<Sleep>>, cx: &mut Context<'_>) -> Poll<()> {
        fn tokio_timer(sleep: Pin<&mut Option<Sleep>>, cx: &mut Context<'_>) -> Poll<()> {
            sleep
                .as_pin_mut()
                .map_or(Poll::Ready(()), |timer| timer.poll(cx))
        }
        fn precise_timer(precise: &mut Option<PreciseSleep>, cx: &mut Context<'_>) -> Poll<()> {
            precise
                .as_mut()
                .map_or(Poll::Ready(()), |timer| Pin::new(timer).poll(cx))
        }
        loop {
            match self.stage {
                Stage::Done => return Poll::Ready(()),
                Stage::Never => return Poll::Pending,
                Stage::Unaimed => self.aim(sleep.as_mut(), Leg::First),
                Stage::Coarse => {
                    ready!(tokio_timer(sleep.as_mut(), cx));
                    self.aim(sleep.as_mut(), Leg::Tail);
                }
                Stage::Last => {
                    ready!(tokio_timer(sleep.as_mut(), cx));
                    self.fired(sleep.as_mut(), true);
                }
                Stage::Real => {
                    ready!(precise_timer(&mut self.precise, cx));
                    self.fired(sleep.as_mut(), false);
                }
                Stage::Race => {
                    let tokio_won = if tokio_timer(sleep.as_mut(), cx).is_ready() {
                        true
                    } else if precise_timer(&mut self.precise, cx).is_ready() {
                        false
                    } else {
                        return Poll::Pending;
                    };
                    self.fired(sleep.as_mut(), tokio_won);
                }
            }
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

/// [`TokioRuntime`]'s resettable timer (see [`Runtime::Timer`]): one tokio `Sleep`, made on
/// first use inside the runtime and moved with `Sleep::reset` from then on, finished like
/// [`TokioRuntime`]'s sleeps (see its docs).
#[derive(Debug)]
pub struct TokioTimer {
    course: Course,
    sleep: Pin<Box<Option<Sleep>>>,
}

impl Future for TokioTimer {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        this.course.poll(this.sleep.as_mut(), cx)
    }
}

impl Runtime for TokioRuntime {
    type Task = TokioTask;

    fn current() -> Option<Self> {
        Handle::try_current().ok().map(TokioRuntime::new)
    }

    fn now(&self) -> Timestamp {
        match self.clock {
            Clock::Tsc { clock, base } => {
                Timestamp::from_nanos(clock.delta_as_nanos(base, clock.raw()))
            }
            Clock::Tokio { epoch } => {
                Timestamp::from_duration(Instant::now().saturating_duration_since(epoch))
            }
        }
    }

    fn sleep_until(&self, deadline: Timestamp) -> impl Future<Output = ()> + Send + 'static {
        let mut course = Course::new(self.clone(), deadline);
        async move {
            let mut sleep = std::pin::pin!(None);
            std::future::poll_fn(|cx| course.poll(sleep.as_mut(), cx)).await;
        }
    }

    type Timer = TokioTimer;

    fn timer(&self, deadline: Timestamp) -> TokioTimer {
        TokioTimer {
            course: Course::new(self.clone(), deadline),
            sleep: Box::pin(None),
        }
    }

    fn reset_timer(&self, timer: &mut TokioTimer, deadline: Timestamp) {
        // On the runtime the timer was made on (the same, or a clone of it).
        timer.course.set(deadline);
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
