//! The pool's recording: per-worker handles by item type.

use std::time::Duration;

use ::metrics::{counter, histogram, Counter, Histogram};
use leaseq_core::Outcome;

use super::*;

/// The handles of one item type, as one worker keeps them.
struct TypeHandles {
    item_type: &'static str,
    /// By outcome: ok, failed, permanent, timed out, panicked.
    handled: [Counter; 5],
    seconds: Histogram,
}

const OUTCOMES: [&str; 5] = ["ok", "failed", "permanent", "timed_out", "panicked"];

/// One worker's pool metrics: handles registered on the first item of each type.
pub(crate) struct PoolMetrics {
    queue: &'static str,
    types: Vec<TypeHandles>,
}

impl PoolMetrics {
    pub(crate) fn new(queue: &'static str) -> Self {
        PoolMetrics {
            queue,
            types: Vec::new(),
        }
    }

    /// Records one handling.
    pub(crate) fn record(
        &mut self,
        item_type: &'static str,
        took: Duration,
        outcome: Outcome,
        permanent: bool,
    ) {
        let at = match self.types.iter().position(|t| t.item_type == item_type) {
            Some(at) => at,
            None => {
                let queue = self.queue;
                self.types.push(TypeHandles {
                    item_type,
                    handled: OUTCOMES.map(|outcome| {
                        counter!(POOL_HANDLED, "queue" => queue, "kind" => item_type,
                            "outcome" => outcome)
                    }),
                    seconds: histogram!(POOL_HANDLING_SECONDS, "queue" => queue,
                        "kind" => item_type),
                });
                self.types.len() - 1
            }
        };
        let handles = &self.types[at];
        let outcome = match outcome {
            Outcome::Ok => 0,
            Outcome::Failed if permanent => 2,
            Outcome::Failed => 1,
            Outcome::TimedOut => 3,
            Outcome::Panicked => 4,
            _ => 4,
        };
        handles.handled[outcome].increment(1);
        handles.seconds.record(took.as_secs_f64());
    }
}
