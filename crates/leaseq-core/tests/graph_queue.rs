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
use leaseq_test_kit::seeded::seed_config;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestRunner;

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

impl Store {
    fn new() -> Self {
        let config = Config::new(Duration::from_nanos(10))
            .with_max_attempts(3)
            .with_backoff(Backoff::Fixed(Duration::from_nanos(3)))
            .without_jitter();
        let mut queue = Queue::new(config).unwrap();
        // Every dead letter, however it came (a nack on the last attempt, a lease expiry, a
        // poison), told to the graph: the store's way to hear of them.
        queue.note_dead_letters();
        Store {
            queue,
            graph: Graph::new(),
            now: 0,
            leases: Vec::new(),
            nodes: Vec::new(),
            parents: Vec::new(),
            policy: Vec::new(),
            status: Vec::new(),
            message: BTreeMap::new(),
            released: BTreeSet::new(),
            batch: None,
        }
    }

    fn now(&self) -> Timestamp {
        Timestamp::from_nanos(self.now)
    }

    /// Pushes what was released, checking each release against the queue's outcomes.
    fn apply(&mut self, changes: Changes<usize>) {
        for node in &changes.cancelled {
            let job = self.job_of(*node);
            assert_eq!(
                self.status[job],
                Status::Waiting,
                "only a waiting job is cancelled"
            );
            self.status[job] = Status::Cancelled;
        }
        for node in &changes.revived {
            let job = self.job_of(*node);
            assert_eq!(
                self.status[job],
                Status::Cancelled,
                "only a cancelled job revives"
            );
            self.status[job] = Status::Waiting;
        }
        for (node, job) in changes.ready {
            assert_eq!(self.nodes[job], node);
            assert!(self.released.insert(job), "job {job} released twice");
            for &p in &self.parents[job] {
                let s = self.status[p];
                match self.policy[job] {
                    OnFailedParent::Run => assert!(
                        matches!(s, Status::Acked | Status::Dead | Status::Cancelled),
                        "job {job} (run anyway) released while parent {p} is {s:?}"
                    ),
                    _ => assert_eq!(s, Status::Acked, "job {job} released before parent {p}"),
                }
            }
            let id = self.queue.push(job, self.now()).unwrap();
            self.graph.queued(node, id).unwrap();
            self.message.insert(id, job);
            self.status[job] = Status::InQueue;
        }
    }

    fn job_of(&self, node: NodeId) -> usize {
        self.nodes.iter().position(|&n| n == node).unwrap()
    }

    fn settle(&mut self, id: MessageId, fate: Fate) {
        let job = self.message[&id];
        self.status[job] = match fate {
            Fate::Acked => Status::Acked,
            Fate::DeadLettered => Status::Dead,
            _ => Status::Cancelled,
        };
        let changes = self.graph.settle(id, fate);
        self.apply(changes);
    }

    fn drain_dead(&mut self) {
        for id in self.queue.take_noted_dead() {
            self.settle(id, Fate::DeadLettered);
        }
    }

    fn add(&mut self, parents: Vec<usize>, policy: OnFailedParent) {
        let nodes: Vec<NodeId> = parents.iter().map(|&p| self.nodes[p]).collect();
        let job = self.nodes.len();
        let added = self.graph.add(job, &nodes, policy).unwrap();
        self.nodes.push(added.node);
        self.parents.push(parents);
        self.policy.push(policy);
        self.status.push(Status::Waiting);
        self.apply(added.changes);
    }

    fn add_batch(&mut self, n: usize, on: BatchOn) {
        let first = self.nodes.len();
        let jobs: Vec<usize> = (first..first + n).collect();
        let added = self.graph.add_batch(jobs.clone(), first + n, on);
        self.nodes.extend(&added.children);
        self.nodes.push(added.callback);
        for _ in 0..n {
            self.parents.push(Vec::new());
            self.policy.push(OnFailedParent::Cancel);
            self.status.push(Status::Waiting);
        }
        self.parents.push(jobs.clone());
        self.policy.push(match on {
            BatchOn::Success => OnFailedParent::Hold,
            _ => OnFailedParent::Run,
        });
        self.status.push(Status::Waiting);
        self.batch = Some((added.batch, jobs));
        self.apply(added.changes);
    }

