//! The journal: one writer thread that owns the SQLite connection and commits every change
//! queued since its last commit in one transaction (group commit).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use std::future::Future;

use event_listener::{Event, EventListener, Listener};
use parking_lot::{Condvar, Mutex};
use rusqlite::{params, Connection};

/// One durable fact about an item.
#[derive(Debug)]
pub(crate) enum Op {
    /// Pushed.
    Insert {
        id: u64,
        payload: Vec<u8>,
        visible_at: i64,
        expires_at: Option<i64>,
        priority: u8,
        key: Option<Vec<u8>>,
    },
    /// Leased: its attempt is counted before the delivery is handed out.
    Taken { id: u64, attempts: u32 },
    /// Handed back, to be delivered again from `visible_at`.
    Retry {
        id: u64,
        attempts: u32,
        visible_at: i64,
        error: Option<String>,
    },
    /// Dead-lettered.
    Dead {
        id: u64,
        attempts: u32,
        reason: u8,
        error: Option<String>,
        at: i64,
    },
    /// Acked, cancelled, replaced or a dead letter taken: gone for good.
    Delete { id: u64 },
    /// A dead letter redriven: visible at once, attempts reset.
    Revive { id: u64, visible_at: i64 },
}

impl Op {
    fn id(&self) -> u64 {
        match self {
            Op::Insert { id, .. }
            | Op::Taken { id, .. }
            | Op::Retry { id, .. }
            | Op::Dead { id, .. }
            | Op::Delete { id }
            | Op::Revive { id, .. } => *id,
        }
    }
}

struct Queued {
    ops: Vec<Op>,
    /// The sequence number of the last op queued.
    seq: u64,
    stop: bool,
}

/// What the store and the writer thread share.
pub(crate) struct Journal {
    queued: Mutex<Queued>,
    wake: Condvar,
    /// Every op up to this sequence number is committed.
    committed: AtomicU64,
    /// Notified after each commit.
    on_commit: Event,
    /// A commit failed (the file is no longer kept up to date).
    failed: AtomicBool,
    /// Commits made (for the figures).
    pub(crate) commits: AtomicU64,
}

impl Journal {
    /// Starts the writer thread on `conn`.
    pub(crate) fn start(conn: Connection) -> Arc<Journal> {
        let journal = Arc::new(Journal {
            queued: Mutex::new(Queued {
                ops: Vec::new(),
                seq: 0,
                stop: false,
            }),
            wake: Condvar::new(),
            committed: AtomicU64::new(0),
            on_commit: Event::new(),
            failed: AtomicBool::new(false),
            commits: AtomicU64::new(0),
        });
        let writer = journal.clone();
        std::thread::Builder::new()
            .name("leaseq-sqlite-writer".into())
            .spawn(move || writer.run(conn))
            .expect("spawn the leaseq-sqlite writer thread");
        journal
    }

    /// Queues `ops`; returns the sequence number to wait for.
    pub(crate) fn submit(&self, ops: impl IntoIterator<Item = Op>) -> u64 {
        let mut q = self.queued.lock();
        let before = q.ops.len();
        q.ops.extend(ops);
        q.seq += (q.ops.len() - before) as u64;
        let seq = q.seq;
        drop(q);
        self.wake.notify_one();
        seq
    }

    /// The sequence number of the last op queued.
    pub(crate) fn last(&self) -> u64 {
        self.queued.lock().seq
    }

    pub(crate) fn is_committed(&self, seq: u64) -> bool {
        self.committed.load(Ordering::Acquire) >= seq
    }

    /// Whether a commit failed (I/O error, disk full): the file stopped following the queue.
    pub(crate) fn failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    /// Ready once `seq` is committed; `listener` keeps the registration between polls.
    pub(crate) fn poll_committed(
        &self,
        seq: u64,
        listener: &mut Option<EventListener>,
        cx: &mut Context<'_>,
    ) -> Poll<()> {
        loop {
            if self.is_committed(seq) {
                *listener = None;
                return Poll::Ready(());
            }
            match listener {
                Some(l) => {
                    if std::pin::Pin::new(l).poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    *listener = None;
                }
                None => *listener = Some(self.on_commit.listen()),
            }
        }
    }

    /// Completes once `seq` is committed.
    pub(crate) async fn committed(&self, seq: u64) {
        let mut listener = None;
        std::future::poll_fn(|cx| self.poll_committed(seq, &mut listener, cx)).await
    }

    /// Blocks this thread until `seq` is committed.
    pub(crate) fn wait_blocking(&self, seq: u64) {
        while !self.is_committed(seq) {
            let l = self.on_commit.listen();
            if self.is_committed(seq) {
                break;
            }
            l.wait();
        }
    }

    /// Asks the writer to commit what is queued and end.
    pub(crate) fn stop(&self) {
        self.queued.lock().stop = true;
        self.wake.notify_one();
    }

    fn run(&self, mut conn: Connection) {
        // Ops on an item whose insert has not arrived yet (a receiver's journal entry can
        // overtake its pusher's): applied right after the insert.
        let mut early: HashMap<u64, Vec<Op>> = HashMap::new();
        let mut ops = Vec::new();
        loop {
            let (seq, stop) = {
                let mut q = self.queued.lock();
                while q.ops.is_empty() && !q.stop {
                    self.wake.wait(&mut q);
                }
                std::mem::swap(&mut ops, &mut q.ops);
                (q.seq, q.stop)
            };
            if !ops.is_empty() {
                if let Err(e) = commit(&mut conn, &mut ops, &mut early) {
                    if !self.failed.swap(true, Ordering::AcqRel) {
                        eprintln!(
                            "leaseq-sqlite: commit failed, the file stops following the queue: {e}"
                        );
                    }
                }
                ops.clear();
                self.commits.fetch_add(1, Ordering::Relaxed);
            }
            self.committed.store(seq, Ordering::Release);
            self.on_commit.notify(usize::MAX);
            if stop {
                let _ = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);");
                return;
            }
        }
    }
}

fn commit(
    conn: &mut Connection,
    ops: &mut Vec<Op>,
    early: &mut HashMap<u64, Vec<Op>>,
) -> rusqlite::Result<()> {
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
    for op in ops.drain(..) {
        apply(&tx, op, early)?;
    }
    tx.commit()
}

fn apply(
    tx: &rusqlite::Transaction<'_>,
    op: Op,
    early: &mut HashMap<u64, Vec<Op>>,
) -> rusqlite::Result<()> {
    let id = op.id();
    let changed = match &op {
        Op::Insert {
            id,
            payload,
            visible_at,
            expires_at,
            priority,
            key,
        } => {
            let mut st = tx.prepare_cached(
                "INSERT OR REPLACE INTO items (id, payload, attempts, visible_at, expires_at, \
                 priority, key, leased, dead) VALUES (?1, ?2, 0, ?3, ?4, ?5, ?6, 0, 0)",
            )?;
            st.execute(params![
                *id as i64,
                payload,
                visible_at,
                expires_at,
                priority,
                key
            ])?;
            if let Some(later) = early.remove(id) {
                for op in later {
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
                 dead_at = NULL, visible_at = ?2 WHERE id = ?1",
            )?
            .execute(params![*id as i64, visible_at])?,
    };
    if changed == 0 {
        early.entry(id).or_default().push(op);
    }
    Ok(())
}
