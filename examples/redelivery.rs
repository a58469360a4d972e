//! Redelivery: what becomes of work when handlers hang or run slow, on a plain channel and on
//! leaseq's lease queue, on tokio and on smol.
//!
//! Scenario: 500 items, 10 workers. 2% of the items (10, chosen by a seeded PRNG) hang every
//! time they run, until the 2 s per-item timeout; every other handler call takes 0.6 s with
//! probability 0.1 (drawn per call, seeded) and 10 ms otherwise. Leases last 0.5 s (the
//! visibility timeout), an item gets at most 3 attempts, and the run is cut at 10 s. Four
//! set-ups, each on tokio and on smol:
//!
//! - (a) a plain channel (tokio `mpsc` with the receiver behind a mutex / `async-channel`):
//!   the item timeout simply drops the item;
//! - (b) a lease queue without heartbeat: the worker gives up at 2 s and abandons the item
//!   without handing it back, so it returns only when its lease expires;
//! - (c) the same with a heartbeat that runs beside the handler: an abandoned item returns
//!   once the heartbeat stops and its last extension runs out;
//! - (d) leaseq's `Pool`: heartbeat on, and `ItemTimeout::Fixed(2 s)` hands the item back
//!   the moment its timeout fires.
//!
//! By default every row runs in virtual time (tokio's paused clock; `SimRuntime`, smol's
//! executor on a virtual clock), so the table is exact and the same on every run for a
//! seed. `--real-time` runs the same rows on real clocks (tokio multi-thread,
//! `SmolRuntime::global()`), which takes about 20 s and shows its progress meanwhile.
//! `--seeds A-B` runs the virtual-time rows for every seed from A to B and prints what
//! each column came to across them (the README's figures for seeds 1-20 come from it).
//!
//! ```sh
//! cargo run --release --example redelivery                 # virtual time, seed 42
//! cargo run --release --example redelivery -- --seed 7
//! cargo run --release --example redelivery -- --seeds 1-20
//! cargo run --release --example redelivery -- --real-time
//! ```

use std::pin::pin;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::{join_all, select, Either};
use leaseq_async::{Backoff, Config, Delivery, ItemTimeout, LeaseQueue, Pool, Runtime, SimRuntime};
use leaseq_smol::SmolRuntime;
use leaseq_suite::demo::{args_or_exit, pick_hung, Progress, Spec, DEFAULT_SEED};
use leaseq_suite::rng::mix64;
use leaseq_tokio::TokioRuntime;

const USAGE: &str = "\
redelivery: a plain channel vs leaseq's lease queue when handlers hang or run slow

USAGE:
    cargo run --release --example redelivery [-- OPTIONS]

OPTIONS:
    --seed N       seed of the PRNG that picks the hung items and the slow calls (default 42)
    --seeds A-B    run the virtual-time rows for every seed from A to B (e.g. 1-20) and
                   print each column's range, median and distribution across the seeds
    --real-time    run every row on real clocks (tokio multi-thread, SmolRuntime::global());
                   takes about 20 s, shows its progress every 2 s (every second, in place,
                   on a terminal), and the figures vary a little from run to run
    -h, --help     print this help

By default every row runs in virtual time: tokio rows on tokio's paused clock
(current_thread runtime, start_paused), smol rows on leaseq_async::SimRuntime (smol's
executor, async-executor, on a virtual clock). The table is then exact and reproducible.";

// ----- the scenario ----------------------------------------------------------------------

struct Scenario {
    seed: u64,
    items: u32,
    workers: usize,
    hung: Vec<bool>,
    /// Probability that one handler call is slow, in percent.
    slow_percent: u64,
    slow: Duration,
    fast: Duration,
    item_timeout: Duration,
    visibility: Duration,
    max_attempts: u32,
    cut: Duration,
}

