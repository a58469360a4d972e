//! The graph's nodes by id: a deque of boxed slots from the oldest node held to the
//! newest, so that a lookup is an index, not a search.
//!
//! Ids are handed out in order (`Graph::next_id`), so the slots are dense but for the
//! nodes forgotten since: a forgotten node leaves an empty slot (one pointer) until every
//! node before it is gone too, when the front is trimmed. Boxed so that a hole costs a
//! pointer, not a node.

use alloc::boxed::Box;
use alloc::collections::{TryReserveError, VecDeque};

use super::ids::NodeId;
use super::node::Node;

/// Nodes by id.
#[derive(Debug)]
pub(super) struct Nodes<T> {
    /// The id of `slots[0]`.
    base: u64,
    slots: VecDeque<Option<Box<Node<T>>>>,
    len: usize,
}

impl<T> Nodes<T> {
    pub(super) const fn new() -> Self {
        Nodes {
            base: 0,
            slots: VecDeque::new(),
            len: 0,
        }
    }

    fn index(&self, id: NodeId) -> Option<usize> {
        let i = id.0.checked_sub(self.base)?;
        usize::try_from(i).ok().filter(|&i| i < self.slots.len())
    }

    pub(super) fn get(&self, id: &NodeId) -> Option<&Node<T>> {
        self.slots.get(self.index(*id)?)?.as_deref()
    }

    pub(super) fn get_mut(&mut self, id: &NodeId) -> Option<&mut Node<T>> {
        let i = self.index(*id)?;
        self.slots.get_mut(i)?.as_deref_mut()
    }

    pub(super) fn contains_key(&self, id: &NodeId) -> bool {
        self.get(id).is_some()
    }

    /// Room for the slots from `first` to `last`, or the allocator's refusal (records
    /// whose ids span more than memory holds).
    pub(super) fn reserve_span(
        &mut self,
        first: NodeId,
        last: NodeId,
    ) -> Result<(), TryReserveError> {
        let span = last.0.saturating_sub(first.0).saturating_add(1);
        let span = usize::try_from(span).unwrap_or(usize::MAX);
        self.slots.try_reserve(span)
    }

    /// Puts `node` at `id` (empty or past the ends: the graph inserts new ids, and a
    /// restore any). Returns whether the slot was free.
    pub(super) fn insert(&mut self, id: NodeId, node: Node<T>) -> bool {
        if self.slots.is_empty() {
            self.base = id.0;
        }
        while id.0 < self.base {
            self.slots.push_front(None);
            self.base -= 1;
        }
        let i = (id.0 - self.base) as usize;
        while self.slots.len() <= i {
            self.slots.push_back(None);
        }
        let was = self.slots[i].replace(Box::new(node));
        if was.is_none() {
            self.len += 1;
        }
        was.is_none()
    }

    pub(super) fn remove(&mut self, id: &NodeId) -> Option<Node<T>> {
        let i = self.index(*id)?;
        let node = self.slots[i].take()?;
        self.len -= 1;
        while matches!(self.slots.front(), Some(None)) {
            self.slots.pop_front();
            self.base += 1;
        }
        while matches!(self.slots.back(), Some(None)) {
            self.slots.pop_back();
        }
        Some(*node)
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every node in id order.
    pub(super) fn iter(&self) -> impl DoubleEndedIterator<Item = (NodeId, &Node<T>)> + '_ {
        let base = self.base;
        self.slots
            .iter()
            .enumerate()
            .filter_map(move |(i, s)| Some((NodeId(base + i as u64), s.as_deref()?)))
    }

    /// Every id in order.
    pub(super) fn keys(&self) -> impl DoubleEndedIterator<Item = NodeId> + '_ {
        self.iter().map(|(id, _)| id)
    }
}

impl<T> core::ops::Index<&NodeId> for Nodes<T> {
    type Output = Node<T>;

    fn index(&self, id: &NodeId) -> &Node<T> {
        self.get(id).expect("a node the graph holds")
    }
}
