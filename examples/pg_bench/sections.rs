//! The other sections: refill, table sizes, TLS, worker processes, key windows, the record
//! of finished jobs, pushes in a transaction.

use super::*;

pub(super) async fn refill(url: &str, a: &Args) -> Result<(), BenchError> {
    let rounds = a.rounds.unwrap_or(30);
    println!(
        "refill: {rounds} rounds of {} items of 16 bytes pushed, then drained by {WORKERS} \
         workers (receive_batch({CLAIM}) + ack_batch); odd rounds a fresh queue, even ones a \
         drained queue whose table was VACUUM ANALYZEd empty, then refilled",
        a.items
    );
    drop_schema(url, STORE_SCHEMA).await?;
    let bare_before = run_bare(url, a.items, WORKERS, CLAIM).await?.items_per_sec;
    println!(
        "bare loop before: {bare_before:.0} items/s (load {})",
        load()
    );
    let got = run_refill_rounds(
        url,
        STORE_SCHEMA,
        rounds,
        a.items,
        WORKERS,
        CLAIM,
        |i, r| {
            println!(
                "round {:>2} {:<8} reltuples {:>8.0}  {:>7.0} items/s  (load {})",
                i + 1,
                format!("{:?}", r.start).to_lowercase(),
                r.reltuples,
                r.items_per_sec,
                load()
            );
        },
    )
    .await?;
    let bare_after = run_bare(url, a.items, WORKERS, CLAIM).await?.items_per_sec;
    println!("bare loop after: {bare_after:.0} items/s (load {})", load());
    for start in [None, Some(true), Some(false)] {
        let rates: Vec<f64> = got
            .iter()
            .filter(|r| start.is_none_or(|fresh| fresh == (r.start == Start::Fresh)))
            .map(|r| r.items_per_sec)
            .collect();
        let what = match start {
            None => "all rounds",
            Some(true) => "fresh",
            Some(false) => "refilled",
        };
        let min = rates.iter().copied().fold(f64::INFINITY, f64::min);
        let med = median(rates.clone());
        println!(
            "{what:<10} ({:>2}): min {min:>7.0}  median {med:>7.0} items/s  min/median {:.3}  \
             median / bare {:.3}",
            rates.len(),
            min / med,
            med / median(vec![bare_before, bare_after])
        );
    }
    Ok(())
}

pub(super) fn print_size(what: &str, t: &TableSize) {
    println!(
        "  {what}: total {:.2} MB (heap {:.2} MB, indexes {:.2} MB), {} rows, {} dead tuples, \
         {} vacuums",
        t.total as f64 / 1e6,
        t.heap as f64 / 1e6,
        t.indexes as f64 / 1e6,
        t.rows,
        t.dead_tuples,
        t.vacuums
    );
}

pub(super) async fn sizes(url: &str, a: &Args) -> Result<(), BenchError> {
    println!(
        "table size: {} live items, then {} pushed and acked ({WORKERS} workers, claim \
         {CLAIM}) with about {} waiting",
        a.live, a.flow, a.live
    );
    let mut runs = vec![
        (
            Options::new(),
            "store upkeep at its defaults (VACUUM every 5,000 rows, index rebuilds)".to_string(),
        ),
        (
            Options::new().rebuild_bloated_indexes(false),
            "store VACUUM every 5,000 rows, no index rebuilds".to_string(),
        ),
        (
            Options::new().vacuum_after_rows(0),
            "store VACUUM off (vacuum_after_rows = 0)".to_string(),
        ),
    ];
    for &n in &a.vacuum_after {
        let what = format!("store VACUUM after {n} rows (vacuum_after_rows = {n})");
        runs.push((Options::new().vacuum_after_rows(n), what));
    }
    for (options, what) in runs {
        let r: SizeReport =
            table_size(url, SIZE_SCHEMA, options, a.live, a.flow, WORKERS, CLAIM).await?;
        println!(
            "{what}: flow {:.0} items/s ({:.1} s), load {}",
            r.flow.items_per_sec,
            r.flow.elapsed.as_secs_f64(),
            load()
        );
        print_size("with live items", &r.with_live);
        print_size("after the flow ", &r.after_flow);
        println!(
            "  ratio after/with live: {:.2}; the store ran {} VACUUMs and {} index rebuilds",
            r.after_flow.total as f64 / r.with_live.total as f64,
            r.upkeep.vacuums,
            r.upkeep.indexes_rebuilt
        );
        for (name, bytes, entries) in &r.indexes {
            println!(
                "  index {name}: {:.2} MB, {entries:.0} entries",
                *bytes as f64 / 1e6
            );
        }
    }
    Ok(())
}

