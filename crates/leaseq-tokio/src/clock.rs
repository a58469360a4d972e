//! The clocks a [`TokioRuntime`](crate::TokioRuntime) reads: [`TokioClock`], the choice
//! offered to users, and [`Clock`], the chosen one with its epoch (and the process's TSC).

use std::sync::OnceLock;

use leaseq_async::Timestamp;
use tokio::runtime::Handle;
use tokio::time::Instant;

/// The clock a [`TokioRuntime`](crate::TokioRuntime) reads for
/// [`Runtime::now`](leaseq_async::Runtime::now) and measures deadlines on.
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
    /// tests), [`Tsc`](TokioClock::Tsc) without it. ([`TokioRuntime::new`](crate::TokioRuntime::new)
    /// also picks `Tokio` for a runtime whose clock is paused.)
    fn default() -> Self {
        if cfg!(feature = "test-util") {
            TokioClock::Tokio
        } else {
            TokioClock::Tsc
        }
    }
}

impl TokioClock {
    /// The clock [`TokioRuntime::new`](crate::TokioRuntime::new) picks for `handle`:
    /// [`TokioClock::default`], except that a runtime whose clock is paused now gets tokio's
    /// clock whatever the features (see [`is_paused`]).
    pub(crate) fn default_for(handle: &Handle) -> Self {
        match TokioClock::default() {
            TokioClock::Tsc if is_paused(handle) => TokioClock::Tokio,
            clock => clock,
        }
    }
}

/// Whether the clock of `handle`'s runtime is paused now: it reads the same before and after
/// the real clock moved.
///
/// tokio pauses only with its `test-util` feature, which any crate of the build may turn on
/// (a test's `tokio = { features = ["test-util"] }`) without this crate's own feature, and
/// without a way for this crate to ask tokio (its `pause` API exists only with that feature).
/// So it is observed: tokio's `Instant::now()` on a running clock moves with the real one
/// (it is the real one, without `test-util`), and on a paused clock stands still. A wait of
/// about a microsecond of real time, once per runtime made.
pub(crate) fn is_paused(handle: &Handle) -> bool {
    let _in_runtime = handle.enter();
    let before = Instant::now();
    let real = std::time::Instant::now();
    while real.elapsed() < std::time::Duration::from_micros(1) {
        std::hint::spin_loop();
    }
    Instant::now() == before
}

/// A [`TokioRuntime`](crate::TokioRuntime)'s clock and its epoch.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Clock {
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

impl Clock {
    /// `clock` with its epoch now: for tokio's clock, on the clock of `handle`'s runtime,
    /// paused or not, wherever this is called.
    pub(crate) fn start(clock: TokioClock, handle: &Handle) -> Self {
        match clock {
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
        }
    }

    /// Which clock this is.
    pub(crate) fn kind(self) -> TokioClock {
        match self {
            Clock::Tsc { .. } => TokioClock::Tsc,
            Clock::Tokio { .. } => TokioClock::Tokio,
        }
    }

    /// The time since the epoch (see [`TokioRuntime`](crate::TokioRuntime) on reads of
    /// tokio's clock outside the runtime).
    #[inline]
    pub(crate) fn now(self) -> Timestamp {
        match self {
            Clock::Tsc { clock, base } => {
                Timestamp::from_nanos(clock.delta_as_nanos(base, clock.raw()))
            }
            Clock::Tokio { epoch } => {
                Timestamp::from_duration(Instant::now().saturating_duration_since(epoch))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A paused clock is seen as paused, a running one as running (this crate's tests have
    /// tokio's `test-util`; `tests/tokio-paused-default` checks the whole choice without
    /// this crate's feature).
    #[test]
    fn a_paused_clock_is_seen() {
        let paused = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        assert!(is_paused(paused.handle()));
        assert_eq!(TokioClock::default_for(paused.handle()), TokioClock::Tokio);
        let running = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        for _ in 0..1000 {
            assert!(!is_paused(running.handle()));
        }
    }
}
