//! SQLite fixtures: a fresh queue file in the temp directory, its removal with its
//! sidecars, and a queue opened on it on smol's global runtime.

use std::path::{Path, PathBuf};

use leaseq_async::{Codec, Config, LeaseQueue};
use leaseq_smol::SmolRuntime;
use leaseq_sqlite::{BytesCodec, OpenError, Options, Sqlite, SqliteQueue};

/// A durable queue of bytes on smol.
pub type BytesQueue = SqliteQueue<Vec<u8>, SmolRuntime, BytesCodec>;

/// A fresh path in the temp directory, unique to this process and instant (nothing there
/// yet): `leaseq-<name>-<pid>-<nanos>.db`.
pub fn temp(name: &str) -> PathBuf {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let p = std::env::temp_dir().join(format!("leaseq-{name}-{}-{n}.db", std::process::id()));
    remove(&p);
    p
}

/// Removes a queue file and its sidecars (WAL, shared memory, owner lock, journal); what
/// is not there is skipped.
pub fn remove(p: &Path) {
    for suffix in ["", "-wal", "-shm", "-lock", "-journal"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", p.display()));
    }
}

/// Opens the queue file at `path` with `config`, `codec` and `options`, on smol's global
/// runtime.
pub async fn open_async<T, C>(
    path: &Path,
    config: Config,
    codec: C,
    options: Options,
) -> Result<SqliteQueue<T, SmolRuntime, C>, OpenError>
where
    T: Clone + Send + 'static,
    C: Codec<T>,
{
    LeaseQueue::builder(config)
        .runtime(SmolRuntime::global())
        .codec(codec)
        .open(Sqlite::file(path).options(options))
        .await
}

/// [`open_async`], blocking.
pub fn open_with<T: Clone + Send + 'static, C: Codec<T>>(
    path: &Path,
    config: Config,
    codec: C,
    options: Options,
) -> Result<SqliteQueue<T, SmolRuntime, C>, OpenError> {
    smol::block_on(open_async(path, config, codec, options))
}

/// [`open_with`] the default options; panics if the open is refused.
pub fn open<T, C>(path: &Path, config: Config, codec: C) -> SqliteQueue<T, SmolRuntime, C>
where
    T: Clone + Send + 'static,
    C: Codec<T>,
{
    open_with(path, config, codec, Options::default()).expect("open the queue file")
}

/// Closes `q` and waits until its store is gone (the driver task lets go of it on its own
/// thread), so that the file is unlocked and its writer's connection closed on return.
pub fn shut(q: BytesQueue) {
    smol::block_on(async { q.close().await }).expect("close the queue");
    let store = q.store().clone();
    drop(q);
    while std::sync::Arc::strong_count(&store) > 1 {
        std::thread::yield_now();
    }
    drop(store);
}

/// The process "dies": `q`'s writer stops as a crash would stop it (the file's lock
/// released, as the OS does for a dead process), and `q` and what it handed out (`held`:
/// a delivery, say) are forgotten: nothing settled, nothing dropped, nothing flushed.
pub fn crash<T, C>(q: SqliteQueue<T, SmolRuntime, C>, held: impl Sized)
where
    T: Clone + Send + 'static,
    C: Codec<T>,
{
    q.store().halt();
    std::mem::forget(held);
    std::mem::forget(q);
}

/// The dead letters `q` holds, as `id -> attempts` (for a ledger that checks what was
/// buried and after how many attempts).
pub fn dead_attempts(q: &BytesQueue) -> std::collections::BTreeMap<u64, u32> {
    q.store()
        .memory()
        .dead_letters()
        .iter()
        .map(|d| (d.id.get(), d.attempts))
        .collect()
}

/// Writes `n` items of 1 KiB into a new queue file at `path` (default options, bytes)
/// and closes it cleanly; returns `path`.
pub fn sample(path: PathBuf, n: usize) -> PathBuf {
    let config = Config::new(std::time::Duration::from_secs(30)).with_max_attempts(5);
    let q = open(&path, config, BytesCodec);
    smol::block_on(async {
        for i in 0..n {
            q.push(vec![i as u8; 1024]).await.expect("push");
        }
    });
    drop(q);
    path
}
