//! Postgres fixtures: finding the server (or saying loudly that there is none), a schema
//! per test process (those of finished runs dropped), unique queue names, the runtime, a
//! plain client behind the store's back, the tests' options.

use std::time::{SystemTime, UNIX_EPOCH};

use leaseq_postgres::Postgres;

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
        let mut config: tokio_postgres::Config = plain(&url).parse().map_err(|e| format!("{e}"))?;
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
        static CLEANED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        if !CLEANED.swap(true, std::sync::atomic::Ordering::AcqRel) {
            drop_leftovers(&client).await;
        }
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

/// `url` (key/value form) without its TLS keys, which `tokio-postgres` does not parse
/// (`verify-full`, `sslrootcert`): for the tests' own plain connections behind the store's
/// back (the server's `host` lines take them with or without TLS). The store gets the whole
/// string, so `LEASEQ_PG_URL` may ask for TLS (as `.ci/run`'s TLS step does).
pub fn plain(url: &str) -> String {
    url.split_whitespace()
        .filter(|kv| {
            !["sslmode=", "sslrootcert=", "sslcert=", "sslkey="]
                .iter()
                .any(|k| kv.starts_with(k))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A queue name no other test (or earlier run) uses.
pub fn unique(prefix: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{prefix}-{}-{nanos}", std::process::id())
}

/// Runs `test` with the server's connection string on a [`runtime`]; skips it (as
/// [`server`] says) when no server answers. A test's whole body: `with_server(|url| async
/// move { … })`.
pub fn with_server<F, Fut>(test: F)
where
    F: FnOnce(String) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let Some(url) = server() else { return };
    runtime().block_on(test(url));
}

pub use crate::pg_checks::{kept_key, kept_keys, nothing_comes, one_undecodable_dead_letter};
pub use crate::pg_graph::{fan_out, released_rows, told, STORE_SESSION};
pub use crate::runtime::multi_thread as runtime;

/// The schema the tests' queues live in: one per test process, `leaseq_test_<pid>_<nanos>`,
/// so that two runs against one database never share tables (they deadlocked in the
/// upkeep test when they did). Written `{SCHEMA}` in SQL; `.schema(SCHEMA)` in options.
/// Schemas of earlier runs whose process is gone are dropped by [`server`].
pub const SCHEMA: Schema = Schema;

/// The type of [`SCHEMA`]: its name is made once per process, on first use.
#[derive(Clone, Copy, Debug)]
pub struct Schema;

impl Schema {
    /// This process's schema name.
    pub fn name(self) -> &'static str {
        static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
        NAME.get_or_init(|| {
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            format!("{RUN_PREFIX}{}_{nanos}", std::process::id())
        })
    }
}

impl std::fmt::Display for Schema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl From<Schema> for String {
    fn from(s: Schema) -> String {
        s.name().to_string()
    }
}

/// How every test run's schema names begin (then the process id).
pub const RUN_PREFIX: &str = "leaseq_test_";

/// Drops the schemas of earlier test runs whose process is no longer alive (on systems with
/// `/proc`; elsewhere none): a run that ended normally or not leaves nothing behind for
/// long. A schema whose process lives (a run going on now) is never touched.
async fn drop_leftovers(client: &tokio_postgres::Client) {
    if !std::path::Path::new("/proc/self").exists() {
        return;
    }
    let Ok(rows) = client
        .query(
            "SELECT nspname::text FROM pg_namespace WHERE starts_with(nspname, $1)",
            &[&RUN_PREFIX],
        )
        .await
    else {
        return;
    };
    for row in rows {
        let name: String = row.get(0);
        let pid = name[RUN_PREFIX.len()..].split('_').next().unwrap_or("");
        let gone = pid.parse::<u32>().is_ok_and(|pid| {
            pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists()
        });
        if gone {
            let _ = client
                .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{name}\" CASCADE"))
                .await;
        }
    }
}
/// How long any one wait may take before a test fails (the machine may be busy).
pub const PATIENCE: std::time::Duration = std::time::Duration::from_secs(15);

/// A plain client on the server, to read and write rows behind the store's back.
pub async fn sql(url: &str) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(&plain(url), tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    client
}

/// Drops `schema` and all it holds, if it is there (a test's own schema, at its end).
pub async fn drop_schema(url: &str, schema: &str) {
    sql(url)
        .await
        .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
        .await
        .expect("drop the schema");
}

/// Options for tests: schema [`SCHEMA`], a small pool, a fast rescuer and poll; with
/// `LEASEQ_PG_RETENTION=1`, the record of finished jobs on (an hour), so that every suite
/// can run on the statements that write it.
pub fn options() -> leaseq_postgres::Options {
    let o = leaseq_postgres::Options::new()
        .schema(SCHEMA)
        .pool_size(4)
        .rescue_every(std::time::Duration::from_millis(50))
        .poll_interval(std::time::Duration::from_millis(200));
    if std::env::var("LEASEQ_PG_RETENTION").as_deref() == Ok("1") {
        o.retention(std::time::Duration::from_secs(3600))
    } else {
        o
    }
}

/// One "process" on `queue`: its own pool, claimer, settler, heartbeat and rescuer.
pub async fn process(
    url: &str,
    queue: &str,
    config: leaseq_async::Config,
) -> leaseq_postgres::PgQueue<Vec<u8>> {
    open_bytes(url, queue, config, options()).await
}

