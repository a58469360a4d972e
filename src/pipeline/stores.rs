//! Opening a fresh, empty queue for each run: a SQLite file in the temp directory (removed
//! afterwards), a Postgres queue under a new name in a schema of this run (dropped
//! afterwards).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leaseq_async::{Config, LeaseQueue};
use leaseq_sqlite::{BytesCodec, Durability, Options, Sqlite, SqliteQueue};
use leaseq_tokio::TokioRuntime;

use super::BenchError;

/// The visibility of every queue the benchmark opens (as the bare loop's claim uses).
pub const VISIBILITY: Duration = Duration::from_secs(30);

/// A SQLite queue of 16-byte payloads on tokio.
pub type SqliteBytes = SqliteQueue<Vec<u8>, TokioRuntime, BytesCodec>;

/// A name nothing before used in this process or an earlier one: `prefix`, the process
/// id, the time in nanoseconds and a counter, joined by `_`.
pub fn fresh_name(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}_{}_{nanos}_{n}", std::process::id())
}

/// A queue file in the temp directory, removed (with its WAL, shared memory and lock
/// files) when this is dropped. Drop the queue first.
pub struct SqliteFile {
    path: PathBuf,
}

impl SqliteFile {
    /// A new, not yet created, file name.
    pub fn new() -> Self {
        SqliteFile {
            path: std::env::temp_dir().join(fresh_name("leaseq_pipeline") + ".db"),
        }
    }

    /// Opens (creates) the queue at `durability` on `rt`.
    pub fn open(
        &self,
        durability: Durability,
        rt: TokioRuntime,
    ) -> Result<SqliteBytes, BenchError> {
        let config = Config::new(VISIBILITY);
        let file = Sqlite::file(&self.path).options(Options::new().durability(durability));
        let open = LeaseQueue::builder(config)
            .runtime(rt)
            .codec(BytesCodec)
            .open(file);
        Ok(futures::executor::block_on(open)?)
    }
}

impl Default for SqliteFile {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for SqliteFile {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm", "-lock"] {
            let mut p = self.path.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
}

/// A Postgres queue of 16-byte payloads.
pub type PgBytes = leaseq_postgres::PgQueue<Vec<u8>>;

/// Opens a new queue (a fresh name) in `schema`, with the store's default options.
pub async fn open_pg(url: &str, schema: &str) -> Result<PgBytes, BenchError> {
    let config = Config::new(VISIBILITY);
    let store =
        leaseq_postgres::Postgres::url(url).options(leaseq_postgres::Options::new().schema(schema));
    Ok(leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(config)
        .name(fresh_name("q"))
        .codec(leaseq_postgres::BytesCodec)
        .open(store)
        .await?)
}

/// The server's `synchronous_commit` and `fsync` settings, e.g. `synchronous_commit=on,
/// fsync=on`.
pub async fn pg_durability(url: &str) -> Result<String, BenchError> {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    tokio::spawn(conn);
    let mut out = Vec::new();
    for name in ["synchronous_commit", "fsync"] {
        let row = client.query_one(&format!("SHOW {name}"), &[]).await?;
        out.push(format!("{name}={}", row.get::<_, String>(0)));
    }
    Ok(out.join(", "))
}
