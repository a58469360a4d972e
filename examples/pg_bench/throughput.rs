//! The throughput section: each kind run and timed, the server's CPU beside it.

use super::*;

pub(super) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The system's load average now, for the record.
pub(super) fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// The kinds' names, in [`Kind`] order.
pub(super) const NAMES: [&str; 8] = [
    "bare",
    "store",
    "fresh queue",
    "pool",
    "pool+prefetch",
    "store, no upkeep",
    "pool, prefetch 32",
    "store, capacity",
];

/// Items/s of one run, and the CPU time per item (µs) of this process and of the server.
pub(super) async fn run_one(
    url: &str,
    kind: Kind,
    items: u64,
    capacity: Option<usize>,
) -> Result<[f64; 3], BenchError> {
    let s = STORE_SCHEMA;
    let cpu = || (process_cpu_time(), server_cpu_time());
    let before = cpu();
    let rate = match kind {
        Kind::Bare => run_bare(url, items, WORKERS, CLAIM).await?.items_per_sec,
        Kind::Store => {
            run_store(url, s, "bench-store", Options::new(), items, WORKERS, CLAIM)
                .await?
                .items_per_sec
        }
        Kind::Fresh => {
            let queue = unique("bench-fresh");
            run_store(url, s, &queue, Options::new(), items, WORKERS, CLAIM)
                .await?
                .items_per_sec
        }
        Kind::Capped => {
            let q = open_capped(url, s, "bench-capped", Options::new(), capacity).await?;
            run_store_on(q, items, WORKERS, CLAIM).await?.items_per_sec
        }
        Kind::PoolOwnPrefetch => {
            run_pool(url, s, "bench-pool-own", items, WORKERS, 0, Some(PREFETCH))
                .await?
                .items_per_sec
        }
        Kind::NoUpkeep => {
            let options = Options::new().vacuum_after_rows(0);
            run_store(
                url,
                s,
                "bench-store-no-upkeep",
                options,
                items,
                WORKERS,
                CLAIM,
            )
            .await?
            .items_per_sec
        }
        Kind::Pool => {
            run_pool(url, s, "bench-pool", items, WORKERS, 0, None)
                .await?
                .items_per_sec
        }
        Kind::PoolPrefetch => {
            run_pool(
                url,
                s,
                "bench-pool-prefetch",
                items,
                WORKERS,
                PREFETCH,
                None,
            )
            .await?
            .items_per_sec
        }
    };
    // Let the server reap the run's backends, so that their CPU time is counted.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let after = cpu();
    let per_item = |a: Option<std::time::Duration>, b: Option<std::time::Duration>| match (a, b) {
        (Some(a), Some(b)) => (b - a).as_secs_f64() * 1e6 / items as f64,
        _ => f64::NAN,
    };
    Ok([
        rate,
        per_item(before.0, after.0),
        per_item(before.1, after.1),
    ])
}

pub(super) async fn throughput(url: &str, a: &Args) -> Result<(), BenchError> {
    println!(
        "throughput: {} items of 16 bytes, {WORKERS} workers, claim {CLAIM}, producer batches \
         of 256; pool: {} items, {WORKERS} workers, no-op handler; {} rounds",
        a.items,
        a.pool_items,
        a.rounds.unwrap_or(3)
    );
    let rounds = a.rounds.unwrap_or(3);
    drop_schema(url, STORE_SCHEMA).await?;
    let mut kinds = vec![Kind::Bare, Kind::Store, Kind::Fresh];
    if a.pool_items > 0 {
        kinds.push(Kind::Pool);
        kinds.push(Kind::PoolPrefetch);
        kinds.push(Kind::PoolOwnPrefetch);
    }
    if a.upkeep_off {
        kinds.push(Kind::NoUpkeep);
    }
    if a.capacity.is_some() {
        kinds.push(Kind::Capped);
    }
    let items = |k: Kind| {
        if matches!(k, Kind::Pool | Kind::PoolPrefetch | Kind::PoolOwnPrefetch) {
            a.pool_items
        } else {
            a.items
        }
    };
    // Warm-up (the store's also creates its schema); not counted.
    for &kind in &kinds {
        run_one(url, kind, (items(kind) / 10).max(1), a.capacity).await?;
    }
    // Per kind, [items/s, client µs/item, server µs/item] of each round.
    let mut got: Vec<Vec<[f64; 3]>> = vec![Vec::new(); kinds.len()];
    for round in 0..rounds {
        // Each round starts with the next kind: the order rotates.
        let mut r = vec![[f64::NAN; 3]; kinds.len()];
        for i in 0..kinds.len() {
            let k = (round + i) % kinds.len();
            r[k] = run_one(url, kinds[k], items(kinds[k]), a.capacity).await?;
        }
        println!("round {} (load {}):", round + 1, load());
        for (k, v) in r.iter().enumerate() {
            println!(
                "  {:<16} {:>7.0} items/s  {:.3}x bare  CPU per item: client {:>5.1} us, \
                 server {:>5.1} us",
                NAMES[kinds[k] as usize],
                v[0],
                v[0] / r[0][0],
                v[1],
                v[2]
            );
        }
        for (g, v) in got.iter_mut().zip(r) {
            g.push(v);
        }
    }
    println!("median of {rounds} rounds:");
    for (k, g) in got.iter().enumerate() {
        let col = |i: usize| median(g.iter().map(|v| v[i]).collect());
        let ratio = median(g.iter().zip(&got[0]).map(|(v, b)| v[0] / b[0]).collect());
        println!(
            "  {:<16} {:>7.0} items/s  {ratio:.3}x bare (median of the rounds' ratios)  \
             CPU per item: client {:>5.1} us, server {:>5.1} us",
            NAMES[kinds[k] as usize],
            col(0),
            col(1),
            col(2)
        );
    }
    Ok(())
}
