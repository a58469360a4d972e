//! The store beside the queue: the graph's changes applied, settles told, jobs and batches
//! added.

use super::*;

impl Store {
    pub(super) fn new() -> Self {
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

    pub(super) fn now(&self) -> Timestamp {
        Timestamp::from_nanos(self.now)
    }

    /// Pushes what was released, checking each release against the queue's outcomes.
    pub(super) fn apply(&mut self, changes: Changes<usize>) {
        let turns = [
            (
                &changes.cancelled,
                Status::Waiting,
                Status::Cancelled,
                "only a waiting job is cancelled",
            ),
            (
                &changes.revived,
                Status::Cancelled,
                Status::Waiting,
                "only a cancelled job revives",
            ),
        ];
        for (nodes, from, to, rule) in turns {
            for node in nodes {
                let job = self.job_of(*node);
                assert_eq!(self.status[job], from, "{rule}");
                self.status[job] = to;
            }
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

    pub(super) fn job_of(&self, node: NodeId) -> usize {
        self.nodes.iter().position(|&n| n == node).unwrap()
    }

    pub(super) fn settle(&mut self, id: MessageId, fate: Fate) {
        let job = self.message[&id];
        self.status[job] = match fate {
            Fate::Acked => Status::Acked,
            Fate::DeadLettered => Status::Dead,
            _ => Status::Cancelled,
        };
        let changes = self.graph.settle(id, fate);
        self.apply(changes);
    }

    pub(super) fn drain_dead(&mut self) {
        for id in self.queue.take_noted_dead() {
            self.settle(id, Fate::DeadLettered);
        }
    }

    pub(super) fn add(&mut self, parents: Vec<usize>, policy: OnFailedParent) {
        let nodes: Vec<NodeId> = parents.iter().map(|&p| self.nodes[p]).collect();
        let job = self.nodes.len();
        let added = self.graph.add(job, &nodes, policy).unwrap();
        self.nodes.push(added.node);
        self.parents.push(parents);
        self.policy.push(policy);
        self.status.push(Status::Waiting);
        self.apply(added.changes);
    }

    pub(super) fn add_batch(&mut self, n: usize, on: BatchOn) {
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
}
