//! Adapter benchmarks, printed as tables with ratios against baselines measured in the same
//! run (`cargo bench --bench adapters`):
//!
//! 1. throughput, 1 producer and 4 consumers: leaseq push -> receive -> ack (one at a time,
//!    and in batches of 16) beside flume, async-channel and tokio mpsc (receiver behind a
//!    mutex) doing push -> receive, on a 2-thread tokio runtime and on smol;
//! 2. redelivery latency: lease deadline to the item received again, p50 / p99;
//! 3. heartbeat overhead: CPU time of a process holding 10,000 deliveries with heartbeats,
//!    against the same deliveries held without.
//!
//! Environment: `LEASEQ_BENCH_ITEMS` (default 200000), `LEASEQ_BENCH_REPEATS` (5),
//! `LEASEQ_HEARTBEAT_SECS` (10).

use std::time::Duration;

use leaseq_async::{Config, LeaseQueue, Runtime};
use leaseq_smol::SmolRuntime;
use leaseq_suite::{cpu, latency, throughput};
use leaseq_tokio::TokioRuntime;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Runs `f` `repeats` times on the runtime and returns the median wall time.
fn measure<F, Fut>(block_on: &dyn Fn(Fut) -> Duration, repeats: u64, f: F) -> Duration
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Duration>,
{
    median((0..repeats).map(|_| block_on(f())).collect())
}

fn throughput_table<R: Runtime>(
    name: &str,
    rt: R,
    block_on: &dyn Fn(std::pin::Pin<Box<dyn std::future::Future<Output = Duration>>>) -> Duration,
    items: u64,
    repeats: u64,
) {
    let consumers = 4;
    let run = |f: &dyn Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = Duration>>>| {
        measure(block_on, repeats, f)
    };
    let flume = run(&|| Box::pin(throughput::flume(rt.clone(), items, consumers)));
    let async_channel = run(&|| Box::pin(throughput::async_channel(rt.clone(), items, consumers)));
    let mpsc = run(&|| Box::pin(throughput::tokio_mpsc(rt.clone(), items, consumers)));
    let rows = [
        (
            "leaseq push -> receive -> ack",
            run(&|| Box::pin(throughput::leaseq(rt.clone(), items, consumers, 1))),
        ),
        (
            "leaseq, batches of 16",
            run(&|| Box::pin(throughput::leaseq(rt.clone(), items, consumers, 16))),
        ),
        ("flume push -> receive", flume),
        ("async-channel push -> receive", async_channel),
        ("tokio mpsc (rx behind a mutex)", mpsc),
    ];
    println!("\n## Throughput on {name}: 1 producer, {consumers} consumers, {items} items, median of {repeats}");
    println!("| queue | items/s | ns/item | ratio to flume | to async-channel | to tokio mpsc |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    let [flume, async_channel, mpsc] =
        [flume, async_channel, mpsc].map(|took| throughput::rate(items, took));
    for (label, took) in rows {
        let r = throughput::rate(items, took);
        println!(
            "| {label} | {:.0} | {:.0} | {:.2} | {:.2} | {:.2} |",
            r,
            1e9 / r,
            r / flume,
            r / async_channel,
            r / mpsc
        );
    }
}

fn latency_row<R: Runtime>(
    name: &str,
    rt: R,
    block_on: impl Fn(
        std::pin::Pin<Box<dyn std::future::Future<Output = Vec<Duration>>>>,
    ) -> Vec<Duration>,
) {
    let samples = 500;
    let v = block_on(Box::pin(latency::redelivery_latencies(
        rt,
        samples,
        Duration::from_millis(5),
    )));
    println!(
        "| {name} | {samples} | {:.0} | {:.0} | {:.0} |",
        latency::quantile(&v, 0.5).as_secs_f64() * 1e6,
        latency::quantile(&v, 0.99).as_secs_f64() * 1e6,
        v.last().copied().unwrap_or_default().as_secs_f64() * 1e6,
    );
}

/// Holds `n` deliveries for `secs` seconds, with or without heartbeat; returns the process
/// CPU time spent meanwhile.
async fn hold<R: Runtime>(rt: R, n: usize, secs: u64, heartbeat: bool) -> Duration {
    let config = Config::new(Duration::from_millis(500));
    let queue: LeaseQueue<u64, R> = LeaseQueue::with_runtime(rt.clone(), config).expect("valid");
    queue.try_push_batch(0..n as u64).expect("open");
    let mut held = Vec::with_capacity(n);
    for _ in 0..n {
        let d = if heartbeat {
            queue.receive_with_heartbeat().await
        } else {
            queue.receive().await
        };
        held.push(d.expect("open"));
    }
    let before = cpu::process_cpu_time().unwrap_or_default();
    let until = rt.now().saturating_add(Duration::from_secs(secs));
    rt.sleep_until(until).await;
    let spent = cpu::process_cpu_time()
        .unwrap_or_default()
        .saturating_sub(before);
    let s = queue.stats();
    if heartbeat {
        assert_eq!(s.lease_expired, 0, "the heartbeat kept every lease");
        assert!(s.extends >= n as u64, "extends happened: {}", s.extends);
    } else {
        assert_eq!(
            s.lease_expired, n as u64,
            "without heartbeat every lease ran out"
        );
    }
    assert_eq!(
        queue.ack_batch(held).await.accepted(),
        n,
        "nobody else took the items"
    );
    spent
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing we use.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let items = env("LEASEQ_BENCH_ITEMS", 200_000);
    let repeats = env("LEASEQ_BENCH_REPEATS", 5).max(1);
    let hb_secs = env("LEASEQ_HEARTBEAT_SECS", 10);

    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let trt = TokioRuntime::with_clock(tokio.handle().clone(), leaseq_tokio::TokioClock::Tsc);
    let srt = SmolRuntime::global();

    throughput_table(
        "tokio (2 worker threads)",
        trt.clone(),
        &|f| tokio.block_on(f),
        items,
        repeats,
    );
    throughput_table(
        "smol (global executor, 1 thread per core)",
        srt.clone(),
        &|f| smol::block_on(f),
        items,
        repeats,
    );

    println!("\n## Redelivery latency: lease deadline to received again (visibility 5 ms)");
    println!("| runtime | samples | p50 µs | p99 µs | max µs |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    latency_row("tokio", trt.clone(), |f| tokio.block_on(f));
    latency_row("smol", srt.clone(), smol::block_on);

    if hb_secs > 0 {
        let n = 10_000;
        println!("\n## Heartbeat overhead: {n} held deliveries, visibility 500 ms (beat every 167 ms), {hb_secs} s");
        println!("| runtime | CPU without heartbeat | CPU with heartbeat | heartbeat cost, % of one core |");
        println!("| --- | ---: | ---: | ---: |");
        let rows: [(&str, Duration, Duration); 2] = [
            (
                "tokio",
                tokio.block_on(hold(trt.clone(), n, hb_secs, false)),
                tokio.block_on(hold(trt.clone(), n, hb_secs, true)),
            ),
            (
                "smol",
                smol::block_on(hold(srt.clone(), n, hb_secs, false)),
                smol::block_on(hold(srt.clone(), n, hb_secs, true)),
            ),
        ];
        for (name, without, with) in rows {
            let cost = with.saturating_sub(without).as_secs_f64() / hb_secs as f64 * 100.0;
            println!(
                "| {name} | {:.0} ms | {:.0} ms | {cost:.2} % |",
                without.as_secs_f64() * 1e3,
                with.as_secs_f64() * 1e3
            );
        }
    }
}