impl Scenario {
    fn new(seed: u64) -> Self {
        let items = 500u32;
        // Exactly 2% of the items, chosen by the seed.
        let hung = pick_hung(seed, items, items as usize * 2 / 100);
        Scenario {
            seed,
            items,
            workers: 10,
            hung,
            slow_percent: 10,
            slow: Duration::from_millis(600),
            fast: Duration::from_millis(10),
            item_timeout: Duration::from_secs(2),
            visibility: Duration::from_millis(500),
            max_attempts: 3,
            cut: Duration::from_secs(10),
        }
    }

    /// Whether call number `call` (0, 1, ...) of `item` is slow. A pure function of the seed,
    /// the item and the call number, so it does not depend on how tasks were scheduled.
    fn is_slow(&self, item: u32, call: u32) -> bool {
        let key = ((item as u64) << 32) | call as u64;
        let draw = mix64(self.seed ^ mix64(key ^ 0x5EED_5EED_5EED_5EED));
        draw % 1000 < self.slow_percent * 10
    }

    fn hung_items(&self) -> Vec<u32> {
        (0..self.items).filter(|&i| self.hung[i as usize]).collect()
    }
}

/// What happened to each item in one row: handler calls started and finished, and drops.
struct Tracker {
    calls: Vec<AtomicU32>,
    finished: Vec<AtomicU32>,
    dropped: Vec<AtomicU32>,
    /// Row (b'): acks not sent because the lease deadline had passed.
    refused_late: AtomicU32,
}

impl Tracker {
    fn new(n: u32) -> Self {
        let zeros = || (0..n).map(|_| AtomicU32::new(0)).collect();
        Tracker {
            calls: zeros(),
            finished: zeros(),
            dropped: zeros(),
            refused_late: AtomicU32::new(0),
        }
    }

    fn count(v: &[AtomicU32], pred: impl Fn(u32) -> bool) -> u64 {
        v.iter().filter(|a| pred(a.load(Ordering::Acquire))).count() as u64
    }
}

/// Handler calls finished and rows done, in every row of the process: what `--real-time`
/// shows as its progress.
static CALLS_FINISHED: AtomicU64 = AtomicU64::new(0);
static ROWS_DONE: AtomicU64 = AtomicU64::new(0);

/// One handler call. Hung items never finish (the caller's timeout ends them); the others
/// sleep 0.6 s or 10 ms and record that they finished.
async fn work<R: Runtime>(rt: &R, sc: &Scenario, tracker: &Tracker, item: u32) {
    let i = item as usize;
    let call = tracker.calls[i].fetch_add(1, Ordering::AcqRel);
    if sc.hung[i] {
        std::future::pending::<()>().await;
    }
    let took = if sc.is_slow(item, call) {
        sc.slow
    } else {
        sc.fast
    };
    rt.sleep_until(rt.now().saturating_add(took)).await;
    tracker.finished[i].fetch_add(1, Ordering::AcqRel);
    CALLS_FINISHED.fetch_add(1, Ordering::Relaxed);
}

// ----- the rows --------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum Row {
    Plain,
    NoHeartbeat,
    /// (b) with the late ack of an unclaimed item refused: the reference queue's rule.
    NoHeartbeatStrict,
    Heartbeat,
    HandBack,
}

const ROWS: [Row; 5] = [
    Row::Plain,
    Row::NoHeartbeat,
    Row::NoHeartbeatStrict,
    Row::Heartbeat,
    Row::HandBack,
];

impl Row {
    fn tag(self) -> &'static str {
        match self {
            Row::Plain => "(a)",
            Row::NoHeartbeat => "(b)",
            Row::NoHeartbeatStrict => "(b')",
            Row::Heartbeat => "(c)",
            Row::HandBack => "(d)",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Row::Plain => "(a) plain channel, timeout drops the item",
            Row::NoHeartbeat => "(b) lease queue, no heartbeat",
            Row::NoHeartbeatStrict => "(b') as (b), acks after the deadline refused",
            Row::Heartbeat => "(c) lease queue, heartbeat",
            Row::HandBack => "(d) heartbeat + hand back on timeout (Pool)",
        }
    }

    /// The Python asyncio reference (for (d): what issue 4 expects): processed, lost,
    /// dead-lettered, twice, late, retrying.
    fn reference(self) -> [&'static str; 6] {
        match self {
            Row::Plain => ["490", "10", "-", "-", "-", "-"],
            Row::NoHeartbeat => ["490", "0", "10", "~54", "~54", "0"],
            Row::Heartbeat => ["490", "0", "4", "0", "0", "6"],
            Row::HandBack => ["-", "-", "10", "-", "-", "-"],
            Row::NoHeartbeatStrict => ["-", "-", "-", "-", "-", "-"],
        }
    }
}

