//! The settler's choice of work (`settler.rs`): told acks held back while no told slot is
//! free.

use super::*;

fn ack(id: i64, plain: bool) -> AckOp {
    AckOp {
        id,
        lease: 1,
        plain,
        resent: false,
        since: std::time::Instant::now(),
        reply: tokio::sync::oneshot::channel().0,
    }
}

fn queued(acks: Vec<AckOp>) -> Settles {
    let s = Settles::default();
    s.queue.lock().acks = acks;
    s
}

fn ids(acks: &[AckOp]) -> Vec<i64> {
    acks.iter().map(|a| a.id).collect()
}

#[test]
fn told_acks_stay_queued_while_no_told_slot_is_free() {
    let s = queued(vec![
        ack(1, false),
        ack(2, true),
        ack(3, false),
        ack(4, true),
    ]);
    assert!(Work::takeable(&s, false));
    let w = Work::take(&s, || false).expect("the bare acks");
    assert_eq!(ids(&w.acks), [2, 4]);
    assert!(!w.told);
    assert_eq!(
        ids(&s.queue.lock().acks),
        [1, 3],
        "told acks kept, in order"
    );
    // Nothing more to take without a told slot: no batch, no wake-up for it.
    assert!(Work::take(&s, || false).is_none());
    assert!(!Work::takeable(&s, false));
    assert!(Work::takeable(&s, true));
    let w = Work::take(&s, || true).expect("the told acks");
    assert_eq!(ids(&w.acks), [1, 3]);
    assert!(w.told, "the batch holds the told slot");
    assert!(s.queue.lock().is_empty());
}

#[test]
fn a_told_slot_is_asked_for_only_when_told_acks_are_queued() {
    let s = queued(vec![ack(1, true), ack(2, true)]);
    let w = Work::take(&s, || panic!("no told ack queued")).expect("the bare acks");
    assert_eq!(ids(&w.acks), [1, 2]);
    assert!(!w.told);
    // With a slot, everything goes at once, bare acks too.
    let s = queued(vec![ack(1, true), ack(2, false)]);
    let w = Work::take(&s, || true).expect("all");
    assert_eq!(ids(&w.acks), [1, 2]);
    assert!(w.told);
}

#[test]
fn other_work_is_taken_while_told_acks_wait() {
    let s = queued(vec![ack(1, false)]);
    s.queue.lock().unclaims.push((7, 1));
    let w = Work::take(&s, || false).expect("the unclaim");
    assert!(w.acks.is_empty());
    assert_eq!(w.unclaims, [(7, 1)]);
    assert_eq!(ids(&s.queue.lock().acks), [1]);
}
