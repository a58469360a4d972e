//! Opening a queue file: the format check (before anything is written), the schema, and
//! the restore of its items into a fresh core.

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use leaseq_async::{Codec, CodecError, LeaseQueue, MemoryStore, Runtime, DEFAULT_MAX_LEASE};
use leaseq_core::{
    Config, ConfigError, EventMask, MessageId, Queue, RestoreError, Restored, RestoredDeadLetter,
    Timestamp, UniqueKey,
};
use rusqlite::{Connection, OpenFlags};

use crate::journal::{Journal, Op};
use crate::store::{wall_now, SqliteStore};
use crate::SqliteQueue;

/// `PRAGMA application_id` of a leaseq queue file ("LQ01" in ASCII).
pub const APPLICATION_ID: i32 = 0x4c51_3031;
/// The file format this version writes and reads (`PRAGMA user_version`).
pub const FORMAT_VERSION: i32 = 1;
/// The magic in the file's `meta` table.
const MAGIC: &str = "leaseq-sqlite";

/// How much a committed change survives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// SQLite WAL with `synchronous=NORMAL`: a committed change survives the process dying
    /// (panic, abort, `kill -9`, OOM kill); the last commits before a power loss or an OS
    /// crash may be lost (never corrupting the file). The WAL is synced at checkpoints only.
    #[default]
    ProcessCrash,
    /// SQLite WAL with `synchronous=FULL`: every commit is fsynced before it is reported,
    /// so it survives power loss too. Costs one fsync per group commit.
    PowerLoss,
}

/// Why a queue file could not be opened. Nothing was written to the file when the check
/// of its format failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum OpenError {
    /// The file exists but is not a leaseq queue (not SQLite, or another application's
    /// database).
    NotAQueue(String),
    /// The file was written by a newer format version than this one reads.
    NewerVersion {
        /// The file's format version.
        found: i32,
        /// The newest this version reads.
        supported: i32,
    },
    /// The configuration cannot work.
    Config(ConfigError),
    /// An item's bytes could not be decoded.
    Decode {
        /// The item.
        id: u64,
        /// The codec's error.
        error: CodecError,
    },
    /// The file's rows contradict each other.
    Restore(RestoreError),
    /// SQLite failed.
    Sqlite(rusqlite::Error),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::NotAQueue(why) => write!(f, "not a leaseq queue file: {why}"),
            OpenError::NewerVersion { found, supported } => write!(
                f,
                "queue file format version {found} is newer than this version reads ({supported})"
            ),
            OpenError::Config(e) => write!(f, "invalid config: {e:?}"),
            OpenError::Decode { id, error } => write!(f, "item #{id}: {error}"),
            OpenError::Restore(e) => write!(f, "{e}"),
            OpenError::Sqlite(e) => write!(f, "sqlite: {e}"),
        }
    }
}

impl std::error::Error for OpenError {}

impl From<rusqlite::Error> for OpenError {
    fn from(e: rusqlite::Error) -> Self {
        OpenError::Sqlite(e)
    }
}

/// Settings of a durable queue beyond the core [`Config`].
#[derive(Clone, Debug)]
pub struct Options {
    /// How much a commit survives. Default: [`Durability::ProcessCrash`].
    pub durability: Durability,
    /// How often held leases with a heartbeat are extended. Default: a third of the
    /// visibility.
    pub heartbeat_every: Option<Duration>,
    /// The queue's name. Default: `"leaseq"`.
    pub name: &'static str,
    /// WAL pages after which SQLite checkpoints the WAL into the file (keeps the WAL
    /// bounded). Default: 1000 (about 4 MB).
    pub wal_autocheckpoint: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            durability: Durability::ProcessCrash,
            heartbeat_every: None,
            name: "leaseq",
            wal_autocheckpoint: 1000,
        }
    }
}

impl Options {
    /// Default options at `durability`.
    pub fn durability(durability: Durability) -> Self {
        Options {
            durability,
            ..Options::default()
        }
    }
}

