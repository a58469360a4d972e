//! One group commit in SQL: every op queued since the last commit, in one transaction. A
//! failed transaction changes nothing, on disk or here, so the writer can retry the same
//! ops (plus those queued since) as one batch.

use std::collections::HashMap;

use rusqlite::{params, Connection};

use crate::op::Op;

/// Ops on items whose insert has not arrived yet (a receiver's journal entry can overtake
/// its pusher's): applied right after the insert.
pub(crate) type Early = HashMap<u64, Vec<Op>>;

/// Commits `ops` in one transaction. On failure nothing changed: the transaction rolled
/// back and `early` is as it was.
pub(crate) fn commit(conn: &mut Connection, ops: &[Op], early: &mut Early) -> rusqlite::Result<()> {
    // Usually empty: then saving it costs nothing.
    let saved = (!early.is_empty()).then(|| early.clone());
    let r = transaction(conn, ops, early);
    if r.is_err() {
        *early = saved.unwrap_or_default();
    }
    r
}

fn transaction(conn: &mut Connection, ops: &[Op], early: &mut Early) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    // The ids' high-water mark: ids are never reused, even after the newest item was acked.
    let top = ops
        .iter()
        .filter_map(|op| match op {
            Op::Insert { id, .. } => Some(*id),
            _ => None,
        })
        .max();
    if let Some(top) = top {
        tx.prepare_cached(
            "UPDATE meta SET value = max(CAST(value AS INTEGER), ?1) WHERE key = 'next_id'",
        )?
        .execute(params![(top + 1) as i64])?;
    }
    for op in ops {
        apply(&tx, op, early)?;
    }
    tx.commit()
}

fn apply(tx: &rusqlite::Transaction<'_>, op: &Op, early: &mut Early) -> rusqlite::Result<()> {
    let changed = match op {
        Op::Insert {
            id,
            payload,
            visible_at,
            expires_at,
            priority,
            key,
            flow,
            window,
        } => {
            let mut st = tx.prepare_cached(
                "INSERT OR REPLACE INTO items (id, payload, attempts, visible_at, expires_at, \
                 priority, key, leased, dead, flow_kind, flow_partition, flow_group, \
                 window_kind, window_ns, pushed_at) \
                 VALUES (?1, ?2, 0, ?3, ?4, ?5, ?6, 0, 0, ?7, ?8, ?9, ?10, ?11, ?12)",
            )?;
            let [kind, partition, group] = crate::flow::columns(*flow);
            let (wkind, wns, pushed_at) = match window {
                Some(w) => (Some(w.kind), Some(w.ns), Some(w.pushed_at)),
                None => (None, None, None),
            };
            st.execute(params![
                *id as i64,
                payload,
                visible_at,
                expires_at,
                priority,
                key,
                kind,
                partition,
                group,
                wkind,
                wns,
                pushed_at
            ])?;
            if let Some(later) = early.remove(id) {
                for op in &later {
                    apply(tx, op, early)?;
                }
            }
            return Ok(());
        }
        Op::Taken { id, attempts } => tx
            .prepare_cached(
                "UPDATE items SET attempts = max(attempts, ?2), leased = 1 WHERE id = ?1 AND dead = 0",
            )?
            .execute(params![*id as i64, attempts])?,
        Op::PutBack { id, attempts } => tx
            .prepare_cached(
                "UPDATE items SET attempts = ?2, leased = 0 WHERE id = ?1 AND dead = 0",
            )?
            .execute(params![*id as i64, attempts])?,
        Op::Retry {
            id,
            attempts,
            visible_at,
            error,
        } => tx
            .prepare_cached(
                "UPDATE items SET attempts = max(attempts, ?2), leased = 0, visible_at = ?3, \
                 last_error = coalesce(?4, last_error) WHERE id = ?1 AND dead = 0",
            )?
            .execute(params![*id as i64, attempts, visible_at, error])?,
        Op::Dead {
            id,
            attempts,
            reason,
            error,
            at,
        } => tx
            .prepare_cached(
                "UPDATE items SET attempts = ?2, leased = 0, dead = 1, reason = ?3, \
                 last_error = coalesce(?4, last_error), dead_at = ?5 WHERE id = ?1",
            )?
            .execute(params![*id as i64, attempts, reason, error, at])?,
        Op::Delete { id } => tx
            .prepare_cached("DELETE FROM items WHERE id = ?1")?
            .execute(params![*id as i64])?,
        Op::Revive { id, visible_at } => tx
            .prepare_cached(
                "UPDATE items SET attempts = 0, leased = 0, dead = 0, reason = NULL, \
                 dead_at = NULL, visible_at = ?2, snoozes = 0 WHERE id = ?1",
            )?
            .execute(params![*id as i64, visible_at])?,
        Op::Snoozed {
            id,
            attempts,
            visible_at,
            snoozes,
        } => tx
            .prepare_cached(
                "UPDATE items SET attempts = ?2, leased = 0, visible_at = ?3, snoozes = ?4 \
                 WHERE id = ?1 AND dead = 0",
            )?
            .execute(params![*id as i64, attempts, visible_at, snoozes])?,
        Op::Progress { id, progress } => tx
            .prepare_cached("UPDATE items SET progress = ?2 WHERE id = ?1")?
            .execute(params![*id as i64, progress])?,
        Op::Schedule(state) => return crate::schedule::write(tx, state),
        Op::Paused(paused) => return crate::pause::write(tx, *paused),
        Op::KeyTaken { id, key } => return crate::windows::write_key_taken(tx, *id, key),
        Op::KeepWindow { id, at } => {
            usize::from(crate::windows::write_keep_window(tx, *id, *at)?)
        }
        Op::Limit(scope, max) => return crate::flow::write_limit(tx, *scope, *max),
        Op::Rate(scope, rate) => return crate::flow::write_rate(tx, *scope, *rate),
        Op::Finished { id, outcome, at } => crate::history::write(tx, *id, *outcome, *at)?,
        Op::Prune { before } => return crate::history::prune(tx, *before).map(drop),
        Op::Graph { node, row } => return crate::graph::write(tx, *node, row),
    };
    if changed == 0 {
        early.entry(op.id()).or_default().push(op.clone());
    }
    Ok(())
}
