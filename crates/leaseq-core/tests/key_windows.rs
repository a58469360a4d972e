//! Unique keys' windows (`Queue::push_windowed`): each window's unit case (simple,
//! queued, throttle, held after finishing, debounce), then a seeded property test against
//! a model over random pushes, leases, acks, put-backs and a clock that steps back: a push
//! goes in exactly when the last accepted push of its key no longer holds it in the
//! queue's time, and a refusal names that push.

use std::collections::BTreeMap;
use std::time::Duration;

use leaseq_core::{
    Backoff, Config, KeyWindow, MessageId, PushError, PushOptions, Queue, Receipt, Timestamp,
};
use leaseq_test_kit::seeded::seed_config;
use leaseq_test_kit::time::at_ms as ts;
use proptest::prelude::*;

fn queue() -> Queue<u32> {
    let config = Config::new(Duration::from_secs(600))
        .with_backoff(Backoff::None)
        .with_max_attempts(1_000);
    Queue::new(config).unwrap()
}

fn key() -> PushOptions {
    PushOptions::new().key("k")
}

fn refused_by(r: Result<MessageId, PushError<u32>>) -> Option<MessageId> {
    match r {
        Err(PushError::DuplicateKey { existing, .. }) => Some(existing),
        _ => None,
    }
}

/// A new queue holding item 1, pushed at 0 with key `k` under window `w`: the queue and
/// the item's id.
fn holding(w: KeyWindow) -> (Queue<u32>, MessageId) {
    let mut q = queue();
    let id = q.push_windowed(1, ts(0), key(), w).unwrap();
    (q, id)
}

#[test]
fn queued_frees_the_key_once_the_holder_runs() {
    let (mut q, a) = holding(KeyWindow::Queued);
    assert_eq!(
        refused_by(q.push_windowed(2, ts(0), key(), KeyWindow::Queued)),
        Some(a)
    );
    let lease = q.receive(ts(1)).unwrap();
    let b = q.push_windowed(3, ts(2), key(), KeyWindow::Queued).unwrap();
    assert_eq!(q.key_holder("k"), Some(b));
    // The first comes back: it no longer holds the key.
    q.put_back(lease.receipt, ts(3)).unwrap();
    assert_eq!(
        refused_by(q.push_windowed(4, ts(3), key(), KeyWindow::Queued)),
        Some(b)
    );
    q.check_invariants().unwrap();
}

#[test]
fn period_throttles_from_the_push_whatever_the_item_does() {
    let w = KeyWindow::Period(Duration::from_millis(100));
    let (mut q, a) = holding(w);
    // Still queued past the period: the next push goes in, and the first lets the key go.
    assert_eq!(refused_by(q.push_windowed(2, ts(99), key(), w)), Some(a));
    let b = q.push_windowed(3, ts(100), key(), w).unwrap();
    assert_eq!(q.len(), 2);
    // Finished early: the key is held to the end of its period.
    let lease = q.receive(ts(100)).unwrap();
    assert_eq!(lease.id, a);
    q.ack(lease.receipt, ts(100)).unwrap();
    let lease = q.receive(ts(101)).unwrap();
    q.ack(lease.receipt, ts(101)).unwrap();
    assert_eq!(q.key_holder("k"), Some(b));
    assert_eq!(refused_by(q.push_windowed(4, ts(199), key(), w)), Some(b));
    assert!(q.push_windowed(5, ts(200), key(), w).is_ok());
    q.check_invariants().unwrap();
}

#[test]
fn live_then_holds_the_key_after_the_item_leaves() {
    let w = KeyWindow::LiveThen(Duration::from_millis(50));
    let (mut q, a) = holding(w);
    let lease = q.receive(ts(1_000)).unwrap();
    assert_eq!(refused_by(q.push_windowed(2, ts(1_000), key(), w)), Some(a));
    q.ack(lease.receipt, ts(1_010)).unwrap();
    assert_eq!(refused_by(q.push_windowed(3, ts(1_059), key(), w)), Some(a));
    assert!(q.push_windowed(4, ts(1_060), key(), w).is_ok());
    // The default window frees the key at once.
    let mut q = queue();
    q.push_windowed(1, ts(0), key(), KeyWindow::Live).unwrap();
    let lease = q.receive(ts(0)).unwrap();
    q.ack(lease.receipt, ts(0)).unwrap();
    assert!(q.push_windowed(2, ts(0), key(), KeyWindow::Live).is_ok());
}

#[test]
fn period_with_replace_pending_debounces() {
    let mut q = queue();
    let d = KeyWindow::Period(Duration::from_millis(200));
    let w = PushOptions::new()
        .key("k")
        .replace_pending()
        .delay(Duration::from_millis(100));
    // Each push within the window replaces the waiting one and restarts the delay.
    q.push_windowed(1, ts(0), w, d).unwrap();
    q.push_windowed(2, ts(50), w, d).unwrap();
    let last = q.push_windowed(3, ts(90), w, d).unwrap();
    assert_eq!((q.len(), q.stats().replaced), (1, 2));
    assert!(q.receive(ts(189)).is_none());
    let lease = q.receive(ts(190)).unwrap();
    assert_eq!((lease.id, lease.item), (last, 3));
    // Running: nothing waits to be replaced, so the push is refused, naming the holder.
    assert_eq!(refused_by(q.push_windowed(4, ts(190), w, d)), Some(last));
    q.ack(lease.receipt, ts(191)).unwrap();
    // Finished within its window (to 290): refused too, as a throttle.
    assert_eq!(refused_by(q.push_windowed(5, ts(289), w, d)), Some(last));
    assert!(q.push_windowed(6, ts(290), w, d).is_ok());
}

