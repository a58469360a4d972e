//! [`Results`]: what `pipeline_bench`'s sections measured, and how it is printed: the
//! throughput table, the worker curve, the latencies, then issue 17's goals.

use std::collections::BTreeMap;
use std::time::Duration;

use super::report::{print_goals, print_table, thousands, Goal, Row, Samples};
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
    /// Records one run of row `key`: its rate, or why it has none.
    pub fn record(
        &mut self,
        key: &str,
        round: usize,
        items: u64,
        took: Result<Duration, BenchError>,
    ) {
        match took {
            Ok(t) => self.samples.add(key, round, rate(items, t)),
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

    /// The lowest ratio of a store's curve to `min(workers x 1,000, its batch path)`, or,
    /// `timer` set, to `min(flume with the same handler, its batch path)`: what tokio's
    /// timer allows a 1 ms sleep (it rounds up to its next millisecond tick).
    fn curve_floor(&self, store: &str, batch: Option<f64>, timer: bool) -> Option<f64> {
        let cap = batch.unwrap_or(f64::INFINITY);
        let ceiling = |w: usize| {
            let flume = self.curve.iter().find(|c| c.0 == "flume" && c.1 == w);
            match (timer, flume) {
                (true, Some(f)) => f.2,
                _ => w as f64 * 1_000.0,
            }
        };
        self.curve
            .iter()
            .filter(|c| c.0 == store)
            .map(|c| c.2 / ceiling(c.1).min(cap))
            .reduce(f64::min)
    }

    fn p50(&self, what: &str) -> Option<f64> {
        let l = self.latency.iter().find(|l| l.0 == what)?;
        Some(l.1.as_secs_f64() * 1e3)
    }

    /// Issue 17's goals with this run's figures.
    pub fn goals(&self) -> Vec<Goal> {
        let s = &self.samples;
        let g = |what: &str, figure: Option<f64>, bound: f64, unit: &'static str| Goal {
            what: what.to_owned(),
            figure,
            bound,
            at_most: unit == "ms",
            unit,
        };
        vec![
            g(
                "Postgres: Pool(4) items/s",
                s.median("pg.pool"),
                20_000.0,
                "items/s",
            ),
            g(
                "Postgres: Pool / batch path",
                s.ratio("pg.pool", "pg.batch"),
                0.8,
                "x",
            ),
            g(
                "Postgres: batch path / bare loop",
                s.ratio("pg.batch", "pg.bare"),
                1.0,
                "x",
            ),
            g(
                "Postgres: one at a time, consumer(32) + ack_nowait / batch path",
                s.ratio("pg.prefetch", "pg.batch"),
                0.7,
                "x",
            ),
            g(
                "SQLite PowerLoss: Pool(4) items/s",
                s.median("sql.pl.pool"),
                50_000.0,
                "items/s",
            ),
            g(
                "SQLite ProcessCrash: Pool(4) items/s",
                s.median("sql.pc.pool"),
                150_000.0,
                "items/s",
            ),
            g(
                "SQLite PowerLoss: consumer(32) + ack_nowait / batch path",
                s.ratio("sql.pl.prefetch", "sql.pl.batch"),
                0.7,
                "x",
            ),
            g(
                "SQLite ProcessCrash: consumer(32) + ack_nowait / batch path",
                s.ratio("sql.pc.prefetch", "sql.pc.batch"),
                0.7,
                "x",
            ),
            g(
                "leaseq-sqlite Pool (PowerLoss) / NATS JetStream",
                s.ratio("sql.pl.pool", "nats"),
                2.0,
                "x",
            ),
            g(
                "leaseq-postgres Pool / RabbitMQ",
                s.ratio("pg.pool", "rabbit"),
                2.0,
                "x",
            ),
            g(
                "memory: Pool / flume + handler (median of rounds)",
                s.ratio("mem.pool", "mem.flume"),
                0.5,
                "x",
            ),
            g(
                "curve, SQLite: lowest items/s / min(workers x 1,000, batch path)",
                self.curve_floor("sqlite", s.median("sql.pl.batch"), false),
                0.8,
                "x",
            ),
            g(
                "curve, Postgres: lowest items/s / min(workers x 1,000, batch path)",
                self.curve_floor("pg", s.median("pg.batch"), false),
                0.8,
                "x",
            ),
            g(
                "(curve, SQLite: the same / min(flume + same handler, batch path))",
                self.curve_floor("sqlite", s.median("sql.pl.batch"), true),
                0.8,
                "x",
            ),
            g(
                "(curve, Postgres: the same / min(flume + same handler, batch path))",
                self.curve_floor("pg", s.median("pg.batch"), true),
                0.8,
                "x",
            ),
            g(
                "latency p50, Postgres (LISTEN/NOTIFY)",
                self.p50("leaseq-postgres (LISTEN/NOTIFY)"),
                5.0,
                "ms",
            ),
            g(
                "latency p50, SQLite PowerLoss",
                self.p50("leaseq-sqlite PowerLoss"),
                1.0,
                "ms",
            ),
            g(
                "latency p50, SQLite ProcessCrash",
                self.p50("leaseq-sqlite ProcessCrash"),
                1.0,
                "ms",
            ),
            g("latency p50, memory", self.p50("memory"), 1.0, "ms"),
        ]
    }
}
