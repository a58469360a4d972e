//! `diagnose` tells the truth about whose figures it reads: a worker-only process (pushed 0)
//! gets shares of its own work, with its scope said in the text; no snapshot makes it panic,
//! divide by zero or print a share above 100 %.

use std::time::Duration;

use leaseq_async::{diagnose, Finding, FindingKind, PoolStats};
use leaseq_core::Stats;
use proptest::prelude::*;

const VISIBILITY: Duration = Duration::from_secs(30);

fn only(findings: Vec<Finding>) -> Finding {
    assert_eq!(findings.len(), 1, "{findings:#?}");
    findings.into_iter().next().unwrap()
}

/// A worker-only process (of a shared store): it pushed nothing, took 1000 deliveries, acked
/// 858 and dead-lettered 142. The share is of what it saw leave the queue, and says so.
#[test]
fn dead_letters_of_a_worker_only_process_are_a_share_of_its_own_work() {
    let mut s = Stats::default();
    s.delivered = 1000;
    s.acked = 858;
    s.dead_lettered = 142;
    s.dead = 142;
    let f = only(diagnose(&s, None, VISIBILITY));
    assert_eq!(f.kind, FindingKind::ManyDeadLetters);
    assert_eq!(
        f.message,
        "in this process, 142 of the 1000 items acked, dead-lettered or cancelled here \
         (14.2%) were dead-lettered after using up their attempts or being declared poison; \
         the queue keeps 142 dead letters (as the store last counted them). Inspect their \
         last errors."
    );
}

/// A paused queue says so first, with what waits for the resume.
#[test]
fn a_paused_queue_says_what_waits_for_the_resume() {
    let mut s = Stats::default();
    s.pushed = 12;
    s.ready = 10;
    s.delayed = 2;
    s.paused = true;
    let f = only(diagnose(&s, None, VISIBILITY));
    assert_eq!(f.kind, FindingKind::Paused);
    assert_eq!(
        f.message,
        "the queue is paused: no lease is handed out, and 10 ready and 2 delayed items wait \
         (as the store last counted them); resume it to go on."
    );
    s.paused = false;
    assert!(diagnose(&s, None, VISIBILITY).is_empty());
}

/// Expiries counted by a process that pushed nothing: a share of the items that left the
/// queue here (the expired ones among them), not of its pushes.
#[test]
fn expiries_of_a_worker_only_process_are_a_share_of_its_own_work() {
    let mut s = Stats::default();
    s.delivered = 900;
    s.acked = 880;
    s.dead_lettered = 120;
    s.expired = 100;
    s.cancelled = 0;
    let findings = diagnose(&s, None, VISIBILITY);
    let kinds: Vec<_> = findings.iter().map(|f| f.kind).collect();
    assert_eq!(
        kinds,
        [
            FindingKind::ItemsExpireUnworked,
            FindingKind::ManyDeadLetters
        ]
    );
    assert_eq!(
        findings[0].message,
        "items expire before they are worked: in this process, 100 of the 1000 items acked, \
         dead-lettered or cancelled here (10.0%) passed their own deadline; add workers, \
         shorten item timeouts, or give items longer to live."
    );
    assert!(
        findings[1]
            .message
            .starts_with("in this process, 20 of the 1000 items acked, dead-lettered or cancelled here (2.0%) were dead-lettered"),
        "{}",
        findings[1]
    );
}

/// A process that only takes back run-out leases (a shared store's rescuer counts leases
/// of every process) and delivered nothing: the count is given without a made-up share.
#[test]
fn leases_counted_beyond_this_process_s_deliveries_get_no_share() {
    let mut s = Stats::default();
    s.lease_expired = 60;
    let f = only(diagnose(&s, None, VISIBILITY));
    assert_eq!(f.kind, FindingKind::VisibilityTooShort);
    assert_eq!(
        f.message,
        "visibility (30s) is shorter than real processing time: in this process, 60 (more \
         than the 0 deliveries counted here) outlived their lease and 0 acks came late (0 \
         refused as stale), but only 0 items were dead-lettered. Raise the visibility or turn \
         the heartbeat on."
    );
}

/// A pool's timeouts are a share of that pool's handlings, said so.
#[test]
fn item_timeouts_are_a_share_of_this_pool_s_handlings() {
    let mut p = PoolStats::default();
    p.ok = 95;
    p.timed_out = 5;
    let f = only(diagnose(&Stats::default(), Some(&p), VISIBILITY));
    assert_eq!(f.kind, FindingKind::ItemTimeoutTooShort);
    assert!(
        f.message
            .starts_with("5 of the 100 handlings of this pool (5.0%) hit the item timeout"),
        "{f}"
    );
}

/// Settles the store could not make durable are named, as a share of this pool's work.
#[test]
fn settles_the_store_could_not_make_durable_are_named() {
    let mut p = PoolStats::default();
    p.ok = 198;
    p.failed = 2;
    p.failed_settles = 3;
    let f = only(diagnose(&Stats::default(), Some(&p), VISIBILITY));
    assert_eq!(f.kind, FindingKind::StoreFailures);
    assert_eq!(
        f.message,
        "the store could not make the settle (ack, nack or dead letter) of 3 of the 200 \
         handlings of this pool (1.5%) durable: disk full, file locked or connection lost. \
         Each such item comes back unless its settle landed after all, so it may run again; \
         look at the store's errors."
    );
}

/// The shares printed, `(x%)`, of a message.
fn shares(message: &str) -> Vec<f64> {
    message
        .split('(')
        .skip(1)
        .filter_map(|rest| rest.split_once("%)"))
        .filter_map(|(number, _)| number.parse().ok())
        .collect()
}

fn count() -> impl Strategy<Value = u64> {
    prop_oneof![Just(0), 1..2000u64, Just(u64::MAX - 1), Just(u64::MAX)]
}

proptest! {
    /// Any snapshot, however inconsistent (a shared store's counters and gauges are read
    /// apart; a caller can build any `Stats`): no panic, and no share above 100 %.
    #[test]
    fn any_snapshot_is_diagnosed_without_panic_or_impossible_share(
        queue in proptest::collection::vec(count(), 12),
        pool in proptest::collection::vec(count(), 6),
        with_pool: bool,
        heartbeat: bool,
    ) {
        let mut s = Stats::default();
        s.pushed = queue[0];
        s.delivered = queue[1];
        s.acked = queue[2];
        s.dead_lettered = queue[3];
        s.expired = queue[4];
        s.lease_expired = queue[5];
        s.late_acks_stale = queue[6];
        s.late_acks_unclaimed = queue[7];
        s.cancelled = queue[8];
        s.dead = queue[9];
        s.extends = queue[10];
        s.extends_capped = queue[11];
        let mut p = PoolStats::default();
        p.ok = pool[0];
        p.failed = pool[1];
        p.timed_out = pool[2];
        p.panicked = pool[3];
        p.permanent = pool[4];
        p.stuck_reports = pool[5];
        p.blocking_overruns = pool[5];
        p.failed_settles = pool[1];
        p.heartbeat = heartbeat;
        for f in diagnose(&s, with_pool.then_some(&p), VISIBILITY) {
            for share in shares(&f.message) {
                prop_assert!((0.0..=100.0).contains(&share), "{}", f.message);
            }
        }
    }
}