/// Which plain channel a runtime's row (a) uses.
#[derive(Clone, Copy)]
enum Flavor {
    /// `tokio::sync::mpsc`, the receiver behind a `tokio::sync::Mutex`.
    Tokio,
    /// `async-channel`.
    Smol,
}

#[derive(Clone)]
enum PlainRx {
    Tokio(Arc<tokio::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<u32>>>),
    Smol(async_channel::Receiver<u32>),
}

impl PlainRx {
    async fn recv(&self) -> Option<u32> {
        match self {
            PlainRx::Tokio(rx) => rx.lock().await.recv().await,
            PlainRx::Smol(rx) => rx.recv().await.ok(),
        }
    }
}

/// One row's figures at the cut.
#[derive(Default)]
struct RowResult {
    /// Distinct items whose handler finished at least once.
    processed: u64,
    /// Items nowhere any more: not processed, not dead-lettered, not waiting.
    lost: u64,
    dead_lettered: u64,
    /// Items whose handler finished more than once.
    twice: u64,
    /// Stale acks refused plus late acks of unclaimed items accepted.
    late_acks: u64,
    /// ... of which stale acks refused, and late acks of unclaimed items accepted (queue
    /// stats), and acks refused by row (b')'s rule.
    late_stale: u64,
    late_unclaimed: u64,
    late_refused: u64,
    /// Items still in the queue (ready, backing off or leased) or channel at the cut.
    retrying: u64,
    /// Hung items dead-lettered by the cut, and when the last of them was.
    hung_dead: u64,
    last_hung_dead_at: Option<Duration>,
    /// Deliveries after the first.
    redelivered: u64,
    /// Leases that ran out.
    lease_expired: u64,
    /// Real time the row took.
    wall: Duration,
}

async fn run_row<R: Runtime>(rt: R, sc: Arc<Scenario>, row: Row, flavor: Flavor) -> RowResult {
    let wall = Instant::now();
    let start = rt.now();
    let cut_at = start.saturating_add(sc.cut);
    let tracker = Arc::new(Tracker::new(sc.items));
    let mut result = match row {
        Row::Plain => plain_row(&rt, &sc, &tracker, flavor, cut_at).await,
        Row::NoHeartbeat | Row::NoHeartbeatStrict | Row::Heartbeat => {
            lease_row(&rt, &sc, &tracker, row, cut_at).await
        }
        Row::HandBack => pool_row(&rt, &sc, &tracker, cut_at).await,
    };
    result.processed = Tracker::count(&tracker.finished, |n| n > 0);
    result.twice = Tracker::count(&tracker.finished, |n| n > 1);
    if let Some(at) = result.last_hung_dead_at.as_mut() {
        *at = at.saturating_sub(start.as_duration());
    }
    result.wall = wall.elapsed();
    ROWS_DONE.fetch_add(1, Ordering::Relaxed);
    result
}

