//! Opening a queue: connecting, migrating the schema, taking an instance number (ids), and
//! starting the background tasks and the driver.

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use leaseq_async::{Codec, LeaseQueue, DEFAULT_MAX_LEASE};
use leaseq_core::{Config, RetryPolicy};
use leaseq_tokio::TokioRuntime;
use parking_lot::Mutex;

use crate::blocking::BlockingTaker;
use crate::db::Db;
use crate::error::OpenError;
use crate::options::Options;
use crate::pushes::Pushes;
use crate::schema;
use crate::sql::Sql;
use crate::store::PgStore;
use crate::PgQueue;

/// The longest queue name, in bytes.
pub const MAX_QUEUE_NAME: usize = 200;

/// A connection pool for `config`, over `tls` as its `sslmode` says.
pub(crate) fn make_pool(
    config: &tokio_postgres::Config,
    tls: &crate::tls::MakeRustlsConnect,
    size: usize,
) -> Pool {
    let manager = Manager::from_config(
        config.clone(),
        tls.clone(),
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(size.max(1))
        .build()
        .expect("a pool without timeouts needs no runtime")
}

/// Opens the queue `queue` on the server `pg_config` (what [`Postgres`](crate::Postgres)
/// does): migrates the schema if needed, starts this process's background tasks on `rt`,
/// and returns a queue handle. Every process that opens the same schema and queue name
/// shares its items. Refused with a typed [`OpenError`]: a server that cannot be reached,
/// a schema of a newer leaseq (left untouched), an invalid name or configuration.
///
/// A `config` without a max lease gets [`DEFAULT_MAX_LEASE`] (60 minutes, or the
/// visibility if longer), as in every store: a hung handler whose heartbeat keeps its lease
/// still loses it then.
pub(crate) async fn open_with<T, C>(
    mut pg_config: tokio_postgres::Config,
    queue: &'static str,
    mut config: Config,
    options: Options,
    codec: C,
    rt: TokioRuntime,
) -> Result<PgQueue<T>, OpenError>
where
    T: Clone + Send + Sync + 'static,
    C: Codec<T>,
{
    config.validate().map_err(OpenError::Config)?;
    // The same safe default as every store: a lease lives at most DEFAULT_MAX_LEASE in all
    // (heartbeats included) unless the config says otherwise.
    if config.max_lease().is_none() {
        let lifetime = DEFAULT_MAX_LEASE.max(config.visibility());
        config = config.with_max_lease(lifetime);
    }
    if queue.is_empty() || queue.len() > MAX_QUEUE_NAME {
        return Err(OpenError::InvalidName(queue.to_string()));
    }
    if !schema::valid_schema(&options.schema) {
        return Err(OpenError::InvalidName(options.schema.clone()));
    }
    pg_config.connect_timeout(options.connect_timeout);
    let tls_params = options
        .tls
        .clone()
        .unwrap_or_else(|| crate::tls::params_of(&pg_config));
    let tls = crate::tls::connector(&tls_params)?;
    let listen_config = pg_config.clone();
    // The store's own sessions plan for what its statements are: index scans in index
    // order under a LIMIT, by id for settles. Statistics can say otherwise for a while (a
    // table VACUUMed while drained reads as empty: a claim then sorted the whole backlog,
    // BENCHMARKS.md), so those sessions never sort, bitmap-scan or seq-scan where an index
    // will do, and keep one generic plan per statement (planned once per connection; with
    // seq scans off, a generic plan made while the table was small no longer scans it
    // whole), and compile nothing (JIT) for short statements.
    let session = "-c jit=off -c enable_bitmapscan=off -c enable_sort=off \
                   -c enable_seqscan=off -c plan_cache_mode=force_generic_plan";
    let merged = match pg_config.get_options() {
        Some(own) if !own.is_empty() => format!("{own} {session}"),
        _ => session.to_string(),
    };
    pg_config.options(&merged);
    let pool = make_pool(&pg_config, &tls, options.pool_size);
    let mut client = pool
        .get()
        .await
        .map_err(|e| crate::connect_error::pool_error(e, &pg_config))?;
    schema::migrate(&mut client, &options.schema).await?;
    let not_recorded =
        crate::tx_sql::record_limits(&client, &options, queue, config.capacity()).await?;
    let mut sql = Sql::new(&options.schema, options.max_claim, options.max_item_size);
    if options.retention.is_some() {
        sql.record_history(&options.schema);
    }
    // The ack of rows without a node, as the graph does not wrap it (`ack_plain.rs`).
    sql.ack_plain = crate::ack_plain::bare(&sql.ack);
    sql.tell_graph(&options.schema);
    let instance: i64 = client.query_one(&sql.instance, &[]).await?.get(0);
    let queue_name = queue.to_string();
    // A bounded queue starts from a count of its live rows (`capacity.rs`).
    let live: i64 = match config.capacity() {
        Some(_) => client.query_one(&sql.op.live, &[&queue_name]).await?.get(0),
        None => 0,
    };
    let flowed: bool = client
        .query_one(
            &format!("SELECT {}", crate::flow_sql::FLOWED)
                .replace("{s}", &format!("\"{}\"", options.schema)),
            &[&queue_name],
        )
        .await?
        .get(0);
    drop(client);
    let db = Db {
        queue: queue_name,
        sql,
        pool,
        rt,
        codec: Box::new(codec),
        policy: Mutex::new(RetryPolicy::new(&config)),
        config,
        options,
        tls: tls.clone(),
        last_error: Mutex::new(not_recorded),
        flowed: flowed.into(),
        held_in_a_row: 0.into(),
        limit_binds: false.into(),
    };
    let pushes = Pushes::new(instance, live.max(0) as u64);
    let blocking = BlockingTaker::new(move || make_pool(&pg_config, &tls, 1));
    let store = PgStore::start(db, pushes, listen_config, blocking, queue);
    Ok(LeaseQueue::start(store))
}
