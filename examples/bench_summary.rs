//! A quick check of leaseq's headline figures, in about 35 s:
//! `cargo run --release --example bench_summary`.
//!
//! On tokio (a multi-thread runtime with 2 worker threads, the TSC clock) and on smol
//! (an executor of its own run by one thread per core, `throughput::smol_runtime`; smol's
//! global executor, which `SmolRuntime::global()` uses, has one thread), each with 1 producer and 4
//! consumers and 100,000 `u64` items:
//!
//! - flume push -> receive, the baseline of the next two;
//! - leaseq push -> receive -> ack, one at a time;
//! - leaseq in batches of 16 (`try_push_batch`, `receive_batch(16)`, `ack_batch`);
//! - flume consumers awaiting a no-op async handler on each item, the baseline of the next;
//! - a leaseq `Pool` of 4 workers with the same no-op handler, until every item is acked.
//!
//! Then the redelivery latency probe on both runtimes (a 5 ms lease runs out, 300 times per
//! round) beside its floor on the same runtime (a task's timer wake-up handing over to the
//! waiting caller, no queue: what the machine's scheduling costs by itself), and the core's
//! push + receive + ack round trip (1k and 1M items queued).
//!
//! The machine this runs on may be shared and noisy, so nothing here trusts one absolute
//! time: a warm-up round is run and discarded, then 5 rounds, each running every measurement
//! once in turn (flume, leaseq, batch, flume + handler, pool on tokio, the same on smol, the
//! redelivery probes, the round trip). Each ratio is taken within a round, between runs a few
//! milliseconds apart, and the figure printed is the median of the 5 rounds' ratios (the
//! median of the 5 rounds for the latencies and round trips).
//!
//! The last line is machine-readable:
//!
//! `throughput_ratio_vs_flume_tokio=<x> batch_ratio_vs_flume_tokio=<b> pool_ratio_vs_flume_tokio=<p>
//! throughput_ratio_vs_flume_smol=<x> batch_ratio_vs_flume_smol=<b> pool_ratio_vs_flume_smol=<p>
//! redelivery_p99_us_tokio=<y> redelivery_p99_us_smol=<y> roundtrip_ns=<z> roundtrip_ns_1m=<z>`
//!
//! (one line; `roundtrip_ns` is the core's round trip with 1k items queued.)
//!
//! `bench_summary --roundtrip QUEUED ITERATIONS` runs only the core round trip (and the
//! `VecDeque` loop beside it), `bench_summary --core SHAPE QUEUED ITERATIONS` only the core
//! loop with items of a shape (`plain`, `levels8`, `keyed`, `levels8_keyed`, `with_id`,
//! `batch16`), and
//! `bench_summary --one KIND RUNTIME [ITEMS]` one throughput run (for profiling), and
//! `bench_summary --path KIND RUNTIME [ITEMS]` the API's path alone on one task (`single` or
//! `batch`: push, receive, ack with nobody waiting; the same count every run).
//! `benches/instructions.sh` runs these under callgrind and prints instructions per item.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use leaseq_async::Runtime;
use leaseq_bench_kit::{latency, roundtrip, throughput};
use leaseq_tokio::TokioRuntime;

const ITEMS: u64 = 100_000;
const CONSUMERS: usize = 4;
const ROUNDS: usize = 5;
const REDELIVERY_SAMPLES: usize = 300;

type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

