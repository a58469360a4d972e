//! The dependency graph kept in the queue file (format 8, issue 33): the `graph` table, one
//! row per node (its record, [`leaseq_core::graph::NodeRecord`], in a small binary form,
//! and the payload the graph holds for it, encoded by the queue's codec), written by
//! [`Op::Graph`](crate::op::Op) in the same group commit as the change that caused it, and
//! read back at open into the memory store's graph (`MemoryStore::restore_graph`).
//!
//! Only the records are kept: the counters (parents waited for, batch counts) are derived
//! from the parents' states on restore, so nothing else must be kept in step. An ack
//! writes no row of its own (`graph_store.rs`): a job's row says queued, with its message,
//! until something else changes it, and the restore reads a queued job whose item the file
//! no longer holds as acked (dead-lettered if it is a dead letter).

use std::path::Path;

use leaseq_async::Codec;
use leaseq_core::graph::{
    BatchId, BatchOn, NodeId, NodeRecord, OnFailedParent, StepState, WorkflowId,
};
use leaseq_core::MessageId;
use rusqlite::{params, Connection};

use crate::open_error::OpenError;

/// The first format with the `graph` table. (One step: the lead renumbers it at merge.)
pub(crate) const GRAPH_VERSION: i32 = 8;

/// The table: a node's record and, while the graph holds it (waiting, or cancelled before
/// its release), its payload.
pub(crate) const GRAPH_TABLE: &str = "CREATE TABLE IF NOT EXISTS graph (
             node INTEGER PRIMARY KEY,
             record BLOB NOT NULL,
             payload BLOB
         );";

/// An earlier format to this one: the table, in one transaction with the version change.
pub(crate) fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(&format!(
        "BEGIN;
         {GRAPH_TABLE}
         PRAGMA user_version = {GRAPH_VERSION};
         COMMIT;"
    ))
}

/// Writes a node's row (`Some`: its record and payload) or removes it (`None`: forgotten).
pub(crate) fn write(
    tx: &rusqlite::Transaction<'_>,
    node: u64,
    row: &Option<(Vec<u8>, Option<Vec<u8>>)>,
) -> rusqlite::Result<()> {
    match row {
        Some((record, payload)) => tx
            .prepare_cached(
                "INSERT OR REPLACE INTO graph (node, record, payload) VALUES (?1, ?2, ?3)",
            )?
            .execute(params![node as i64, record, payload])?,
        None => tx
            .prepare_cached("DELETE FROM graph WHERE node = ?1")?
            .execute(params![node as i64])?,
    };
    Ok(())
}

/// Every row of a file of `version`, decoded (none before the table's format).
pub(crate) fn read_all<T, C: Codec<T>>(
    path: &Path,
    conn: &Connection,
    version: i32,
    codec: &C,
) -> Result<Vec<(NodeRecord, Option<T>)>, OpenError> {
    if version < GRAPH_VERSION {
        return Ok(Vec::new());
    }
    let sql = |e| OpenError::from_sqlite(path, e);
    let mut st = conn
        .prepare("SELECT node, record, payload FROM graph ORDER BY node")
        .map_err(sql)?;
    let mut rows = st.query([]).map_err(sql)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(sql)? {
        let node: i64 = row.get(0).map_err(sql)?;
        let bad = |why: String| OpenError::BadRow {
            path: path.to_path_buf(),
            row: format!("graph node {node}"),
            why,
        };
        let record: Vec<u8> = row.get(1).map_err(|e| bad(e.to_string()))?;
        let payload: Option<Vec<u8>> = row.get(2).map_err(|e| bad(e.to_string()))?;
        let record = decode(&record)
            .filter(|r| r.node.get() == node as u64)
            .ok_or_else(|| bad("a record this version does not read".into()))?;
        let payload = match payload {
            Some(p) => Some(codec.decode(&p).map_err(|e| bad(e.to_string()))?),
            None => None,
        };
        out.push((record, payload));
    }
    Ok(out)
}