/// A [`process`] on a fresh queue named after `prefix` ([`unique`]) with a 30 s
/// visibility: its name and the queue.
pub async fn fresh_process(url: &str, prefix: &str) -> (String, leaseq_postgres::PgQueue<Vec<u8>>) {
    let name = unique(prefix);
    let q = process(
        url,
        &name,
        leaseq_async::Config::new(std::time::Duration::from_secs(30)),
    )
    .await;
    (name, q)
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

/// Opens queue `name` on the server at `url` with `config`, `codec` and `options`, on the
/// current tokio runtime.
pub async fn try_open<T, C>(
    url: &str,
    name: impl Into<String>,
    config: leaseq_async::Config,
    codec: C,
    options: leaseq_postgres::Options,
) -> Result<leaseq_postgres::PgQueue<T>, leaseq_postgres::OpenError>
where
    T: Clone + Send + Sync + 'static,
    C: leaseq_postgres::Codec<T>,
{
    leaseq_tokio::LeaseQueue::<T>::builder(config)
        .name(name.into())
        .codec(codec)
        .open(Postgres::url(url).options(options))
        .await
}

/// [`try_open`]; panics if the open is refused.
pub async fn open<T, C>(
    url: &str,
    name: impl Into<String>,
    config: leaseq_async::Config,
    codec: C,
    options: leaseq_postgres::Options,
) -> leaseq_postgres::PgQueue<T>
where
    T: Clone + Send + Sync + 'static,
    C: leaseq_postgres::Codec<T>,
{
    try_open(url, name, config, codec, options)
        .await
        .expect("open")
}

/// A queue of bytes: [`open`] with `BytesCodec`.
pub async fn open_bytes(
    url: &str,
    name: impl Into<String>,
    config: leaseq_async::Config,
    options: leaseq_postgres::Options,
) -> leaseq_postgres::PgQueue<Vec<u8>> {
    open(url, name, config, leaseq_postgres::BytesCodec, options).await
}

/// A queue of bytes in [`SCHEMA`] under a [`unique`] name made from `name`, each item tried
/// once (a 30 s visibility timeout): what the graph's tests open, whose outcomes must not
/// be retried behind their backs.
pub async fn open_one_try(url: &str, name: &str) -> leaseq_postgres::PgQueue<Vec<u8>> {
    open_bytes(
        url,
        unique(name),
        leaseq_async::Config::new(std::time::Duration::from_secs(30)).with_max_attempts(1),
        leaseq_postgres::Options::new().schema(SCHEMA),
    )
    .await
}

/// How many rows queue `queue` has in [`SCHEMA`], as another session sees them.
pub async fn row_count(db: &tokio_postgres::Client, queue: &str) -> i64 {
    db.query_one(
        &format!("SELECT count(*) FROM {SCHEMA}.items WHERE queue = $1"),
        &[&queue],
    )
    .await
    .expect("count rows")
    .get(0)
}

/// Asks `probe` every 25 ms until it answers `Some`, and returns that; fails the test,
/// saying `what`, if it has not after [`PATIENCE`].
pub async fn eventually<T, Fut>(what: &str, mut probe: impl FnMut() -> Fut) -> T
where
    Fut: std::future::Future<Output = Option<T>>,
{
    let start = std::time::Instant::now();
    loop {
        if let Some(found) = probe().await {
            return found;
        }
        assert!(start.elapsed() < PATIENCE, "{what}");
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
}

/// Waits until `q` has `n` dead letters or more (failing, saying `what`, after
/// [`PATIENCE`]); returns the first ten.
pub async fn dead_letters_reach(
    q: &leaseq_postgres::PgQueue<Vec<u8>>,
    n: usize,
    what: &str,
) -> Vec<leaseq_async::DeadLetter<Result<Vec<u8>, leaseq_async::CodecError>>> {
    eventually(what, || async {
        let dead = q
            .dead_letters(leaseq_async::Page::first(10))
            .await
            .expect("dead letters");
        (dead.len() >= n).then_some(dead)
    })
    .await
}

/// A queue of job envelopes (the router's items) with the tests' [`options`]: [`open`] with
/// `EnvelopeCodec`.
#[cfg(feature = "jobs")]
pub async fn open_envelopes(
    url: &str,
    name: impl Into<String>,
    config: leaseq_async::Config,
) -> leaseq_postgres::PgQueue<leaseq_async::router::Envelope> {
    let codec = leaseq_async::router::EnvelopeCodec;
    open(url, name, config, codec, options()).await
}

/// A schema name of its own for a test that builds an old schema by hand:
/// `leaseq_<tag>_<pid>_<nanos>` (nanoseconds within the second).
pub fn scratch_schema(tag: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "leaseq_{tag}_{}_{}",
        std::process::id(),
        nanos % 1_000_000_000
    )
}

/// Runs `test` with the server's connection string and a fresh [`scratch_schema`] named
/// after `tag`, then drops the schema; skips (as [`server`] says) when no server answers.
pub fn with_scratch_schema(tag: &str, test: impl FnOnce(&str, &str)) {
    let Some(url) = server() else { return };
    let schema = scratch_schema(tag);
    test(&url, &schema);
    runtime().block_on(drop_schema(&url, &schema));
}

/// A [`scratch_schema`] migrated to the current version, and a plain client on the server:
/// for a test that sets a schema back to an older version by hand.
pub async fn migrated_scratch(url: &str, tag: &str) -> (String, tokio_postgres::Client) {
    let s = scratch_schema(tag);
    let mut db = sql(url).await;
    leaseq_postgres::migrate(&mut db, &s)
        .await
        .expect("migrate");
    (s, db)
}

/// Waits (on tokio) for `child` to end by `until`, asserting it succeeded; kills it and
/// fails the test if it is still running then. `what` names it in the failure.
pub async fn wait_success(child: &mut std::process::Child, what: &str, until: std::time::Instant) {
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            assert!(status.success(), "{what} ended with {status}");
            return;
        }
        if std::time::Instant::now() > until {
            let _ = child.kill();
            panic!("{what} did not end in time");
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