/// `--tls`: the store and a pool, plain text and over TLS, per round and in medians.
pub(super) async fn tls(url: &str, a: &Args) -> Result<(), BenchError> {
    use leaseq_bench_kit::pg_tls_bench::{run_tls_rounds, urls};
    println!("TLS: {} (load {})", urls(url).1, load());
    let rounds = run_tls_rounds(
        url,
        TLS_SCHEMA,
        a.rounds.unwrap_or(3),
        a.items,
        a.pool_items,
    );
    let rounds = rounds.await?;
    println!(
        "round | store plain | store TLS | TLS/plain | pool plain | pool TLS | TLS/plain \
         | CPU us/item plain | TLS"
    );
    let row = |label: String, r: [f64; 8]| {
        println!(
            "{label:>6} | {:>10.0} | {:>9.0} | {:>9.3} | {:>10.0} | {:>8.0} | {:>9.3} | {:>6.1} | {:>6.1}",
            r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]
        );
    };
    for (i, r) in rounds.iter().enumerate() {
        let ratios = [r[1] / r[0], r[3] / r[2]];
        row(
            i.to_string(),
            [r[0], r[1], ratios[0], r[2], r[3], ratios[1], r[4], r[5]],
        );
    }
    let m = |k: usize| median(rounds.iter().map(|r| r[k]).collect());
    let ratio = |a: usize, b: usize| median(rounds.iter().map(|r| r[a] / r[b]).collect());
    row(
        "median".into(),
        [m(0), m(1), ratio(1, 0), m(2), m(3), ratio(3, 2), m(4), m(5)],
    );
    Ok(())
}

/// `--procs N`: `N` worker processes and one producer, without and with a capacity, per
/// round and in medians.
pub(super) async fn procs(url: &str, a: &Args, n: usize) -> Result<(), BenchError> {
    use leaseq_bench_kit::pg_procs_bench::run_procs;
    pub(super) const SCHEMA: &str = "leaseq_bench_procs";
    drop_schema(url, SCHEMA).await?;
    let rounds = a.rounds.unwrap_or(3);
    let cap = a.capacity.unwrap_or(10_000_000);
    println!(
        "{n} worker processes (Pool(4) each), one producer, {} items a round, capacity {cap} \
         (never reached) or none, {rounds} rounds (load {})",
        a.items,
        load()
    );
    let rows = leaseq_bench_kit::pg_history_bench::alternating(rounds, |i| {
        run_procs(url, SCHEMA, n, a.items, (i == 1).then_some(cap))
    })
    .await?;
    println!(" round | no capacity | capacity | with/without");
    for (i, r) in rows.iter().enumerate() {
        println!(
            "{i:>6} | {:>11.0} | {:>8.0} | {:>6.3}",
            r[0],
            r[1],
            r[1] / r[0]
        );
    }
    let ratio = median(rows.iter().map(|r| r[1] / r[0]).collect());
    let m = |k: usize| median(rows.iter().map(|r| r[k]).collect());
    println!("median | {:>11.0} | {:>8.0} | {ratio:>6.3}", m(0), m(1));
    println!(
        "goal capacity >= 0.9 x none: {} (none lost or run twice; load {})",
        if ratio >= 0.9 { "met" } else { "NOT met" },
        load()
    );
    Ok(())
}