/// (a): workers take items from a channel; a timeout drops the item.
async fn plain_row<R: Runtime>(
    rt: &R,
    sc: &Arc<Scenario>,
    tracker: &Arc<Tracker>,
    flavor: Flavor,
    cut_at: leaseq_async::Timestamp,
) -> RowResult {
    let rx = match flavor {
        Flavor::Tokio => {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            for i in 0..sc.items {
                tx.send(i).expect("receiver is alive");
            }
            PlainRx::Tokio(Arc::new(tokio::sync::Mutex::new(rx)))
        }
        Flavor::Smol => {
            let (tx, rx) = async_channel::unbounded();
            for i in 0..sc.items {
                tx.try_send(i).expect("unbounded channel takes every item");
            }
            PlainRx::Smol(rx)
        }
    };
    let mut tasks: Vec<R::Task> = (0..sc.workers)
        .map(|_| {
            let (rt2, sc, tracker, rx) = (rt.clone(), sc.clone(), tracker.clone(), rx.clone());
            rt.spawn(Box::pin(async move {
                while let Some(item) = rx.recv().await {
                    let give_up = pin!(rt2.sleep_until(rt2.now().saturating_add(sc.item_timeout)));
                    let handled = pin!(work(&rt2, &sc, &tracker, item));
                    if let Either::Left(_) = select(give_up, handled).await {
                        tracker.dropped[item as usize].fetch_add(1, Ordering::AcqRel);
                    }
                }
            }))
        })
        .collect();
    rt.sleep_until(cut_at).await;
    let processed = Tracker::count(&tracker.finished, |n| n > 0);
    let lost = (0..sc.items as usize)
        .filter(|&i| {
            tracker.dropped[i].load(Ordering::Acquire) > 0
                && tracker.finished[i].load(Ordering::Acquire) == 0
        })
        .count() as u64;
    for task in &mut tasks {
        rt.abort(task);
    }
    RowResult {
        lost,
        retrying: (sc.items as u64).saturating_sub(processed + lost),
        ..RowResult::default()
    }
}

/// (b) and (c): workers receive by hand; at the item timeout they give up and abandon the
/// delivery (kept aside, neither acked nor handed back), so the item comes back only when
/// its lease runs out. In (c) the queue's heartbeat extends the lease every third of the
/// visibility while the handler runs, and stops when the worker gives up.
async fn lease_row<R: Runtime>(
    rt: &R,
    sc: &Arc<Scenario>,
    tracker: &Arc<Tracker>,
    row: Row,
    cut_at: leaseq_async::Timestamp,
) -> RowResult {
    let queue = new_queue(rt, sc);
    let abandoned: Arc<Mutex<Vec<Delivery<u32, R>>>> = Arc::default();
    let mut tasks: Vec<R::Task> = (0..sc.workers)
        .map(|_| {
            let fut = lease_worker(
                queue.clone(),
                sc.clone(),
                tracker.clone(),
                row,
                abandoned.clone(),
            );
            rt.spawn(Box::pin(fut))
        })
        .collect();
    rt.sleep_until(cut_at).await;
    let mut result = queue_figures(&queue, sc);
    let refused = tracker.refused_late.load(Ordering::Acquire) as u64;
    result.late_acks += refused;
    result.late_refused += refused;
    for task in &mut tasks {
        rt.abort(task);
    }
    queue.close();
    // Only now may the abandoned deliveries go (dropped, they would hand their items back).
    abandoned.lock().unwrap_or_else(|e| e.into_inner()).clear();
    result
}

async fn lease_worker<R: Runtime>(
    queue: LeaseQueue<u32, R>,
    sc: Arc<Scenario>,
    tracker: Arc<Tracker>,
    row: Row,
    abandoned: Arc<Mutex<Vec<Delivery<u32, R>>>>,
) {
    let rt = queue.runtime().clone();
    let heartbeat = row == Row::Heartbeat;
    loop {
        let next = if heartbeat {
            queue.receive_with_heartbeat().await
        } else {
            queue.receive().await
        };
        let Some(mut delivery) = next else { break };
        let item = *delivery.item();
        let finished = {
            let give_up = pin!(rt.sleep_until(rt.now().saturating_add(sc.item_timeout)));
            let handled = pin!(work(&rt, &sc, &tracker, item));
            matches!(select(give_up, handled).await, Either::Right(_))
        };
        if !finished {
            // The worker gives up: its heartbeat stops, so the lease runs out.
            delivery.stop_heartbeat();
        }
        if finished && row == Row::NoHeartbeatStrict && delivery.is_lease_lost() {
            // What a queue that refuses every ack after the deadline would do: the ack is
            // refused and the item, already back in the queue, will run again.
            tracker.refused_late.fetch_add(1, Ordering::AcqRel);
            abandoned
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(delivery);
        } else if finished {
            // Refused if the lease ran out and the item went to another worker (a stale
            // ack); the queue counts it either way.
            let _ = delivery.ack().await;
        } else {
            abandoned
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(delivery);
        }
    }
}

