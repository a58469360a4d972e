//! Random DAGs on the memory store under random acks, nacks, dead letters, lease expiries
//! and redrives (seeded; virtual time): a job waiting with `Cancel` or `Hold` is never
//! received before every parent is acked, no job is released twice (one message per job),
//! and at the end each job is what its parents' final states make it: run when they are
//! all acked (with `Run`: all finished), cancelled or held when one failed.

use std::collections::HashMap;
use std::time::Duration;

use leaseq_async::dependencies::{DependencyStore, NodeId, OnFailedParent, Parent, StepState};
use leaseq_async::{Backoff, Config, Delivery, LeaseQueue, MemoryStore, MessageId, SimRuntime};
use leaseq_test_kit::rng::Rng;
use leaseq_test_kit::sim::{self, sleep};

type Q = LeaseQueue<u32, SimRuntime>;
type D = Delivery<u32, SimRuntime, MemoryStore<u32, SimRuntime>>;

/// One job of the run: its node, parents (as jobs of this list) and policy.
struct Job {
    node: NodeId,
    parents: Vec<usize>,
    policy: OnFailedParent,
}

async fn build(q: &Q, rng: &mut Rng) -> Vec<Job> {
    let n = 3 + rng.below(25) as usize;
    let mut jobs: Vec<Job> = Vec::with_capacity(n);
    for i in 0..n {
        let policy = match rng.below(3) {
            0 => OnFailedParent::Cancel,
            1 => OnFailedParent::Run,
            _ => OnFailedParent::Hold,
        };
        let mut parents: Vec<usize> = Vec::new();
        if i > 0 {
            for _ in 0..rng.below(4) {
                let p = rng.below(i as u64) as usize;
                if !parents.contains(&p) {
                    parents.push(p);
                }
            }
        }
        let item = i as u32;
        let node = if parents.is_empty() && rng.below(2) == 0 {
            // A plain push, adopted by the graph once a job waits for it.
            let id = q.try_push(item).unwrap();
            q.store()
                .push_after(u32::MAX - item, &[Parent::Message(id)], OnFailedParent::Run)
                .await
                .map(|_| ())
                .unwrap();
            q.store().job_of(id).await.unwrap().unwrap()
        } else {
            let ps: Vec<Parent> = parents.iter().map(|&p| jobs[p].node.into()).collect();
            q.store().push_after(item, &ps, policy).await.unwrap()
        };
        jobs.push(Job {
            node,
            parents,
            policy,
        });
    }
    jobs
}

/// Checks a received job: waits with `Cancel`/`Hold` end with every parent acked; one
/// message per job.
async fn check_received(q: &Q, jobs: &[Job], messages: &mut HashMap<u32, MessageId>, d: &D) {
    let item = *d.item();
    if item >= u32::MAX - 64 {
        return; // the plain pushes' watchers
    }
    let first = *messages.entry(item).or_insert(d.id());
    assert_eq!(first, d.id(), "job {item} released twice");
    let job = &jobs[item as usize];
    if job.policy != OnFailedParent::Run {
        for &p in &job.parents {
            let state = q.store().job_state(jobs[p].node).await.unwrap().unwrap();
            assert!(
                matches!(state, StepState::Acked(_)),
                "job {item} received; parent {p} {state:?}"
            );
        }
    }
}

async fn one_run(rt: SimRuntime, seed: u64) {
    let config = Config::new(Duration::from_secs(10))
        .with_max_attempts(3)
        .with_backoff(Backoff::None);
    let q: Q = sim::queue(&rt, config);
    let mut rng = Rng(seed);
    let jobs = build(&q, &mut rng).await;
    let mut held: Vec<D> = Vec::new();
    let mut messages = HashMap::new();
    for _ in 0..300 {
        match rng.below(8) {
            0..=2 => {
                if let Some(d) = q.try_receive() {
                    check_received(&q, &jobs, &mut messages, &d).await;
                    held.push(d);
                }
            }
            3 | 4 if !held.is_empty() => {
                let d = held.swap_remove(rng.below(held.len() as u64) as usize);
                let _ = d.ack().await;
            }
            5 if !held.is_empty() => {
                let d = held.swap_remove(rng.below(held.len() as u64) as usize);
                let _ = d.nack("again").await;
            }
            6 if !held.is_empty() => {
                let d = held.swap_remove(rng.below(held.len() as u64) as usize);
                let _ = d.dead_letter("broken").await;
            }
            6 => {
                let dead = q.store().dead_letters();
                if !dead.is_empty() {
                    let id = dead[rng.below(dead.len() as u64) as usize].id;
                    let _ = q.store().redrive(id);
                }
            }
            _ => sleep(&rt, Duration::from_secs(1 + rng.below(12))).await,
        }
    }
    // Drain: everything in hand and everything released acked, until nothing is left.
    for d in held.drain(..) {
        let _ = d.ack().await;
    }
    sleep(&rt, Duration::from_millis(1)).await;
    while let Some(d) = q.try_receive() {
        check_received(&q, &jobs, &mut messages, &d).await;
        d.ack().await.unwrap();
        sleep(&rt, Duration::from_millis(1)).await;
    }
    // What each job must have come to, from its parents' final states.
    for (i, job) in jobs.iter().enumerate() {
        let mut parents: Vec<StepState> = Vec::with_capacity(job.parents.len());
        for &p in &job.parents {
            parents.push(q.store().job_state(jobs[p].node).await.unwrap().unwrap());
        }
        let state = q.store().job_state(job.node).await.unwrap().unwrap();
        let ran = matches!(state, StepState::Acked(_) | StepState::DeadLettered(_));
        let all_acked = parents.iter().all(|s| matches!(s, StepState::Acked(_)));
        let all_finished = parents.iter().all(|s| s.is_finished());
        let failed = parents
            .iter()
            .any(|s| matches!(s, StepState::DeadLettered(_) | StepState::Cancelled));
        let mut all = Vec::with_capacity(jobs.len());
        for j in &jobs {
            let state = q.store().job_state(j.node).await.unwrap();
            all.push((j.parents.clone(), j.policy, state));
        }
        let why = format!(
            "seed {seed}: job {i} ({:?}) is {state:?}, parents {:?} {parents:?}; all: {:?}",
            job.policy,
            job.parents,
            all.into_iter().enumerate().collect::<Vec<_>>()
        );
        if all_acked || (job.policy == OnFailedParent::Run && all_finished) {
            assert!(ran, "{why}");
        } else if failed && job.policy == OnFailedParent::Cancel {
            assert_eq!(state, StepState::Cancelled, "{why}");
        } else if failed && job.policy == OnFailedParent::Hold {
            assert_eq!(state, StepState::Held, "{why}");
        }
        // (Otherwise a parent is open: a `Run` job may have run anyway, released while
        // that parent was failed, before a redrive brought it back.)
    }
}

#[test]
fn random_dags_release_each_job_once_and_never_early() {
    for seed in 0..200 {
        sim::run(|rt| one_run(rt, seed));
    }
}
