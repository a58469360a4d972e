//! What a dashboard open on a queue costs the Postgres pool working it (`pg_dashboard_bench`;
//! issue 31's goal: <= 5 % of the pool's throughput, same run, with and without).
//!
//! Rounds of a [`PgPool`](leaseq_postgres::PgPool) of 4 workers (no-op handler, as
//! [`run_pool_with`]) on one queue, three settings per round in an order that rotates from
//! round to round, after a discarded warm-up: no dashboard; a dashboard polled as a browser
//! left open on the queue would (every second); and a harsher 10 polls a second. The
//! dashboard is `leaseq-web` over a [`PgOperator`] of the same schema, served on loopback
//! in this process; each poll is three HTTP/1.1 requests over fresh TCP connections, as a
//! page reload and a scraper make them: the queue's page, the overview and `/metrics`.

use std::time::{Duration, Instant};

use leaseq_postgres::{Options, PgInspector};
use leaseq_web::{Dashboard, PgOperator};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::cpu::process_cpu_time;
use crate::pg_store_bench::{run_pool_with, server_cpu_time, BenchError};

/// The settings of a round: no dashboard, then the poll intervals.
pub const SETTINGS: [Option<Duration>; 3] = [
    None,
    Some(Duration::from_secs(1)),
    Some(Duration::from_millis(100)),
];

/// The goal: the pool with a dashboard open on its queue at least this fraction of its
/// rate without.
pub const GOAL: f64 = 0.95;

/// One round: items/s per setting of [`SETTINGS`], and the polls made in each.
#[derive(Debug, Clone, Copy, Default)]
pub struct DashboardRound {
    /// Items/s of the pool, per setting.
    pub items_per_sec: [f64; 3],
    /// Polls completed during the run, per setting (three requests each).
    pub polls: [u64; 3],
    /// The slowest poll of the run, per setting.
    pub slowest_poll: [Duration; 3],
    /// CPU time of this process (pool, dashboard and poller) per item, per setting.
    pub process_cpu_per_item: [Duration; 3],
    /// CPU time of every PostgreSQL process of the machine per item, per setting (other
    /// clients of the server included).
    pub server_cpu_per_item: [Duration; 3],
}

/// Runs `rounds` rounds of `items` through a pool of 4 workers on one queue of `schema`,
/// without and with the dashboard polling it.
pub async fn run_dashboard_rounds(
    url: &str,
    schema: &str,
    rounds: usize,
    items: u64,
) -> Result<Vec<DashboardRound>, BenchError> {
    const QUEUE: &str = "bench-dashboard";
    // The schema and queue exist before the dashboard's inspector reads them.
    run_pool_with(url, schema, QUEUE, 1_000, 4, Options::new(), None).await?;
    let inspector = PgInspector::connect(url, schema).await?;
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(Dashboard::new(PgOperator::new(inspector)).serve(listener));
    let run = |setting: usize, n: u64| async move {
        let (stop, stopped) = watch::channel(false);
        let cpu = (process_cpu_time(), server_cpu_time());
        let poller = SETTINGS[setting].map(|every| tokio::spawn(poll(addr, QUEUE, every, stopped)));
        let pool = run_pool_with(url, schema, QUEUE, n, 4, Options::new(), None).await;
        let _ = stop.send(true);
        let per_item = |before: Option<Duration>, after: Option<Duration>| match (before, after) {
            (Some(b), Some(a)) => a.saturating_sub(b) / n.max(1) as u32,
            _ => Duration::ZERO,
        };
        let cpu = (
            per_item(cpu.0, process_cpu_time()),
            per_item(cpu.1, server_cpu_time()),
        );
        let (polls, slowest) = match poller {
            Some(p) => p.await??,
            None => (0, Duration::ZERO),
        };
        Ok::<_, BenchError>((pool?.items_per_sec, polls, slowest, cpu))
    };
    for setting in 0..SETTINGS.len() {
        run(setting, items / 10).await?;
    }
    let mut out = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let mut r = DashboardRound::default();
        for k in 0..SETTINGS.len() {
            let setting = (round + k) % SETTINGS.len();
            let (rate, polls, slowest, cpu) = run(setting, items).await?;
            r.items_per_sec[setting] = rate;
            (
                r.process_cpu_per_item[setting],
                r.server_cpu_per_item[setting],
            ) = cpu;
            r.polls[setting] = polls;
            r.slowest_poll[setting] = slowest;
        }
        out.push(r);
    }
    server.abort();
    Ok(out)
}

/// Polls the dashboard at `addr` every `every` until `stop` turns true: the queue's page,
/// the overview, `/metrics`. Returns the polls made and the slowest.
async fn poll(
    addr: std::net::SocketAddr,
    queue: &str,
    every: Duration,
    mut stop: watch::Receiver<bool>,
) -> Result<(u64, Duration), BenchError> {
    let paths = [format!("/queues/{queue}"), "/".into(), "/metrics".into()];
    let (mut polls, mut slowest) = (0, Duration::ZERO);
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return Ok((polls, slowest)),
        }
        let t = Instant::now();
        for path in &paths {
            get(addr, path).await?;
        }
        slowest = slowest.max(t.elapsed());
        polls += 1;
    }
}

/// `GET path` over a new connection to `addr`; an error unless the status is 200.
async fn get(addr: std::net::SocketAddr, path: &str) -> Result<(), BenchError> {
    let mut stream = TcpStream::connect(addr).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await?;
    if !response.starts_with(b"HTTP/1.1 200") {
        let head = String::from_utf8_lossy(&response[..response.len().min(200)]).into_owned();
        return Err(format!("GET {path}: {head}").into());
    }
    Ok(())
}
