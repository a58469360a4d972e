//! A schema's queues read without opening a store ([`PgInspector`]): one connection, every
//! read in a `BEGIN READ ONLY` transaction with the store's own statements. No migration,
//! no instance number, no rescuer or heartbeat: nothing is written.

use std::time::{Duration, SystemTime};

use leaseq_async::{DeadFilter, Page, ScheduleState, StoredCounts, StoredItem, StoredState};
use leaseq_core::{MessageId, Reason};
use tokio_postgres::{Client, Row};

use crate::error::{DbError, OpenError};
use crate::sql::Sql;

mod overview;

/// The largest payload an inspector loads (a larger one shows its size only).
const MAX_ITEM: usize = crate::options::DEFAULT_MAX_ITEM_SIZE;

/// The schema step that added `queue_settings` (transactional pushes).
const QUEUE_SETTINGS_VERSION: i64 = 6;

/// A read-only look at the queues of one schema, for operator tools (the `leaseq` command
/// line reads Postgres through it): the queues with their counts, one queue's live rows and
/// dead letters with their stored bytes. Each call is one read-only transaction, so it
/// changes nothing, whoever else runs on the schema.
///
/// Times are the database's, turned into this machine's `SystemTime` at the read.
#[derive(Debug)]
pub struct PgInspector {
    client: Client,
    sql: Sql,
    exists: bool,
    /// The schema's name and version (none: no leaseq schema there).
    schema: String,
    version: Option<i64>,
    /// The pause flag over a queue name `i.queue` (`false` before pausing was kept).
    paused_list: String,
}

impl PgInspector {
    /// Connects to the server of `url` (the same connection strings and TLS keys as
    /// [`Postgres::url`](crate::Postgres::url)) and reads `schema`'s version: a schema of a
    /// newer leaseq is refused ([`OpenError::SchemaTooNew`]); a missing one reads as empty
    /// (see [`schema_exists`](Self::schema_exists)). The connection runs on the current
    /// tokio runtime (call it inside one).
    pub async fn connect(url: &str, schema: &str) -> Result<PgInspector, OpenError> {
        if !crate::schema::valid_schema(schema) {
            return Err(OpenError::InvalidName(schema.to_string()));
        }
        let (mut config, params) = crate::tls::parse(url)?;
        config.connect_timeout(Duration::from_secs(10));
        let tls = crate::tls::connector(&params)?;
        let (client, conn) = config
            .connect(tls)
            .await
            .map_err(|e| crate::connect_error::connect_error(e, &config))?;
        tokio::spawn(conn);
        let version = crate::schema::schema_version(&client, schema).await?;
        if let Some(found) = version.filter(|&v| v > crate::schema::SCHEMA_VERSION) {
            return Err(OpenError::SchemaTooNew {
                found,
                supported: crate::schema::SCHEMA_VERSION,
            });
        }
        let mut sql = Sql::new(schema, 1, MAX_ITEM);
        let mut paused_list =
            crate::pause_sql::PAUSED_LIST.replace("{s}", &format!("\"{schema}\""));
        if version.is_some_and(|v| v < crate::pause_sql::PAUSE_VERSION) {
            // Before the pause flag: read as `false`, not from a table that is not there.
            let s = format!("\"{schema}\"");
            let flag = |q: &str| q.replace("{s}", &s);
            let count = flag(crate::pause_sql::PAUSED_COUNT);
            sql.counts = sql.counts.replace(&count, "false");
            let list = flag(crate::pause_sql::PAUSED_LIST);
            sql.op.queues = sql.op.queues.replace(&list, "false");
            paused_list = "false".into();
        }
        Ok(PgInspector {
            client,
            sql,
            exists: version.is_some(),
            schema: schema.to_string(),
            version,
            paused_list,
        })
    }

    /// The schedules kept for `queue` (each one's cursor, last and next tick, when the
    /// cursor last moved, its calendar in words), by name; none in a schema of a version
    /// before schedules were kept.
    pub async fn schedules(&mut self, queue: &str) -> Result<Vec<ScheduleState>, DbError> {
        if self
            .version
            .is_none_or(|v| v < crate::schedule::SCHEDULES_VERSION)
        {
            return Ok(Vec::new());
        }
        let tx = read_only(&mut self.client).await?;
        let schedules = crate::schedule::read_all(&tx, &self.schema, queue).await?;
        tx.commit().await?;
        Ok(schedules)
    }

    /// The record of `queue`'s finished jobs that `query` asks for, oldest first (kept by
    /// stores opened with [`Options::retention`](crate::Options::retention); none in a schema
    /// of a version before the record existed).
    pub async fn history(
        &mut self,
        queue: &str,
        query: &leaseq_async::HistoryQuery,
    ) -> Result<Vec<leaseq_async::Finished>, DbError> {
        if self
            .version
            .is_none_or(|v| v < crate::history_sql::HISTORY_VERSION)
        {
            return Ok(Vec::new());
        }
        let tx = read_only(&mut self.client).await?;
        let entries = crate::history::read(&tx, &self.sql.history, queue, query).await?;
        tx.commit().await?;
        Ok(entries)
    }

