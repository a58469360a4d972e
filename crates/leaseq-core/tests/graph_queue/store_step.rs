//! One operation of a run on the queue and the graph, the checks after each step, the
//! drain at the end.

use super::*;

impl Store {
    pub(super) fn step(&mut self, op: &Op) {
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
                if let Some(id) = pick(&live, i) {
                    if self.queue.cancel_leased(id, self.now()).is_ok() {
                        self.settle(id, Fate::Cancelled);
                    }
                }
                self.drain_dead();
            }
            Op::Redrive(i) => {
                let dead: Vec<MessageId> = self.queue.dead_letters().map(|d| d.id).collect();
                if let Some(id) = pick(&dead, i) {
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

    pub(super) fn check(&self) {
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
    pub(super) fn finish(&mut self) {
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