/// (d): leaseq's pool with heartbeat and a fixed item timeout, which hands the item back
/// (through the queue's attempts and dead letters) the moment it fires.
async fn pool_row<R: Runtime>(
    rt: &R,
    sc: &Arc<Scenario>,
    tracker: &Arc<Tracker>,
    cut_at: leaseq_async::Timestamp,
) -> RowResult {
    let queue = new_queue(rt, sc);
    let (rt2, sc2, tracker2) = (rt.clone(), sc.clone(), tracker.clone());
    let pool = Pool::builder(queue.clone())
        .workers(sc.workers)
        .item_timeout(ItemTimeout::Fixed(sc.item_timeout))
        .heartbeat(true)
        .spawn(move |job| {
            let (rt, sc, tracker) = (rt2.clone(), sc2.clone(), tracker2.clone());
            async move {
                work(&rt, &sc, &tracker, job.item).await;
                Ok(())
            }
        });
    rt.sleep_until(cut_at).await;
    let result = queue_figures(&queue, sc);
    let _ = pool.shutdown(Duration::ZERO).await;
    queue.close();
    result
}

fn new_queue<R: Runtime>(rt: &R, sc: &Scenario) -> LeaseQueue<u32, R> {
    // Retried at once, as the reference broker does: the figures compare delivery rules,
    // not backoff (the default config would back off 1 s, longer than these scenarios).
    let config = Config::new(sc.visibility)
        .with_max_attempts(sc.max_attempts)
        .with_backoff(Backoff::None);
    // The heartbeat period: a third of the visibility (leaseq's default), in whole
    // milliseconds so that tokio's millisecond timer and SimRuntime's nanosecond one beat at
    // the same instants.
    let every = Duration::from_millis((sc.visibility / 3).as_millis() as u64);
    let queue = LeaseQueue::<u32, R>::builder(config)
        .heartbeat_every(every)
        .runtime(rt.clone())
        .build()
        .expect("a valid config");
    if queue.try_push_batch(0..sc.items).is_err() {
        unreachable!("an open queue without capacity limit takes every item");
    }
    queue
}

/// The queue's side of a lease row's figures, read at the cut.
fn queue_figures<R: Runtime>(queue: &LeaseQueue<u32, R>, sc: &Scenario) -> RowResult {
    let stats = queue.stats();
    if let Err(e) = stats.check_conservation() {
        eprintln!("warning: {e}");
    }
    let (hung_dead, last) = {
        let letters = queue.store().dead_letters();
        let mut n = 0;
        let mut last = None;
        for letter in &letters {
            if sc.hung[letter.item as usize] {
                n += 1;
                last = last.max(Some(letter.at.as_duration()));
            }
        }
        (n, last)
    };
    RowResult {
        lost: stats
            .pushed
            .saturating_sub(stats.acked + stats.dead_lettered + stats.live()),
        dead_lettered: stats.dead_lettered,
        late_acks: stats.late_acks_stale + stats.late_acks_unclaimed,
        late_stale: stats.late_acks_stale,
        late_unclaimed: stats.late_acks_unclaimed,
        retrying: stats.live(),
        hung_dead,
        last_hung_dead_at: last,
        redelivered: stats.redelivered,
        lease_expired: stats.lease_expired,
        ..RowResult::default()
    }
}

// ----- runtimes --------------------------------------------------------------------------

