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
}

impl Default for Options {
    fn default() -> Self {
        Options {
            durability: Durability::ProcessCrash,
            wal_autocheckpoint: 1000,
            commit_timeout: Duration::from_secs(30),
            busy_timeout: Duration::from_secs(5),
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
}
