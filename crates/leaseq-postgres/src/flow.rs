//! Flow control's settings on a [`PgStore`] (issue 32): concurrency limits and rates kept
//! in `flow_limits` and `flow_rates`, shared by every process of the queue; the first one
//! set gives the queue its row in `flow_queues`, which moves every process's claims to the
//! flow claim (`flow_claim.rs`), and the last one removed takes it away again unless a
//! grouped push ever came. Each change commits with a `NOTIFY` of the schema's channel, so
//! every process's claimer looks again at once. A rate's GCRA state is changed under the
//! queue's advisory lock (the flow claims' own), carried over to the new rate as the core
//! does (`leaseq_core::Rate`). A change deletes a queue limit's slots first
//! (`flow_slots_sql.rs`). The statements are in `flow_sql.rs`'s neighbour here: short,
//! not on any hot path.

use std::num::NonZeroU32;
use std::time::Duration;

use leaseq_async::{FlowControl, FlowSettings, FlowWaiting, StoreError};
use leaseq_core::{FlowKey, GroupDeadLetter, LimitScope, Rate};

use crate::operator::store_error;
use crate::store::PgStore;

/// Now in Unix nanoseconds (microsecond resolution), as the flow claim reads it.
const NOW_NS: &str = "((EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::bigint * 1000)";

/// What flow control holds back now (`$1` queue, `$2` the last state a group's head may
/// be in: 2 when a dead letter blocks its group). The ready items are the ungrouped rows
/// visible now and the groups' heads that may go (visible, none of the group in flight);
/// each held by a full limit or a rate of its scope counts there; `on_groups`: the grouped
/// waiting rows but those heads.
const WAITING: &str = "
    WITH now_ts AS MATERIALIZED (SELECT clock_timestamp() AS t, {now_ns} AS ns),
    run AS MATERIALIZED (SELECT it.fkind, it.fpart FROM {s}.items it
                         WHERE it.queue = $1 AND it.state = 1),
    heads AS MATERIALIZED (
        SELECT h.fkind, h.fpart FROM {s}.flow_groups g
        CROSS JOIN LATERAL (
            SELECT it.state, it.fkind, it.fpart,
                   CASE WHEN it.visible_at >= {hold} THEN it.fdue ELSE it.visible_at END AS due
            FROM {s}.items it WHERE it.queue = $1 AND it.fgroup = g.grp AND it.state <= $2
            ORDER BY it.fseq LIMIT 1) h
        WHERE g.queue = $1 AND h.state = 0 AND h.due <= (SELECT t FROM now_ts)
          AND NOT EXISTS (SELECT 1 FROM {s}.items b
                          WHERE b.queue = $1 AND b.fgroup = g.grp AND b.state = 1)),
    ready AS MATERIALIZED (
        SELECT it.fkind, it.fpart FROM {s}.items it
        WHERE it.queue = $1 AND it.state = 0 AND it.fgroup IS NULL
          AND it.visible_at <= (SELECT t FROM now_ts)
          AND (it.expires_at IS NULL OR it.expires_at > (SELECT t FROM now_ts))
        UNION ALL SELECT fkind, fpart FROM heads),
    full_limits AS MATERIALIZED (
        SELECT l.scope, l.key FROM {s}.flow_limits l
        WHERE l.queue = $1 AND l.max_running <= (
            SELECT count(*) FROM run r WHERE l.scope = 0
                OR (l.scope = 1 AND r.fkind = l.key) OR (l.scope = 2 AND r.fpart = l.key))),
    rated AS MATERIALIZED (
        SELECT r.scope, r.key FROM {s}.flow_rates r
        WHERE r.queue = $1 AND r.tat_ns - r.tolerance_ns > (SELECT ns FROM now_ts))
    SELECT
        (SELECT count(*) FROM ready x WHERE EXISTS (SELECT 1 FROM full_limits f
            WHERE f.scope = 0 OR (f.scope = 1 AND f.key = x.fkind)
               OR (f.scope = 2 AND f.key = x.fpart))),
        (SELECT count(*) FROM ready x WHERE EXISTS (SELECT 1 FROM rated f
            WHERE f.scope = 0 OR (f.scope = 1 AND f.key = x.fkind)
               OR (f.scope = 2 AND f.key = x.fpart))),
        (SELECT count(*) FROM {s}.items it
         WHERE it.queue = $1 AND it.state = 0 AND it.fgroup IS NOT NULL)
        - (SELECT count(*) FROM heads)";

