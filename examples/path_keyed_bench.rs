//! The memory store's keyed push path alone, for counting instructions (issue 32: what a
//! key's windows cost a keyed push that uses none): push an item with an 8-byte unique key
//! of its own, receive it, ack it, one at a time on the calling task with nobody waiting,
//! so that callgrind counts the same instructions every run.
//!
//! `path_keyed_bench RUNTIME [ITEMS]` (RUNTIME: `tokio` or `smol`; ITEMS: default 20,000).
//! `benches/instructions.sh keyed` runs it under callgrind at two lengths and prints
//! instructions per item.
//!
//! A binary of its own, not a mode of `bench_summary`: a keyed `try_push_with` there made
//! `Store::try_push` a shared function rather than inlined into the plain `try_push`, which
//! moved `bench_summary --path single` by about 30 instructions per item (its figures stay
//! comparable with the earlier rounds').

use std::time::{Duration, Instant};

use leaseq_async::{Config, LeaseQueue, Push, Runtime};
use leaseq_bench_kit::throughput;
use leaseq_tokio::{TokioClock, TokioRuntime};

/// Pushes `items` with keys of their own, receives and acks each, one at a time.
async fn keyed<R: Runtime>(rt: R, items: u64) -> Duration {
    let config = Config::new(Duration::from_secs(60)).with_max_attempts(u32::MAX);
    let queue: LeaseQueue<u64, R> = LeaseQueue::with_runtime(rt, config).expect("valid config");
    let start = Instant::now();
    for i in 0..items {
        let push = Push::new().key(i.to_le_bytes());
        queue
            .try_push_with(i, push)
            .expect("open, unbounded, keys distinct");
        let d = queue.receive().await.expect("an item");
        d.ack().await.expect("fresh lease");
    }
    start.elapsed()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let items = args
        .get(1)
        .map_or(20_000, |a| a.parse().expect("a whole number"));
    let took = match args.first().map(String::as_str) {
        Some("tokio") => {
            // The runtime and clock `bench_summary --path` uses.
            let tokio = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("tokio runtime");
            let rt = TokioRuntime::with_clock(tokio.handle().clone(), TokioClock::Tsc);
            tokio.block_on(keyed(rt, items))
        }
        Some("smol") => {
            let rt = throughput::smol_runtime(throughput::cores());
            smol::block_on(keyed(rt, items))
        }
        other => panic!("runtime {other:?}: tokio or smol"),
    };
    println!("keyed path: {items} items in {took:?}");
}
