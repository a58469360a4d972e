//! Results: a small record a job leaves for the jobs that wait for it.

use alloc::vec::Vec;

use core::fmt;

use super::ids::NodeId;
use super::node::State;
use super::Graph;
use crate::id::MessageId;

/// The largest result, in bytes (4 KiB). A result says where the output is (a key, a
/// path, a count), it is not the output: a batch's callback reads every child's, so a
/// batch of 10,000 children holds at most 40 MiB of them. (A checkpoint, which only its
/// own job reads, may be 64 KiB.)
pub const MAX_RESULT_LEN: usize = 4 * 1024;

impl<T> Graph<T> {
    /// Records `result` for the job that is `message`, replacing what it recorded before:
    /// while the job is in the queue, before its ack (a store records it in the ack's
    /// commit). Refused, nothing recorded, for a message the graph does not track, a job
    /// finished, or more than [`MAX_RESULT_LEN`] bytes.
    pub fn record_result(&mut self, message: MessageId, result: &[u8]) -> Result<(), ResultError> {
        if result.len() > MAX_RESULT_LEN {
            return Err(ResultError::TooLong { len: result.len() });
        }
        let id = self
            .by_message
            .get(&message)
            .ok_or(ResultError::Untracked(message))?;
        let node = self
            .nodes
            .get_mut(id)
            .ok_or(ResultError::Untracked(message))?;
        if !matches!(node.state, State::Queued(_)) {
            return Err(ResultError::NotQueued(message));
        }
        let mut bytes = node.result.take().unwrap_or_default();
        bytes.clear();
        bytes.extend_from_slice(result);
        node.result = Some(bytes);
        Ok(())
    }

    /// What a job recorded, if anything.
    pub fn result(&self, node: NodeId) -> Option<&[u8]> {
        self.nodes.get(&node)?.result.as_deref()
    }

    /// The results of a job's parents that recorded one, in the order its parents were
    /// given: what a released job reads.
    pub fn parent_results(&self, node: NodeId) -> Vec<(NodeId, &[u8])> {
        let Some(n) = self.nodes.get(&node) else {
            return Vec::new();
        };
        n.parents
            .iter()
            .filter_map(|p| Some((*p, self.nodes.get(p)?.result.as_deref()?)))
            .collect()
    }
}

/// A refused [`Graph::record_result`](super::Graph::record_result); nothing recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResultError {
    /// The graph does not track this message.
    Untracked(MessageId),
    /// The job is not in the queue any more (a result is recorded before the ack).
    NotQueued(MessageId),
    /// Longer than [`MAX_RESULT_LEN`] bytes.
    TooLong {
        /// Its length.
        len: usize,
    },
}

impl fmt::Display for ResultError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResultError::Untracked(m) => write!(f, "message {m} is not a job of the graph"),
            ResultError::NotQueued(m) => {
                write!(f, "message {m} is finished; record a result before the ack")
            }
            ResultError::TooLong { len } => write!(
                f,
                "a result of {len} bytes is over the {} allowed: record where the output is",
                MAX_RESULT_LEN
            ),
        }
    }
}

impl core::error::Error for ResultError {}
