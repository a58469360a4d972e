//! Opening a queue file: the owner lock, the format check (before anything is written), the
//! schema of a new file, the restore of its items into a fresh core, and the writer.

use std::path::Path;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use leaseq_async::{
    Codec, LeaseQueue, MemoryStore, Progress, QueueSettings, Runtime, ScheduleState,
    DEFAULT_MAX_LEASE,
};
use leaseq_core::{EventMask, MessageId, Queue, Timestamp};
use rusqlite::{Connection, MAIN_DB};

use crate::check::{check, sidecar, APPLICATION_ID, FORMAT_VERSION, MAGIC, PROGRESS_VERSION};
use crate::commit::{commit, Early};
use crate::journal::Journal;
use crate::lock::OwnerLock;
use crate::op::Op;
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
    // The core first: a configuration that cannot work is refused before the disk is
    // touched. Dead letters and replacements recorded as events, for the journal.
    let mut config = config
        .with_events(EventMask::DEAD_LETTERED | EventMask::REPLACED)
        .with_event_capacity(1 << 20);
    if config.max_lease().is_none() {
        let lifetime = DEFAULT_MAX_LEASE.max(config.visibility());
        config = config.with_max_lease(lifetime);
    }
    let core = Queue::new(config).map_err(OpenError::Config)?;
    // A closing owner of this process gets as long as its flush may take.
    let lock = OwnerLock::take(
        path,
        options.commit_timeout + options.busy_timeout,
        options.file_mode,
    )?;
    let mut created = false;
    let ready = match prepare(
        path,
        options,
        core,
        &codec,
        (runtime.now(), name),
        &mut created,
    ) {
        Ok(ready) => ready,
        Err(e) => {
            // Its connection closed: what this open made goes, the lock file last.
            if created {
                for suffix in ["", "-wal", "-shm", "-journal"] {
                    let _ = std::fs::remove_file(sidecar(path, suffix));
                }
            }
            lock.discard();
            return Err(e);
        }
    };
    let Ready {
        conn,
        core,
        offset,
        progress,
        schedules,
        windows,
        graph,
    } = ready;
    let inner = Arc::new(MemoryStore::from_core(runtime, core, every, name));
    for (id, p) in progress {
        inner.restore_progress(id, p);
    }
    for state in schedules {
        inner.restore_schedule(state);
    }
    let graph_on = !graph.is_empty();
    if graph_on {
        inner.restore_graph(graph).map_err(|e| OpenError::BadRow {
            path: path.to_path_buf(),
            row: "graph".into(),
            why: e.to_string(),
        })?;
    }
    let journal = Journal::start(conn, lock, options.commit_timeout)
        .map_err(|e| OpenError::io(path, "the writer thread could not start", e))?;
    let store = Arc::new(SqliteStore {
        inner,
        codec,
        journal,
        offset,
        handles: AtomicUsize::new(1),
        max_item_size: options.max_item_size,
        schedule_lock: parking_lot::Mutex::new(()),
        retention: options.retention,
        last_prune: parking_lot::Mutex::new(None),
        path: path.to_path_buf(),
        windows: std::sync::atomic::AtomicBool::new(windows),
        graph_on: std::sync::atomic::AtomicBool::new(graph_on),
    });
    // What the graph's restore released or healed, in the file before any receive.
    let healed = store.with_graph(Vec::new());
    if !healed.is_empty() {
        store.journal.submit(healed);
    }
    Ok(LeaseQueue::start(store))
}

/// A file checked, restored and ready for its writer.
struct Ready<T> {
    conn: Connection,
    core: Queue<T>,
    /// Wall-clock nanoseconds at the runtime's zero.
    offset: i128,
    /// The items' checkpoints.
    progress: Vec<(MessageId, Progress)>,
    /// The schedules' stored states.
    schedules: Vec<ScheduleState>,
    /// Whether the file kept a key's window (`windows.rs`).
    windows: bool,
    /// The dependency graph's rows.
    graph: Vec<leaseq_async::dependencies::RecordRow<T>>,
}

