//! Opening a queue file: the owner lock, the format check (before anything is written), the
//! schema of a new file, the restore of its items into a fresh core, and the writer.

use std::path::Path;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use leaseq_async::{Codec, LeaseQueue, MemoryStore, QueueSettings, Runtime, DEFAULT_MAX_LEASE};
use leaseq_core::{EventMask, MessageId, Queue};
use rusqlite::{Connection, MAIN_DB};

use crate::check::{check, APPLICATION_ID, FORMAT_VERSION, MAGIC, PROGRESS_VERSION};
use crate::commit::{commit, Early};
use crate::journal::Journal;
use crate::lock::OwnerLock;
use crate::open_error::OpenError;
use crate::options::{Durability, Options};
use crate::restore::{next_id, restore_rows};
use crate::store::{wall_now, SqliteStore};
use crate::SqliteQueue;

/// Opens (or creates) the durable queue in the file at `path`, on `runtime`, its items
/// stored with `codec`. Items the file holds come back: ready and delayed ones as they
/// were (delays keep their wall-clock schedule), leases the previous process held at once
/// (their attempt counted; dead letters, reason "dropped" with error "process restart",
/// if it was their last), dead letters with their errors.
///
/// The queue owns the file until it is dropped: a second open of the same file, from this
/// process or another, is refused with [`OpenError::Locked`] (the lock is the file
/// `<path>-lock`, released by the OS if the process dies). A file that is not a leaseq
/// queue, is damaged, read-only, of a newer format version, or has a row this version
/// does not write, is refused with a typed error before anything is written to it.
pub(crate) fn open<T, R, C>(
    path: &Path,
    options: &Options,
    settings: QueueSettings<R, C>,
) -> Result<SqliteQueue<T, R, C>, OpenError>
where
    T: Clone + Send + 'static,
    R: Runtime,
    C: Codec<T>,
{
    let every = settings.heartbeat_period();
    let QueueSettings {
        config,
        name,
        runtime,
        codec,
        ..
    } = settings;
    // A closing owner of this process gets as long as its flush may take.
    let lock = OwnerLock::take(
        path,
        options.commit_timeout + options.busy_timeout,
        options.file_mode,
    )?;
    let version = check(path, options.busy_timeout)?;
    let existed = version.is_some();
    if !existed {
        // Created here with its mode: SQLite gives the WAL and shared-memory files the
        // mode of the database file.
        create_file(path, options.file_mode)?;
    }
    let mut conn = Connection::open(path)?;
    conn.busy_timeout(options.busy_timeout)?;
    if conn.is_readonly(MAIN_DB)? {
        return Err(OpenError::read_only(path, "opened read-only"));
    }

    // The core: dead letters and replacements recorded as events, for the journal.
    let mut config = config
        .with_events(EventMask::DEAD_LETTERED | EventMask::REPLACED)
        .with_event_capacity(1 << 20);
    if config.max_lease().is_none() {
        let lifetime = DEFAULT_MAX_LEASE.max(config.visibility());
        config = config.with_max_lease(lifetime);
    }
    let mut core = Queue::new(config).map_err(OpenError::Config)?;
    let now = runtime.now();
    let offset = wall_now() - now.as_nanos() as i128;

    // Everything is read before anything is written.
    let with_progress = version.is_some_and(|v| v >= PROGRESS_VERSION);
    let schedules = match version {
        Some(v) => crate::schedule::read_all(&conn, v)?,
        None => Vec::new(),
    };
    let (fixes, progress) = if existed {
        let restored = restore_rows(
            &conn,
            &mut core,
            &codec,
            now,
            offset,
            options.max_item_size,
            with_progress,
        )?;
        core.reserve_ids_below(MessageId::new(next_id(&conn)?));
        restored
    } else {
        (Vec::new(), Vec::new())
    };
    let sync = match options.durability {
        Durability::ProcessCrash => "NORMAL",
        Durability::PowerLoss => "FULL",
    };
    conn.execute_batch(&format!(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = {sync}; \
         PRAGMA wal_autocheckpoint = {};",
        options.wal_autocheckpoint
    ))?;
    if !existed {
        create_schema(&conn)?;
    } else if !with_progress {
        migrate_to_progress(&conn)?;
    }
    if version.is_some_and(|v| v < crate::schedule::SCHEDULES_VERSION) {
        crate::schedule::migrate(&conn)?;
    }
    if !fixes.is_empty() {
        commit(&mut conn, &fixes, &mut Early::new())?;
    }

    let inner = Arc::new(MemoryStore::from_core(runtime, core, every, name));
    for (id, p) in progress {
        inner.restore_progress(id, p);
    }
    for state in schedules {
        inner.restore_schedule(state);
    }
    let journal = Journal::start(conn, lock, options.commit_timeout).map_err(OpenError::Io)?;
    let store = Arc::new(SqliteStore {
        inner,
        codec,
        journal,
        offset,
        handles: AtomicUsize::new(1),
        max_item_size: options.max_item_size,
        schedule_lock: parking_lot::Mutex::new(()),
    });
    Ok(LeaseQueue::start(store))
}

/// Creates the (empty) database file with `mode` (Unix; elsewhere the system's default).
fn create_file(path: &Path, mode: u32) -> Result<(), OpenError> {
    let mut new = std::fs::OpenOptions::new();
    new.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut new, mode);
    #[cfg(not(unix))]
    let _ = mode;
    match new.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            Err(OpenError::read_only(path, e))
        }
        Err(e) => Err(OpenError::Io(e)),
    }
}

fn create_schema(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(&format!(
        "BEGIN;
         CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;
         INSERT OR IGNORE INTO meta VALUES ('magic', '{MAGIC}'), ('next_id', 0);
         CREATE TABLE IF NOT EXISTS items (
             id INTEGER PRIMARY KEY,
             payload BLOB NOT NULL,
             attempts INTEGER NOT NULL,
             visible_at INTEGER NOT NULL,
             expires_at INTEGER,
             priority INTEGER NOT NULL,
             key BLOB,
             leased INTEGER NOT NULL DEFAULT 0,
             last_error TEXT,
             dead INTEGER NOT NULL DEFAULT 0,
             reason INTEGER,
             dead_at INTEGER,
             progress BLOB
         );
         {schedules}
         PRAGMA application_id = {APPLICATION_ID};
         PRAGMA user_version = {FORMAT_VERSION};
         COMMIT;",
        schedules = crate::schedule::SCHEDULES_TABLE
    ))
}

/// Format 1 to 2: the `progress` column of handlers' checkpoints (empty for every row), in
/// one transaction with the version change, so a failed migration leaves a version-1 file.
fn migrate_to_progress(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(&format!(
        "BEGIN;
         ALTER TABLE items ADD COLUMN progress BLOB;
         PRAGMA user_version = {PROGRESS_VERSION};
         COMMIT;"
    ))
}