    /// Whether leaseq's tables are in the schema (none: every read is empty).
    pub fn schema_exists(&self) -> bool {
        self.exists
    }

    /// Every queue of the schema that has rows, by name, with its rows counted by state. A
    /// queue is its rows: one that never had any, or whose rows all went, is not listed.
    pub async fn queues(&mut self) -> Result<Vec<StoredCounts>, DbError> {
        if !self.exists {
            return Ok(Vec::new());
        }
        let tx = read_only(&mut self.client).await?;
        let rows = tx.query(&self.sql.op.queues, &[]).await?;
        tx.commit().await?;
        let n = |r: &Row, i: usize| r.get::<_, i64>(i).max(0) as u64;
        Ok(rows
            .iter()
            .map(|r| {
                StoredCounts::new(r.get::<_, String>(0), n(r, 1), n(r, 2), n(r, 3), n(r, 4))
                    .with_paused(r.get(5))
            })
            .collect())
    }

    /// How long the oldest ready item of each of `queues` has waited since it became ready
    /// (its `visible_at`), for the queues that have one ready. One probe of the claim index
    /// per queue and priority level (eight a queue), in one statement: no scan of a queue's
    /// rows, however many it holds.
    pub async fn oldest_ready_ages(
        &mut self,
        queues: &[String],
    ) -> Result<Vec<(String, Duration)>, DbError> {
        if !self.exists || queues.is_empty() {
            return Ok(Vec::new());
        }
        let s = format!("\"{}\"", self.schema);
        let sql = format!(
            "SELECT q.name, (extract(epoch FROM clock_timestamp() - min(x.visible_at))
                             * 1000000)::bigint
             FROM unnest($1::text[]) AS q(name)
             CROSS JOIN generate_series(0, {max}) AS p(level)
             CROSS JOIN LATERAL (SELECT visible_at FROM {s}.items
                                 WHERE queue = q.name AND state = 0
                                   AND priority = p.level::smallint
                                 ORDER BY visible_at LIMIT 1) x
             WHERE x.visible_at <= clock_timestamp()
             GROUP BY q.name",
            max = leaseq_core::MAX_PRIORITY
        );
        let tx = read_only(&mut self.client).await?;
        let rows = tx.query(&sql, &[&queues]).await?;
        tx.commit().await?;
        Ok(rows
            .iter()
            .map(|r| {
                let us = r.get::<_, i64>(1).max(0) as u64;
                (r.get::<_, String>(0), Duration::from_micros(us))
            })
            .collect())
    }

    /// Whether `queue` is known to the schema: it has rows (live or dead), a process opened
    /// it (its limits recorded in `queue_settings`, schema step 6 on), or it keeps a
    /// schedule. A name none of these holds is most likely mistyped: operator tools refuse
    /// it rather than show a queue with nothing in it.
    pub async fn has_queue(&mut self, queue: &str) -> Result<bool, DbError> {
        let Some(version) = self.version else {
            return Ok(false);
        };
        let s = format!("\"{}\"", self.schema);
        let mut sql = format!("SELECT EXISTS (SELECT 1 FROM {s}.items WHERE queue = $1)");
        if version >= QUEUE_SETTINGS_VERSION {
            sql.push_str(&format!(
                " OR EXISTS (SELECT 1 FROM {s}.queue_settings WHERE queue = $1)"
            ));
        }
        if version >= crate::schedule::SCHEDULES_VERSION {
            sql.push_str(&format!(
                " OR EXISTS (SELECT 1 FROM {s}.schedules WHERE queue = $1)"
            ));
        }
        let tx = read_only(&mut self.client).await?;
        let known: bool = tx.query_one(&sql, &[&queue]).await?.get(0);
        tx.commit().await?;
        Ok(known)
    }

    /// `queue`'s rows counted by state (all zero for a queue with none).
    pub async fn counts(&mut self, queue: &str) -> Result<StoredCounts, DbError> {
        if !self.exists {
            return Ok(StoredCounts::new(queue, 0, 0, 0, 0));
        }
        let tx = read_only(&mut self.client).await?;
        let r = tx.query_one(&self.sql.counts, &[&queue]).await?;
        tx.commit().await?;
        let n = |i: usize| r.get::<_, i64>(i).max(0) as u64;
        Ok(StoredCounts::new(queue, n(0), n(1), n(2), n(3)).with_paused(r.get(4)))
    }

    /// `queue`'s live rows (ready, delayed, in flight) of `page`, in id order.
    pub async fn items(&mut self, queue: &str, page: Page) -> Result<Vec<StoredItem>, DbError> {
        let rows = self.page(Statement::Items, queue, page).await?;
        let now = SystemTime::now();
        Ok(rows
            .iter()
            .map(|r| {
                let visible_in = r.get::<_, Option<i64>>(5).unwrap_or(0);
                let state = match r.get::<_, i16>(1) {
                    1 => StoredState::InFlight,
                    _ if visible_in > 0 => StoredState::Delayed,
                    _ => StoredState::Ready,
                };
                let mut item = stored(r, state, 8);
                item.attempts = u32::try_from(r.get::<_, i32>(2)).unwrap_or(0);
                item.priority = u8::try_from(r.get::<_, i16>(3)).unwrap_or(0);
                item.key = r.get(4);
                item.visible_at = (state == StoredState::Delayed).then(|| at(now, visible_in));
                item.deadline = r
                    .get::<_, Option<i64>>(6)
                    .filter(|_| state == StoredState::InFlight)
                    .map(|us| at(now, us));
                item.expires_at = r.get::<_, Option<i64>>(7).map(|us| at(now, us));
                item
            })
            .collect())
    }

    /// `queue`'s dead letters of `page`, in id order.
    pub async fn dead_letters(
        &mut self,
        queue: &str,
        page: Page,
    ) -> Result<Vec<StoredItem>, DbError> {
        self.dead_letters_matching::<()>(queue, page, &DeadFilter::all())
            .await
    }

    /// `queue`'s dead letters that `filter` takes (its reason, and its job kind read from
    /// the stored bytes, in SQL), of `page`, in id order: what a bulk call with it would
    /// take.
    pub async fn dead_letters_matching<T>(
        &mut self,
        queue: &str,
        page: Page,
        filter: &DeadFilter<T>,
    ) -> Result<Vec<StoredItem>, DbError> {
        let Some((reason, head)) = crate::operator::filter_params(filter) else {
            return Ok(Vec::new());
        };
        let rows = self
            .page(Statement::Dead(reason, head), queue, page)
            .await?;
        let now = SystemTime::now();
        Ok(rows
            .iter()
            .map(|r| {
                let mut item = stored(r, StoredState::Dead, 8);
                item.attempts = u32::try_from(r.get::<_, i32>(1)).unwrap_or(0);
                item.reason = r
                    .get::<_, Option<i16>>(2)
                    .and_then(|c| u8::try_from(c).ok())
                    .and_then(Reason::from_code);
                item.last_error = r.get(3);
                item.priority = u8::try_from(r.get::<_, i16>(4)).unwrap_or(0);
                item.key = r.get(5);
                item.dead_at = r.get::<_, Option<i64>>(6).map(|us| at(now, us));
                item.expires_at = r.get::<_, Option<i64>>(7).map(|us| at(now, us));
                item
            })
            .collect())
    }

    /// One page of `sql` (queue, ids above, at most) in a read-only transaction.
    async fn page(
        &mut self,
        which: Statement,
        queue: &str,
        page: Page,
    ) -> Result<Vec<Row>, DbError> {
        if !self.exists {
            return Ok(Vec::new());
        }
        let after = page.after.map_or(i64::MIN, |id| id.get() as i64);
        let limit = i64::try_from(page.limit).unwrap_or(i64::MAX);
        let tx = self
            .client
            .build_transaction()
            .read_only(true)
            .start()
            .await?;
        let rows = match &which {
            Statement::Items => {
                tx.query(&self.sql.op.peek_items, &[&queue, &after, &limit])
                    .await?
            }
            Statement::Dead(reason, head) => {
                let sql = &self.sql.op.dead_page;
                tx.query(sql, &[&queue, &after, &limit, reason, head])
                    .await?
            }
        };
        tx.commit().await?;
        Ok(rows)
    }
}

/// The paged statements (dead letters: with a reason code and an envelope head).
enum Statement {
    Items,
    Dead(Option<i16>, Option<Vec<u8>>),
}

/// `BEGIN READ ONLY`.
async fn read_only(client: &mut Client) -> Result<tokio_postgres::Transaction<'_>, DbError> {
    Ok(client.build_transaction().read_only(true).start().await?)
}

/// A row's id, payload (column `payload`, its size after it) as a `StoredItem` in `state`.
fn stored(r: &Row, state: StoredState, payload: usize) -> StoredItem {
    let size = r.get::<_, Option<i64>>(payload + 1).unwrap_or(0).max(0) as u64;
    let mut item = StoredItem::new(MessageId::new(r.get::<_, i64>(0) as u64), state, size);
    item.payload = r.get(payload);
    item
}

/// `now` moved by `us` microseconds (a time the database gave as "from now").
fn at(now: SystemTime, us: i64) -> SystemTime {
    let d = Duration::from_micros(us.unsigned_abs());
    if us >= 0 {
        now + d
    } else {
        now.checked_sub(d).unwrap_or(SystemTime::UNIX_EPOCH)
    }
}
