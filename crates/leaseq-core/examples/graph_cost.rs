//! What the dependency graph adds to a job's round trip, for callgrind: run with a mode and
//! a count, twice with two counts, and divide the difference in instructions by the
//! difference in counts (start-up cancels out).
//!
//! ```text
//! cargo build --release -p leaseq-core --example graph_cost
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/graph_cost batch 10000
//! ```
//!
//! Modes: `plain` (push, receive, ack: the baseline); `checked` (the same, and the
//! driver's `Graph::tracks` after each ack on an empty graph: what jobs without
//! dependencies pay); `batch` (a batch of n children and one callback: each child
//! released, pushed, named with `queued`, received, acked and settled, then the callback);
//! `chain` (n jobs, each waiting for the one before).

use std::hint::black_box;
use std::time::Duration;

use leaseq_core::graph::{BatchOn, Changes, Fate, Graph, OnFailedParent};
use leaseq_core::{Config, Queue, Timestamp};

fn push_ready(q: &mut Queue<u64>, g: &mut Graph<u64>, changes: Changes<u64>, now: Timestamp) {
    for (node, item) in changes.ready {
        let id = q.push(item, now).expect("unbounded queue");
        g.queued(node, id).expect("released node");
    }
}

/// Receives and acks everything, telling the graph of each ack when `graph` is given.
fn drain(q: &mut Queue<u64>, g: &mut Graph<u64>, tell: bool, now: Timestamp) -> u64 {
    let mut n = 0;
    while let Some(lease) = q.receive(now) {
        q.ack(lease.receipt, now).expect("fresh receipt");
        n += 1;
        if tell && g.tracks(lease.id) {
            let changes = g.settle(lease.id, Fate::Acked);
            push_ready(q, g, changes, now);
        }
    }
    n
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "plain".into());
    let n: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let now = Timestamp::ZERO;
    let mut q = Queue::new(Config::new(Duration::from_secs(30))).expect("valid config");
    let mut g: Graph<u64> = Graph::new();
    let done = match mode.as_str() {
        "plain" | "checked" => {
            for i in 0..n {
                q.push(i, now).expect("unbounded queue");
            }
            drain(&mut q, &mut g, mode == "checked", now)
        }
        "batch" => {
            let added = g.add_batch(0..n, u64::MAX, BatchOn::Complete);
            push_ready(&mut q, &mut g, added.changes, now);
            drain(&mut q, &mut g, true, now)
        }
        "chain" => {
            let first = g.add(0, &[], OnFailedParent::Cancel).expect("no parent");
            let mut last = first.node;
            push_ready(&mut q, &mut g, first.changes, now);
            for i in 1..n {
                let added = g
                    .add(i, &[last], OnFailedParent::Cancel)
                    .expect("known parent");
                last = added.node;
            }
            drain(&mut q, &mut g, true, now)
        }
        other => {
            eprintln!("unknown mode {other:?}: plain, checked, batch or chain");
            std::process::exit(2);
        }
    };
    black_box(done);
    println!("{mode} {n}: {done} jobs acked");
}
