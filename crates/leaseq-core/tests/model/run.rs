//! The cases run: the model test, its long phases, the coverage expected of them.

use super::*;

fn run_case(case: &Case) {
    IDS.with(|ids| ids.borrow_mut().clear());
    let mut h = Harness::new(&case.cfg);
    for (time, op) in &case.steps {
        h.step(time, op);
        h.compare(case.poll_every_step);
    }
    // Every event, in order.
    loop {
        let (g, w) = (h.q.poll_event(), h.m.events.pop_front());
        assert_eq!(g, w, "final events");
        if g.is_none() {
            break;
        }
    }
    // Every pushed item is in exactly one place: live, dead-lettered, or gone (acked or
    // taken), and the queue's counts of each agree.
    let mut pushed: BTreeSet<u64> = (0..h.m.items.len() as u64).collect();
    let mut live = Vec::new();
    for it in &h.m.items {
        if it.state != St::Gone {
            live.push(it.id);
        }
    }
    for id in h.m.dead.keys() {
        assert!(pushed.remove(id), "dead letter {id} is also elsewhere");
    }
    for id in live {
        assert!(pushed.remove(&id), "live item {id} is also elsewhere");
    }
    let s = h.q.stats();
    if s.events_dropped > 0 {
        cov("events: dropped");
    }
    assert_eq!(
        pushed.len() as u64,
        s.acked + s.taken + s.cancelled,
        "acked + taken + cancelled"
    );
    assert_eq!(s.pushed, h.m.items.len() as u64, "pushed");
}

/// Runs `cases` random cases against the model, then checks that every kind of outcome
/// came up at least once.
fn run_model(config: ProptestConfig, strategy: impl Strategy<Value = Case>, expect: &[&str]) {
    COV.with(|c| c.borrow_mut().clear());
    let mut runner = TestRunner::new(config);
    if let Err(e) = runner.run(&strategy, |case| {
        run_case(&case);
        Ok(())
    }) {
        panic!("{e}");
    }
    let seen = COV.with(|c| c.borrow().clone());
    if std::env::var_os("MODEL_COVERAGE").is_some() {
        eprintln!("{seen:#?}");
    }
    let missing: Vec<_> = expect.iter().filter(|k| !seen.contains_key(**k)).collect();
    assert!(
        missing.is_empty(),
        "outcomes never reached: {missing:?}\nreached: {seen:#?}"
    );
}

/// Outcomes every run must reach.
const EXPECTED: &[&str] = &[
    "push: Ok",
    "push: Full",
    "push: AlreadyExpired",
    "receive: first",
    "receive: redelivery",
    "receive: deadline cut by max_lease or expiry",
    "ack: Ok(OnTime",
    "ack: Ok(LateUnclaimed",
    "ack: Err(Redelivered",
    "ack: Err(DeadLettered",
    "ack: Err(AlreadyAcked",
    "ack: Err(Released",
    "ack: Err(Unknown",
    "ack_many: some accepted, some refused",
    "nack: Ok(Retrying",
    "nack: Ok(DeadLettered",
    "nack: Err(LeaseExpired",
    "nack: retry_after",
    "extend: Ok(Until",
    "extend: Ok(Released",
    "extend: Err(LeaseExpired",
    "extend: capped",
    "release: Ok(Retrying",
    "release: Ok(DeadLettered",
    "dead_letter: Ok(",
    "dead_letter: Err(Redelivered",
    "redrive: Ok(",
    "redrive: Err(NotFound",
    "redrive: Err(Expired",
    "redrive: Err(Full",
    "redrive_all: some",
    "take_dead_letter: true",
    "take_dead_letters: some",
    "receipt: foreign",
    "receipt: slot reused, fate forgotten",
    "receipt: item redriven into the same slot",
    "due: two timers at one instant",
    "due: expiry of a waiting item",
    "retry: visible before the current time",
    "dead letter: LeaseExpired",
    "dead letter: Nacked",
    "dead letter: TimedOut",
    "dead letter: Dropped",
    "dead letter: Released",
    "dead letter: Rejected",
    "dead letter: Expired",
    "event: Delivered",
    "event: Redelivered",
    "event: LeaseExpired",
    "event: DeadLettered",
    "event: LateAck",
    "event: ExtensionCapped",
    "events: dropped",
    "time: earlier than already seen",
    "time: Timestamp::MAX",
    "push: PriorityOutOfRange",
    "push: KeyTooLong",
    "push: DuplicateKey",
    "push: DuplicateKey (holder in flight)",
    "push: replaced a pending item",
    "receive: level above 0",
    "receive: a higher level overtakes an older lower one",
    "cancel: Ok(",
    "cancel: Err(InFlight",
    "cancel: Err(DeadLettered",
    "cancel: Err(NotFound",
    "cancel_leased: Ok(",
    "cancel_leased: an item in flight",
    "ack: Err(Cancelled",
    "redrive: Err(KeyTaken",
    "receipt: cancelled",
    "event: Cancelled",
    "event: Replaced",
];

