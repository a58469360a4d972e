//! [`Sqlite`]: a queue file as an [`OpenStore`], for
//! [`QueueBuilder::open`](leaseq_async::QueueBuilder::open).

use std::future::Future;
use std::path::PathBuf;

use leaseq_async::{Codec, OpenStore, QueueSettings, Runtime};

use crate::open::open;
use crate::open_error::OpenError;
use crate::options::Options;
use crate::store::SqliteStore;
use crate::SqliteQueue;

/// The durable queue in one file, ready to open:
///
/// ```no_run
/// # async fn f(rt: impl leaseq_async::Runtime) -> Result<(), leaseq_sqlite::OpenError> {
/// use std::time::Duration;
/// use leaseq_async::{Config, LeaseQueue};
/// use leaseq_sqlite::{Durability, Options, PostcardCodec, Sqlite, SqliteQueue};
///
/// let queue: SqliteQueue<String, _, _> = LeaseQueue::builder(Config::new(Duration::from_secs(30)))
///     .runtime(rt)
///     .name("thumbnails")
///     .codec(PostcardCodec)
///     .open(Sqlite::file("thumbnails.db").options(Options::new().durability(Durability::PowerLoss)))
///     .await?;
/// # Ok(()) }
/// ```
///
/// Opening creates the file if it does not exist. Items the file holds come back: ready
/// and delayed ones as they were (delays keep their wall-clock schedule), leases the
/// previous process held at once (their attempt counted; dead letters, reason "dropped"
/// with error "process restart", if it was their last), dead letters with their errors.
///
/// The queue owns the file until it is dropped: a second open of the same file, from this
/// process or another, is refused with [`OpenError::Locked`] (the lock is the file
/// `<path>-lock`, released by the OS if the process dies). A file that is not a leaseq
/// queue, is damaged, read-only, of a newer format version, or has a row this version does
/// not write, is refused with a typed error before anything is written to it. Opening does
/// its file I/O on the calling thread (a few milliseconds for a small file; reading every
/// item of a large one).
#[derive(Clone, Debug)]
pub struct Sqlite {
    path: PathBuf,
    options: Options,
}

impl Sqlite {
    /// The queue in the file at `path`, with the default [`Options`].
    pub fn file(path: impl Into<PathBuf>) -> Self {
        Sqlite {
            path: path.into(),
            options: Options::new(),
        }
    }

    /// With `options` (durability, commit and busy timeouts, WAL checkpoints).
    pub fn options(mut self, options: Options) -> Self {
        self.options = options;
        self
    }
}

impl<T, R, C> OpenStore<T, R, C> for Sqlite
where
    T: Clone + Send + 'static,
    R: Runtime,
    C: Codec<T>,
{
    type Store = SqliteStore<T, R, C>;
    type Error = OpenError;

    fn open(
        self,
        settings: QueueSettings<R, C>,
    ) -> impl Future<Output = Result<SqliteQueue<T, R, C>, OpenError>> + Send {
        std::future::ready(open(&self.path, &self.options, settings))
    }
}
