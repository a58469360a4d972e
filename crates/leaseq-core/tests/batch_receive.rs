//! A batch receive whose item's `Clone` panics part way strands no lease: the leases it
//! had not handed out go back, uncounted, and every item is received in the end.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};

use leaseq_core::Queue;

use leaseq_test_kit::core_queue::config;
use leaseq_test_kit::time::ts;

/// Arms the panic of item 5's next clone.
static ARMED: AtomicBool = AtomicBool::new(false);

#[derive(Debug, PartialEq)]
struct Item(u32);

impl Clone for Item {
    fn clone(&self) -> Self {
        if self.0 == 5 && ARMED.swap(false, Ordering::SeqCst) {
            panic!("the clone of item 5");
        }
        Item(self.0)
    }
}

#[test]
fn a_panicking_clone_in_a_batch_receive_strands_no_lease() {
    let mut q = Queue::new(config()).unwrap();
    for n in 0..10 {
        q.push(Item(n), ts(0)).unwrap();
    }
    // A run of ten leased at once, shaped in order: item 5's clone panics.
    ARMED.store(true, Ordering::SeqCst);
    let mut out = Vec::new();
    let panicked = catch_unwind(AssertUnwindSafe(|| q.receive_many(ts(1), 10, &mut out)));
    assert!(panicked.is_err());
    let got: Vec<u32> = out.iter().map(|l| l.item.0).collect();
    assert_eq!(got, [0, 1, 2, 3, 4], "the leases shaped before the panic");
    let s = q.stats();
    assert_eq!(
        (s.in_flight, s.ready),
        (5, 5),
        "the other five put back: {s:?}"
    );
    assert_eq!(s.put_back, 5);
    q.check_invariants().unwrap();

    // Received again, their first attempt still (the put-back took it back).
    let mut again = Vec::new();
    assert_eq!(q.receive_many(ts(2), 10, &mut again), 5);
    let mut rest: Vec<(u32, u32)> = again.iter().map(|l| (l.item.0, l.attempt)).collect();
    rest.sort_unstable();
    assert_eq!(rest, [(5, 1), (6, 1), (7, 1), (8, 1), (9, 1)]);
    for lease in out.into_iter().chain(again) {
        q.ack(lease.receipt, ts(3)).unwrap();
    }
    assert!(q.is_empty());
    q.check_invariants().unwrap();
}
