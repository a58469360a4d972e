//! What the Postgres tests share: finding the server (or saying loudly that there is none),
//! unique queue names, and the runtime.
#![allow(dead_code, unreachable_pub)] // each test binary uses a part; `pub` for them all

use std::time::{SystemTime, UNIX_EPOCH};

/// The environment variable that points the tests at a server.
pub const URL_VAR: &str = "LEASEQ_PG_URL";
/// Set to `1` (as `.ci/run` does) to fail instead of skipping when no server answers.
pub const REQUIRED_VAR: &str = "LEASEQ_PG_REQUIRED";
/// The server every machine of this project runs.
pub const DEFAULT_URL: &str = "host=127.0.0.1 port=5432 user=postgres dbname=test";

/// The server's connection string, or `None` (after a loud note) if none answers and
/// none is required.
pub fn server() -> Option<String> {
    let url = std::env::var(URL_VAR).unwrap_or_else(|_| DEFAULT_URL.to_string());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let reached = rt.block_on(async {
        let mut config: tokio_postgres::Config = url.parse().map_err(|e| format!("{e}"))?;
        config.connect_timeout(std::time::Duration::from_secs(3));
        let (client, conn) = config
            .connect(tokio_postgres::NoTls)
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(conn);
        client
            .simple_query("SELECT 1")
            .await
            .map_err(|e| e.to_string())?;
        Ok::<(), String>(())
    });
    match reached {
        Ok(()) => Some(url),
        Err(e) => {
            if std::env::var(REQUIRED_VAR).as_deref() == Ok("1") {
                panic!("{REQUIRED_VAR}=1 but PostgreSQL at {url:?} cannot be reached: {e}");
            }
            eprintln!(
                "\n!!! SKIPPED: PostgreSQL at {url:?} cannot be reached ({e}).\n\
                 !!! Point {URL_VAR} at a server (e.g. {URL_VAR}='{DEFAULT_URL}') to run the Postgres tests.\n"
            );
            None
        }
    }
}

/// A queue name no other test (or earlier run) uses.
pub fn unique(prefix: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{prefix}-{}-{nanos}", std::process::id())
}

/// A multi-thread tokio runtime with two workers.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// The schema the tests' queues live in.
pub const SCHEMA: &str = "leaseq_test";
/// How long any one wait may take before a test fails (the machine may be busy).
pub const PATIENCE: std::time::Duration = std::time::Duration::from_secs(15);

/// A plain client on the server, to read and write rows behind the store's back.
pub async fn sql(url: &str) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    client
}

/// Options for tests: schema [`SCHEMA`], a small pool, a fast rescuer and poll.
pub fn options() -> leaseq_postgres::Options {
    leaseq_postgres::Options::new()
        .schema(SCHEMA)
        .pool_size(4)
        .rescue_every(std::time::Duration::from_millis(50))
        .poll_interval(std::time::Duration::from_millis(200))
}

/// One "process" on `queue`: its own pool, claimer, settler, heartbeat and rescuer.
pub async fn process(
    url: &str,
    queue: &str,
    config: leaseq_async::Config,
) -> leaseq_postgres::PgQueue<Vec<u8>> {
    leaseq_postgres::open(url, queue, config, options(), leaseq_postgres::BytesCodec)
        .await
        .expect("open")
}

/// Receives one item, failing loudly (with the store's last error) if none comes in time.
pub async fn receive(
    q: &leaseq_postgres::PgQueue<Vec<u8>>,
) -> leaseq_postgres::PgDelivery<Vec<u8>> {
    match q.receive_timeout(PATIENCE).await {
        Ok(d) => d,
        Err(e) => panic!(
            "no delivery ({e}); last error: {:?}",
            q.store().last_error()
        ),
    }
}
