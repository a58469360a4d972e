//! What the record of finished jobs costs on Postgres (`pg_bench --history`): rounds of a
//! `PgPool` of 4 workers (no-op handler, as [`run_pool`]) with
//! [`Options::retention`](leaseq_postgres::Options::retention) off and on (a 1 h window, so
//! every entry of the run stays in the table), in an order that alternates from round to
//! round, after a discarded warm-up of each, on one queue name per setting for the whole
//! run. Issue 30's goal: on >= 0.8 x off, in the same run.

use std::time::Duration;

use crate::pg_store_bench::{run_pool_with, BenchError};
use leaseq_postgres::Options;

/// One round: items/s with retention off, then on.
pub type HistoryRound = [f64; 2];

/// The goal: the pool with retention on at least this fraction of its rate with it off.
pub const GOAL: f64 = 0.8;

/// `rounds` rounds of two settings (`run(0)`, `run(1)`: each one's items/s), in an order
/// that alternates from round to round.
pub async fn alternating<F, Fut>(rounds: usize, mut run: F) -> Result<Vec<[f64; 2]>, BenchError>
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = Result<f64, BenchError>>,
{
    let mut out = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let mut r = [0.0; 2];
        let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            r[i] = run(i).await?;
        }
        out.push(r);
    }
    Ok(out)
}

/// Runs `rounds` rounds of `items` through a pool of 4 workers, retention off and on, in
/// `schema`, and the entries the store kept for the "on" queue at the end.
pub async fn run_history_rounds(
    url: &str,
    schema: &str,
    rounds: usize,
    items: u64,
) -> Result<(Vec<HistoryRound>, u64), BenchError> {
    let on = || Options::new().retention(Duration::from_secs(3600));
    let queues = ["bench-history-off", "bench-history-on"];
    let run = |i: usize, n: u64| async move {
        let options = if i == 0 { Options::new() } else { on() };
        Ok::<f64, BenchError>(
            run_pool_with(url, schema, queues[i], n, 4, options, None)
                .await?
                .items_per_sec,
        )
    };
    run(0, items / 10).await?;
    run(1, items / 10).await?;
    let out = alternating(rounds, |i| run(i, items)).await?;
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    tokio::spawn(conn);
    let kept: i64 = client
        .query_one(
            &format!("SELECT count(*) FROM \"{schema}\".history WHERE queue = $1"),
            &[&queues[1]],
        )
        .await?
        .get(0);
    Ok((out, kept.max(0) as u64))
}