    fn step(&mut self, op: &Op) {
        match *op {
            Op::Receive => {
                if let Some(l) = self.queue.receive(self.now()) {
                    self.leases.push(l);
                }
                self.drain_dead();
            }
            Op::Ack(i) if !self.leases.is_empty() => {
                let l = self.leases.swap_remove(i.index(self.leases.len()));
                if self.queue.ack(l.receipt, self.now()).is_ok() {
                    self.settle(l.id, Fate::Acked);
                }
                self.drain_dead();
            }
            Op::Nack(i) if !self.leases.is_empty() => {
                let l = self.leases.swap_remove(i.index(self.leases.len()));
                let _ = self
                    .queue
                    .nack(l.receipt, self.now(), Failure::error("boom"));
                self.drain_dead();
            }
            Op::Poison(i) if !self.leases.is_empty() => {
                let l = self.leases.swap_remove(i.index(self.leases.len()));
                let _ = self.queue.dead_letter(l.receipt, self.now(), None);
                self.drain_dead();
            }
            Op::Advance(dt) => {
                self.now += dt;
                self.queue.handle_timeout(self.now());
                self.drain_dead();
            }
            Op::Cancel(i) => {
                let live: Vec<MessageId> = self.queue.items().map(|v| v.id).collect();
                if !live.is_empty() {
                    let id = live[i.index(live.len())];
                    if self.queue.cancel_leased(id, self.now()).is_ok() {
                        self.settle(id, Fate::Cancelled);
                    }
                }
                self.drain_dead();
            }
            Op::Redrive(i) => {
                let dead: Vec<MessageId> = self.queue.dead_letters().map(|d| d.id).collect();
                if !dead.is_empty() {
                    let id = dead[i.index(dead.len())];
                    if self.queue.redrive(id, self.now()).is_ok() {
                        self.status[self.message[&id]] = Status::InQueue;
                        let changes = self.graph.redriven(id);
                        self.apply(changes);
                    }
                }
                self.drain_dead();
            }
            Op::Retry(i) => {
                let job = i.index(self.nodes.len());
                if let Ok(r) = self.graph.retry(self.nodes[job]) {
                    if let Some(id) = r.redrive {
                        self.queue
                            .redrive(id, self.now())
                            .expect("a dead letter redrives");
                        self.status[job] = Status::InQueue;
                    }
                    self.apply(r.changes);
                }
                self.drain_dead();
            }
            Op::Restart => {
                // A durable store reopened: the graph rebuilt from its records alone.
                let before: Vec<_> = self.graph.records().map(|(r, p)| (r, p.copied())).collect();
                let restored =
                    Graph::restore(before.iter().rev().cloned()).expect("records restore");
                assert!(
                    restored.changes.is_empty(),
                    "nothing was due: releases were applied"
                );
                self.graph = restored.graph;
                let after: Vec<_> = self.graph.records().map(|(r, p)| (r, p.copied())).collect();
                assert_eq!(after, before, "the same records after a restore");
            }
            Op::ReleaseHeld(i) => {
                let job = i.index(self.nodes.len());
                if let Ok(changes) = self.graph.release_held(self.nodes[job]) {
                    self.policy[job] = OnFailedParent::Run;
                    self.apply(changes);
                }
            }
            _ => {}
        }
        self.check();
    }

    fn check(&self) {
        self.graph.check_invariants().unwrap();
        for (job, &node) in self.nodes.iter().enumerate() {
            let state = self.graph.state(node).unwrap();
            let agrees = match self.status[job] {
                Status::Waiting => matches!(state, StepState::Pending | StepState::Held),
                Status::InQueue => matches!(state, StepState::Queued(_)),
                Status::Acked => matches!(state, StepState::Acked(_)),
                Status::Dead => matches!(state, StepState::DeadLettered(_)),
                Status::Cancelled => state == StepState::Cancelled,
            };
            assert!(
                agrees,
                "job {job}: graph says {state:?}, queue {:?}",
                self.status[job]
            );
        }
        if let Some((batch, children)) = &self.batch {
            let mut tally = BatchCounts::default();
            let got = self.graph.batch_counts(*batch).unwrap();
            let (mut open, mut acked, mut dead, mut cancelled) = (0, 0, 0, 0);
            for &c in children {
                match self.status[c] {
                    Status::Waiting | Status::InQueue => open += 1,
                    Status::Acked => acked += 1,
                    Status::Dead => dead += 1,
                    Status::Cancelled => cancelled += 1,
                }
            }
            tally.total = children.len() as u64;
            assert_eq!(
                (
                    got.total,
                    got.open,
                    got.acked,
                    got.dead_lettered,
                    got.cancelled
                ),
                (tally.total, open, acked, dead, cancelled),
                "batch counts differ from the queue's outcomes"
            );
        }
    }

