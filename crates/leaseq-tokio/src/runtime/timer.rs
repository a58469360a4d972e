//! The course of a [`TokioRuntime`] sleep: tokio's timer until [`precise::TAIL`] before the
//! deadline, then a race against the precise timer thread, finished on the runtime's clock
//! (see [`TokioRuntime`]'s docs). [`Course`] is that state machine; it runs both
//! [`Runtime::sleep_until`]'s futures and [`TokioTimer`].

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use leaseq_async::{Runtime, Timestamp};
use tokio::time::{Instant, Sleep};

use super::TokioRuntime;
use crate::clock::Clock;
use crate::precise::{self, PreciseSleep};

/// The resolution of tokio's timer.
const TICK: Duration = Duration::from_millis(1);

impl TokioRuntime {
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

impl TokioTimer {
    /// A timer on `rt` that completes at `deadline`.
    pub(crate) fn new(rt: TokioRuntime, deadline: Timestamp) -> Self {
        TokioTimer {
            course: Course::new(rt, deadline),
            sleep: Box::pin(None),
        }
    }

    /// Moves the timer to `deadline` (on the runtime it was made on).
    pub(crate) fn set(&mut self, deadline: Timestamp) {
        self.course.set(deadline);
    }
}

/// A sleep on `rt` until `deadline`: the course kept inline, pinned in the future.
pub(crate) fn sleep_until(
    rt: TokioRuntime,
    deadline: Timestamp,
) -> impl Future<Output = ()> + Send + 'static {
    let mut course = Course::new(rt, deadline);
    async move {
        let mut sleep = std::pin::pin!(None);
        std::future::poll_fn(|cx| course.poll(sleep.as_mut(), cx)).await;
    }
}
