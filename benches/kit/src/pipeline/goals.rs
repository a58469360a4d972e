//! Issue 17's goals, each with this run's figure (see [`Results::goals`]).

use super::print::Results;
use super::report::Goal;

/// A goal: what, the figure, the bound, the unit (`"ms"` bounds are ceilings).
type Spec = (&'static str, Option<f64>, f64, &'static str);

impl Results {
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

    /// The median push -> handler start latency of `what`, in milliseconds.
    fn p50(&self, what: &str) -> Option<f64> {
        let l = self.latency.iter().find(|l| l.0 == what)?;
        Some(l.1.as_secs_f64() * 1e3)
    }

    /// Issue 17's goals with this run's figures. The lines in parentheses are not the
    /// issue's: the same figure for a pool with `.prefetch(32)`, and the curve against what
    /// the timer allows.
    pub fn goals(&self) -> Vec<Goal> {
        let s = &self.samples;
        let r = |a: &str, b: &str| s.ratio(a, b);
        let m = |a: &str| s.median(a);
        let (pl_batch, pg_batch) = (m("sql.pl.batch"), m("pg.batch"));
        let specs: Vec<Spec> = vec![
            (
                "Postgres: Pool(4) items/s",
                m("pg.pool"),
                20_000.0,
                "items/s",
            ),
            (
                "(the same, `.prefetch(32)`)",
                m("pg.pool32"),
                20_000.0,
                "items/s",
            ),
            (
                "Postgres: Pool / batch path",
                r("pg.pool", "pg.batch"),
                0.8,
                "x",
            ),
            (
                "(the same, `.prefetch(32)`)",
                r("pg.pool32", "pg.batch"),
                0.8,
                "x",
            ),
            (
                "Postgres: batch path / bare loop",
                r("pg.batch", "pg.bare"),
                1.0,
                "x",
            ),
            (
                "Postgres: one at a time, consumer(32) + ack_nowait / batch path",
                r("pg.prefetch", "pg.batch"),
                0.7,
                "x",
            ),
            (
                "SQLite PowerLoss: Pool(4) items/s",
                m("sql.pl.pool"),
                50_000.0,
                "items/s",
            ),
            (
                "(the same, `.prefetch(32)`)",
                m("sql.pl.pool32"),
                50_000.0,
                "items/s",
            ),
            (
                "SQLite ProcessCrash: Pool(4) items/s",
                m("sql.pc.pool"),
                150_000.0,
                "items/s",
            ),
            (
                "(the same, `.prefetch(32)`)",
                m("sql.pc.pool32"),
                150_000.0,
                "items/s",
            ),
            (
                "SQLite PowerLoss: consumer(32) + ack_nowait / batch path",
                r("sql.pl.prefetch", "sql.pl.batch"),
                0.7,
                "x",
            ),
            (
                "SQLite ProcessCrash: consumer(32) + ack_nowait / batch path",
                r("sql.pc.prefetch", "sql.pc.batch"),
                0.7,
                "x",
            ),
            (
                "leaseq-sqlite Pool (PowerLoss) / NATS JetStream",
                r("sql.pl.pool", "nats"),
                2.0,
                "x",
            ),
            (
                "(the same, `.prefetch(32)`)",
                r("sql.pl.pool32", "nats"),
                2.0,
                "x",
            ),
            (
                "leaseq-postgres Pool / RabbitMQ",
                r("pg.pool", "rabbit"),
                2.0,
                "x",
            ),
            (
                "(the same, `.prefetch(32)`)",
                r("pg.pool32", "rabbit"),
                2.0,
                "x",
            ),
            (
                "memory: Pool / flume + handler (median of rounds)",
                r("mem.pool", "mem.flume"),
                0.5,
                "x",
            ),
            (
                "curve, SQLite: lowest items/s / min(workers x 1,000, batch path)",
                self.curve_floor("sqlite", pl_batch, false),
                0.8,
                "x",
            ),
            (
                "curve, Postgres: lowest items/s / min(workers x 1,000, batch path)",
                self.curve_floor("pg", pg_batch, false),
                0.8,
                "x",
            ),
            (
                "(curve, SQLite: the same / min(flume + same handler, batch path))",
                self.curve_floor("sqlite", pl_batch, true),
                0.8,
                "x",
            ),
            (
                "(curve, Postgres: the same / min(flume + same handler, batch path))",
                self.curve_floor("pg", pg_batch, true),
                0.8,
                "x",
            ),
            (
                "latency p50, Postgres (LISTEN/NOTIFY)",
                self.p50("leaseq-postgres (LISTEN/NOTIFY)"),
                5.0,
                "ms",
            ),
            (
                "latency p50, SQLite PowerLoss",
                self.p50("leaseq-sqlite PowerLoss"),
                1.0,
                "ms",
            ),
            (
                "latency p50, SQLite ProcessCrash",
                self.p50("leaseq-sqlite ProcessCrash"),
                1.0,
                "ms",
            ),
            ("latency p50, memory", self.p50("memory"), 1.0, "ms"),
        ];
        specs
            .into_iter()
            .map(|(what, figure, bound, unit)| Goal {
                what: what.to_owned(),
                figure,
                bound,
                at_most: unit == "ms",
                unit,
            })
            .collect()
    }
}