/// `--windows`: a pool without and with the key windows' triggers (issue 32), per round
/// and in medians.
pub(super) async fn windows(url: &str, a: &Args) -> Result<(), BenchError> {
    use leaseq_bench_kit::pg_windows_bench::{run_windows_rounds, GOAL};
    pub(super) const SCHEMA: &str = "leaseq_bench_windows";
    drop_schema(url, SCHEMA).await?;
    let rounds = a.rounds.unwrap_or(3);
    println!(
        "key windows' triggers: Pool(4), {} items a round, {rounds} rounds (load {})",
        a.pool_items,
        load()
    );
    let rows = run_windows_rounds(url, SCHEMA, rounds, a.pool_items).await?;
    println!(" round | without | with    | with/without");
    for (i, r) in rows.iter().enumerate() {
        println!(
            "{i:>6} | {:>7.0} | {:>7.0} | {:>6.3}",
            r[0],
            r[1],
            r[1] / r[0]
        );
    }
    let ratio = median(rows.iter().map(|r| r[1] / r[0]).collect());
    let m = |k: usize| median(rows.iter().map(|r| r[k]).collect());
    println!("median | {:>7.0} | {:>7.0} | {ratio:>6.3}", m(0), m(1));
    println!(
        "goal with >= {GOAL} x without: {} (load {})",
        if ratio >= GOAL { "met" } else { "NOT met" },
        load()
    );
    Ok(())
}

/// `--history`: a pool with the record of finished jobs off and on, per round and in medians.
pub(super) async fn history(url: &str, a: &Args) -> Result<(), BenchError> {
    use leaseq_bench_kit::pg_history_bench::{run_history_rounds, GOAL};
    pub(super) const SCHEMA: &str = "leaseq_bench_history";
    drop_schema(url, SCHEMA).await?;
    let rounds = a.rounds.unwrap_or(3);
    println!(
        "record of finished jobs: Pool(4), {} items a round, {rounds} rounds (load {})",
        a.pool_items,
        load()
    );
    let (rows, kept) = run_history_rounds(url, SCHEMA, rounds, a.pool_items).await?;
    println!(" round | retention off | retention on | on/off");
    for (i, r) in rows.iter().enumerate() {
        println!(
            "{i:>6} | {:>13.0} | {:>12.0} | {:>6.3}",
            r[0],
            r[1],
            r[1] / r[0]
        );
    }
    let m = |k: usize| median(rows.iter().map(|r| r[k]).collect());
    let ratio = median(rows.iter().map(|r| r[1] / r[0]).collect());
    println!("median | {:>13.0} | {:>12.0} | {ratio:>6.3}", m(0), m(1));
    let want = a.pool_items / 10 + a.pool_items * rounds as u64;
    println!(
        "goal on >= {GOAL} x off: {} ({kept} entries kept of {want} items handled with it on; load {})",
        if ratio >= GOAL { "met" } else { "NOT met" },
        load()
    );
    if kept != want {
        return Err(format!("the record kept {kept} entries, not {want}").into());
    }
    Ok(())
}

/// `--tx`: commit-to-start latency of a transactional push and of a plain one.
pub(super) async fn tx(url: &str, a: &Args) -> Result<(), BenchError> {
    use leaseq_bench_kit::latency::quantile;
    use leaseq_bench_kit::pg_tx_bench::run_tx_latency;
    println!(
        "transactional push: {} samples of each, alternating, one idle worker in another open \
         (load {})",
        a.samples,
        load()
    );
    let r = run_tx_latency(url, STORE_SCHEMA, a.samples).await?;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    for (what, v) in [("push_in + COMMIT", &r.tx), ("push().await", &r.plain)] {
        println!(
            "  {what:<17} p50 {:>6.2} ms  p90 {:>6.2} ms  p99 {:>6.2} ms  max {:>6.2} ms",
            ms(quantile(v, 0.5)),
            ms(quantile(v, 0.9)),
            ms(quantile(v, 0.99)),
            ms(quantile(v, 1.0))
        );
    }
    println!(
        "  p50 ratio push_in / push: {:.2} (load {})",
        ms(quantile(&r.tx, 0.5)) / ms(quantile(&r.plain, 0.5)),
        load()
    );
    Ok(())
}
