//! Item timeouts: why the time limit belongs around each item, not around the batch.
//!
//! Scenario: 8 workers of a leaseq `Pool` work through 500 items. 2% of them (10, chosen by a
//! seeded PRNG) hang for 5 s; the rest take 10 ms. Without a per-item timeout the hung items
//! pin workers down and the batch takes about as long as two hangs back to back; with a
//! 0.5 s `ItemTimeout` each hung item costs 0.5 s and the batch ends close to the ideal
//! lower bound: the total work divided by the workers (computed from the actual item mix),
//! or the longest single item if that is longer.
//!
//! A timed-out item is handed back to the queue at once. With `max_attempts(1)` that first
//! timeout dead-letters it: the batch ends, like the Python reference, which dropped such
//! items, except that here they are kept as dead letters (with reason and attempt count)
//! instead of vanishing. A third row gives them 3 attempts, to show what the retries cost.
//!
//! Each setting runs in real time on tokio (multi-thread) and on smol
//! (`SmolRuntime::global()`), then in virtual time (tokio's paused clock; `SimRuntime`, smol's
//! executor on a virtual clock), where the figures are exact. `--virtual-only` runs only the
//! virtual-time rows (a few milliseconds; CI runs that). The real-time rows show their
//! progress as they run (a line every 2 s; one line redrawn every second on a terminal), and
//! the table follows when every row is done.
//!
//! ```sh
//! cargo run --release --example item_timeouts                   # about 30 s of real time
//! cargo run --release --example item_timeouts -- --virtual-only
//! ```

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use leaseq_async::{Backoff, Config, ItemTimeout, LeaseQueue, Pool, Runtime, SimRuntime};
use leaseq_smol::SmolRuntime;
use leaseq_suite::demo::{args_or_exit, pick_hung, Progress, Spec};
use leaseq_tokio::TokioRuntime;

const USAGE: &str = "\
item_timeouts: batch wall time with and without a per-item timeout, beside the ideal bound

USAGE:
    cargo run --release --example item_timeouts [-- OPTIONS]

OPTIONS:
    --virtual-only   run only the virtual-time rows (tokio's paused clock and SimRuntime);
                     without it the real-time rows (tokio multi-thread, SmolRuntime::global())
                     run first and take about 30 s, with a progress line every 2 s
                     (every second, in place, on a terminal)
    --seed N         seed of the PRNG that picks the hung items (default 42)
    -h, --help       print this help";

struct Scenario {
    items: u32,
    workers: usize,
    hung: Vec<bool>,
    hang: Duration,
    fast: Duration,
}

impl Scenario {
    fn new(seed: u64) -> Self {
        let items = 500u32;
        // Exactly 2% of the items, chosen by the seed.
        let hung = pick_hung(seed, items, items as usize * 2 / 100);
        Scenario {
            items,
            workers: 8,
            hung,
            hang: Duration::from_secs(5),
            fast: Duration::from_millis(10),
        }
    }

    fn hung_items(&self) -> Vec<u32> {
        (0..self.items).filter(|&i| self.hung[i as usize]).collect()
    }

    /// The ideal lower bound on the batch time under `setting`: the total handler time of
    /// the actual items (a hung item costs its timeout on each attempt) divided by the
    /// workers, or the longest single item if that is longer.
    fn ideal(&self, setting: Setting) -> Duration {
        let per_hung = match setting.timeout {
            None => self.hang,
            Some(t) => t.min(self.hang) * setting.attempts,
        };
        let hung = self.hung.iter().filter(|h| **h).count() as u32;
        let total = per_hung * hung + self.fast * (self.items - hung);
        (total / self.workers as u32).max(per_hung)
    }
}

#[derive(Clone, Copy)]
struct Setting {
    label: &'static str,
    timeout: Option<Duration>,
    attempts: u32,
    reference: Option<&'static str>,
}

const SETTINGS: [Setting; 3] = [
    Setting {
        label: "no item timeout",
        timeout: None,
        attempts: 1,
        reference: Some("10.41 s"),
    },
    Setting {
        label: "0.5 s item timeout, 1 attempt",
        timeout: Some(Duration::from_millis(500)),
        attempts: 1,
        reference: Some("1.54 s"),
    },
    Setting {
        label: "0.5 s item timeout, 3 attempts",
        timeout: Some(Duration::from_millis(500)),
        attempts: 3,
        reference: None,
    },
];

struct Outcome {
    /// From the first push to the moment every item is acked or dead-lettered.
    batch: Duration,
    ok: u64,
    timed_out: u64,
    dead_lettered: u64,
}

/// Where a real-time run shows its progress, and what to call it there.
#[derive(Clone, Copy)]
struct Show<'a> {
    progress: &'a Progress,
    what: &'a str,
}

