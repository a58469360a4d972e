//! Flow control kept in the queue file (format 7): each item's flow keys and uncounted
//! snoozes in its row (`flow_kind`, `flow_partition`, `flow_group`: a `FlowKey`'s 64 bits;
//! `snoozes`), restored with it at open; the queue's concurrency limits and rates in the
//! `flow` table, restored at open; [`FlowControl`] for [`SqliteStore`]: a limit or a rate
//! is set on the memory store at once and its row journaled, in the order they were made
//! (with pause flags and schedule steps), the call answering once it is committed. The
//! file has one owner at a time, so "every process of the queue" is the one that owns it.

use std::future::Future;
use std::num::NonZeroU32;
use std::path::Path;
use std::time::Duration;

use leaseq_async::{Codec, FlowControl, FlowSettings, FlowWaiting, Runtime, StoreError};
use leaseq_core::{FlowKey, FlowKeys, LimitScope, Rate};
use rusqlite::{params, Connection};

use crate::op::Op;
use crate::open_error::OpenError;
use crate::store::SqliteStore;

/// The first format with flow control's columns and table.
pub(crate) const FLOW_VERSION: i32 = 7;

/// Format 6 to 7, the whole step (also run by a new file's schema, after `items`): the
/// items' flow keys, snoozes and key windows (`windows.rs`), the keys held after their
/// items left (`gone_keys`), and the limits' and rates' table (`rule` 0 a concurrency
/// limit, 1 a rate; `scope` 0 the queue, 1 a kind, 2 a partition; `key` the scope's
/// `FlowKey`, 0 for the queue; a rate's `period_ns` and `burst`).
pub(crate) const FLOW_SCHEMA: &str = "ALTER TABLE items ADD COLUMN flow_kind INTEGER;
         ALTER TABLE items ADD COLUMN flow_partition INTEGER;
         ALTER TABLE items ADD COLUMN flow_group INTEGER;
         ALTER TABLE items ADD COLUMN snoozes INTEGER NOT NULL DEFAULT 0;
         ALTER TABLE items ADD COLUMN window_kind INTEGER;
         ALTER TABLE items ADD COLUMN window_ns INTEGER;
         ALTER TABLE items ADD COLUMN pushed_at INTEGER;
         CREATE TABLE IF NOT EXISTS gone_keys (
             key BLOB PRIMARY KEY,
             id INTEGER NOT NULL,
             until INTEGER NOT NULL
         ) WITHOUT ROWID;
         CREATE TABLE IF NOT EXISTS flow (
             rule INTEGER NOT NULL,
             scope INTEGER NOT NULL,
             key INTEGER NOT NULL,
             max INTEGER NOT NULL,
             period_ns INTEGER,
             burst INTEGER,
             PRIMARY KEY (rule, scope, key)
         ) WITHOUT ROWID;";

/// What the restore reads of a row for flow control, after `row_columns`: the file's
/// columns from format 7, nothing before.
pub(crate) fn row_columns(version: i32) -> &'static str {
    if version >= FLOW_VERSION {
        "flow_kind, flow_partition, flow_group, snoozes, window_kind, window_ns, pushed_at"
    } else {
        "NULL, NULL, NULL, 0, NULL, NULL, NULL"
    }
}

/// Format 6 to 7, in one transaction with the version change.
pub(crate) fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(&format!(
        "BEGIN;
         {FLOW_SCHEMA}
         PRAGMA user_version = {FLOW_VERSION};
         COMMIT;"
    ))
}

/// An item's flow keys as its row's three columns.
pub(crate) fn columns(flow: Option<FlowKeys>) -> [Option<i64>; 3] {
    let bits = |k: Option<FlowKey>| k.map(|k| k.get() as i64);
    match flow {
        None => [None; 3],
        Some(f) => [
            bits(f.kind_key()),
            bits(f.partition_key()),
            bits(f.group_key()),
        ],
    }
}

/// An item's flow keys from its row's three columns (empty: none).
pub(crate) fn keys_of([kind, partition, group]: [Option<i64>; 3]) -> FlowKeys {
    let mut keys = FlowKeys::new();
    if let Some(k) = kind {
        keys = keys.kind(FlowKey::new(k as u64));
    }
    if let Some(p) = partition {
        keys = keys.partition(FlowKey::new(p as u64));
    }
    if let Some(g) = group {
        keys = keys.group(FlowKey::new(g as u64));
    }
    keys
}

/// A scope as its row's `scope` and `key`; `None` for a scope this version does not know.
fn scope_row(scope: LimitScope) -> Option<(i64, i64)> {
    match scope {
        LimitScope::Queue => Some((0, 0)),
        LimitScope::Kind(k) => Some((1, k.get() as i64)),
        LimitScope::Partition(p) => Some((2, p.get() as i64)),
        _ => None,
    }
}

/// A row's `scope` and `key` as a scope.
fn scope_of(scope: i64, key: i64) -> Option<LimitScope> {
    match scope {
        0 => Some(LimitScope::Queue),
        1 => Some(LimitScope::Kind(FlowKey::new(key as u64))),
        2 => Some(LimitScope::Partition(FlowKey::new(key as u64))),
        _ => None,
    }
}