/// Checks that `path` holds a leaseq queue this version reads, opening it read-only:
/// `Ok(false)` if it does not exist or is empty (a new queue).
pub fn check_file(path: &Path) -> Result<bool, OpenError> {
    match std::fs::metadata(path) {
        Ok(m) if m.len() > 0 => {}
        _ => return Ok(false),
    }
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    let not_sqlite = |e: rusqlite::Error| OpenError::NotAQueue(e.to_string());
    let app: i32 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .map_err(not_sqlite)?;
    if app != APPLICATION_ID {
        return Err(OpenError::NotAQueue(format!(
            "application id {app:#x}, not {APPLICATION_ID:#x}"
        )));
    }
    let version: i32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > FORMAT_VERSION {
        return Err(OpenError::NewerVersion {
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    let magic: Option<String> = conn
        .query_row("SELECT value FROM meta WHERE key = 'magic'", [], |r| {
            r.get(0)
        })
        .map_err(|e| OpenError::NotAQueue(e.to_string()))?;
    if magic.as_deref() != Some(MAGIC) {
        return Err(OpenError::NotAQueue("no leaseq magic".into()));
    }
    Ok(true)
}

/// Opens (or creates) the durable queue in the file at `path`, on `runtime`, its items
/// stored with `codec`. Items the file holds come back: ready and delayed ones as they
/// were (delays keep their wall-clock schedule), leases the previous process held at once
/// (their attempt counted; dead letters, reason "dropped" with error "process restart",
/// if it was their last), dead letters with their errors.
///
/// A file that is not a leaseq queue, or one of a newer format version, is refused with a
/// typed error before anything is written to it.
pub fn open<T, R, C>(
    path: impl AsRef<Path>,
    config: Config,
    options: Options,
    codec: C,
    runtime: R,
) -> Result<SqliteQueue<T, R, C>, OpenError>
where
    T: Clone + Send + 'static,
    R: Runtime,
    C: Codec<T>,
{
    let path = path.as_ref();
    let existed = check_file(path)?;
    let conn = Connection::open(path)?;
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
                 dead_at INTEGER
             );
             PRAGMA application_id = {APPLICATION_ID};
             PRAGMA user_version = {FORMAT_VERSION};
             COMMIT;"
        ))?;
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
    let max_attempts = core.config().max_attempts();
    let now = runtime.now();
    let offset = wall_now() - now.as_nanos() as i128;
    let from_disk = |t: i64| -> Timestamp {
        let ns = (t as i128 - offset).clamp(0, u64::MAX as i128 - 1) as u64;
        Timestamp::from_nanos(ns)
    };
    let mut fixes = Vec::new();
    {
        let mut st = conn.prepare(
            "SELECT id, payload, attempts, visible_at, expires_at, priority, key, leased, \
             last_error, dead, reason, dead_at FROM items ORDER BY id",
        )?;
        let mut rows = st.query([])?;
        while let Some(row) = rows.next()? {
            let id: i64 = row.get(0)?;
            let id = id as u64;
            let payload: Vec<u8> = row.get(1)?;
            let item = codec
                .decode(&payload)
                .map_err(|error| OpenError::Decode { id, error })?;
            let attempts: u32 = row.get(2)?;
            let visible_at: i64 = row.get(3)?;
            let expires_at: Option<i64> = row.get(4)?;
            let priority: u8 = row.get(5)?;
            let key: Option<Vec<u8>> = row.get(6)?;
            let key = key.and_then(UniqueKey::new);
            let leased: bool = row.get(7)?;
            let last_error: Option<String> = row.get(8)?;
            let dead: bool = row.get(9)?;
            let reason: Option<i64> = row.get(10)?;
            let dead_at: Option<i64> = row.get(11)?;
            let expires_at = expires_at.map(from_disk);
            let restart = leased && !dead;
            if dead || (restart && attempts >= max_attempts) {
                let (reason, last_error, at) = if dead {
                    (
                        // An unknown code (a newer version's reason) reads as "dropped".
                        reason
                            .and_then(|c| u8::try_from(c).ok())
                            .and_then(leaseq_core::Reason::from_code)
                            .unwrap_or(leaseq_core::Reason::Dropped),
                        last_error,
                        dead_at.map_or(now, from_disk),
                    )
                } else {
                    // Its last lease was cut by the process dying.
                    let reason = leaseq_core::Reason::Dropped;
                    let error = Some("process restart".to_string());
                    fixes.push(Op::Dead {
                        id,
                        attempts,
                        reason: reason.code(),
                        error: error.clone(),
                        at: (now.as_nanos() as i128 + offset) as i64,
                    });
                    (reason, error, now)
                };
                core.restore_dead_letter(RestoredDeadLetter {
                    id: MessageId::new(id),
                    item,
                    attempts,
                    reason,
                    last_error,
                    at,
                    expires_at,
                    priority,
                    key,
                })
                .map_err(OpenError::Restore)?;
            } else {
                let (visible_at, last_error) = if restart {
                    // The lease the dead process held comes back at once, its attempt
                    // counted (it was recorded before the delivery was handed out).
                    fixes.push(Op::Retry {
                        id,
                        attempts,
                        visible_at: 0,
                        error: Some("process restart".into()),
                    });
                    (now, Some("process restart".to_string()))
                } else {
                    (from_disk(visible_at), last_error)
                };
                core.restore(
                    Restored {
                        id: MessageId::new(id),
                        item,
                        attempts,
                        visible_at,
                        expires_at,
                        priority,
                        key,
                        last_error,
                    },
                    now,
                )
                .map_err(OpenError::Restore)?;
            }
        }
    }
    let next: i64 = conn
        .query_row("SELECT value FROM meta WHERE key = 'next_id'", [], |r| {
            r.get(0)
        })
        .unwrap_or(0);
    core.reserve_ids_below(MessageId::new(next.max(0) as u64));
    let visibility = core.config().visibility();
    let every = options.heartbeat_every.unwrap_or(visibility / 3);
    let inner = Arc::new(MemoryStore::from_core(runtime, core, every, options.name));
    let journal = Journal::start(conn);
    if !fixes.is_empty() {
        let seq = journal.submit(fixes);
        journal.wait_blocking(seq);
    }
    let store = Arc::new(SqliteStore {
        inner,
        codec,
        journal,
        offset,
    });
    Ok(LeaseQueue::start(store))
}