#[derive(Clone, Debug)]
enum Op {
    Push(u8, u8),
    Receive,
    Ack(usize),
    PutBack(usize),
    Clock(i64),
}

fn window(w: u8) -> KeyWindow {
    match w {
        0 => KeyWindow::Live,
        1 => KeyWindow::Queued,
        2 => KeyWindow::Period(Duration::from_millis(20)),
        _ => KeyWindow::LiveThen(Duration::from_millis(15)),
    }
}

/// The model of one accepted push: its window, when it went in, whether it is running,
/// and when it left.
#[derive(Clone, Copy, Debug)]
struct Held {
    id: MessageId,
    window: KeyWindow,
    pushed: Timestamp,
    running: bool,
    left: Option<Timestamp>,
}

impl Held {
    /// Whether it still holds its key at `now` (the queue's time).
    fn holds(&self, now: Timestamp) -> bool {
        match (self.window, self.left) {
            (KeyWindow::Live, left) => left.is_none(),
            (KeyWindow::Queued, left) => left.is_none() && !self.running,
            (KeyWindow::Period(d), _) => now < self.pushed.saturating_add(d),
            (KeyWindow::LiveThen(_), None) => true,
            (KeyWindow::LiveThen(d), Some(at)) => now < at.saturating_add(d),
            _ => unreachable!(),
        }
    }
}

proptest! {
    #![proptest_config(seed_config(400, 0x7a7e_0002))]

    #[test]
    fn a_key_goes_to_a_push_exactly_when_its_window_lets_it(
        ops in proptest::collection::vec(prop_oneof![
            4 => (0..2u8, 0..4u8).prop_map(|(k, w)| Op::Push(k, w)),
            3 => Just(Op::Receive),
            3 => any::<usize>().prop_map(Op::Ack),
            1 => any::<usize>().prop_map(Op::PutBack),
            3 => (-25..15i64).prop_map(Op::Clock),
        ], 1..200),
    ) {
        let mut q = queue();
        let mut t: u64 = 1_000;
        // The last accepted push of each key, and the leases held (with their key).
        let mut last: BTreeMap<u8, Held> = BTreeMap::new();
        let mut keys: BTreeMap<MessageId, u8> = BTreeMap::new();
        let mut leases: Vec<(MessageId, Receipt)> = Vec::new();
        for op in ops {
            match op {
                Op::Push(k, w) => {
                    let options = PushOptions::new().key([k]);
                    let got = q.push_windowed(0, ts(t), options, window(w));
                    let now = q.now();
                    let holder = last.get(&k).filter(|h| h.holds(now));
                    match (got, holder) {
                        (Ok(id), None) => {
                            last.insert(k, Held { id, window: window(w), pushed: now, running: false, left: None });
                            keys.insert(id, k);
                        }
                        (Err(PushError::DuplicateKey { existing, .. }), Some(h)) => {
                            prop_assert_eq!(existing, h.id);
                        }
                        (got, holder) => prop_assert!(false, "{:?} with holder {:?} at {:?}", got.map_err(|e| e.existing()), holder, now),
                    }
                }
                Op::Receive => {
                    if let Some(lease) = q.receive(ts(t)) {
                        let k = keys[&lease.id];
                        if let Some(h) = last.get_mut(&k).filter(|h| h.id == lease.id) {
                            h.running = true;
                        }
                        leases.push((lease.id, lease.receipt));
                    }
                }
                Op::Ack(i) | Op::PutBack(i) if !leases.is_empty() => {
                    let (id, receipt) = leases.swap_remove(i % leases.len());
                    let ack = matches!(op, Op::Ack(_));
                    if ack {
                        q.ack(receipt, ts(t)).unwrap();
                    } else {
                        q.put_back(receipt, ts(t)).unwrap();
                    }
                    let now = q.now();
                    if let Some(h) = last.get_mut(&keys[&id]).filter(|h| h.id == id) {
                        h.running = false;
                        if ack {
                            h.left = Some(now);
                        }
                    }
                }
                Op::Clock(ms) => {
                    t = t.saturating_add_signed(ms);
                    q.handle_timeout(ts(t));
                }
                _ => {}
            }
            q.check_invariants().map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        }
    }
}

#[test]
fn a_plain_keyed_push_holds_its_key_while_live_and_a_window_without_key_does_nothing() {
    let mut q = queue();
    let a = q.push_with(1, ts(0), key()).unwrap();
    let lease = q.receive(ts(0)).unwrap();
    assert_eq!(refused_by(q.push_with(2, ts(0), key())), Some(a));
    q.ack(lease.receipt, ts(0)).unwrap();
    assert!(q.push_with(3, ts(0), key()).is_ok());
    let period = KeyWindow::Period(Duration::from_secs(1));
    q.push_windowed(4, ts(0), PushOptions::new(), period)
        .unwrap();
    q.push_windowed(5, ts(0), PushOptions::new(), period)
        .unwrap();
    assert_eq!(q.len(), 3);
}