/// Writes (or removes) a concurrency limit's row.
pub(crate) fn write_limit(
    tx: &rusqlite::Transaction<'_>,
    scope: LimitScope,
    max: Option<u32>,
) -> rusqlite::Result<()> {
    let Some((scope, key)) = scope_row(scope) else {
        return Ok(());
    };
    match max {
        Some(max) => tx
            .prepare_cached(
                "INSERT OR REPLACE INTO flow (rule, scope, key, max) VALUES (0, ?1, ?2, ?3)",
            )?
            .execute(params![scope, key, max])?,
        None => tx
            .prepare_cached("DELETE FROM flow WHERE rule = 0 AND scope = ?1 AND key = ?2")?
            .execute(params![scope, key])?,
    };
    Ok(())
}

/// Writes (or removes) a rate limit's row.
pub(crate) fn write_rate(
    tx: &rusqlite::Transaction<'_>,
    scope: LimitScope,
    rate: Option<Rate>,
) -> rusqlite::Result<()> {
    let Some((scope, key)) = scope_row(scope) else {
        return Ok(());
    };
    match rate {
        Some(r) => tx
            .prepare_cached(
                "INSERT OR REPLACE INTO flow (rule, scope, key, max, period_ns, burst) \
                 VALUES (1, ?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![
                scope,
                key,
                r.max().get(),
                i64::try_from(r.period().as_nanos()).unwrap_or(i64::MAX),
                r.burst_size()
            ])?,
        None => tx
            .prepare_cached("DELETE FROM flow WHERE rule = 1 AND scope = ?1 AND key = ?2")?
            .execute(params![scope, key])?,
    };
    Ok(())
}

/// The limits and rates the file holds (none before format 7); a row this version cannot
/// read refuses the file.
pub(crate) fn read_settings(
    path: &Path,
    conn: &Connection,
    version: i32,
) -> Result<FlowSettings, OpenError> {
    if version < FLOW_VERSION {
        return Ok(FlowSettings::default());
    }
    let bad = |why: String| OpenError::BadRow {
        path: path.to_path_buf(),
        row: "flow".into(),
        why,
    };
    let mut st = conn
        .prepare(
            "SELECT rule, scope, key, max, period_ns, burst FROM flow ORDER BY rule, scope, key",
        )
        .map_err(|e| OpenError::from_sqlite(path, e))?;
    let rows = st
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, Option<i64>>(4)?,
                r.get::<_, Option<i64>>(5)?,
            ))
        })
        .map_err(|e| bad(e.to_string()))?;
    let (mut limits, mut rates) = (Vec::new(), Vec::new());
    for row in rows {
        let (rule, scope, key, max, period, burst) = row.map_err(|e| bad(e.to_string()))?;
        let scope = scope_of(scope, key).ok_or_else(|| bad(format!("scope {scope}")))?;
        let max = u32::try_from(max).map_err(|_| bad(format!("max {max}")))?;
        match (rule, period, burst) {
            (0, _, _) => limits.push((scope, max)),
            (1, Some(period), Some(burst)) => {
                let nz = |n: i64| u32::try_from(n).ok().and_then(NonZeroU32::new);
                let (Some(max), Some(burst), Ok(period)) =
                    (nz(max.into()), nz(burst), u64::try_from(period))
                else {
                    return Err(bad(format!("rate {max} per {period} ns, burst {burst}")));
                };
                rates.push((
                    scope,
                    Rate::per(max, Duration::from_nanos(period)).burst(burst),
                ));
            }
            _ => return Err(bad(format!("rule {rule}"))),
        }
    }
    Ok(FlowSettings::new(limits, rates))
}

/// The scope this version cannot write: refused, nothing changed.
fn unknown_scope() -> StoreError {
    StoreError::not_done("a limit scope this version of leaseq-sqlite cannot store")
}

impl<T: Clone + Send + 'static, R: Runtime, C: Codec<T>> SqliteStore<T, R, C> {
    /// A limit or rate of `scope` made on the memory store by `set` and its row journaled
    /// (`op`), in the order made (with pause flags and schedule steps); answered once
    /// committed. A scope this version cannot write is refused, nothing changed.
    async fn set_durably(
        &self,
        scope: LimitScope,
        set: impl FnOnce(&leaseq_async::MemoryStore<T, R>),
        op: Op,
    ) -> Result<(), StoreError> {
        let seq = scope_row(scope).map(|_| {
            let _order = self.schedule_lock.lock();
            set(&self.inner);
            self.journal.submit([op])
        });
        let seq = seq.ok_or_else(unknown_scope)?;
        self.journal.committed(seq).await
    }
}

impl<T: Clone + Send + 'static, R: Runtime, C: Codec<T>> FlowControl for SqliteStore<T, R, C> {
    fn set_limit(
        &self,
        scope: LimitScope,
        max: Option<u32>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        self.set_durably(
            scope,
            move |m| m.set_limit(scope, max),
            Op::Limit(scope, max),
        )
    }

    fn set_rate(
        &self,
        scope: LimitScope,
        rate: Option<Rate>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        self.set_durably(
            scope,
            move |m| m.set_rate(scope, rate),
            Op::Rate(scope, rate),
        )
    }

    fn flow_settings(&self) -> impl Future<Output = Result<FlowSettings, StoreError>> + Send {
        FlowControl::flow_settings(&*self.inner)
    }

    fn flow_waiting(&self) -> impl Future<Output = Result<FlowWaiting, StoreError>> + Send {
        FlowControl::flow_waiting(&*self.inner)
    }
}