/// The queue and the reference model agree on every result, event, stat and dead letter,
/// and the queue's own invariants hold after every step. 10,000 short cases.
#[test]
fn queue_matches_model() {
    run_model(seed_config(10_000, 0x0001_ea5e_c0de), case(), EXPECTED);
}

/// Operations for the long cases, in phases: `fill` pushes and receives many items,
/// otherwise settle them (acks and nacks with random, often stale, receipts, out of order).
fn op_phase(fill: bool) -> impl Strategy<Value = Op> {
    let (f, s) = if fill { (8, 1) } else { (1, 8) };
    let idx = any::<Index>;
    prop_oneof![
        f => Just(Op::Push),
        f => Just(Op::Receive),
        f => (1usize..4).prop_map(Op::ReceiveMany),
        f => (dur(), prop::sample::select(vec![Some(10i64), Some(100), Some(1000), None]))
            .prop_map(|(d, e)| Op::PushWith(d, e)),
        s => idx().prop_map(Op::Ack),
        1 => prop::collection::vec(idx(), 0..4).prop_map(Op::AckMany),
        s => (idx(), fail_kind(), prop::option::of(dur())).prop_map(|(i, k, r)| Op::Nack(i, k, r)),
        s => (idx(), any::<bool>()).prop_map(|(i, e)| Op::DeadLetter(i, e)),
        1 => (idx(), dur()).prop_map(|(i, d)| Op::Extend(i, d)),
        1 => idx().prop_map(Op::Release),
        1 => Just(Op::Wake(false)),
        1 => Just(Op::HandleTimeout),
        1 => idx().prop_map(Op::Redrive),
        1 => Just(Op::RedriveAll),
        1 => (1usize..5).prop_map(Op::PollEvents),
        1 => Just(Op::Foreign),
        f => push_opts(),
        1 => (idx(), any::<bool>()).prop_map(|(i, l)| Op::Cancel(i, l)),
    ]
}

fn phase(fill: bool) -> impl Strategy<Value = Vec<(Time, Op)>> {
    let time = prop_oneof![
        9 => Just(Time::Same),
        1 => prop::sample::select(vec![1u64, 5, 10]).prop_map(Time::Fwd),
    ];
    prop::collection::vec((time, op_phase(fill)), 150..250)
}

/// Fewer, longer cases in fill and settle phases: enough items and stale index entries for
/// the indexes to pass their compaction slack and shrink again, which short cases never
/// reach.
#[test]
fn queue_matches_model_long() {
    let strategy = (
        config(),
        any::<bool>(),
        (phase(true), phase(false), phase(true), phase(false)),
    )
        .prop_map(|(mut cfg, poll_every_step, (a, b, c, d))| {
            // Long leases, so that many are held at once.
            cfg.capacity = None;
            cfg.visibility = cfg.visibility.saturating_mul(50);
            cfg.max_lease = cfg.max_lease.map(|m| m.saturating_mul(50));
            Case {
                cfg,
                poll_every_step,
                steps: [a, b, c, d].concat(),
            }
        });
    run_model(
        seed_config(64, 0x0010_c0de),
        strategy,
        &["index: past the compaction slack", "ack: Ok(OnTime"],
    );
}
