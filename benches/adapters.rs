//! Adapter benchmarks, printed as tables with ratios against baselines measured in the same
//! run (`cargo bench --bench adapters`):
//!
//! 1. throughput, 1 producer and 4 consumers: leaseq push -> receive -> ack (one at a time,
//!    and in batches of 16) beside flume, async-channel and tokio mpsc (receiver behind a
//!    mutex) doing push -> receive, and a leaseq `Pool` of 4 workers with a no-op handler
//!    beside flume consumers awaiting the same no-op, on a 2-thread tokio runtime and on smol;
//!    the rows are run in turn, `LEASEQ_BENCH_REPEATS` times, and each gets its median;
//! 2. redelivery latency: lease deadline to the item received again, p50 / p99, beside its
//!    floor on the same runtime (a timer wake-up handing over to a waiting task, no queue);
//! 3. heartbeat overhead: CPU time of a process holding 10,000 deliveries with heartbeats,
//!    against the same deliveries held without.
//!
//! Environment: `LEASEQ_BENCH_ITEMS` (default 200000), `LEASEQ_BENCH_REPEATS` (5),
//! `LEASEQ_HEARTBEAT_SECS` (10).

use std::time::Duration;

use leaseq_async::{Config, LeaseQueue, Runtime};
use leaseq_bench_kit::{cpu, latency, throughput};
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

type BoxFut = std::pin::Pin<Box<dyn std::future::Future<Output = Duration>>>;

fn throughput_table<R: Runtime>(
    name: &str,
    rt: R,
    block_on: &dyn Fn(BoxFut) -> Duration,
    items: u64,
    repeats: u64,
) {
    let consumers = 4;
    let c = consumers;
    // The "ratio to flume" column compares each row with row 5 (flume), the pool's (row 2)
    // with row 6 (flume with the pool's no-op handler).
    type Run<'a> = Box<dyn Fn() -> BoxFut + 'a>;
    let rows: [(&str, Run<'_>); 7] = [
        (
            "leaseq push -> receive -> ack",
            Box::new(|| Box::pin(throughput::leaseq(rt.clone(), items, c, 1))),
        ),
        (
            "leaseq, batches of 16",
            Box::new(|| Box::pin(throughput::leaseq(rt.clone(), items, c, 16))),
        ),
        (
            "leaseq Pool, 4 workers, no-op handler (*)",
            Box::new(|| Box::pin(throughput::pool(rt.clone(), items, c))),
        ),
        (
            "async-channel push -> receive",
            Box::new(|| Box::pin(throughput::async_channel(rt.clone(), items, c))),
        ),
        (
            "tokio mpsc (rx behind a mutex)",
            Box::new(|| Box::pin(throughput::tokio_mpsc(rt.clone(), items, c))),
        ),
        (
            "flume push -> receive",
            Box::new(|| Box::pin(throughput::flume(rt.clone(), items, c))),
        ),
        (
            "flume push -> receive -> no-op handler",
            Box::new(|| Box::pin(throughput::flume_handler(rt.clone(), items, c))),
        ),
    ];
    // Interleaved: each repetition runs every row once, in turn, so that a slow spell of
    // this shared machine falls on all rows alike.
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); rows.len()];
    for _ in 0..repeats {
        for (k, (_, f)) in rows.iter().enumerate() {
            times[k].push(block_on(f()));
        }
    }
    let rates: Vec<f64> = times
        .into_iter()
        .map(|v| throughput::rate(items, median(v)))
        .collect();
    let (flume, flume_handler, async_channel, mpsc) = (rates[5], rates[6], rates[3], rates[4]);
    println!("\n## Throughput on {name}: 1 producer, {consumers} consumers, {items} items, median of {repeats} (interleaved)");
    println!("| queue | items/s | ns/item | ratio to flume | to async-channel | to tokio mpsc |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    for (k, (label, _)) in rows.iter().enumerate() {
        let r = rates[k];
        let base = if k == 2 { flume_handler } else { flume };
        println!(
            "| {label} | {:.0} | {:.0} | {:.2} | {:.2} | {:.2} |",
            r,
            1e9 / r,
            r / base,
            r / async_channel,
            r / mpsc
        );
    }
    println!("(*) its ratio to flume is to flume with the same no-op handler");
}

fn latency_row<R: Runtime>(
    name: &str,
    rt: R,
    block_on: impl Fn(
        std::pin::Pin<Box<dyn std::future::Future<Output = Vec<Duration>>>>,
    ) -> Vec<Duration>,
) {
    let samples = 500;
    let visibility = Duration::from_millis(5);
    let rows = [
        (
            name.to_string(),
            block_on(Box::pin(latency::redelivery_latencies(
                rt.clone(),
                samples,
                visibility,
            ))),
        ),
        (
            format!("{name}: floor (timer wake-up + hand-over, no queue)"),
            block_on(Box::pin(latency::wakeup_latencies(rt, samples, visibility))),
        ),
    ];
    for (label, v) in rows {
        println!(
            "| {label} | {samples} | {:.0} | {:.0} | {:.0} |",
            latency::quantile(&v, 0.5).as_secs_f64() * 1e6,
            latency::quantile(&v, 0.99).as_secs_f64() * 1e6,
            v.last().copied().unwrap_or_default().as_secs_f64() * 1e6,
        );
    }
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
    let srt = throughput::smol_runtime(throughput::cores());

    throughput_table(
        "tokio (2 worker threads)",
        trt.clone(),
        &|f: BoxFut| tokio.block_on(f),
        items,
        repeats,
    );
    throughput_table(
        "smol (an executor run by 1 thread per core)",
        srt.clone(),
        &|f: BoxFut| smol::block_on(f),
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