    /// Acks every delivery until the queue is empty; then every job whose parents are all
    /// acked is acked, and nothing is queued.
    fn finish(&mut self) {
        for l in std::mem::take(&mut self.leases) {
            if self.queue.ack(l.receipt, self.now()).is_ok() {
                self.settle(l.id, Fate::Acked);
            }
        }
        for _ in 0..10_000 {
            if self.queue.is_empty() {
                break;
            }
            self.now += 100;
            self.queue.handle_timeout(self.now());
            self.drain_dead();
            while let Some(l) = self.queue.receive(self.now()) {
                self.queue.ack(l.receipt, self.now()).unwrap();
                self.settle(l.id, Fate::Acked);
            }
        }
        assert!(self.queue.is_empty(), "queue drained");
        self.check();
        for job in 0..self.nodes.len() {
            let clean = self.parents[job]
                .iter()
                .all(|&p| self.status[p] == Status::Acked);
            let run = self.policy[job] == OnFailedParent::Run
                && self.parents[job]
                    .iter()
                    .all(|&p| self.status[p] != Status::Waiting);
            if (clean || run) && self.status[job] == Status::Waiting {
                let state = self.graph.state(self.nodes[job]);
                assert_eq!(
                    state,
                    Some(StepState::Cancelled),
                    "job {job} with every parent finished was never released"
                );
            }
        }
    }
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

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => Just(Op::Receive),
        5 => any::<Index>().prop_map(Op::Ack),
        2 => any::<Index>().prop_map(Op::Nack),
        1 => any::<Index>().prop_map(Op::Poison),
        2 => (1u64..15).prop_map(Op::Advance),
        1 => any::<Index>().prop_map(Op::Cancel),
        1 => any::<Index>().prop_map(Op::Redrive),
        1 => any::<Index>().prop_map(Op::Retry),
        1 => any::<Index>().prop_map(Op::ReleaseHeld),
        1 => Just(Op::Restart),
    ]
}

fn policy() -> impl Strategy<Value = OnFailedParent> {
    prop_oneof![
        Just(OnFailedParent::Cancel),
        Just(OnFailedParent::Run),
        Just(OnFailedParent::Hold)
    ]
}

#[test]
fn random_dags_beside_a_queue() {
    let dag = prop::collection::vec(
        (prop::collection::vec(any::<Index>(), 0..=3), policy()),
        1..16,
    );
    let mut runner = TestRunner::new(seed_config(600, 0x00da_6001));
    runner
        .run(&(dag, prop::collection::vec(op(), 0..120)), |(dag, ops)| {
            let mut s = Store::new();
            for (i, (ps, policy)) in dag.into_iter().enumerate() {
                let mut ps: Vec<usize> = if i == 0 {
                    Vec::new()
                } else {
                    ps.iter().map(|p| p.index(i)).collect()
                };
                ps.sort_unstable();
                ps.dedup();
                s.add(ps, policy);
            }
            for op in &ops {
                s.step(op);
            }
            s.finish();
            Ok(())
        })
        .unwrap();
}

#[test]
fn batch_counts_are_exact_through_redeliveries() {
    let on = prop_oneof![Just(BatchOn::Success), Just(BatchOn::Complete)];
    let mut runner = TestRunner::new(seed_config(600, 0x00da_6002));
    runner
        .run(
            &(0usize..12, on, prop::collection::vec(op(), 0..150)),
            |(n, on, ops)| {
                let mut s = Store::new();
                s.add_batch(n, on);
                for op in &ops {
                    s.step(op);
                }
                s.finish();
                let callback = n;
                let (batch, children) = s.batch.clone().unwrap();
                let counts = s.graph.batch_counts(batch).unwrap();
                assert_eq!(counts.open, 0, "every child finished");
                let all_acked = children.iter().all(|&c| s.status[c] == Status::Acked);
                let released = s.released.contains(&callback);
                match on {
                    BatchOn::Complete => assert!(
                        released || s.status[callback] == Status::Cancelled,
                        "on complete: callback released once every child finished"
                    ),
                    _ => assert_eq!(
                        released || s.status[callback] == Status::Cancelled,
                        all_acked || s.policy[callback] == OnFailedParent::Run,
                        "on success: released iff all acked (or released by hand)"
                    ),
                }
                Ok(())
            },
        )
        .unwrap();
}
