//! [`Options`] and [`Durability`]: the settings of a durable queue beyond the core
//! [`Config`](leaseq_core::Config).

use std::time::Duration;

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

/// The default [`Options::max_item_size`]: 256 KiB.
pub const DEFAULT_MAX_ITEM_SIZE: usize = 256 * 1024;

/// Settings of a queue file beyond what every store shares (the core config, name,
/// runtime, codec and heartbeat period are the [`QueueBuilder`](leaseq_async::QueueBuilder)'s):
/// `Options::new().durability(Durability::PowerLoss)`, given to
/// [`Sqlite::options`](crate::Sqlite::options).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    pub(crate) durability: Durability,
    pub(crate) wal_autocheckpoint: u32,
    pub(crate) commit_timeout: Duration,
    pub(crate) busy_timeout: Duration,
    pub(crate) max_item_size: usize,
    pub(crate) file_mode: u32,
    pub(crate) retention: Option<Duration>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            durability: Durability::ProcessCrash,
            wal_autocheckpoint: 1000,
            commit_timeout: Duration::from_secs(30),
            busy_timeout: Duration::from_secs(5),
            max_item_size: DEFAULT_MAX_ITEM_SIZE,
            file_mode: 0o600,
            retention: None,
        }
    }
}

impl Options {
    /// The defaults, as each method below says.
    pub fn new() -> Self {
        Options::default()
    }

    /// How much a commit survives. Default: [`Durability::ProcessCrash`].
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// WAL pages after which SQLite checkpoints the WAL into the file (keeps the WAL
    /// bounded). Default: 1000 (about 4 MB).
    pub fn wal_autocheckpoint(mut self, pages: u32) -> Self {
        self.wal_autocheckpoint = pages;
        self
    }

    /// How long an operation waits for its change to be committed while commits fail
    /// (disk full, the file locked by another connection, an I/O error) before it fails
    /// with an "outcome unknown" [`StoreError`](leaseq_async::StoreError): an awaited push
    /// with [`PushError::Unconfirmed`](leaseq_async::PushError::Unconfirmed), a settle
    /// with `SettleError::Store`. Its change stays queued and is written if the file
    /// recovers. It also bounds the flush when the store is dropped. Healthy commits are
    /// never timed out, however slow. Default: 30 s.
    pub fn commit_timeout(mut self, timeout: Duration) -> Self {
        self.commit_timeout = timeout;
        self
    }

    /// How long a commit (or the check at open) waits for a write lock held by another
    /// SQLite connection before it counts as failed (SQLite's busy timeout). Default: 5 s.
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// The largest item accepted, in bytes of its encoded form (the codec's output): a
    /// larger push is refused with [`PushError::TooLarge`](leaseq_async::PushError::TooLarge),
    /// the item handed back and nothing stored. A file holding a larger item (written under
    /// a higher limit) is refused at open with [`OpenError::BadRow`](crate::OpenError)
    /// naming it, without reading it: every item of a queue file is held decoded in memory,
    /// and a dead letter holds its item, so one that is not read cannot be a dead letter
    /// (raise the limit to open the file). Default 256 KiB ([`DEFAULT_MAX_ITEM_SIZE`]), as
    /// the Postgres store's (SQS's limit for years; Pub/Sub's is 10 MB): a queue file is
    /// restored into memory whole.
    pub fn max_item_size(mut self, bytes: usize) -> Self {
        self.max_item_size = bytes;
        self
    }

    /// The permissions of the files a new queue creates (Unix): the database, its `-wal`
    /// and `-shm` (SQLite gives them the database's mode) and its `-lock`, less the
    /// process's umask. Existing files keep theirs. Default `0o600`: readable and writable
    /// by the owner only (items may hold personal data or credentials); `0o640` lets the
    /// owner's group read a copy, say. Ignored elsewhere than Unix.
    pub fn file_mode(mut self, mode: u32) -> Self {
        self.file_mode = mode;
        self
    }

    /// Keeps a record of finished jobs (acked, dead-lettered, cancelled, expired) in the
    /// file's `history` table for `window` after each finish: each entry is written in the
    /// same commit as its finish, read with `LeaseQueue::history` or
    /// [`FileView::history`](crate::FileView::history), and removed by the store's upkeep
    /// once its window has passed. Default: off. A queue file holds only live items, so that
    /// its restart time follows them; the record is read only by operators (never at open),
    /// but each finish then costs an insert and the file grows with throughput x window.
    pub fn retention(mut self, window: Duration) -> Self {
        self.retention = Some(window);
        self
    }
}
