//! `SmolRuntime`'s TSC clock: one epoch for the global runtime, sleeps and timer resets that
//! end once `now()` reads their deadline. Real time, so nothing here asserts an upper bound
//! tighter than a hang.

use std::time::Duration;

use leaseq_smol::{Runtime, SmolRuntime, Timestamp};

#[test]
fn global_handles_share_one_epoch() {
    let a = SmolRuntime::global();
    let before = a.now();
    std::thread::sleep(Duration::from_millis(2));
    let b = SmolRuntime::current().unwrap();
    let after = b.now();
    assert!(after >= before.saturating_add(Duration::from_millis(2)));
    assert!(a.now() >= after && a.now() < after.saturating_add(Duration::from_secs(20)));
}

#[test]
fn sleeps_and_timers_end_at_their_deadline() {
    let rt = SmolRuntime::global();
    let lengths = [0, 50, 1_000, 3_000, 15_000].map(Duration::from_micros);
    smol::block_on(async {
        for length in lengths {
            let deadline = rt.now().saturating_add(length);
            rt.sleep_until(deadline).await;
            assert!(rt.now() >= deadline, "sleep of {length:?}");
        }
        let mut timer = rt.timer(Timestamp::MAX);
        for length in lengths {
            let deadline = rt.now().saturating_add(length);
            rt.reset_timer(&mut timer, deadline);
            (&mut timer).await;
            assert!(rt.now() >= deadline, "timer of {length:?}");
        }
        rt.reset_timer(&mut timer, Timestamp::MAX);
        let never = first(&mut timer, async_io::Timer::after(Duration::from_millis(5)));
        assert!(!never.await, "a timer set to Timestamp::MAX fired");
    });
}

/// Whether `a` completes before `b`.
async fn first(a: impl std::future::Future, b: impl std::future::Future) -> bool {
    let (mut a, mut b) = (std::pin::pin!(a), std::pin::pin!(b));
    std::future::poll_fn(|cx| {
        if a.as_mut().poll(cx).is_ready() {
            std::task::Poll::Ready(true)
        } else {
            b.as_mut().poll(cx).map(|_| false)
        }
    })
    .await
}

/// The cost of a clock read through `Runtime::now`, against `std::time::Instant::now()`.
/// Prints only: `cargo test --release -p leaseq-smol --test clock -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a test"]
fn clock_read_cost() {
    const READS: u32 = 20_000_000;
    let rt = SmolRuntime::global();
    let base = std::time::Instant::now();
    let mut reads = [
        ("SmolRuntime::now()", Duration::ZERO),
        ("std Instant::now()", Duration::ZERO),
    ];
    for _ in 0..3 {
        for (i, (_, total)) in reads.iter_mut().enumerate() {
            let start = std::time::Instant::now();
            let mut sum = 0u64;
            for _ in 0..READS {
                let t = match i {
                    0 => rt.now().as_nanos(),
                    _ => base.elapsed().as_nanos() as u64,
                };
                sum = sum.wrapping_add(std::hint::black_box(t));
            }
            std::hint::black_box(sum);
            *total += start.elapsed();
        }
    }
    for (what, total) in reads {
        println!(
            "{what}: {:.1} ns",
            total.as_secs_f64() * 1e9 / f64::from(3 * READS)
        );
    }
}
