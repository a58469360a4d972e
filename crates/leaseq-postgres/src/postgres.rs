//! [`Postgres`]: a server (and a schema on it) as an [`OpenStore`], for
//! [`QueueBuilder::open`](leaseq_async::QueueBuilder::open).

use leaseq_async::{Codec, OpenStore, QueueSettings};
use leaseq_tokio::TokioRuntime;

use crate::error::OpenError;
use crate::open::{open_with, MAX_QUEUE_NAME};
use crate::options::Options;
use crate::store::PgStore;
use crate::PgQueue;

/// A queue on a PostgreSQL server, ready to open:
///
/// ```no_run
/// # async fn f() -> Result<(), leaseq_postgres::OpenError> {
/// use std::time::Duration;
/// use leaseq_postgres::{Options, PgQueue, PostcardCodec, Postgres};
/// use leaseq_tokio::{Config, LeaseQueue};
///
/// let url = "host=127.0.0.1 user=postgres dbname=app";
/// let queue: PgQueue<String> = LeaseQueue::builder(Config::new(Duration::from_secs(30)))
///     .name("invoices")
///     .codec(PostcardCodec)
///     .open(Postgres::url(url).options(Options::new().schema("billing")))
///     .await?;
/// # Ok(()) }
/// ```
///
/// The queue is the builder's name (at most [`MAX_QUEUE_NAME`] bytes): every process that
/// opens the same schema and name shares its items. Opening connects, creates or migrates
/// the schema (refusing a newer one untouched), takes an instance number for ids, and
/// starts this process's background tasks on the builder's tokio runtime (the one the
/// caller is in, if none was given). The builder's heartbeat period, if set, replaces
/// [`Options::heartbeat_every`]; its event mask is not used (this store records no core
/// events). A `Config` capacity bounds the queue across processes (see the crate docs).
#[derive(Clone, Debug)]
pub struct Postgres {
    server: Server,
    options: Options,
}

/// Where the server is: a connection string, parsed at open, or a parsed config.
#[derive(Clone, Debug)]
enum Server {
    Url(String),
    Config(Box<tokio_postgres::Config>),
}

impl Postgres {
    /// The server at `url`: a libpq-style string (`host=127.0.0.1 user=postgres
    /// dbname=app`) or a `postgresql://` URL; one that does not parse fails the open with
    /// [`OpenError::BadUrl`]. Default [`Options`].
    pub fn url(url: impl Into<String>) -> Self {
        Postgres {
            server: Server::Url(url.into()),
            options: Options::new(),
        }
    }

    /// The server of a parsed connection config. Its `sslmode` is tokio-postgres's
    /// (`disable`, `prefer`, `require`: encrypted, the certificate not verified); for
    /// `verify-ca` / `verify-full` and `sslrootcert`, use [`url`](Self::url).
    pub fn config(config: tokio_postgres::Config) -> Self {
        Postgres {
            server: Server::Config(Box::new(config)),
            options: Options::new(),
        }
    }

    /// With `options` (schema, periods, batch sizes, pool size, ...).
    pub fn options(mut self, options: Options) -> Self {
        self.options = options;
        self
    }
}

impl<T, C> OpenStore<T, TokioRuntime, C> for Postgres
where
    T: Clone + Send + Sync + 'static,
    C: Codec<T>,
{
    type Store = PgStore<T>;
    type Error = OpenError;

    async fn open(self, settings: QueueSettings<TokioRuntime, C>) -> Result<PgQueue<T>, OpenError> {
        let mut options = self.options;
        let pg_config = match self.server {
            Server::Url(url) => {
                // The TLS keys (`sslmode`, `sslrootcert`, ...) are read here, before
                // tokio-postgres parses the rest.
                let (pg_config, tls) = crate::tls::parse(&url)?;
                options.tls = Some(tls);
                pg_config
            }
            Server::Config(config) => *config,
        };
        let name = settings.name;
        if name.is_empty() || name.len() > MAX_QUEUE_NAME {
            return Err(OpenError::InvalidName(name.to_string()));
        }
        if let Some(every) = settings.heartbeat_every {
            options.heartbeat_every = Some(every);
        }
        let rt = settings.runtime;
        // On the queue's runtime, whichever executor awaits the open: the client's
        // connections and the pool live on tokio's reactor.
        let opening = open_with(
            pg_config,
            name,
            settings.config,
            options,
            settings.codec,
            rt.clone(),
        );
        match rt.handle().spawn(opening).await {
            Ok(r) => r,
            Err(e) => Err(OpenError::Connect(Box::new(crate::error::Because {
                what: "the open task ended",
                cause: Box::new(e),
            }))),
        }
    }
}
