//! Per-worker records: each worker counts its outcomes and handling times in a shard of its
//! own, so that no lock is shared per item; readers merge the shards.

use std::cmp::Ordering as Order;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use leaseq_core::{LatencyAdvisor, Outcome};
use parking_lot::Mutex;

/// One worker's records (kept by its slot: a worker restarted in its place goes on with
/// them). Aligned to its own cache lines, so that workers recording at once do not share one.
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct Shard {
    /// Locked by its worker once per item, by readers when they merge.
    records: Mutex<Records>,
    /// Settles refused because the lease had been lost.
    stale_settles: AtomicU64,
    /// Settles the store could not make durable (not done, or outcome unknown).
    failed_settles: AtomicU64,
}

/// An item type's name as the shards key it: its text's order, found equal by address
/// first. A pool's type names come from its item-type function, nearly always the same few
/// `&'static str`s, so a record's lookup compares pointers rather than calling `memcmp`
/// (2 comparisons, not 44 instructions, per item; the order is the text's either way).
#[derive(Clone, Copy, Debug)]
pub(crate) struct TypeName(pub(crate) &'static str);

impl PartialEq for TypeName {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0) || self.0 == other.0
    }
}

impl Eq for TypeName {}

impl PartialOrd for TypeName {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<Order> {
        Some(self.cmp(other))
    }
}

impl Ord for TypeName {
    #[inline]
    fn cmp(&self, other: &Self) -> Order {
        if std::ptr::eq(self.0, other.0) {
            Order::Equal
        } else {
            self.0.cmp(other.0)
        }
    }
}

/// What a shard records under its lock.
#[derive(Default)]
pub(crate) struct Records {
    /// Outcomes and handling times per item type.
    pub(crate) advisor: LatencyAdvisor<TypeName>,
    /// Handler errors that were permanent (counted as `Failed` in the advisor too).
    pub(crate) permanent: u64,
}

impl Shard {
    /// Records one handling.
    pub(crate) fn record(
        &self,
        item_type: &'static str,
        took: Duration,
        outcome: Outcome,
        permanent: bool,
    ) {
        let mut r = self.records.lock();
        r.advisor.record(TypeName(item_type), took, outcome);
        r.permanent += u64::from(permanent);
    }

    /// Counts a settle refused for a lost lease.
    pub(crate) fn stale_settle(&self) {
        self.stale_settles.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a settle the store failed.
    pub(crate) fn failed_settle(&self) {
        self.failed_settles.fetch_add(1, Ordering::Relaxed);
    }
}

/// Every worker's shard, by worker index.
pub(crate) struct Shards(Box<[Shard]>);

/// The shards merged.
pub(crate) struct Merged {
    pub(crate) records: Records,
    pub(crate) stale_settles: u64,
    pub(crate) failed_settles: u64,
}

impl Shards {
    pub(crate) fn new(workers: usize) -> Self {
        Shards((0..workers).map(|_| Shard::default()).collect())
    }

    /// Worker `index`'s shard.
    pub(crate) fn get(&self, index: usize) -> &Shard {
        &self.0[index]
    }

    /// The records of every shard, merged (each shard locked in turn, briefly).
    pub(crate) fn merged(&self) -> Merged {
        let mut merged = Merged {
            records: Records::default(),
            stale_settles: 0,
            failed_settles: 0,
        };
        for shard in self.0.iter() {
            {
                let r = shard.records.lock();
                merged.records.advisor.merge(&r.advisor);
                merged.records.permanent += r.permanent;
            }
            merged.stale_settles += shard.stale_settles.load(Ordering::Relaxed);
            merged.failed_settles += shard.failed_settles.load(Ordering::Relaxed);
        }
        merged
    }
}