/// Runs the batch once under `setting` on `rt`, its progress shown on `show` if given.
async fn run_batch<R: Runtime>(
    rt: R,
    sc: Arc<Scenario>,
    setting: Setting,
    show: Option<Show<'_>>,
) -> Outcome {
    // A visibility well past the 5 s hang, so that only the item timeout (or the handler's
    // end) settles an item: no lease runs out in this example.
    // Retried at once: the figures compare item timeouts, not backoff.
    let config = Config::new(Duration::from_secs(60))
        .with_max_attempts(setting.attempts)
        .with_backoff(Backoff::None);
    let queue = LeaseQueue::with_runtime(rt.clone(), config).expect("a valid config");
    let timeout = setting
        .timeout
        .map_or(ItemTimeout::None, ItemTimeout::Fixed);
    let start = rt.now();
    if queue.try_push_batch(0..sc.items).is_err() {
        unreachable!("an open queue without capacity limit takes every item");
    }
    if let Some(show) = show {
        let (queue, what, items) = (queue.clone(), show.what.to_string(), sc.items as u64);
        let started = Instant::now();
        show.progress.set(move || {
            let s = queue.stats();
            format!(
                "{what}: {:.1} s in, {} of {items} items settled (acked {}, dead-lettered {}), \
                 {} in flight",
                started.elapsed().as_secs_f64(),
                s.acked + s.dead_lettered,
                s.acked,
                s.dead_lettered,
                s.in_flight,
            )
        });
    }
    let (rt2, sc2) = (rt.clone(), sc.clone());
    let pool = Pool::builder(queue.clone())
        .workers(sc.workers)
        .item_timeout(timeout)
        .spawn(move |job| {
            let rt = rt2.clone();
            let took = if sc2.hung[job.item as usize] {
                sc2.hang
            } else {
                sc2.fast
            };
            async move {
                rt.sleep_until(rt.now().saturating_add(took)).await;
                Ok(())
            }
        });
    queue.wait_empty().await;
    let batch = rt.now().saturating_duration_since(start);
    if let Some(show) = show {
        // The status holds a handle of the queue: let it go with the batch.
        show.progress.unset();
    }
    let report = pool.shutdown(Duration::from_secs(1)).await;
    queue.close();
    Outcome {
        batch,
        ok: report.stats.ok,
        timed_out: report.stats.timed_out,
        dead_lettered: report.stats.queue.dead_lettered,
    }
}

fn tokio_real(sc: &Arc<Scenario>, setting: Setting, show: Option<Show<'_>>) -> Outcome {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("build a multi-thread tokio runtime");
    runtime.block_on(async {
        let rt = TokioRuntime::new(tokio::runtime::Handle::current());
        run_batch(rt, sc.clone(), setting, show).await
    })
}

fn smol_real(sc: &Arc<Scenario>, setting: Setting, show: Option<Show<'_>>) -> Outcome {
    smol::block_on(run_batch(SmolRuntime::global(), sc.clone(), setting, show))
}

// The virtual-time rows take milliseconds: no progress to show.
fn tokio_virtual(sc: &Arc<Scenario>, setting: Setting, _: Option<Show<'_>>) -> Outcome {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("build a current-thread tokio runtime");
    runtime.block_on(async {
        let rt = TokioRuntime::new(tokio::runtime::Handle::current());
        run_batch(rt, sc.clone(), setting, None).await
    })
}

fn smol_virtual(sc: &Arc<Scenario>, setting: Setting, _: Option<Show<'_>>) -> Outcome {
    let sim = SimRuntime::new();
    sim.block_on(run_batch(sim.clone(), sc.clone(), setting, None))
}

