//! Benchmarks of the `leaseq-core` state machine, with a bare `VecDeque` baseline in the
//! same run.
//!
//! Run with `cargo bench --features bench --bench core`. Every operation takes an explicit `now`; the
//! benchmarks advance a fake clock by 1 ns per operation, with a visibility timeout far
//! longer than any run, so that no lease expires unless a benchmark makes it.
//!
//! * `push_receive_ack/{u64,arc64}/N`: steady state with N items queued: each iteration
//!   pushes one item, receives one (the oldest) and acks it.
//! * `push_receive_ack/{levels8,keyed,levels8_keyed}/u64/N`: the same with priority levels
//!   and unique keys. `levels8`: the N items are spread evenly over the 8 levels and each
//!   iteration pushes at level 7 (`push_with`), so the receive takes the oldest level-7 item
//!   while the 7 lower levels stay queued. `keyed`: one level, a unique key (8 bytes) on
//!   every item. `levels8_keyed`: both.
//! * `vecdeque/{u64,arc64}/N`: the same item flow through a bare `VecDeque` (`push_back` +
//!   `pop_front`), the floor any queue pays.
//! * `batch16/u64/N`: 16 pushes, one `receive_many` of 16 and one `ack_many` of 16.
//! * `extend/N`: N leases held, each iteration extends the next one round-robin.
//! * `handle_timeout/N`: N leases expire at once; one iteration is one `handle_timeout`.
//!
//! Before the timed benchmarks, a counting global allocator measures the bytes allocated per
//! queued item (ready, and in flight) and the largest lease index seen while extending; they
//! are printed as `memory:` lines.

// `criterion_group!` defines an undocumented public function.
#![allow(missing_docs)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::VecDeque;
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use leaseq_core::{Config, Lease, PushOptions, Queue, Receipt, Timestamp};

// ----- a counting allocator ------------------------------------------------------------

