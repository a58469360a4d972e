//! `--seeds`: the virtual-time rows across many seeds, each column's spread.

use super::*;

// ----- --seeds: the rows across many seeds -----------------------------------------------

/// What the table shows of a row, plus the hung items dead-lettered by the cut.
pub(super) fn figures(r: &RowResult) -> [u64; 7] {
    [
        r.processed,
        r.lost,
        r.dead_lettered,
        r.twice,
        r.late_acks,
        r.retrying,
        r.hung_dead,
    ]
}

/// `min-max, median m` (just the value if every seed gave the same).
pub(super) fn spread(values: &[u64]) -> String {
    let mut v = values.to_vec();
    v.sort_unstable();
    let (min, max) = (v[0], v[v.len() - 1]);
    if min == max {
        return min.to_string();
    }
    let mid = v.len() / 2;
    // f64's Display: "8", or "49.5" between two middle values.
    let median = if v.len() % 2 == 1 {
        v[mid] as f64
    } else {
        (v[mid - 1] + v[mid]) as f64 / 2.0
    };
    format!("{min}-{max}, median {median}")
}

/// `value ×seeds` for each value that came up, lowest first.
pub(super) fn distribution(values: &[u64]) -> String {
    let mut counts = std::collections::BTreeMap::new();
    for &v in values {
        *counts.entry(v).or_insert(0u32) += 1;
    }
    counts
        .iter()
        .map(|(v, n)| format!("{v} ×{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `--seeds first-last`: every row in virtual time on both runtimes for each seed, then each
/// column's spread across the seeds.
pub(super) fn sweep(first: u64, last: u64) {
    let started = Instant::now();
    let seeds: Vec<u64> = (first..=last).collect();
    // figures[seed][row], from tokio's paused clock; seeds where SimRuntime differed.
    let mut all: Vec<Vec<[u64; 7]>> = Vec::with_capacity(seeds.len());
    let mut differ = Vec::new();
    for &seed in &seeds {
        let sc = Arc::new(Scenario::new(seed));
        let tokio: Vec<[u64; 7]> = tokio_virtual(&sc).iter().map(figures).collect();
        let smol: Vec<[u64; 7]> = smol_virtual(&sc).iter().map(figures).collect();
        if tokio != smol {
            differ.push(seed);
        }
        all.push(tokio);
    }
    let sc = Scenario::new(first);
    println!(
        "redelivery, seeds {first} to {last}: {} items, {} workers, {} hung items (which ones \
         depends on the seed), {} s item timeout, visibility {} ms, max {} attempts, cut at {} \
         s; every row in virtual time, on tokio's paused clock and on SimRuntime.",
        sc.items,
        sc.workers,
        sc.hung_items().len(),
        sc.item_timeout.as_secs(),
        sc.visibility.as_millis(),
        sc.max_attempts,
        sc.cut.as_secs(),
    );
    if differ.is_empty() {
        println!(
            "Both runtimes gave the same figures on every seed. Each cell: the one value all \
             {} seeds gave, or min-max and the median.",
            seeds.len()
        );
    } else {
        println!(
            "SimRuntime's figures differed from tokio's on seeds {differ:?}; the table shows \
             tokio's. Each cell: the one value all {} seeds gave, or min-max and the median.",
            seeds.len()
        );
    }
    println!();
    let headers = [
        "processed",
        "lost",
        "dead-lettered",
        "twice",
        "late acks",
        "retrying",
        "hung dead-lettered",
    ];
    let cells: Vec<Vec<String>> = (0..ROWS.len())
        .map(|row| {
            (0..headers.len())
                .map(|col| match (ROWS[row], col) {
                    // A plain channel has no dead letters.
                    (Row::Plain, 6) => "-".to_string(),
                    _ => spread(&all.iter().map(|f| f[row][col]).collect::<Vec<_>>()),
                })
                .collect()
        })
        .collect();
    let label_w = ROWS.iter().map(|r| r.label().len()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..headers.len())
        .map(|col| {
            cells
                .iter()
                .map(|c| c[col].len())
                .chain([headers[col].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut header = format!("{:label_w$}", "row");
    for (h, w) in headers.iter().zip(&widths) {
        header.push_str(&format!("  {h:>w$}"));
    }
    println!("{header}");
    println!("{}", "-".repeat(header.len()));
    for (row, c) in ROWS.iter().zip(&cells) {
        let mut line = format!("{:label_w$}", row.label());
        for (cell, w) in c.iter().zip(&widths) {
            line.push_str(&format!("  {cell:>w$}"));
        }
        println!("{line}");
    }
    println!();
    println!("Hung items dead-lettered by the cut (of 10), value ×seeds:");
    for (i, row) in ROWS.iter().enumerate() {
        if *row == Row::Plain {
            continue;
        }
        let values: Vec<u64> = all.iter().map(|f| f[i][6]).collect();
        println!("  {:<4} {}", row.tag(), distribution(&values));
    }
    let per_seed = |i: usize| -> Vec<String> {
        all.iter()
            .zip(&seeds)
            .map(|(f, s)| format!("{s}:{}", f[i][6]))
            .collect()
    };
    let (c, d) = (3, 4);
    println!("  per seed, (c): {}", per_seed(c).join(" "));
    println!("  per seed, (d): {}", per_seed(d).join(" "));
    let all_ten: Vec<u64> = all
        .iter()
        .zip(&seeds)
        .filter(|(f, _)| f[d][6] == 10)
        .map(|(_, s)| *s)
        .collect();
    let gains: Vec<i64> = all
        .iter()
        .map(|f| f[d][6] as i64 - f[c][6] as i64)
        .collect();
    println!();
    println!(
        "The pool, (d), dead-letters all 10 hung items by the cut on {} of {} seeds ({:?}); \
         it dead-letters more of them than (c) on {} of {} seeds (by {} to {}).",
        all_ten.len(),
        seeds.len(),
        all_ten,
        gains.iter().filter(|&&g| g > 0).count(),
        seeds.len(),
        gains.iter().min().copied().unwrap_or(0),
        gains.iter().max().copied().unwrap_or(0),
    );
    println!();
    println!(
        "Took {:.3} s of real time for {} rows.",
        started.elapsed().as_secs_f64(),
        seeds.len() * 2 * ROWS.len()
    );
}
