//! A quick check of leaseq's headline figures, in under 30 s:
//! `cargo run --release --example bench_summary`.
//!
//! Runs a short adapter throughput comparison against flume on a 2-thread tokio runtime
//! (1 producer, 4 consumers; leaseq does push -> receive -> ack, flume push -> receive), a
//! redelivery latency probe on tokio, and the core's push + receive + ack round trip. The last
//! line is machine-readable:
//!
//! `throughput_ratio_vs_flume=<x> batch_ratio_vs_flume=<b> redelivery_p99_us=<y> roundtrip_ns=<z>`

use std::time::Duration;

use leaseq_suite::{latency, roundtrip, throughput};
use leaseq_tokio::TokioRuntime;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let items = 100_000;
    let repeats = 5;
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let rt = TokioRuntime::with_clock(tokio.handle().clone(), leaseq_tokio::TokioClock::Tsc);

    let run = |f: &dyn Fn() -> Duration| median((0..repeats).map(|_| f()).collect());
    let flume = run(&|| tokio.block_on(throughput::flume(rt.clone(), items, 4)));
    let single = run(&|| tokio.block_on(throughput::leaseq(rt.clone(), items, 4, 1)));
    let batch = run(&|| tokio.block_on(throughput::leaseq(rt.clone(), items, 4, 16)));
    let flume_rate = throughput::rate(items, flume);
    let ratio = throughput::rate(items, single) / flume_rate;
    let batch_ratio = throughput::rate(items, batch) / flume_rate;
    println!(
        "throughput ({items} items, 1 producer, 4 consumers, tokio 2 threads, median of {repeats}): \
         flume {:.0}/s, leaseq {:.0}/s, leaseq batch-16 {:.0}/s",
        flume_rate,
        throughput::rate(items, single),
        throughput::rate(items, batch)
    );

    let lat = tokio.block_on(latency::redelivery_latencies(
        rt.clone(),
        300,
        Duration::from_millis(5),
    ));
    let p50 = latency::quantile(&lat, 0.5);
    let p99 = latency::quantile(&lat, 0.99);
    println!("redelivery latency on tokio (300 samples): p50 {p50:?}, p99 {p99:?}");

    let (ns, vecdeque_ns) = roundtrip::core_roundtrip_ns(1_000, 2_000_000);
    println!(
        "core push+receive+ack with 1k queued: {ns:.1} ns (VecDeque loop {vecdeque_ns:.1} ns)"
    );

    println!(
        "throughput_ratio_vs_flume={ratio:.3} batch_ratio_vs_flume={batch_ratio:.3} \
         redelivery_p99_us={} roundtrip_ns={ns:.1}",
        p99.as_micros()
    );
}