fn median_f64(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn range(v: &[f64]) -> (f64, f64) {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

/// The wall times of one round on one runtime.
#[derive(Clone, Copy, Debug)]
struct Round {
    flume: Duration,
    single: Duration,
    batch: Duration,
    flume_handler: Duration,
    pool: Duration,
}

impl Round {
    /// leaseq's rate over its baseline's, for (single, batch, pool).
    fn ratios(&self) -> [f64; 3] {
        let r = |leaseq: Duration, base: Duration| base.as_secs_f64() / leaseq.as_secs_f64();
        [
            r(self.single, self.flume),
            r(self.batch, self.flume),
            r(self.pool, self.flume_handler),
        ]
    }
}

/// One run of each throughput measurement on `rt`, in turn.
fn round<R: Runtime>(rt: &R, block_on: &dyn Fn(BoxFut<'static, Duration>) -> Duration) -> Round {
    Round {
        flume: block_on(Box::pin(throughput::flume(rt.clone(), ITEMS, CONSUMERS))),
        single: block_on(Box::pin(throughput::leaseq(
            rt.clone(),
            ITEMS,
            CONSUMERS,
            1,
        ))),
        batch: block_on(Box::pin(throughput::leaseq(
            rt.clone(),
            ITEMS,
            CONSUMERS,
            16,
        ))),
        flume_handler: block_on(Box::pin(throughput::flume_handler(
            rt.clone(),
            ITEMS,
            CONSUMERS,
        ))),
        pool: block_on(Box::pin(throughput::pool(rt.clone(), ITEMS, CONSUMERS))),
    }
}

/// Prints one runtime's rows and returns the medians of its per-round ratios.
fn report(name: &str, rounds: &[Round]) -> [f64; 3] {
    let ns = |f: fn(&Round) -> Duration| -> Vec<f64> {
        rounds
            .iter()
            .map(|r| f(r).as_secs_f64() * 1e9 / ITEMS as f64)
            .collect()
    };
    println!(
        "{name}: ns per item, median of {} rounds [range]",
        rounds.len()
    );
    type Pick = fn(&Round) -> Duration;
    let rows: [(&str, Pick); 5] = [
        ("flume push -> recv", |r| r.flume),
        ("leaseq push -> receive -> ack", |r| r.single),
        ("leaseq batches of 16", |r| r.batch),
        ("flume push -> recv -> no-op handler", |r| r.flume_handler),
        ("leaseq Pool, 4 workers, no-op handler", |r| r.pool),
    ];
    for (label, f) in rows {
        let v = ns(f);
        let (lo, hi) = range(&v);
        println!(
            "  {label:<40} {:>7.1}  [{lo:.1}-{hi:.1}]",
            median_f64(v.clone())
        );
    }
    let mut out = [0.0; 3];
    for (k, label) in ["single", "batch-16", "pool"].iter().enumerate() {
        let v: Vec<f64> = rounds.iter().map(|r| r.ratios()[k]).collect();
        let (lo, hi) = range(&v);
        out[k] = median_f64(v.clone());
        println!(
            "  ratio to flume, {label:<8} {:.3}  [{lo:.3}-{hi:.3}]",
            out[k]
        );
    }
    out
}

/// Pushes, receives and acks `items` on the calling task, `batch` at a time, each step
/// ready at once (nobody waits): the cost of the API's path alone.
async fn path<R: Runtime>(rt: R, items: u64, batch: u64) -> Duration {
    let config = leaseq_async::Config::new(Duration::from_secs(60)).with_max_attempts(u32::MAX);
    let queue: leaseq_async::LeaseQueue<u64, R> =
        leaseq_async::LeaseQueue::with_runtime(rt, config).expect("valid config");
    let start = Instant::now();
    let mut i = 0;
    while i < items {
        if batch == 1 {
            queue.try_push(i).expect("open, unbounded");
            let d = queue.receive().await.expect("an item");
            d.ack().await.expect("fresh lease");
            i += 1;
        } else {
            let end = (i + batch).min(items);
            queue.try_push_batch(i..end).expect("open, unbounded");
            let ds = queue.receive_batch(batch as usize).await;
            let n = queue.ack_batch(ds).await.accepted() as u64;
            assert_eq!(n, end - i, "every item acked");
            i = end;
        }
    }
    start.elapsed()
}

fn main() {
    // `--roundtrip QUEUED ITERATIONS`: only the core round trip, for counting instructions
    // (`valgrind --tool=callgrind`, two iteration counts, the difference / their difference).
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--roundtrip") {
        let arg = |i: usize, default: u64| {
            args.get(i)
                .map(|a| a.parse().expect("a whole number"))
                .unwrap_or(default)
        };
        let (ns, vd) = roundtrip::core_roundtrip_ns(arg(1, 1_000) as usize, arg(2, 2_000_000));
        println!("roundtrip_ns={ns:.1} vecdeque_ns={vd:.1}");
        return;
    }
    // `--core SHAPE QUEUED ITERATIONS`: only the core loop (no VecDeque loop beside it), for
    // `benches/instructions.sh`; SHAPE: plain, levels8, keyed, levels8_keyed, with_id or batch16.
    if args.first().map(String::as_str) == Some("--core") {
        let shape = args
            .get(1)
            .and_then(|a| roundtrip::Shape::parse(a))
            .expect("a shape: plain, levels8, keyed, levels8_keyed, with_id or batch16");
        let arg = |i: usize, default: u64| {
            args.get(i)
                .map(|a| a.parse().expect("a whole number"))
                .unwrap_or(default)
        };
        let ns = roundtrip::core_loop_ns(shape, arg(2, 1_000) as usize, arg(3, 2_000_000));
        println!("core_ns={ns:.1}");
        return;
    }
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let trt = TokioRuntime::with_clock(tokio.handle().clone(), leaseq_tokio::TokioClock::Tsc);
    let srt = throughput::smol_runtime(throughput::cores());
    let tokio_on = |f: BoxFut<'static, Duration>| tokio.block_on(f);
    let smol_on = |f: BoxFut<'static, Duration>| smol::block_on(f);

    // `--one KIND RUNTIME [ITEMS]`: one throughput run alone (KIND: flume, single, batch,
    // flume-handler, pool or pool-bare, the pool without its item timeout, heartbeat and
    // watchdog; RUNTIME: tokio or smol), for profiling.
    if args.first().map(String::as_str) == Some("--one") {
        let arg = |i: usize| args.get(i).map(String::as_str).unwrap_or("");
        let items = args
            .get(3)
            .map_or(ITEMS, |a| a.parse().expect("a whole number"));
        let on_tokio = match arg(2) {
            "tokio" => true,
            "smol" => false,
            other => panic!("runtime `{other}`: tokio or smol"),
        };
        fn one<R: Runtime>(rt: &R, kind: &str, items: u64) -> BoxFut<'static, Duration> {
            let rt = rt.clone();
            match kind {
                "flume" => Box::pin(throughput::flume(rt, items, CONSUMERS)),
                "single" => Box::pin(throughput::leaseq(rt, items, CONSUMERS, 1)),
                "batch" => Box::pin(throughput::leaseq(rt, items, CONSUMERS, 16)),
                "flume-handler" => Box::pin(throughput::flume_handler(rt, items, CONSUMERS)),
                "pool" => Box::pin(throughput::pool(rt, items, CONSUMERS)),
                "pool-bare" => Box::pin(throughput::pool_bare(rt, items, CONSUMERS)),
                other => {
                    panic!("kind `{other}`: flume, single, batch, flume-handler, pool or pool-bare")
                }
            }
        }
        let took = if on_tokio {
            tokio_on(one(&trt, arg(1), items))
        } else {
            smol_on(one(&srt, arg(1), items))
        };
        println!(
            "{} on {}: {items} items in {took:?}, {:.1} ns per item",
            arg(1),
            arg(2),
            took.as_secs_f64() * 1e9 / items as f64
        );
        return;
    }
    // `--path KIND RUNTIME [ITEMS]`: the API's path alone, one item at a time on this thread
    // with nobody waiting (KIND: single or batch), so that callgrind counts the same
    // instructions every run (the `--one` rows move with the threads' interleaving).
    if args.first().map(String::as_str) == Some("--path") {
        let arg = |i: usize| args.get(i).map(String::as_str).unwrap_or("");
        let items = args
            .get(3)
            .map_or(ITEMS, |a| a.parse().expect("a whole number"));
        let batch = match arg(1) {
            "single" => 1,
            "batch" => 16,
            other => panic!("kind `{other}`: single or batch"),
        };
        let took = match arg(2) {
            "tokio" => tokio.block_on(path(trt.clone(), items, batch)),
            "smol" => smol::block_on(path(srt.clone(), items, batch)),
            other => panic!("runtime `{other}`: tokio or smol"),
        };
        println!("path {} on {}: {items} items in {took:?}", arg(1), arg(2));
        return;
    }
    let began = Instant::now();

    // Warm-up: threads started, allocator arenas grown, code paged in.
    round(&trt, &tokio_on);
    round(&srt, &smol_on);

    let mut tokio_rounds = Vec::new();
    let mut smol_rounds = Vec::new();
    let mut p99 = [Vec::new(), Vec::new()];
    let mut p50 = [Vec::new(), Vec::new()];
    let mut all = [Vec::new(), Vec::new()];
    let mut floor_p50 = [Vec::new(), Vec::new()];
    let mut floor_p99 = [Vec::new(), Vec::new()];
    let mut rt_1k = Vec::new();
    let mut rt_1m = Vec::new();
    let mut vd_1k = Vec::new();
    for _ in 0..ROUNDS {
        tokio_rounds.push(round(&trt, &tokio_on));
        smol_rounds.push(round(&srt, &smol_on));
        let lat = [
            tokio.block_on(latency::redelivery_latencies(
                trt.clone(),
                REDELIVERY_SAMPLES,
                Duration::from_millis(5),
            )),
            smol::block_on(latency::redelivery_latencies(
                srt.clone(),
                REDELIVERY_SAMPLES,
                Duration::from_millis(5),
            )),
        ];
        let floor = [
            tokio.block_on(latency::wakeup_latencies(
                trt.clone(),
                REDELIVERY_SAMPLES,
                Duration::from_millis(5),
            )),
            smol::block_on(latency::wakeup_latencies(
                srt.clone(),
                REDELIVERY_SAMPLES,
                Duration::from_millis(5),
            )),
        ];
        for (k, l) in floor.iter().enumerate() {
            floor_p99[k].push(latency::quantile(l, 0.99).as_secs_f64() * 1e6);
            floor_p50[k].push(latency::quantile(l, 0.5).as_secs_f64() * 1e6);
        }
        for (k, l) in lat.iter().enumerate() {
            p50[k].push(latency::quantile(l, 0.5).as_secs_f64() * 1e6);
            p99[k].push(latency::quantile(l, 0.99).as_secs_f64() * 1e6);
            all[k].extend_from_slice(l);
        }
        // A short run first, discarded: right after the latency probes (mostly asleep) the
        // first tens of milliseconds of a tight loop run slow on this VM.
        roundtrip::core_roundtrip_ns(1_000, 500_000);
        let (ns, vd) = roundtrip::core_roundtrip_ns(1_000, 2_000_000);
        rt_1k.push(ns);
        vd_1k.push(vd);
        rt_1m.push(roundtrip::core_roundtrip_ns(1_000_000, 2_000_000).0);
    }

    println!(
        "throughput: {ITEMS} u64 items, 1 producer, {CONSUMERS} consumers (pool: {CONSUMERS} workers)"
    );
    let [t_single, t_batch, t_pool] = report("tokio (2 worker threads)", &tokio_rounds);
    let [s_single, s_batch, s_pool] =
        report("smol (an executor run by 1 thread per core)", &smol_rounds);

    let med = |v: &Vec<f64>| median_f64(v.clone());
    for (k, name) in ["tokio", "smol"].iter().enumerate() {
        let (lo, hi) = range(&p99[k]);
        all[k].sort();
        println!(
            "redelivery on {name} ({REDELIVERY_SAMPLES} samples x {ROUNDS}): p50 {:.0} us, p99 {:.0} us [{lo:.0}-{hi:.0}]; \
             all {} samples: p99 {:.0} us, max {:.0} us",
            med(&p50[k]),
            med(&p99[k]),
            all[k].len(),
            latency::quantile(&all[k], 0.99).as_secs_f64() * 1e6,
            all[k].last().copied().unwrap_or_default().as_secs_f64() * 1e6
        );
        let (lo, hi) = range(&floor_p99[k]);
        println!(
            "  floor on {name} (a timer wake-up, then a wake-up of the waiting caller; no queue): \
             p50 {:.0} us, p99 {:.0} us [{lo:.0}-{hi:.0}]",
            med(&floor_p50[k]),
            med(&floor_p99[k])
        );
    }
    let (lo, hi) = range(&rt_1k);
    println!(
        "core push+receive+ack, u64: {:.1} ns with 1k queued [{lo:.1}-{hi:.1}], {:.1} ns with 1M queued (VecDeque loop, 1k: {:.1} ns)",
        med(&rt_1k),
        med(&rt_1m),
        med(&vd_1k)
    );
    println!("took {:.1} s", began.elapsed().as_secs_f64());

    println!(
        "throughput_ratio_vs_flume_tokio={t_single:.3} batch_ratio_vs_flume_tokio={t_batch:.3} \
         pool_ratio_vs_flume_tokio={t_pool:.3} throughput_ratio_vs_flume_smol={s_single:.3} \
         batch_ratio_vs_flume_smol={s_batch:.3} pool_ratio_vs_flume_smol={s_pool:.3} \
         redelivery_p99_us_tokio={:.0} redelivery_p99_us_smol={:.0} roundtrip_ns={:.1} \
         roundtrip_ns_1m={:.1}",
        med(&p99[0]),
        med(&p99[1]),
        med(&rt_1k),
        med(&rt_1m)
    );
}
