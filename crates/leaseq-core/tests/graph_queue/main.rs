//! The dependency graph driven beside a real [`Queue`], as a store drives it: released
//! jobs pushed in the same step, every ack, dead letter (nack on the last attempt, lease
//! expiry, poison) and cancel told to the graph, random redrives and retries. Random DAGs
//! and batches, random orders of receives, acks, nacks, expiries, dead letters and cancels.
//!
//! Checked at every step: a job is released at most once, never before its last parent
//! is acked (with `Run`, before every parent has finished); the graph's state of each
//! queued job agrees with the queue; a batch's counts equal a tally of its children's
//! outcomes in the queue (through redeliveries). At the end, with every delivery acked,
//! every job none of whose ancestors failed is acked.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use leaseq_core::graph::StepState;
use leaseq_core::graph::{BatchCounts, BatchOn, Changes, Fate, Graph, NodeId, OnFailedParent};
use leaseq_core::{Backoff, Config, Failure, Lease, MessageId, Queue, Timestamp};
use leaseq_test_kit::dag::parents_of;
use leaseq_test_kit::seeded::seed_config;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestRunner;

/// The id of `ids` that `i` picks, if there is any.
fn pick(ids: &[MessageId], i: Index) -> Option<MessageId> {
    (!ids.is_empty()).then(|| ids[i.index(ids.len())])
}

/// Where a job stands, as the test (the "store") saw the queue's answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Waiting,
    InQueue,
    Acked,
    Dead,
    Cancelled,
}

struct Store {
    queue: Queue<usize>,
    graph: Graph<usize>,
    now: u64,
    leases: Vec<Lease<usize>>,
    nodes: Vec<NodeId>,
    parents: Vec<Vec<usize>>,
    policy: Vec<OnFailedParent>,
    status: Vec<Status>,
    message: BTreeMap<MessageId, usize>,
    released: BTreeSet<usize>,
    batch: Option<(leaseq_core::graph::BatchId, Vec<usize>)>,
}

#[derive(Clone, Debug)]
enum Op {
    Receive,
    Ack(Index),
    Nack(Index),
    Poison(Index),
    Advance(u64),
    Cancel(Index),
    Redrive(Index),
    Retry(Index),
    ReleaseHeld(Index),
    Restart,
}

mod run;
mod store;
mod store_step;