/// Under the owner lock: checks the file (or creates it: `created` is then set), reads
/// every row into `core` on the check's read-only connection before anything is written
/// (so that a refusal leaves the file, its `-wal` and `-shm` as they were: the writable
/// connection has not read the file yet, so it neither recovers nor checkpoints the WAL
/// when it is dropped), then sets the file up (WAL, the schema or its migration, the fixes
/// for the previous process's leases).
fn prepare<T, C: Codec<T>>(
    path: &Path,
    options: &Options,
    mut core: Queue<T>,
    codec: &C,
    (now, name): (Timestamp, &str),
    created: &mut bool,
) -> Result<Ready<T>, OpenError> {
    let sql = |e| OpenError::from_sqlite(path, e);
    let (version, reader) = check(path, options.busy_timeout)?.unzip();
    let existed = version.is_some();
    if !existed {
        // Created here with its mode: SQLite gives the WAL and shared-memory files the
        // mode of the database file.
        create_file(path, options.file_mode)?;
        *created = true;
    }
    let mut conn = Connection::open(path).map_err(sql)?;
    conn.busy_timeout(options.busy_timeout).map_err(sql)?;
    if conn.is_readonly(MAIN_DB).map_err(sql)? {
        // SQLite fell back to reading: the system's refusal to write is the cause.
        let denied = std::fs::OpenOptions::new().write(true).open(path).err();
        let cause = denied.map(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>);
        return Err(OpenError::read_only(
            path,
            "SQLite could open it only to read",
            cause,
        ));
    }
    let offset = wall_now() - now.as_nanos() as i128;

    // Everything is read before anything is written, on the check's connection.
    let with_progress = version.is_some_and(|v| v >= PROGRESS_VERSION);
    let (schedules, fixes, progress, windows, graph) = match (version, &reader) {
        (Some(v), Some(read)) => {
            let schedules = crate::schedule::read_all(path, read, v)?;
            let graph = crate::graph::read_all(path, read, v, codec)?;
            if crate::pause::read(path, read)? {
                core.pause(now);
            }
            let flow = crate::flow::read_settings(path, read, v)?;
            for &(scope, max) in &flow.limits {
                core.set_limit(scope, Some(max));
            }
            for &(scope, rate) in &flow.rates {
                core.set_rate(scope, Some(rate), now);
            }
            let (fixes, progress, rows_windows) = restore_rows(
                path,
                read,
                &mut core,
                codec,
                now,
                offset,
                options.max_item_size,
                v,
            )?;
            core.reserve_ids_below(MessageId::new(next_id(path, read)?));
            let from_disk = |t: i64| {
                let ns = (t as i128 - offset).clamp(0, u64::MAX as i128 - 1) as u64;
                Timestamp::from_nanos(ns)
            };
            let gone = crate::windows::restore_gone(path, read, &mut core, v, from_disk)?;
            (schedules, fixes, progress, rows_windows || gone, graph)
        }
        _ => (Vec::new(), Vec::new(), Vec::new(), false, Vec::new()),
    };
    drop(reader);
    let sync = match options.durability {
        Durability::ProcessCrash => "NORMAL",
        Durability::PowerLoss => "FULL",
    };
    conn.execute_batch(&format!(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = {sync}; \
         PRAGMA wal_autocheckpoint = {};",
        options.wal_autocheckpoint
    ))
    .map_err(sql)?;
    if !existed {
        create_schema(&conn).map_err(sql)?;
    } else if !with_progress {
        migrate_to_progress(&conn).map_err(sql)?;
    }
    if version.is_some_and(|v| v < crate::schedule::SCHEDULES_VERSION) {
        crate::schedule::migrate(&conn).map_err(sql)?;
    }
    if version.is_some_and(|v| v < crate::pause::PAUSE_VERSION) {
        crate::pause::migrate(&conn).map_err(sql)?;
    }
    if version.is_some_and(|v| v < crate::history::HISTORY_VERSION) {
        crate::history::migrate(&conn).map_err(sql)?;
    }
    if version.is_some_and(|v| v < crate::flow::FLOW_VERSION) {
        crate::flow::migrate(&conn).map_err(sql)?;
    }
    if version.is_some_and(|v| v < crate::graph::GRAPH_VERSION) {
        crate::graph::migrate(&conn).map_err(sql)?;
    }
    // With the record on, the dead letters this open made (leases cut by a dead process)
    // are finishes too.
    let mut fixes = fixes;
    if options.retention.is_some() {
        let entries: Vec<Op> = fixes
            .iter()
            .filter_map(|op| match *op {
                Op::Dead { id, reason, at, .. } => Some(Op::finished_dead(id, reason, at)),
                _ => None,
            })
            .collect();
        fixes.extend(entries);
    }
    // The opener's name, for tools that read the file (`FileView::queue_name`).
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES ('queue_name', ?1)",
        [name],
    )
    .map_err(sql)?;
    if !fixes.is_empty() {
        commit(&mut conn, &fixes, &mut Early::new()).map_err(sql)?;
    }
    Ok(Ready {
        conn,
        core,
        offset,
        progress,
        schedules,
        windows,
        graph,
    })
}

/// Creates the (empty) database file with `mode` (Unix; elsewhere the system's default).
fn create_file(path: &Path, mode: u32) -> Result<(), OpenError> {
    let mut new = std::fs::OpenOptions::new();
    new.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut new, mode);
    #[cfg(not(unix))]
    let _ = mode;
    new.open(path)
        .map(drop)
        .map_err(|e| OpenError::io(path, "cannot create it", e))
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
         {history}
         {flow}
         {graph}
         PRAGMA application_id = {APPLICATION_ID};
         PRAGMA user_version = {FORMAT_VERSION};
         COMMIT;",
        schedules = crate::schedule::SCHEDULES_TABLE,
        history = crate::history::HISTORY_TABLE,
        flow = crate::flow::FLOW_SCHEMA,
        graph = crate::graph::GRAPH_TABLE,
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
