//! The core's push + receive + ack round trip, timed in a tight loop.

use std::collections::VecDeque;
use std::hint::black_box;
use std::time::{Duration, Instant};

use leaseq_core::{Config, MessageId, PushOptions, Queue, Timestamp};

/// Nanoseconds per push + receive + ack of a `u64` item with `queued` items already in the
/// queue, over `iterations` round trips, and the same loop on a bare `VecDeque`
/// (push_back + pop_front) as the baseline: `(leaseq_ns, vecdeque_ns)`.
pub fn core_roundtrip_ns(queued: usize, iterations: u64) -> (f64, f64) {
    let leaseq = core_loop_ns(Shape::Plain, queued, iterations);

    let mut d: VecDeque<u64> = (0..queued as u64).collect();
    let start = Instant::now();
    for i in 0..iterations {
        d.push_back(black_box(i));
        black_box(d.pop_front());
    }
    let baseline = start.elapsed().as_nanos() as f64 / iterations as f64;
    (leaseq, baseline)
}

/// What the items of [`core_loop_ns`] carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Level 0, no key: `push`.
    Plain,
    /// The queued items spread over the 8 levels (item `i` at level `i % 8`), the round
    /// trip's items at level 7, so that the 7 lower levels stay queued.
    Levels8,
    /// Level 0, an 8-byte unique key on every item.
    Keyed,
    /// Both.
    Levels8Keyed,
    /// Level 0, no key, pushed as the memory store's inbox pushes: `push_with_id` with ids
    /// handed out in order and default options.
    WithId,
    /// `WithId` in batches of 16, as the memory store serves batches: 16 pushes, one
    /// `receive_many` of 16, 16 `ack_take`s (the figure is still per item).
    Batch16,
}

impl Shape {
    /// The shape named `name`: `plain`, `levels8`, `keyed`, `levels8_keyed`, `with_id` or
    /// `batch16`.
    pub fn parse(name: &str) -> Option<Shape> {
        Some(match name {
            "plain" => Shape::Plain,
            "levels8" => Shape::Levels8,
            "keyed" => Shape::Keyed,
            "levels8_keyed" => Shape::Levels8Keyed,
            "with_id" => Shape::WithId,
            "batch16" => Shape::Batch16,
            _ => return None,
        })
    }

    fn options(self, n: u64, fill: bool) -> PushOptions {
        let levels = matches!(self, Shape::Levels8 | Shape::Levels8Keyed);
        let level = match (levels, fill) {
            (false, _) => 0,
            (true, true) => (n % 8) as u8,
            (true, false) => 7,
        };
        let o = PushOptions::new().priority(level);
        if matches!(self, Shape::Keyed | Shape::Levels8Keyed) {
            o.key(n.to_le_bytes())
        } else {
            o
        }
    }
}

/// Nanoseconds per push + receive + ack of a `u64` item of `shape` with `queued` items
/// already in the queue, over `iterations` round trips; nothing else runs in the loop, so
/// that `valgrind --tool=callgrind` on two iteration counts gives the instructions of one
/// round trip (`bench_summary --core`, `benches/instructions.sh`). `Shape::Plain` pushes
/// with `push`, `Shape::WithId` and `Shape::Batch16` with `push_with_id`, the others with
/// `push_with`.
pub fn core_loop_ns(shape: Shape, queued: usize, iterations: u64) -> f64 {
    let mut q = Queue::new(Config::new(Duration::from_secs(30))).expect("valid config");
    for i in 0..queued as u64 {
        if matches!(shape, Shape::Plain | Shape::WithId | Shape::Batch16) {
            q.push(i, Timestamp::ZERO).expect("no capacity limit");
        } else {
            q.push_with(i, Timestamp::ZERO, shape.options(i, true))
                .expect("no capacity limit, distinct keys");
        }
    }
    let start = Instant::now();
    match shape {
        Shape::Plain => plain_loop(&mut q, iterations),
        Shape::WithId => with_id_loop(&mut q, queued as u64, iterations),
        Shape::Batch16 => batch16_loop(&mut q, queued as u64, iterations),
        _ => options_loop(&mut q, shape, queued as u64, iterations),
    }
    start.elapsed().as_nanos() as f64 / iterations as f64
}

// Each loop is a function of its own, so that the code of one does not change how the
// compiler lays out another (which moves a count by a few instructions).

#[inline(never)]
fn plain_loop(q: &mut Queue<u64>, iterations: u64) {
    for i in 0..iterations {
        let now = Timestamp::from_nanos(i);
        q.push(black_box(i), now).expect("no capacity limit");
        let lease = q.receive(now).expect("an item is ready");
        black_box(q.ack(lease.receipt, now)).expect("fresh receipt");
    }
}

#[inline(never)]
fn with_id_loop(q: &mut Queue<u64>, queued: u64, iterations: u64) {
    for i in 0..iterations {
        let now = Timestamp::from_nanos(i);
        let id = MessageId::new(queued + i);
        q.push_with_id(id, black_box(i), now, PushOptions::new())
            .expect("no capacity limit, ids in order");
        let lease = q.receive(now).expect("an item is ready");
        black_box(q.ack(lease.receipt, now)).expect("fresh receipt");
    }
}

/// `iterations` items in batches of 16 (the last batch shorter).
#[inline(never)]
fn batch16_loop(q: &mut Queue<u64>, queued: u64, iterations: u64) {
    let mut leases = Vec::with_capacity(16);
    let mut i = 0;
    while i < iterations {
        let now = Timestamp::from_nanos(i);
        let end = (i + 16).min(iterations);
        for n in i..end {
            q.push_with_id(
                MessageId::new(queued + n),
                black_box(n),
                now,
                PushOptions::new(),
            )
            .expect("no capacity limit, ids in order");
        }
        let got = q.receive_many(now, 16, &mut leases);
        assert_eq!(got as u64, end - i, "every item pushed is ready");
        for lease in leases.drain(..) {
            black_box(q.ack_take(lease.receipt, now)).expect("fresh receipt");
        }
        i = end;
    }
}

#[inline(never)]
fn options_loop(q: &mut Queue<u64>, shape: Shape, queued: u64, iterations: u64) {
    for i in 0..iterations {
        let now = Timestamp::from_nanos(i);
        let n = queued + i;
        q.push_with(black_box(n), now, shape.options(n, false))
            .expect("no capacity limit, distinct keys");
        let lease = q.receive(now).expect("an item is ready");
        black_box(q.ack(lease.receipt, now)).expect("fresh receipt");
    }
}
