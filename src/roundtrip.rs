//! The core's push + receive + ack round trip, timed in a tight loop.

use std::collections::VecDeque;
use std::hint::black_box;
use std::time::{Duration, Instant};

use leaseq_core::{Config, Queue, Timestamp};

/// Nanoseconds per push + receive + ack of a `u64` item with `queued` items already in the
/// queue, over `iterations` round trips, and the same loop on a bare `VecDeque`
/// (push_back + pop_front) as the baseline: `(leaseq_ns, vecdeque_ns)`.
pub fn core_roundtrip_ns(queued: usize, iterations: u64) -> (f64, f64) {
    let mut q = Queue::new(Config::new(Duration::from_secs(30))).expect("valid config");
    let mut now = Timestamp::ZERO;
    for i in 0..queued as u64 {
        q.push(i, now).expect("no capacity limit");
    }
    let start = Instant::now();
    for i in 0..iterations {
        now = Timestamp::from_nanos(i);
        q.push(black_box(i), now).expect("no capacity limit");
        let lease = q.receive(now).expect("an item is ready");
        black_box(q.ack(lease.receipt, now)).expect("fresh receipt");
    }
    let leaseq = start.elapsed().as_nanos() as f64 / iterations as f64;

    let mut d: VecDeque<u64> = (0..queued as u64).collect();
    let start = Instant::now();
    for i in 0..iterations {
        d.push_back(black_box(i));
        black_box(d.pop_front());
    }
    let baseline = start.elapsed().as_nanos() as f64 / iterations as f64;
    (leaseq, baseline)
}
