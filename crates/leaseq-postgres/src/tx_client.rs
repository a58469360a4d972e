//! [`TxClient`]: the caller's connection or transaction that a push inside it runs on, for
//! each client library a Rust service uses. Each runs the one statement of a transactional
//! push (`tx_sql.rs`'s `push_rows`) in one round trip and reads its answer; the push
//! itself (checks, encoding, the answer's meaning) is `tx_push.rs`'s, written once.
//!
//! Implemented for concrete types rather than over the libraries' `GenericClient` traits:
//! tokio-postgres's and deadpool-postgres's are two sealed traits, each implemented by the
//! other crate's types only through `Deref`, and a blanket impl over one would forbid
//! impls for the other's types (either crate may add impls upstream).

use std::future::Future;

use tokio_postgres::types::{ToSql, Type};

use crate::tx_error::TxDbError;

/// A connection or a transaction to push in
/// ([`PgStore::push_in`](crate::PgStore::push_in)): a shared reference to a
/// `tokio_postgres::Transaction` or `Client`, or to a `deadpool_postgres::Transaction` or
/// pooled `Object`; with the feature `sqlx`, a `&mut sqlx::PgConnection` (a pool's
/// connection derefs to one: `&mut *conn`) or a `&mut sqlx::Transaction<'_, Postgres>`.
///
/// On a client outside a transaction, the push is its own transaction (committed when it
/// returns). Sealed: implemented for these types only.
pub trait TxClient: sealed::Sealed {}

pub(crate) mod sealed {
    use std::future::Future;

    use crate::tx_error::TxDbError;

    /// One transactional push statement's arguments (`tx_sql::push_rows`).
    #[derive(Debug)]
    pub struct Call {
        pub(crate) sql: String,
        pub(crate) queue: String,
        pub(crate) payloads: Vec<Vec<u8>>,
        pub(crate) priority: i32,
        pub(crate) delay_us: i64,
        pub(crate) ttl_us: Option<i64>,
        pub(crate) key: Option<Vec<u8>>,
        pub(crate) replace: bool,
        pub(crate) max_item_size: i64,
        pub(crate) capacity: Option<i64>,
        /// The key's window as `items.key_hold` keeps it, and its period (us).
        pub(crate) window: Option<i16>,
        pub(crate) window_us: Option<i64>,
    }

    /// Its answer: the ids pushed, in order, and the refusal that stopped it, if any.
    #[derive(Debug, Default)]
    pub struct Reply {
        pub(crate) ids: Vec<i64>,
        pub(crate) refusal: Option<String>,
        pub(crate) detail: Option<i64>,
    }

    /// Runs a [`Call`] on the caller's client (see [`TxClient`](super::TxClient)).
    pub trait Sealed {
        /// The statement, run in one round trip.
        fn push_rows(self, call: &Call) -> impl Future<Output = Result<Reply, TxDbError>> + Send;
    }
}

use sealed::{Call, Reply, Sealed};

/// The parameters' types, given so the statement needs no prepare round trip.
const TYPES: [Type; 11] = [
    Type::TEXT,
    Type::BYTEA_ARRAY,
    Type::INT4,
    Type::INT8,
    Type::INT8,
    Type::BYTEA,
    Type::BOOL,
    Type::INT8,
    Type::INT8,
    Type::INT2,
    Type::INT8,
];

/// The call on a tokio-postgres client or transaction: `query_typed`, one round trip.
async fn on_postgres<C>(client: &C, call: &Call) -> Result<Reply, TxDbError>
where
    C: tokio_postgres::GenericClient + Sync,
{
    let values: [&(dyn ToSql + Sync); 11] = [
        &call.queue,
        &call.payloads,
        &call.priority,
        &call.delay_us,
        &call.ttl_us,
        &call.key,
        &call.replace,
        &call.max_item_size,
        &call.capacity,
        &call.window,
        &call.window_us,
    ];
    let params: Vec<(&(dyn ToSql + Sync), Type)> =
        values.iter().copied().zip(TYPES.iter().cloned()).collect();
    let rows = client
        .query_typed(&call.sql, &params)
        .await
        .map_err(TxDbError::Postgres)?;
    let Some(row) = rows.first() else {
        return Err(TxDbError::Unexpected("no row".into()));
    };
    Ok(Reply {
        ids: row.try_get(0).map_err(TxDbError::Postgres)?,
        refusal: row.try_get(1).map_err(TxDbError::Postgres)?,
        detail: row.try_get(2).map_err(TxDbError::Postgres)?,
    })
}

/// The impls for tokio-postgres's types and deadpool's (which deref to them).
macro_rules! on_tokio_postgres {
    ($($ty:ty => $target:ty),* $(,)?) => {$(
        impl TxClient for &$ty {}
        impl Sealed for &$ty {
            fn push_rows(self, call: &Call) -> impl Future<Output = Result<Reply, TxDbError>> + Send {
                let client: &$target = self;
                on_postgres(client, call)
            }
        }
    )*};
}

on_tokio_postgres! {
    tokio_postgres::Client => tokio_postgres::Client,
    tokio_postgres::Transaction<'_> => tokio_postgres::Transaction<'_>,
    deadpool_postgres::Object => tokio_postgres::Client,
    deadpool_postgres::Transaction<'_> => tokio_postgres::Transaction<'_>,
}

/// The call on an sqlx connection: one round trip once its statement is cached (sqlx
/// prepares each statement once per connection).
#[cfg(feature = "sqlx")]
async fn on_sqlx(conn: &mut sqlx::PgConnection, call: &Call) -> Result<Reply, TxDbError> {
    use sqlx::Row;
    let row = sqlx::query(&call.sql)
        .bind(&call.queue)
        .bind(&call.payloads)
        .bind(call.priority)
        .bind(call.delay_us)
        .bind(call.ttl_us)
        .bind(&call.key)
        .bind(call.replace)
        .bind(call.max_item_size)
        .bind(call.capacity)
        .bind(call.window)
        .bind(call.window_us)
        .fetch_one(conn)
        .await
        .map_err(TxDbError::Sqlx)?;
    Ok(Reply {
        ids: row.try_get(0).map_err(TxDbError::Sqlx)?,
        refusal: row.try_get(1).map_err(TxDbError::Sqlx)?,
        detail: row.try_get(2).map_err(TxDbError::Sqlx)?,
    })
}

#[cfg(feature = "sqlx")]
impl TxClient for &mut sqlx::PgConnection {}

#[cfg(feature = "sqlx")]
impl Sealed for &mut sqlx::PgConnection {
    fn push_rows(self, call: &Call) -> impl Future<Output = Result<Reply, TxDbError>> + Send {
        on_sqlx(self, call)
    }
}

#[cfg(feature = "sqlx")]
impl TxClient for &mut sqlx::Transaction<'_, sqlx::Postgres> {}

#[cfg(feature = "sqlx")]
impl Sealed for &mut sqlx::Transaction<'_, sqlx::Postgres> {
    fn push_rows(self, call: &Call) -> impl Future<Output = Result<Reply, TxDbError>> + Send {
        on_sqlx(self, call)
    }
}