type Runner = fn(&Arc<Scenario>, Setting, Option<Show<'_>>) -> Outcome;

fn main() -> ExitCode {
    let options = match args_or_exit(Spec::flag("--virtual-only"), USAGE) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let sc = Arc::new(Scenario::new(options.seed));
    println!(
        "item_timeouts: {} items, {} workers (leaseq Pool); {} hang {} s (2%, items {:?}), \
         the rest take {} ms.",
        sc.items,
        sc.workers,
        sc.hung_items().len(),
        sc.hang.as_secs(),
        sc.hung_items(),
        sc.fast.as_millis(),
    );
    println!(
        "seed {} (change with --seed N). A timed-out item is handed back at once; with 1 \
         attempt that dead-letters it (the Python reference dropped it), so the batch ends.",
        options.seed
    );
    let mut runners: Vec<(&str, Runner)> = Vec::new();
    if !options.flag {
        runners.push(("tokio (real, multi-thread)", tokio_real));
        runners.push(("smol (real, global)", smol_real));
    }
    runners.push(("tokio (paused clock)", tokio_virtual));
    runners.push(("smol (SimRuntime)", smol_virtual));
    if options.flag {
        println!("Virtual time only: tokio's paused clock, and SimRuntime (smol's executor on a virtual clock).");
    } else {
        println!(
            "Real time on tokio (multi-thread) and smol (SmolRuntime::global()), then virtual \
             time (tokio's paused clock; SimRuntime, smol's executor on a virtual clock)."
        );
    }
    println!();

    let started = Instant::now();
    // The real-time rows take about 30 s: their progress is shown meanwhile, and the table
    // printed once every row is done.
    let progress = (!options.flag).then(Progress::start);
    let runs = SETTINGS.len() * runners.len();
    let mut outcomes: Vec<Outcome> = Vec::with_capacity(runs);
    for setting in SETTINGS {
        for (name, run) in &runners {
            let what = format!(
                "run {} of {runs} ({}; {name})",
                outcomes.len() + 1,
                setting.label
            );
            let show = progress.as_ref().map(|progress| Show {
                progress,
                what: &what,
            });
            outcomes.push(run(&sc, setting, show));
        }
    }
    if let Some(progress) = progress {
        // Off a terminal the progress lines stay in the log: a blank line before the table.
        if !progress.in_place() {
            println!();
        }
        progress.finish();
    }

    let label_w = SETTINGS.iter().map(|s| s.label.len()).max().unwrap_or(0);
    let rt_w = runners.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    let header = format!(
        "{:label_w$}  {:rt_w$}  {:>10}  {:>11}  {:>9}  {:>4}  {:>9}  {:>13}",
        "setting",
        "runtime",
        "batch time",
        "ideal bound",
        "reference",
        "ok",
        "timed out",
        "dead-lettered"
    );
    println!("{header}");
    println!("{}", "-".repeat(header.len()));
    let mut outcomes = outcomes.iter();
    for setting in SETTINGS {
        for (k, (name, _)) in runners.iter().enumerate() {
            let o = outcomes
                .next()
                .expect("one outcome per setting and runtime");
            let (label, ideal, reference) = if k == 0 {
                (
                    setting.label,
                    format!("{:.2} s", sc.ideal(setting).as_secs_f64()),
                    setting.reference.unwrap_or("-"),
                )
            } else {
                ("", String::new(), "")
            };
            println!(
                "{label:label_w$}  {name:rt_w$}  {:>8.2} s  {ideal:>11}  {reference:>9}  {:>4}  {:>9}  {:>13}",
                o.batch.as_secs_f64(),
                o.ok,
                o.timed_out,
                o.dead_lettered,
            );
        }
        println!();
    }
    println!(
        "batch time: from the first push until every item is acked or dead-lettered. ideal \
         bound: total handler time of this item mix (a hung item costs its timeout per \
         attempt) / {} workers, or the longest single item if longer.",
        sc.workers
    );
    println!();
    let none = SETTINGS[0];
    let one = SETTINGS[1];
    let last_hung = sc.hung_items().last().copied().unwrap_or_default();
    println!(
        "Reading: without a timeout the batch is bounded not by the total work ({:.2} s per \
         worker) but by the hangs: workers take items in order and each hung item pins its \
         worker for 5 s; the fast items go by so quickly that 8 items hang at once within the \
         first second, nobody is left, and the ninth and tenth start only when the first hangs \
         end, so the batch takes about two hangs back to back. With a 0.5 s timeout a hung \
         item costs 0.5 s and the batch ends near its ideal bound of {:.2} s; what is left \
         over is the tail of in-order work: a hung item near the back of the queue (here item \
         {}) starts when the rest is nearly done, and its 0.5 s runs on alone. Three attempts \
         cost a hung item 1.5 s, one after another. Real-time rows come out a little slower \
         than the virtual ones: each 10 ms sleep overshoots by the timer's granularity and \
         the wake-up latency of a busy machine.",
        sc.ideal(none).as_secs_f64(),
        sc.ideal(one).as_secs_f64(),
        last_hung,
    );
    println!();
    println!(
        "Took {:.3} s of real time.",
        started.elapsed().as_secs_f64()
    );
    ExitCode::SUCCESS
}