/// Counts the bytes currently allocated through it.
struct Counting;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; the counter is only
// bookkeeping.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) };
        ALLOCATED.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            ALLOCATED.fetch_sub(layout.size(), Ordering::Relaxed);
            ALLOCATED.fetch_add(new_size, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocated() -> usize {
    ALLOCATED.load(Ordering::Relaxed)
}

// ----- set-up ----------------------------------------------------------------------------

/// Queue sizes for the steady-state benchmarks.
const SIZES: [usize; 3] = [1_000, 100_000, 1_000_000];

/// An `Arc`'d item of 64 bytes, the way the async adapters queue items.
type Item64 = Arc<[u8; 64]>;

/// Far longer than any run: no lease expires by itself.
fn config() -> Config {
    Config::new(Duration::from_secs(3600))
}

/// A fake clock: 1 ns per tick.
struct Clock(u64);

impl Clock {
    #[inline]
    fn tick(&mut self) -> Timestamp {
        self.0 += 1;
        Timestamp::from_nanos(self.0)
    }
}

fn filled<T: Clone>(n: usize, mut item: impl FnMut(usize) -> T, clock: &mut Clock) -> Queue<T> {
    let mut q = Queue::new(config()).expect("valid config");
    for i in 0..n {
        q.push(item(i), clock.tick()).expect("no capacity limit");
    }
    q
}

/// How the `levels8` / `keyed` rows push: the level of item `i` while filling, the level of
/// the steady-state pushes, and whether every item has a key.
#[derive(Clone, Copy)]
struct Shape {
    levels: bool,
    keyed: bool,
}

impl Shape {
    #[inline]
    fn options(self, n: u64, fill: bool) -> PushOptions {
        let level = match (self.levels, fill) {
            (false, _) => 0,
            (true, true) => (n % 8) as u8,
            (true, false) => 7,
        };
        let o = PushOptions::new().priority(level);
        if self.keyed {
            o.key(n.to_le_bytes())
        } else {
            o
        }
    }
}

fn filled_shaped(n: usize, shape: Shape, clock: &mut Clock) -> Queue<u64> {
    let mut q = Queue::new(config()).expect("valid config");
    for i in 0..n as u64 {
        q.push_with(i, clock.tick(), shape.options(i, true))
            .expect("no capacity limit, distinct keys");
    }
    q
}

/// A steady-state step of the `levels8` / `keyed` rows.
#[inline]
fn step_shaped(q: &mut Queue<u64>, item: u64, shape: Shape, clock: &mut Clock) {
    let now = clock.tick();
    q.push_with(item, now, shape.options(item, false))
        .expect("no capacity limit, distinct keys");
    let lease = q.receive(now).expect("queue is not empty");
    let Lease { item, receipt, .. } = lease;
    black_box(item);
    q.ack(receipt, now).expect("lease is held");
}

/// One steady-state step: push one, receive the oldest, ack it.
#[inline]
fn step<T: Clone>(q: &mut Queue<T>, item: T, clock: &mut Clock) {
    let now = clock.tick();
    q.push(item, now).expect("no capacity limit");
    let lease = q.receive(now).expect("queue is not empty");
    let Lease { item, receipt, .. } = lease;
    black_box(item);
    q.ack(receipt, now).expect("lease is held");
}

fn pool(n: usize) -> Vec<Item64> {
    (0..n).map(|i| Arc::new([i as u8; 64])).collect()
}

// ----- memory ----------------------------------------------------------------------------

fn bytes_per_item() {
    for n in SIZES {
        let before = allocated();
        let mut clock = Clock(0);
        let mut q = filled(n, |i| i as u64, &mut clock);
        let ready = allocated() - before;
        let now = clock.tick();
        let mut receipts = Vec::with_capacity(n);
        let before_receipts = allocated();
        for _ in 0..n {
            receipts.push(q.receive(now).expect("item").receipt);
        }
        let receipts_bytes = allocated() - before_receipts;
        let in_flight = allocated() - before - receipts_bytes;
        println!(
            "memory: Queue<u64> with {n} items: {:.1} bytes/item ready, {:.1} bytes/item in flight",
            ready as f64 / n as f64,
            in_flight as f64 / n as f64,
        );
        drop(receipts);
        drop(q);
    }
    for n in SIZES {
        let before = allocated();
        let mut clock = Clock(0);
        let shape = Shape {
            levels: true,
            keyed: true,
        };
        let q = filled_shaped(n, shape, &mut clock);
        println!(
            "memory: Queue<u64> with {n} items over 8 levels, each with an 8-byte key: {:.1} bytes/item ready (key table: {} entries)",
            (allocated() - before) as f64 / n as f64,
            q.index_sizes().keys,
        );
        drop(q);
    }
    let n = 100_000;
    let items = pool(n);
    let before = allocated();
    let mut clock = Clock(0);
    let q = filled(n, |i| Arc::clone(&items[i]), &mut clock);
    println!(
        "memory: Queue<Arc<[u8; 64]>> with {n} items: {:.1} bytes/item ready (the Arcs themselves not counted)",
        (allocated() - before) as f64 / n as f64,
    );
    drop(q);
}

/// Extends every lease of a queue with `n` in flight a few times over and reports the
/// largest lease index seen against the bound `2 x live + 64`.
fn lease_index_bound() {
    for n in [10_000usize, 1_000_000] {
        let mut clock = Clock(0);
        let mut q = filled(n, |i| i as u64, &mut clock);
        let receipts: Vec<Receipt> = (0..n)
            .map(|_| q.receive(clock.tick()).expect("item").receipt)
            .collect();
        let mut max = 0;
        for k in 0..3 * n {
            q.extend(receipts[k % n], clock.tick(), Duration::from_secs(3600))
                .expect("held");
            max = max.max(q.index_sizes().leases);
        }
        println!(
            "memory: {n} leases held, 3x{n} round-robin extends: lease index peaked at {max} entries ({:.2} x live; bound 2 x live + 64 = {})",
            max as f64 / n as f64,
            2 * n + 64,
        );
    }
}

// ----- timed benchmarks ------------------------------------------------------------------

fn steady_state(c: &mut Criterion) {
    bytes_per_item();
    lease_index_bound();

    let mut g = c.benchmark_group("push_receive_ack");
    g.throughput(Throughput::Elements(1));
    for n in SIZES {
        let mut clock = Clock(0);
        let mut q = filled(n, |i| i as u64, &mut clock);
        let mut next = n as u64;
        g.bench_function(format!("u64/{n}"), |b| {
            b.iter(|| {
                next += 1;
                step(&mut q, next, &mut clock);
            })
        });
    }
    for (name, shape) in [
        (
            "levels8",
            Shape {
                levels: true,
                keyed: false,
            },
        ),
        (
            "keyed",
            Shape {
                levels: false,
                keyed: true,
            },
        ),
        (
            "levels8_keyed",
            Shape {
                levels: true,
                keyed: true,
            },
        ),
    ] {
        for n in SIZES {
            let mut clock = Clock(0);
            let mut q = filled_shaped(n, shape, &mut clock);
            let mut next = n as u64;
            g.bench_function(format!("{name}/u64/{n}"), |b| {
                b.iter(|| {
                    next += 1;
                    step_shaped(&mut q, next, shape, &mut clock);
                })
            });
        }
    }
    for n in SIZES {
        // One distinct Arc per queued item: the item received is the one pushed n steps
        // earlier, so its reference count is as cold as the queue is long.
        let items = pool(n);
        let mut clock = Clock(0);
        let mut q = filled(n, |i| Arc::clone(&items[i]), &mut clock);
        let mut k = 0;
        g.bench_function(format!("arc64/{n}"), |b| {
            b.iter(|| {
                step(&mut q, Arc::clone(&items[k]), &mut clock);
                k += 1;
                if k == n {
                    k = 0;
                }
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("vecdeque");
    g.throughput(Throughput::Elements(1));
    for n in SIZES {
        let mut d: VecDeque<u64> = (0..n as u64).collect();
        let mut next = n as u64;
        g.bench_function(format!("u64/{n}"), |b| {
            b.iter(|| {
                next += 1;
                d.push_back(next);
                black_box(d.pop_front());
            })
        });
    }
    for n in SIZES {
        let items = pool(n);
        let mut d: VecDeque<Item64> = items.iter().cloned().collect();
        let mut k = 0;
        g.bench_function(format!("arc64/{n}"), |b| {
            b.iter(|| {
                d.push_back(Arc::clone(&items[k]));
                black_box(d.pop_front());
                k += 1;
                if k == n {
                    k = 0;
                }
            })
        });
    }
    g.finish();
}

fn batches(c: &mut Criterion) {
    const BATCH: usize = 16;
    let mut g = c.benchmark_group("batch16");
    g.throughput(Throughput::Elements(BATCH as u64));
    for n in SIZES {
        let mut clock = Clock(0);
        let mut q = filled(n, |i| i as u64, &mut clock);
        let mut next = n as u64;
        let mut leases = Vec::with_capacity(BATCH);
        let mut receipts = Vec::with_capacity(BATCH);
        g.bench_function(format!("u64/{n}"), |b| {
            b.iter(|| {
                let now = clock.tick();
                for _ in 0..BATCH {
                    next += 1;
                    q.push(next, now).expect("no capacity limit");
                }
                let got = q.receive_many(now, BATCH, &mut leases);
                debug_assert_eq!(got, BATCH);
                receipts.clear();
                receipts.extend(leases.drain(..).map(|l| l.receipt));
                let acked = q.ack_many(&receipts, now);
                debug_assert_eq!(acked, BATCH);
            })
        });
    }
    g.finish();
}

fn extend(c: &mut Criterion) {
    let mut g = c.benchmark_group("extend");
    g.throughput(Throughput::Elements(1));
    for n in [10_000usize, 1_000_000] {
        let mut clock = Clock(0);
        let mut q = filled(n, |i| i as u64, &mut clock);
        let receipts: Vec<Receipt> = (0..n)
            .map(|_| q.receive(clock.tick()).expect("item").receipt)
            .collect();
        let mut k = 0;
        g.bench_function(format!("round_robin/{n}"), |b| {
            b.iter(|| {
                let r = q.extend(receipts[k], clock.tick(), Duration::from_secs(3600));
                black_box(r.expect("held"));
                k += 1;
                if k == n {
                    k = 0;
                }
            })
        });
    }
    g.finish();
}

fn handle_timeout(c: &mut Criterion) {
    let mut g = c.benchmark_group("handle_timeout");
    for n in [1_000usize, 100_000] {
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function(format!("expire_all/{n}"), |b| {
            b.iter_batched_ref(
                || {
                    let mut clock = Clock(0);
                    let mut q = filled(n, |i| i as u64, &mut clock);
                    let now = clock.tick();
                    for _ in 0..n {
                        black_box(q.receive(now).expect("item"));
                    }
                    (q, now.saturating_add(Duration::from_secs(3600)))
                },
                |(q, deadline)| {
                    q.handle_timeout(*deadline);
                    debug_assert_eq!(q.stats().lease_expired, n as u64);
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

fn timing() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
}

criterion_group! {
    name = benches;
    config = timing();
    targets = steady_state, batches, extend, handle_timeout
}
criterion_main!(benches);