/// A record in its binary form (little-endian numbers, options as a 0/1 byte first).
pub(crate) fn encode(r: &NodeRecord) -> Vec<u8> {
    let mut b = Vec::with_capacity(32 + 8 * r.parents.len());
    b.extend(r.node.get().to_le_bytes());
    b.extend((r.parents.len() as u32).to_le_bytes());
    for p in &r.parents {
        b.extend(p.get().to_le_bytes());
    }
    b.push(match r.policy {
        OnFailedParent::Cancel => 0,
        OnFailedParent::Run => 1,
        OnFailedParent::Hold => 2,
        _ => u8::MAX, // a newer policy: refused when read back
    });
    let (code, message) = match r.state {
        StepState::Pending => (0, 0),
        StepState::Held => (1, 0),
        StepState::Ready => (2, 0),
        StepState::Queued(m) => (3, m.get()),
        StepState::Acked(m) => (4, m.get()),
        StepState::DeadLettered(m) => (5, m.get()),
        StepState::Cancelled => (6, 0),
        _ => (u8::MAX, 0), // a newer state: refused when read back
    };
    b.push(code);
    b.extend(message.to_le_bytes());
    b.push(u8::from(r.cancelled_by_parent));
    option(&mut b, r.message.map(MessageId::get));
    match &r.workflow {
        Some((w, name)) => {
            b.push(1);
            b.extend(w.get().to_le_bytes());
            bytes(&mut b, name.as_bytes());
        }
        None => b.push(0),
    }
    option(&mut b, r.batch.map(BatchId::get));
    match r.callback_of {
        Some((batch, on)) => {
            b.push(1);
            b.extend(batch.get().to_le_bytes());
            b.push(u8::from(on == BatchOn::Complete));
        }
        None => b.push(0),
    }
    match &r.result {
        Some(result) => {
            b.push(1);
            bytes(&mut b, result);
        }
        None => b.push(0),
    }
    b
}

fn option(b: &mut Vec<u8>, v: Option<u64>) {
    match v {
        Some(v) => {
            b.push(1);
            b.extend(v.to_le_bytes());
        }
        None => b.push(0),
    }
}

fn bytes(b: &mut Vec<u8>, v: &[u8]) {
    b.extend((v.len() as u32).to_le_bytes());
    b.extend(v);
}

/// Reads what [`encode`] wrote (`None`: not a record of this version).
pub(crate) fn decode(b: &[u8]) -> Option<NodeRecord> {
    let mut r = Reader(b);
    let node = NodeId::new(r.u64()?);
    let parents = (0..r.u32()?)
        .map(|_| r.u64().map(NodeId::new))
        .collect::<Option<Vec<_>>>()?;
    let policy = match r.u8()? {
        0 => OnFailedParent::Cancel,
        1 => OnFailedParent::Run,
        2 => OnFailedParent::Hold,
        _ => return None,
    };
    let (code, m) = (r.u8()?, MessageId::new(r.u64()?));
    let state = match code {
        0 => StepState::Pending,
        1 => StepState::Held,
        2 => StepState::Ready,
        3 => StepState::Queued(m),
        4 => StepState::Acked(m),
        5 => StepState::DeadLettered(m),
        6 => StepState::Cancelled,
        _ => return None,
    };
    let mut record = NodeRecord::new(node, policy, state);
    record.parents = parents;
    record.cancelled_by_parent = r.u8()? == 1;
    record.message = r.option()?.map(MessageId::new);
    if r.u8()? == 1 {
        let w = WorkflowId::new(r.u64()?);
        let name = String::from_utf8(r.bytes()?.to_vec()).ok()?;
        record.workflow = Some((w, name));
    }
    record.batch = r.option()?.map(BatchId::new);
    if r.u8()? == 1 {
        let batch = BatchId::new(r.u64()?);
        let on = if r.u8()? == 1 {
            BatchOn::Complete
        } else {
            BatchOn::Success
        };
        record.callback_of = Some((batch, on));
    }
    if r.u8()? == 1 {
        record.result = Some(r.bytes()?.to_vec());
    }
    r.0.is_empty().then_some(record)
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4)?.try_into().ok().map(u32::from_le_bytes)
    }
    fn u64(&mut self) -> Option<u64> {
        self.take(8)?.try_into().ok().map(u64::from_le_bytes)
    }
    fn option(&mut self) -> Option<Option<u64>> {
        match self.u8()? {
            0 => Some(None),
            1 => self.u64().map(Some),
            _ => None,
        }
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_back_as_written_and_damaged_ones_are_refused() {
        let mut full = NodeRecord::new(
            NodeId::new(7),
            OnFailedParent::Hold,
            StepState::DeadLettered(MessageId::new(41)),
        );
        full.parents = vec![NodeId::new(1), NodeId::new(3)];
        full.cancelled_by_parent = true;
        full.message = Some(MessageId::new(41));
        full.workflow = Some((WorkflowId::new(2), "upload".into()));
        full.batch = Some(BatchId::new(5));
        full.callback_of = Some((BatchId::new(6), BatchOn::Complete));
        full.result = Some(b"s3://x".to_vec());
        let bare = NodeRecord::new(NodeId::new(0), OnFailedParent::Run, StepState::Pending);
        for r in [full, bare] {
            let bytes = encode(&r);
            assert_eq!(decode(&bytes), Some(r));
            assert_eq!(decode(&bytes[..bytes.len() - 1]), None, "cut short");
            let mut longer = bytes.clone();
            longer.push(0);
            assert_eq!(decode(&longer), None, "trailing bytes");
        }
    }
}
