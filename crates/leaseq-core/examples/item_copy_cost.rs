//! What a receive's copy of the item would cost if it were made after a store's lock, for
//! callgrind (RELIABILITY.md, "known limits": why the memory store still copies the item
//! under its lock). Run with a mode and a count, twice with two counts, and divide the
//! difference in instructions by the difference in counts (start-up cancels out).
//!
//! ```text
//! cargo build --release -p leaseq-core --example item_copy_cost
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/item_copy_cost arc 200000
//! ```
//!
//! Each mode is the core's push + receive + ack of a `u64` with 1,000 queued, as
//! `bench_summary --core plain` runs it, the item held as the mode says: `plain` (the item
//! itself, copied by the core's receive: the baseline); `arc` (each item in an `Arc`,
//! which the receive copies by a count, the holder's `u64` copied from it afterwards, where
//! a store's lock would be released: an allocation at the push, its free at the ack, two
//! atomic counts); `tagged` (the item or an `Arc` of it, a tag saying which: what letting
//! only some items be shared would cost every item).

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use leaseq_core::{Config, Queue, Timestamp};

/// An item, or a shared one.
#[derive(Debug)]
enum Tagged<T> {
    Own(T),
    Shared(Arc<T>),
}

impl<T: Clone> Clone for Tagged<T> {
    fn clone(&self) -> Self {
        match self {
            Tagged::Own(t) => Tagged::Own(t.clone()),
            Tagged::Shared(a) => Tagged::Shared(a.clone()),
        }
    }
}

impl<T: Clone> Tagged<T> {
    fn into_item(self) -> T {
        match self {
            Tagged::Own(t) => t,
            Tagged::Shared(a) => Arc::unwrap_or_clone(a),
        }
    }
}

/// A queue of `wrap`ped items with 1,000 queued.
fn queue<I>(wrap: impl Fn(u64) -> I) -> Queue<I> {
    let mut q = Queue::new(Config::new(Duration::from_secs(30))).expect("valid config");
    for i in 0..1_000 {
        q.push(wrap(i), Timestamp::ZERO).expect("unbounded");
    }
    q
}

#[inline(never)]
fn plain(n: u64) {
    let mut q = queue(|i| i);
    for i in 0..n {
        let now = Timestamp::from_nanos(i);
        q.push(black_box(i), now).expect("unbounded");
        let lease = q.receive(now).expect("an item is ready");
        black_box(lease.item);
        black_box(q.ack_take(lease.receipt, now).expect("fresh receipt"));
    }
}

#[inline(never)]
fn arc(n: u64) {
    let mut q = queue(Arc::new);
    for i in 0..n {
        let now = Timestamp::from_nanos(i);
        q.push(Arc::new(black_box(i)), now).expect("unbounded");
        let lease = q.receive(now).expect("an item is ready");
        // (After the lock.)
        let item: u64 = *lease.item;
        drop(lease.item);
        black_box(item);
        black_box(q.ack_take(lease.receipt, now).expect("fresh receipt"));
    }
}

#[inline(never)]
fn tagged(n: u64) {
    // (A shared item is never pushed here, but the compiler cannot know it.)
    let wrap = |i| {
        if black_box(false) {
            Tagged::Shared(Arc::new(i))
        } else {
            Tagged::Own(i)
        }
    };
    let mut q = queue(wrap);
    for i in 0..n {
        let now = Timestamp::from_nanos(i);
        q.push(wrap(black_box(i)), now).expect("unbounded");
        let lease = q.receive(now).expect("an item is ready");
        black_box(lease.item.into_item());
        black_box(q.ack_take(lease.receipt, now).expect("fresh receipt"));
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n = args
        .get(1)
        .map_or(200_000, |a| a.parse().expect("a whole number"));
    match args.first().map(String::as_str) {
        Some("plain") => plain(n),
        Some("arc") => arc(n),
        Some("tagged") => tagged(n),
        _ => eprintln!("usage: item_copy_cost plain|arc|tagged [COUNT]"),
    }
}
