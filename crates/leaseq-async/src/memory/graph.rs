//! The dependency graph beside the memory store's core ([`leaseq_core::graph`]): the hooks
//! that tell it each outcome under the lock that made it, and the pushes of what it
//! releases in that same lock hold.
//!
//! Who tells the graph what:
//! - an **ack** (`State::ack_ticket`, every ack path): one `tracks` check, an empty-map
//!   check while no graph is in use; a tracked job's dependents are pushed before the
//!   lock is released, so no receiver sees the ack without them;
//! - a **cancel** (`Store::cancel`, a purge) and a **redrive** (one, all, or those a filter
//!   takes), under their locks (`with_core_told` for the operator's bulk calls);
//! - a **dead letter** through the core's noted dead letters, drained by `record_dead` for
//!   the record of finished jobs and the graph both: in the same lock hold for a nack or a
//!   handler's dead letter (`MemoryStore::settle`) and for what the driver's step buries;
//!   a dead letter another call buries on the way (a lease or item that ran out as the
//!   time was applied) at the driver's next step, or first thing in the next graph call
//!   or operator's lock. Once the graph is in use the queue watches the core, so a lock
//!   that leaves dead letters noted wakes the driver.
//!
//! Releasing a dependent changes no live count (an ack takes one item out, the push puts
//! one in), so `wait_empty` never sees a chain's gap; the lock's guard wakes receivers by
//! the *ready* count, which the push raised, so a waiting receiver is woken with no new
//! rule in `lock.rs` (tests/graph_memory.rs,
//! `a_dependent_is_never_receivable_before_its_parents_ack`).

use leaseq_core::graph::{Changes, Fate, Graph, NodeId};
use leaseq_core::{MessageId, PushOptions};

use super::inbox::Inbox;
use super::State;

/// The graph and what belongs with it, in [`State`].
#[derive(Debug)]
pub(crate) struct GraphState<T> {
    pub(crate) graph: Graph<T>,
    /// Whether the graph was ever used (the core then notes dead letters for it).
    pub(crate) on: bool,
    /// Released jobs the core refused (it cannot on the unbounded queues the graph is
    /// allowed on; kept rather than lost, and pushed again at the next drain).
    pub(crate) stranded: Vec<(NodeId, T)>,
    /// What a durable store on top journals (`graph_journal.rs`; `None`: nothing kept).
    pub(crate) journal: Option<super::graph_journal::Journaling<T>>,
}

impl<T> GraphState<T> {
    pub(crate) const fn new() -> Self {
        GraphState {
            graph: Graph::new(),
            on: false,
            stranded: Vec::new(),
            journal: None,
        }
    }

    /// Notes nodes whose records changed, for a durable store's journal (nothing without
    /// one).
    pub(crate) fn mark(&mut self, nodes: impl IntoIterator<Item = NodeId>) {
        if let Some(j) = &mut self.journal {
            j.dirty.extend(nodes);
        }
    }
}

impl<T> State<T> {
    /// Tells the graph `fate` of the tracked message `id` and pushes what it releases.
    #[cold]
    #[inline(never)]
    pub(super) fn graph_settle(&mut self, id: MessageId, fate: Fate, inbox: &Inbox<T>) {
        let node = self.graph.graph.node_of(id);
        self.graph.mark(node);
        let changes = self.graph.graph.settle(id, fate);
        self.push_released(changes, inbox);
    }

    /// Tells the graph that the tracked dead letter `id` was redriven.
    #[cold]
    #[inline(never)]
    pub(super) fn graph_redriven(&mut self, id: MessageId, inbox: &Inbox<T>) {
        let node = self.graph.graph.node_of(id);
        self.graph.mark(node);
        let changes = self.graph.graph.redriven(id);
        self.push_released(changes, inbox);
    }

    /// Tells the graph of the dead letters the core noted (see `record_dead`).
    pub(super) fn graph_dead(&mut self, ids: &[MessageId], inbox: &Inbox<T>) {
        let stranded = std::mem::take(&mut self.graph.stranded);
        self.push_each(stranded, inbox);
        for &id in ids {
            if self.graph.graph.tracks(id) {
                self.graph_settle(id, Fate::DeadLettered, inbox);
            }
        }
    }

    /// Pushes each job `changes` released, plain and visible now, and tells the graph its
    /// message. (Cancelled, held and revived jobs stay in the graph: nothing to push.)
    pub(super) fn push_released(&mut self, changes: Changes<T>, inbox: &Inbox<T>) {
        if self.graph.journal.is_some() {
            let marked = changes.cancelled.iter().chain(&changes.held);
            let marked: Vec<NodeId> = marked.chain(&changes.revived).copied().collect();
            self.graph.mark(marked);
        }
        self.push_each(changes.ready, inbox);
    }

    fn push_each(&mut self, ready: Vec<(NodeId, T)>, inbox: &Inbox<T>) {
        let now = self.core.now();
        for (node, payload) in ready {
            let copy = self.graph.journal.as_ref().map(|j| (j.clone)(&payload));
            let pushed = inbox.push_direct(&mut self.core, |core, id| {
                core.push_with_id(id, payload, now, PushOptions::new())
            });
            match pushed {
                Ok(message) => {
                    // The node was released just now and the id is fresh: accepted.
                    let told = self.graph.graph.queued(node, message);
                    debug_assert!(told.is_ok(), "{told:?}");
                    if let (Some(j), Some(copy)) = (&mut self.graph.journal, copy) {
                        j.dirty.insert(node);
                        j.released.push((message, copy));
                    }
                }
                Err(e) => self.graph.stranded.push((node, e.into_item())),
            }
        }
    }
}

/// What an operator's call did to the messages it names, for the graph.
#[derive(Clone, Copy, Debug)]
pub(super) enum Told {
    /// Dead letters back in the queue.
    Redriven,
    /// Items cancelled (a purge).
    Cancelled,
}

impl<T, R: crate::runtime::Runtime> super::MemoryStore<T, R> {
    /// [`with_core`](Self::with_core) for an operator's call that redrives or cancels
    /// many messages: the ids `ids` reads from its output told to the graph, in the same
    /// lock hold, as `told` says.
    pub(super) fn with_core_told<U>(
        &self,
        f: impl FnOnce(&mut leaseq_core::Queue<T>, leaseq_core::Timestamp) -> U,
        ids: fn(&U) -> &[MessageId],
        told: Told,
    ) -> U {
        let now = self.rt.now();
        let mut st = self.lock_recorded();
        st.core.handle_timeout(now);
        if st.core.has_noted_dead() {
            self.record_dead(&mut st);
        }
        let out = f(&mut st.core, now);
        if st.graph.on {
            for &id in ids(&out) {
                if !st.graph.graph.tracks(id) {
                    continue;
                }
                match told {
                    Told::Redriven => st.graph_redriven(id, &self.inbox),
                    Told::Cancelled => st.graph_settle(id, Fate::Cancelled, &self.inbox),
                }
            }
        }
        out
    }
}