/// Each row on a fresh current-thread tokio runtime whose clock starts paused.
fn tokio_virtual(sc: &Arc<Scenario>) -> Vec<RowResult> {
    ROWS.iter()
        .map(|&row| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .start_paused(true)
                .build()
                .expect("build a current-thread tokio runtime");
            runtime.block_on(async {
                let rt = TokioRuntime::new(tokio::runtime::Handle::current());
                run_row(rt, sc.clone(), row, Flavor::Tokio).await
            })
        })
        .collect()
}

/// Each row on a fresh `SimRuntime`: async-executor (smol's executor) on a virtual clock.
fn smol_virtual(sc: &Arc<Scenario>) -> Vec<RowResult> {
    ROWS.iter()
        .map(|&row| {
            let sim = SimRuntime::new();
            sim.block_on(run_row(sim.clone(), sc.clone(), row, Flavor::Smol))
        })
        .collect()
}

/// All rows at once on one multi-thread tokio runtime, real time.
fn tokio_real(sc: &Arc<Scenario>) -> Vec<RowResult> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("build a multi-thread tokio runtime");
    runtime.block_on(async {
        let rows = ROWS.iter().map(|&row| {
            let rt = TokioRuntime::new(tokio::runtime::Handle::current());
            run_row(rt, sc.clone(), row, Flavor::Tokio)
        });
        join_all(rows).await
    })
}

/// All rows at once on smol's global executor, real time.
fn smol_real(sc: &Arc<Scenario>) -> Vec<RowResult> {
    smol::block_on(join_all(ROWS.iter().map(|&row| {
        run_row(SmolRuntime::global(), sc.clone(), row, Flavor::Smol)
    })))
}

/// The rows on tokio, then on smol, in real time, with their progress shown meanwhile.
fn real_time(sc: &Arc<Scenario>) -> [Vec<RowResult>; 2] {
    let progress = Progress::start();
    let total = 2 * ROWS.len();
    let cut = sc.cut.as_secs_f64();
    let phase = |name: &'static str| {
        let started = Instant::now();
        let calls_before = CALLS_FINISHED.load(Ordering::Relaxed);
        progress.set(move || {
            format!(
                "{name}: {:.1} s into the {cut:.0} s rows; {} of {total} rows done; {} handler \
                 calls finished on this runtime",
                started.elapsed().as_secs_f64(),
                ROWS_DONE.load(Ordering::Relaxed),
                CALLS_FINISHED.load(Ordering::Relaxed) - calls_before,
            )
        });
    };
    phase("tokio (real time)");
    let tokio = tokio_real(sc);
    phase("smol (real time)");
    let smol = smol_real(sc);
    progress.finish();
    [tokio, smol]
}

// ----- --seeds: the rows across many seeds -----------------------------------------------

