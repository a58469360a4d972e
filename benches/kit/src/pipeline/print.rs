//! [`Results`]: what `pipeline_bench`'s sections measured, and how it is printed: the
//! throughput table, the worker curve, the latencies, then issue 17's goals.

use std::collections::BTreeMap;
use std::time::Duration;

use super::report::{print_goals, print_table, thousands, Row, Samples};
use super::runs::Outcome;
use super::{rate, BenchError};

/// What the sections measured.
#[derive(Default)]
pub struct Results {
    /// Throughput per row key and round.
    pub samples: Samples,
    /// Why a row has no figure (skipped, failed, not available).
    pub missing: BTreeMap<String, String>,
    /// `(store, workers, items/s)` of the worker curve: `"sqlite"`, `"pg"`, or `"flume"`
    /// (the same handler without a queue: what the timer allows).
    pub curve: Vec<(&'static str, usize, f64)>,
    /// `(what, p50, p99)` of push -> handler start at low load.
    pub latency: Vec<(&'static str, Duration, Duration)>,
    /// The Postgres server's durability settings, in words.
    pub pg_durability: String,
    /// Rows whose items came at an attempt other than 1, and how many.
    pub notes: Vec<String>,
}

const PL: &str = "fsync per commit (PowerLoss)";
const PC: &str = "WAL, no fsync per commit (ProcessCrash)";
const PG: &str = "synchronous_commit (server setting above)";

fn store_rows(p: &'static str, system: &'static str, durability: &'static str) -> [Row; 6] {
    // Leaked once per table: the keys are built from the prefix.
    let key = |k: &str| -> &'static str { Box::leak(format!("{p}.{k}").into_boxed_str()) };
    let batch = key("batch");
    [
        Row {
            key: key("pool"),
            system,
            durability,
            consumer: "Pool(4), no-op handler",
            ratio_to: Some((batch, "of the batch path")),
        },
        Row {
            key: key("pool32"),
            system,
            durability,
            consumer: "Pool(4), `.prefetch(32)`",
            ratio_to: Some((batch, "of the batch path")),
        },
        Row {
            key: key("single"),
            system,
            durability,
            consumer: "one at a time, `ack().await`",
            ratio_to: Some((batch, "of the batch path")),
        },
        Row {
            key: key("nowait"),
            system,
            durability,
            consumer: "one at a time, `receive()` + `ack_nowait()`",
            ratio_to: Some((batch, "of the batch path")),
        },
        Row {
            key: key("prefetch"),
            system,
            durability,
            consumer: "one at a time, `consumer(32)` + `ack_nowait()`",
            ratio_to: Some((batch, "of the batch path")),
        },
        Row {
            key: batch,
            system,
            durability,
            consumer: "`receive_batch(16)` + `ack_batch`",
            ratio_to: None,
        },
    ]
}

impl Results {
    /// Notes that `again` items of row `key` came at an attempt other than 1.
    pub fn note_again(&mut self, key: &str, round: usize, again: u64) {
        if again > 0 {
            let n = format!("{key} (round {round}): {again} items delivered at attempt > 1");
            eprintln!("NOTE: {n}");
            self.notes.push(n);
        }
    }

    /// Records one run of row `key`: its rate, or why it has none.
    pub fn record(
        &mut self,
        key: &str,
        round: usize,
        items: u64,
        run: Result<Outcome, BenchError>,
    ) {
        match run {
            Ok(o) => {
                self.samples.add(key, round, rate(items, o.took));
                self.note_again(key, round, o.again);
            }
            Err(e) => {
                eprintln!("FAILED: {key} (round {round}): {e}");
                self.missing.insert(key.to_owned(), format!("failed: {e}"));
            }
        }
    }

    /// Prints every table; returns how many goals were missed.
    pub fn print(&self) -> usize {
        let s = &self.samples;
        let mut rows = vec![
            Row {
                key: "mem.pool",
                system: "leaseq memory",
                durability: "none (in memory)",
                consumer: "Pool(4), no-op handler",
                ratio_to: Some(("mem.flume", "of flume + handler")),
            },
            Row {
                key: "mem.flume",
                system: "flume",
                durability: "none (in memory)",
                consumer: "4 consumers awaiting a no-op handler",
                ratio_to: None,
            },
        ];
        rows.extend(store_rows("sql.pl", "leaseq-sqlite", PL));
        rows.extend(store_rows("sql.pc", "leaseq-sqlite", PC));
        let mut pg = store_rows("pg", "leaseq-postgres", PG);
        pg[5].ratio_to = Some(("pg.bare", "of the bare loop"));
        rows.extend(pg);
        rows.push(Row {
            key: "pg.bare",
            system: "bare SKIP LOCKED loop",
            durability: PG,
            consumer: "claim 16, batched delete",
            ratio_to: None,
        });
        rows.push(Row {
            key: "nats",
            system: "NATS JetStream",
            durability: "file storage, default sync (fsync every 2 min)",
            consumer: "pull consumer, explicit ack",
            ratio_to: None,
        });
        rows.push(Row {
            key: "rabbit",
            system: "RabbitMQ",
            durability: "durable queue, persistent messages, publisher confirms",
            consumer: "manual ack, prefetch 32",
            ratio_to: None,
        });
        println!("Postgres server: {}\n", self.pg_durability);
        print_table(&rows, s, &self.missing);
        println!();
        for n in &self.notes {
            println!("- attempts: {n}");
        }
        if !self.notes.is_empty() {
            println!();
        }
        self.print_curve();
        self.print_latency();
        print_goals(&self.goals())
    }

    fn print_curve(&self) {
        if self.curve.is_empty() {
            return;
        }
        println!("Worker curve: Pool, handler sleeps 1 ms (ideal: workers x 1,000 items/s)\n");
        println!(
            "| workers | flume + same handler | leaseq-sqlite PowerLoss | ratio to ideal | \
             leaseq-postgres | ratio to ideal |"
        );
        println!("|---:|---:|---:|---:|---:|---:|");
        let mut workers: Vec<usize> = self.curve.iter().map(|c| c.1).collect();
        workers.dedup();
        for w in workers {
            let at = |store: &str| {
                self.curve
                    .iter()
                    .find(|c| c.0 == store && c.1 == w)
                    .map(|c| c.2)
            };
            let ideal = w as f64 * 1_000.0;
            let cell = |x: Option<f64>| x.map_or("-".to_owned(), thousands);
            let ratio = |x: Option<f64>| x.map_or("-".to_owned(), |x| format!("{:.2}", x / ideal));
            println!(
                "| {w} | {} | {} | {} | {} | {} |",
                cell(at("flume")),
                cell(at("sqlite")),
                ratio(at("sqlite")),
                cell(at("pg")),
                ratio(at("pg"))
            );
        }
        println!();
    }

    fn print_latency(&self) {
        if self.latency.is_empty() {
            return;
        }
        println!("Latency at 100 items/s: push -> handler start, Pool(4)\n");
        println!("| store | p50 | p99 |");
        println!("|---|---:|---:|");
        for (what, p50, p99) in &self.latency {
            let ms = |d: &Duration| format!("{:.2} ms", d.as_secs_f64() * 1e3);
            println!("| {what} | {} | {} |", ms(p50), ms(p99));
        }
        println!();
    }
}
