//! Both clocks of `TokioRuntime`, its resettable timer, and the precise timer switch.
//!
//! The TSC tests run in real time, so they assert only what cannot be flaky: a sleep never
//! ends before `now()` reads its deadline, and it does end. The tokio-clock tests run on a
//! paused clock and assert exact virtual times.

use std::future::Future;
use std::time::Duration;

use leaseq_tokio::{Runtime, Timestamp, TokioClock, TokioRuntime};
use tokio::runtime::Builder;
use tokio::time::{timeout, Instant};

const MS: Duration = Duration::from_millis(1);
/// A bound on real-time waits that only a hang exceeds.
const HANG: Duration = Duration::from_secs(20);

fn real_time() -> tokio::runtime::Runtime {
    Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap()
}

/// Sleeps and timer resets on the TSC clock end once `now()` reads the deadline, and not
/// before, with the precise timer on and off.
#[test]
fn tsc_sleeps_and_timers_end_at_their_deadline_on_the_tsc() {
    let tokio = real_time();
    for precise in [true, false] {
        let rt = TokioRuntime::with_clock(tokio.handle().clone(), TokioClock::Tsc)
            .with_precise_timer(precise);
        assert_eq!(rt.clock(), TokioClock::Tsc);
        tokio.block_on(async {
            let lengths =
                [0, 100, 900, 1_500, 2_000, 2_500, 7_000, 20_000].map(Duration::from_micros);
            for length in lengths {
                let deadline = rt.now().saturating_add(length);
                timeout(HANG, rt.sleep_until(deadline)).await.unwrap();
                assert!(
                    rt.now() >= deadline,
                    "sleep of {length:?}, precise {precise}"
                );
            }
            // One timer, reset before it fires, after it fired, to never and back.
            let mut timer = rt.timer(rt.now().saturating_add(Duration::from_secs(3600)));
            for length in lengths {
                let deadline = rt.now().saturating_add(length);
                rt.reset_timer(&mut timer, deadline);
                timeout(HANG, &mut timer).await.unwrap();
                assert!(
                    rt.now() >= deadline,
                    "timer of {length:?}, precise {precise}"
                );
                rt.reset_timer(&mut timer, Timestamp::MAX);
                assert!(timeout(3 * MS, &mut timer).await.is_err());
            }
            rt.reset_timer(&mut timer, Timestamp::ZERO);
            timeout(HANG, &mut timer).await.unwrap();
        });
    }
}

/// The TSC clock on a paused runtime is a mistake (paused-time tests need the `test-util`
/// feature), but a mild one: sleeps take real time, finished by the precise timer, instead of
/// tokio's timer firing again and again as auto-advance inches the paused clock forward.
#[test]
fn tsc_on_a_paused_runtime_sleeps_in_real_time_without_spinning() {
    let tokio = Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let rt = TokioRuntime::with_clock(tokio.handle().clone(), TokioClock::Tsc);
    tokio.block_on(async {
        for length in [30 * MS, MS] {
            let deadline = rt.now().saturating_add(length);
            let mut sleep = std::pin::pin!(rt.sleep_until(deadline));
            let mut polls = 0;
            let sleep = std::future::poll_fn(|cx| {
                polls += 1;
                sleep.as_mut().poll(cx)
            });
            // (No tokio timeout here: auto-advance would jump the paused clock to it.)
            sleep.await;
            assert!(rt.now() >= deadline);
            assert!(polls < 20, "{polls} polls for a sleep of {length:?}");
        }
    });
}

/// A timer made on one runtime can be awaited where there is no time driver (here, a
/// runtime without one), on either clock.
#[test]
fn timers_work_off_their_runtime() {
    let tokio = real_time();
    let elsewhere = Builder::new_current_thread().build().unwrap();
    for clock in [TokioClock::Tsc, TokioClock::Tokio] {
        let rt = TokioRuntime::with_clock(tokio.handle().clone(), clock);
        let deadline = rt.now().saturating_add(3 * MS);
        let mut timer = rt.timer(deadline);
        elsewhere.block_on(&mut timer);
        assert!(rt.now() >= deadline, "{clock:?}");
        let deadline = rt.now().saturating_add(2 * MS);
        rt.reset_timer(&mut timer, deadline);
        elsewhere.block_on(async { rt.sleep_until(deadline).await });
        elsewhere.block_on(timer);
        assert!(rt.now() >= deadline, "{clock:?}");
    }
}

/// On a paused tokio clock, a timer moved around (earlier, later, past, never) ends exactly
/// at its latest deadline in virtual time, with the precise timer on and off.
#[tokio::test(start_paused = true)]
async fn paused_timer_resets_are_exact() {
    assert_eq!(
        TokioClock::default(),
        TokioClock::Tokio,
        "the test-util feature is on"
    );
    tokio::spawn(async {
        // Keeps auto-advance honest (see faults.rs).
        loop {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
    });
    for precise in [true, false] {
        let rt = TokioRuntime::current().unwrap().with_precise_timer(precise);
        let mut timer = rt.timer(rt.now().saturating_add(Duration::from_secs(60)));
        for (reset_to, length) in [(1, 5), (30_000, 1), (3, 3), (0, 2_000), (2, 1)] {
            rt.reset_timer(&mut timer, rt.now().saturating_add(reset_to * MS));
            let start = Instant::now();
            rt.reset_timer(&mut timer, rt.now().saturating_add(length * MS));
            (&mut timer).await;
            assert_eq!(start.elapsed(), length * MS, "precise {precise}");
        }
        rt.reset_timer(&mut timer, Timestamp::MAX);
        let start = Instant::now();
        assert!(timeout(Duration::from_secs(86_400), &mut timer)
            .await
            .is_err());
        assert_eq!(start.elapsed(), Duration::from_secs(86_400));
        rt.reset_timer(&mut timer, rt.now().saturating_add(7 * MS));
        let start = Instant::now();
        timer.await;
        assert_eq!(start.elapsed(), 7 * MS);
    }
}

/// The cost of a clock read through `Runtime::now`, against `std::time::Instant::now()`.
/// Prints only: `cargo test --release -p leaseq-tokio --test clocks -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a test"]
fn clock_read_cost() {
    const READS: u32 = 20_000_000;
    let tokio = real_time();
    let tsc = TokioRuntime::with_clock(tokio.handle().clone(), TokioClock::Tsc);
    let tok = TokioRuntime::with_clock(tokio.handle().clone(), TokioClock::Tokio);
    let ns = |read: &dyn Fn() -> u64| {
        let start = std::time::Instant::now();
        let sum = (0..READS).fold(0u64, |sum, _| {
            sum.wrapping_add(std::hint::black_box(read()))
        });
        std::hint::black_box(sum);
        start.elapsed().as_secs_f64() * 1e9 / f64::from(READS)
    };
    let base = std::time::Instant::now();
    for round in 0..3 {
        println!(
            "round {round}: TokioRuntime::now() on the TSC {:.1} ns, on tokio's clock {:.1} ns \
             ({:.1} ns in the runtime), std Instant::now() {:.1} ns",
            ns(&|| tsc.now().as_nanos()),
            ns(&|| tok.now().as_nanos()),
            tokio.block_on(async { ns(&|| tok.now().as_nanos()) }),
            ns(&|| base.elapsed().as_nanos() as u64),
        );
    }
}