/// What the table shows of a row, plus the hung items dead-lettered by the cut.
fn figures(r: &RowResult) -> [u64; 7] {
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
fn spread(values: &[u64]) -> String {
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
fn distribution(values: &[u64]) -> String {
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
fn sweep(first: u64, last: u64) {
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

// ----- output ----------------------------------------------------------------------------

const HEADERS: [&str; 6] = [
    "processed",
    "lost",
    "dead-lettered",
    "twice",
    "late acks",
    "retrying",
];

fn print_table(runtimes: &[(&str, &[RowResult])]) {
    let label_w = ROWS.iter().map(|r| r.label().len()).max().unwrap_or(0);
    let rt_w = runtimes
        .iter()
        .map(|(name, _)| name.len())
        .chain([PY_REF.len()])
        .max()
        .unwrap_or(0);
    let mut header = format!("{:label_w$}  {:rt_w$}", "row", "runtime");
    for h in HEADERS {
        header.push_str(&format!("  {h:>w$}", w = h.len().max(5)));
    }
    println!("{header}");
    println!("{}", "-".repeat(header.len()));
    for (i, row) in ROWS.iter().enumerate() {
        for (k, (name, results)) in runtimes.iter().enumerate() {
            let r = &results[i];
            let cells = [
                r.processed,
                r.lost,
                r.dead_lettered,
                r.twice,
                r.late_acks,
                r.retrying,
            ]
            .map(|n| n.to_string());
            let label = if k == 0 { row.label() } else { "" };
            print_row(label, name, &cells, label_w, rt_w);
        }
        let reference = row.reference();
        if reference.iter().any(|c| *c != "-") {
            let source = if *row == Row::HandBack {
                EXPECTED
            } else {
                PY_REF
            };
            print_row("", source, &reference.map(String::from), label_w, rt_w);
        }
        println!();
    }
}

const PY_REF: &str = "Python reference";
const EXPECTED: &str = "expected";

fn print_row(label: &str, runtime: &str, cells: &[String; 6], label_w: usize, rt_w: usize) {
    let mut line = format!("{label:label_w$}  {runtime:rt_w$}");
    for (h, c) in HEADERS.iter().zip(cells) {
        line.push_str(&format!("  {c:>w$}", w = h.len().max(5)));
    }
    println!("{line}");
}

fn print_details(runtimes: &[(&str, &[RowResult])]) {
    println!(
        "Details at the cut: hung items dead-lettered (and when the last was); deliveries \
         after the first; leases that ran out; late acks split into stale refused / unclaimed \
         accepted / refused by (b')'s rule; real time the row took."
    );
    for (i, row) in ROWS.iter().enumerate() {
        if *row == Row::Plain {
            continue;
        }
        for (name, results) in runtimes {
            let r = &results[i];
            let last = r
                .last_hung_dead_at
                .map_or("-".to_string(), |t| format!("{:.2} s", t.as_secs_f64()));
            println!(
                "  {:<4} {:<20}  hung dead {:>2}/10, last at {:>7}  redelivered {:>3}  \
                 leases expired {:>3}  late {:>2}/{:>2}/{:>2}  {:>7.1} ms",
                row.tag(),
                name,
                r.hung_dead,
                last,
                r.redelivered,
                r.lease_expired,
                r.late_stale,
                r.late_unclaimed,
                r.late_refused,
                r.wall.as_secs_f64() * 1000.0,
            );
        }
    }
    println!();
}

fn print_reading(r: &[RowResult]) {
    let [a, b, strict, c, d] = [&r[0], &r[1], &r[2], &r[3], &r[4]];
    let d_all = if d.hung_dead == 10 {
        format!(
            "all 10 hung items are dead-lettered inside the 10 s (the last at {:.2} s)",
            d.last_hung_dead_at.unwrap_or_default().as_secs_f64()
        )
    } else {
        format!(
            "{} of the 10 hung items are dead-lettered inside the 10 s and the other {} are \
             still retrying",
            d.hung_dead,
            10 - d.hung_dead
        )
    };
    println!(
        "Reading (first runtime's figures): the plain channel finishes {} items, and its \
         timeout drops the {} hung ones without a trace. The lease queue loses nothing. \
         Without a heartbeat the hung items end as {} dead letters after three lease expiries, \
         and every slow call (0.6 s) outlives its 0.5 s lease: {} late acks. Here leaseq \
         differs from the reference by design, not by a bug: an expired item rejoins the back \
         of the ready queue (items are served in the order they became visible), so during the \
         backlog nobody claims it in the 0.1 s before its first worker finishes, and leaseq \
         accepts that late ack because the item is unclaimed ({} of the {}); hence {} items run \
         twice instead of ~54. The reference's figures (twice = late acks = about the number \
         of slow calls) match those of a queue that refuses every ack after the deadline: row \
         (b') applies that rule and gives {} items run twice and {} late acks. With a \
         heartbeat slow work keeps its lease (twice {}, late acks {}), but a hung item now \
         holds its lease until the worker gives up at 2 s and comes back only when the \
         heartbeat stops, so by the cut {} are dead-lettered and {} still retrying. Handing the \
         item back at its timeout keeps that protection and frees the item at once: {}, with \
         {} items processed, {} twice and {} late acks. That last figure is tight and depends on \
         the seed: a hung item's three 2 s attempts now run one after another (6 s from its \
         first pickup, which comes late for an item near the back of the queue), and the \
         whole run needs about 94 worker-seconds of the 100 there are; with seeds 1 to 20 \
         (`--seeds 1-20`), 3 dead-letter all 10 by the cut and the others 6 to 9 (without a \
         heartbeat, in (b), the attempts overlap, as each lease runs out after 0.5 s while its worker is still \
         stuck).",
        a.processed,
        a.lost,
        b.dead_lettered,
        b.late_acks,
        b.late_unclaimed,
        b.late_acks,
        b.twice,
        strict.twice,
        strict.late_acks,
        c.twice,
        c.late_acks,
        c.dead_lettered,
        c.retrying,
        d_all,
        d.processed,
        d.twice,
        d.late_acks,
    );
}

fn main() -> ExitCode {
    let spec = Spec {
        flag: Some("--real-time"),
        seeds: true,
        seconds: false,
    };
    let options = match args_or_exit(spec, USAGE) {
        Ok(o) => o,
        Err(code) => return code,
    };
    if let Some((first, last)) = options.seeds {
        if options.flag {
            eprintln!("error: --seeds runs in virtual time only; drop --real-time\n\n{USAGE}");
            return ExitCode::from(2);
        }
        sweep(first, last);
        return ExitCode::SUCCESS;
    }
    let sc = Arc::new(Scenario::new(options.seed));
    println!(
        "redelivery: {} items, {} workers; {} hang every time until the {} s item timeout \
         (2%, items {:?});",
        sc.items,
        sc.workers,
        sc.hung_items().len(),
        sc.item_timeout.as_secs(),
        sc.hung_items(),
    );
    println!(
        "each other call takes {} ms, or {} ms with probability 0.{} (per call); visibility \
         {} ms, max {} attempts, cut at {} s.",
        sc.fast.as_millis(),
        sc.slow.as_millis(),
        sc.slow_percent / 10,
        sc.visibility.as_millis(),
        sc.max_attempts,
        sc.cut.as_secs(),
    );
    println!(
        "seed {} (change with --seed N){}",
        sc.seed,
        if sc.seed == DEFAULT_SEED {
            ", the default"
        } else {
            ""
        }
    );
    let started = Instant::now();
    let (names, results): ([&str; 2], [Vec<RowResult>; 2]) = if options.flag {
        println!(
            "Real time: tokio rows on a multi-thread runtime, smol rows on SmolRuntime::global(); \
             the five rows of a runtime run side by side (about 10 s per runtime)."
        );
        (["tokio (real time)", "smol (real time)"], real_time(&sc))
    } else {
        println!(
            "Virtual time: tokio rows on tokio's paused clock (current_thread, start_paused); \
             smol rows on leaseq_async::SimRuntime, smol's executor (async-executor) on a \
             virtual clock. Exact and reproducible; --real-time for real clocks."
        );
        (
            ["tokio (paused clock)", "smol (SimRuntime)"],
            [tokio_virtual(&sc), smol_virtual(&sc)],
        )
    };
    println!();
    let runtimes: Vec<(&str, &[RowResult])> = names
        .iter()
        .zip(results.iter())
        .map(|(n, r)| (*n, r.as_slice()))
        .collect();
    print_table(&runtimes);
    println!(
        "processed: distinct items whose handler finished; lost: items gone without a trace; \
         twice: items whose handler finished more than once; late acks: stale acks refused + \
         late acks of unclaimed items accepted; retrying: items still queued, backing off or \
         leased at the cut. An item can be both processed and dead-lettered (its acks all \
         came late)."
    );
    println!();
    print_details(&runtimes);
    print_reading(&results[0]);
    println!();
    println!(
        "Took {:.3} s of real time for {} rows of {} s each.",
        started.elapsed().as_secs_f64(),
        2 * ROWS.len(),
        sc.cut.as_secs()
    );
    ExitCode::SUCCESS
}
