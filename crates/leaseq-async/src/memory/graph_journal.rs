//! The dependency graph's records for a durable store built on the memory store (the
//! SQLite store): once [`MemoryStore::journal_graph`] is called, every node whose record
//! a call changes is noted under the lock that changed it (`graph.rs`'s hooks, the
//! `DependencyStore` calls), with a copy of each job the graph released and the message it
//! became; [`MemoryStore::take_graph_changes`] hands them over, for the store to write in
//! the same commit as the change that caused them. [`MemoryStore::restore_graph`] puts a
//! graph read back at open in place. Nothing is kept, and nothing costs, without it.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;

use leaseq_core::graph::{Fate, Graph, GraphError, NodeId, StepState};
use leaseq_core::MessageId;

use super::MemoryStore;
use crate::dependencies::{GraphChanges, RecordRow};
use crate::runtime::Runtime;

/// What is noted for the journal (in `GraphState`).
#[derive(Debug)]
pub(crate) struct Journaling<T> {
    /// `T::clone`, for the copies of released jobs (the graph is kept for any `T`).
    pub(crate) clone: fn(&T) -> T,
    /// Nodes whose records changed since the last take.
    pub(crate) dirty: BTreeSet<NodeId>,
    /// Jobs released since the last take: the message each became and a copy of it.
    pub(crate) released: Vec<(MessageId, T)>,
}

impl<T: Clone, R: Runtime> MemoryStore<T, R> {
    /// Keeps, from now on, what a durable store on top needs to journal the graph (see
    /// [`take_graph_changes`](Self::take_graph_changes)). For the SQLite store; nothing
    /// else needs it.
    pub fn journal_graph(&self) {
        let mut st = self.lock();
        if st.graph.journal.is_none() {
            st.graph.journal = Some(Journaling {
                clone: T::clone,
                dirty: BTreeSet::new(),
                released: Vec::new(),
            });
        }
    }

    /// What changed in the graph since the last call (empty without
    /// [`journal_graph`](Self::journal_graph)).
    pub fn take_graph_changes(&self) -> GraphChanges<T> {
        let mut st = self.lock();
        let g = &mut st.graph;
        let Some(j) = &mut g.journal else {
            return GraphChanges {
                records: Vec::new(),
                released: Vec::new(),
            };
        };
        let (dirty, released) = (
            std::mem::take(&mut j.dirty),
            std::mem::take(&mut j.released),
        );
        let clone = j.clone;
        let records = dirty
            .into_iter()
            .map(|id| {
                let record = g.graph.record(id);
                (id, record.map(|(r, payload)| (r, payload.map(clone))))
            })
            .collect();
        GraphChanges { records, released }
    }

    /// Puts in place a graph read back from a store's records (before the queue is used),
    /// journaled from now on: what the records say is due is released (pushed now), and a
    /// queued job whose message the core no longer has is told its fate (dead-lettered if
    /// it is a dead letter, else acked: its ack was committed, its record not), so a store
    /// that lost a step is healed. [`take_graph_changes`](Self::take_graph_changes) then
    /// holds what this changed. Refused, nothing changed, for records that are no graph.
    pub fn restore_graph(&self, records: Vec<RecordRow<T>>) -> Result<(), GraphError> {
        let restored = Graph::restore(records)?;
        self.journal_graph();
        let mut st = self.lock();
        st.graph.graph = restored.graph;
        if !st.graph.on {
            st.graph.on = true;
            st.core.note_dead_letters();
            self.watches_core.store(true, Ordering::Relaxed);
        }
        let due: Vec<NodeId> = restored.changes.ready.iter().map(|r| r.0).collect();
        st.graph.mark(due);
        st.push_released(restored.changes, &self.inbox);
        let gone: Vec<(MessageId, Fate)> = st
            .graph
            .graph
            .nodes()
            .filter_map(|(_, state)| match state {
                StepState::Queued(m) if st.core.attempts_of(m).is_none() => {
                    let dead = st.core.get_dead_letter(m).is_some();
                    Some((
                        m,
                        if dead {
                            Fate::DeadLettered
                        } else {
                            Fate::Acked
                        },
                    ))
                }
                _ => None,
            })
            .collect();
        for (m, fate) in gone {
            st.graph_settle(m, fate, &self.inbox);
        }
        Ok(())
    }
}
