//! `leaseq-postgres`: a leaseq store on PostgreSQL. Many processes on many machines share
//! one queue, with the same [`LeaseQueue`], [`Delivery`](leaseq_async::Delivery) and
//! [`Pool`](leaseq_async::Pool) API as the in-memory queue.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod admin;
mod blocking;
mod claim;
mod counters;
mod drive;
mod error;
mod keeper;
mod listen;
mod open;
mod options;
mod push;
mod receive;
mod schema;
mod seam;
mod settle;
mod sql;
mod store;
mod writer;

pub use admin::PgDeadLetter;
pub use error::{DbError, OpenError, TxAckError};
pub use open::{open, open_with, MAX_QUEUE_NAME};
pub use options::Options;
pub use receive::PgWaiting;
pub use schema::{migrate, schema_version, SCHEMA_VERSION};
pub use store::{PgStore, PgTicket};

#[cfg(feature = "serde")]
pub use leaseq_async::PostcardCodec;
pub use leaseq_async::{BytesCodec, Codec, CodecError};

use leaseq_async::LeaseQueue;
use leaseq_tokio::TokioRuntime;

/// A queue on PostgreSQL: a [`LeaseQueue`] on a [`PgStore`], on tokio.
pub type PgQueue<T> = LeaseQueue<T, TokioRuntime, PgStore<T>>;

/// A delivery from a [`PgQueue`].
pub type PgDelivery<T> = leaseq_async::Delivery<T, TokioRuntime, PgStore<T>>;

/// A worker pool on a [`PgQueue`].
pub type PgPool<T> = leaseq_async::Pool<T, TokioRuntime, PgStore<T>>;