/// A scope as its columns: 0 the queue (key 0), 1 a kind, 2 a partition.
fn columns(scope: LimitScope) -> Result<(i16, i64), StoreError> {
    match scope {
        LimitScope::Queue => Ok((0, 0)),
        LimitScope::Kind(k) => Ok((1, k.get() as i64)),
        LimitScope::Partition(p) => Ok((2, p.get() as i64)),
        #[allow(unreachable_patterns)]
        _ => Err(StoreError::not_done(
            "flow control: a limit scope this version of leaseq-postgres does not know",
        )),
    }
}

/// The scope of a row's columns.
fn scope_of(scope: i16, key: i64) -> Option<LimitScope> {
    match scope {
        0 => Some(LimitScope::Queue),
        1 => Some(LimitScope::Kind(FlowKey::new(key as u64))),
        2 => Some(LimitScope::Partition(FlowKey::new(key as u64))),
        _ => None,
    }
}

/// The limits and rates set on a queue now: `(scope, max)` and `(scope, rate)`.
pub(crate) type Settings = (Vec<(LimitScope, u32)>, Vec<(LimitScope, Rate)>);

impl<T: Clone + Send + Sync + 'static> PgStore<T> {
    /// Sets (`Some`) or removes (`None`) the concurrency limit of `scope`.
    pub(crate) async fn set_limit_in_db(
        &self,
        scope: LimitScope,
        max: Option<u32>,
    ) -> Result<(), StoreError> {
        let (sc, key) = columns(scope)?;
        let s = self.schema_quoted();
        let change = match max {
            Some(max) => format!(
                "INSERT INTO {s}.flow_limits (queue, scope, key, max_running)
                 VALUES ($1, $2, $3, {max})
                 ON CONFLICT (queue, scope, key) DO UPDATE SET max_running = EXCLUDED.max_running"
            ),
            None => {
                format!("DELETE FROM {s}.flow_limits WHERE queue = $1 AND scope = $2 AND key = $3")
            }
        };
        self.change_flow("set_limit", &change, sc, key, max.is_some())
            .await
    }

    /// Sets (`Some`) or removes (`None`) the rate limit of `scope`: the leases the old rate
    /// counted as taken carry over at the new interval.
    pub(crate) async fn set_rate_in_db(
        &self,
        scope: LimitScope,
        rate: Option<Rate>,
    ) -> Result<(), StoreError> {
        let (sc, key) = columns(scope)?;
        let s = self.schema_quoted();
        let change = match rate {
            Some(rate) => {
                let interval = u64::try_from(rate.interval().as_nanos()).unwrap_or(u64::MAX);
                let interval = interval.min(i64::MAX as u64) as i64;
                let burst = i64::from(rate.burst_size());
                let tolerance = interval.saturating_mul(burst - 1);
                let period = i64::try_from(rate.period().as_nanos()).unwrap_or(i64::MAX);
                let max = i64::from(rate.max().get());
                format!(
                    "INSERT INTO {s}.flow_rates AS f (queue, scope, key, max, period_ns, burst,
                         interval_ns, tolerance_ns, tat_ns)
                     VALUES ($1, $2, $3, {max}, {period}, {burst}, {interval}, {tolerance}, 0)
                     ON CONFLICT (queue, scope, key) DO UPDATE SET max = EXCLUDED.max,
                         period_ns = EXCLUDED.period_ns, burst = EXCLUDED.burst,
                         interval_ns = EXCLUDED.interval_ns, tolerance_ns = EXCLUDED.tolerance_ns,
                         tat_ns = {NOW_NS} + CASE WHEN f.interval_ns = 0 THEN 0 ELSE
                             (GREATEST(f.tat_ns - {NOW_NS}, 0)::numeric * EXCLUDED.interval_ns
                              / f.interval_ns)::bigint END"
                )
            }
            None => {
                format!("DELETE FROM {s}.flow_rates WHERE queue = $1 AND scope = $2 AND key = $3")
            }
        };
        self.change_flow("set_rate", &change, sc, key, rate.is_some())
            .await
    }

    /// One change of the queue's settings in a transaction under the queue's advisory
    /// lock: `change` (`$1` queue, `$2` scope, `$3` key), then the queue's flag set (`on`)
    /// or removed if nothing is left, and the channel notified at commit. This process's
    /// claimer follows at once.
    async fn change_flow(
        &self,
        what: &str,
        change: &str,
        scope: i16,
        key: i64,
        on: bool,
    ) -> Result<(), StoreError> {
        let db = &*self.db;
        let s = self.schema_quoted();
        let mut client = db.client().await.map_err(|e| {
            StoreError::not_done(format!("{what}: {}", leaseq_async::ErrorChain(&e)))
        })?;
        let lock_key = format!("leaseq.flow.{}", db.options.schema);
        let flag = if on {
            format!(
                "INSERT INTO {s}.flow_queues (queue) VALUES ($1) ON CONFLICT (queue) DO NOTHING"
            )
        } else {
            format!(
                "DELETE FROM {s}.flow_queues f WHERE f.queue = $1 AND NOT f.grouped
                   AND NOT EXISTS (SELECT 1 FROM {s}.flow_limits l WHERE l.queue = $1)
                   AND NOT EXISTS (SELECT 1 FROM {s}.flow_rates r WHERE r.queue = $1)"
            )
        };
        let flowed = async {
            let tx = client.transaction().await?;
            tx.execute(
                "SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))",
                &[&lock_key, &db.queue],
            )
            .await?;
            // A queue limit's slots (`flow_slots_sql.rs`) go first, once the slot claims
            // under way have committed; the next flow claim makes them again if the new
            // settings allow.
            let dropped = tx
                .execute(
                    &crate::flow_slots_sql::DROP_SLOTS.replace("{s}", &s),
                    &[&db.queue],
                )
                .await?;
            tx.execute(change, &[&db.queue, &scope, &key]).await?;
            if on || dropped > 0 {
                // The leases in flight now count against the limits from the start (read
                // in a statement after the slots' delete: it sees their claims).
                tx.execute(
                    &format!(
                        "INSERT INTO {s}.flow_running (queue, id, lease, fkind, fpart)
                         SELECT queue, id, lease, fkind, fpart FROM {s}.items
                         WHERE queue = $1 AND state = 1
                         ON CONFLICT (queue, id) DO UPDATE SET lease = EXCLUDED.lease"
                    ),
                    &[&db.queue],
                )
                .await?;
            }
            tx.execute(&flag, &[&db.queue]).await?;
            let flowed: bool = tx
                .query_one(
                    &format!("SELECT {}", crate::flow_sql::FLOWED.replace("{s}", &s)),
                    &[&db.queue],
                )
                .await?
                .get(0);
            tx.execute("SELECT pg_notify($1, $2)", &[&db.sql.channel, &db.queue])
                .await?;
            tx.commit().await?;
            Ok::<bool, tokio_postgres::Error>(flowed)
        }
        .await
        .map_err(|e| store_error(what, &e, true))?;
        db.set_flowed(flowed);
        self.board.wake.notify(usize::MAX);
        Ok(())
    }

    /// The limits and rates set on the queue now.
    pub(crate) async fn flow_settings_in_db(&self) -> Result<Settings, StoreError> {
        let db = &*self.db;
        let s = self.schema_quoted();
        let what = "flow_settings";
        let client = db.client().await.map_err(|e| {
            StoreError::not_done(format!("{what}: {}", leaseq_async::ErrorChain(&e)))
        })?;
        let read = async {
            let limits = client
                .query(
                    &format!(
                        "SELECT scope, key, max_running FROM {s}.flow_limits
                         WHERE queue = $1 ORDER BY scope, key"
                    ),
                    &[&db.queue],
                )
                .await?;
            let rates = client
                .query(
                    &format!(
                        "SELECT scope, key, max, period_ns, burst FROM {s}.flow_rates
                         WHERE queue = $1 ORDER BY scope, key"
                    ),
                    &[&db.queue],
                )
                .await?;
            Ok::<_, tokio_postgres::Error>((limits, rates))
        }
        .await
        .map_err(|e| store_error(what, &e, false))?;
        let limits = read
            .0
            .iter()
            .filter_map(|r| Some((scope_of(r.get(0), r.get(1))?, r.get::<_, i32>(2) as u32)))
            .collect();
        let rates = read
            .1
            .iter()
            .filter_map(|r| {
                let scope = scope_of(r.get(0), r.get(1))?;
                let max = NonZeroU32::new(u32::try_from(r.get::<_, i64>(2)).ok()?)?;
                let period = Duration::from_nanos(r.get::<_, i64>(3).max(0) as u64);
                let burst = NonZeroU32::new(u32::try_from(r.get::<_, i64>(4)).ok()?)?;
                Some((scope, Rate::per(max, period).burst(burst)))
            })
            .collect();
        Ok((limits, rates))
    }

    /// Ready items held back now: `(on_limits, on_rates, on_groups)` (see `WAITING`).
    pub(crate) async fn flow_waiting_in_db(&self) -> Result<[u64; 3], StoreError> {
        let db = &*self.db;
        let block_dead = db.config.group_dead_letter_choice() == GroupDeadLetter::Block;
        let what = "flow_waiting";
        let client = db.client().await.map_err(|e| {
            StoreError::not_done(format!("{what}: {}", leaseq_async::ErrorChain(&e)))
        })?;
        let sql = WAITING
            .replace("{hold}", crate::flow_sql::HOLD)
            .replace("{now_ns}", NOW_NS)
            .replace("{s}", &self.schema_quoted());
        let last: i16 = if block_dead { 2 } else { 1 };
        let row = client
            .query_one(&sql, &[&db.queue, &last])
            .await
            .map_err(|e| store_error(what, &e, false))?;
        Ok([0, 1, 2].map(|i| row.get::<_, i64>(i).max(0) as u64))
    }

    /// The store's schema, quoted.
    fn schema_quoted(&self) -> String {
        format!("\"{}\"", self.db.options.schema)
    }
}

/// The settings in tables every process of the queue reads; each change commits with a
/// notification that wakes every process's claimer.
impl<T: Clone + Send + Sync + 'static> FlowControl for PgStore<T> {
    async fn set_limit(&self, scope: LimitScope, max: Option<u32>) -> Result<(), StoreError> {
        self.set_limit_in_db(scope, max).await
    }

    async fn set_rate(&self, scope: LimitScope, rate: Option<Rate>) -> Result<(), StoreError> {
        self.set_rate_in_db(scope, rate).await
    }

    async fn flow_settings(&self) -> Result<FlowSettings, StoreError> {
        let (limits, rates) = self.flow_settings_in_db().await?;
        Ok(FlowSettings::new(limits, rates))
    }

    async fn flow_waiting(&self) -> Result<FlowWaiting, StoreError> {
        let [limits, rates, groups] = self.flow_waiting_in_db().await?;
        Ok(FlowWaiting::new(limits, rates, groups))
    }
}
