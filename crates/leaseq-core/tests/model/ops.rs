//! The operations' strategies: keys, durations, reasons, times, pushes, configs, cases.

use super::*;

/// The small key space of the model: duplicates are frequent. Index 3 is a key one byte too
/// long.
pub(super) fn key_of(k: Option<u8>) -> MKey {
    match k {
        None => MKey::None,
        Some(3) => MKey::TooLong(UniqueKey::MAX_LEN + 1),
        Some(n) => MKey::Key(format!("k{n}").into_bytes()),
    }
}

/// The keys of the model's key space.
pub(super) const KEYS: [&str; 3] = ["k0", "k1", "k2"];

pub(super) fn dur() -> impl Strategy<Value = Duration> {
    prop_oneof![
        4 => prop::sample::select(vec![0u64, 1, 5, 5, 10, 10, 20, 40]).prop_map(Duration::from_nanos),
        1 => Just(Duration::MAX),
    ]
}

pub(super) fn reason() -> impl Strategy<Value = Reason> {
    prop::sample::select(vec![
        Reason::LeaseExpired,
        Reason::Nacked,
        Reason::TimedOut,
        Reason::Dropped,
        Reason::Released,
        Reason::Rejected,
        Reason::Expired,
    ])
}

pub(super) fn fail_kind() -> impl Strategy<Value = FailKind> {
    prop_oneof![
        Just(FailKind::Error),
        Just(FailKind::TimedOut),
        Just(FailKind::Dropped),
        reason().prop_map(FailKind::Reason),
        reason().prop_map(FailKind::ReasonAndError),
    ]
}

pub(super) fn time() -> impl Strategy<Value = Time> {
    prop_oneof![
        4 => Just(Time::Same),
        5 => prop::sample::select(vec![1u64, 5, 5, 5, 10, 10, 20, 50]).prop_map(Time::Fwd),
        1 => prop::sample::select(vec![1u64, 5, 10, 1000]).prop_map(Time::Back),
    ]
}

pub(super) fn push_opts() -> impl Strategy<Value = Op> {
    (
        prop_oneof![3 => Just(Duration::ZERO), 1 => dur()],
        prop_oneof![
            4 => Just(None),
            1 => prop::sample::select(vec![-5i64, 0, 5, 20]).prop_map(|e| Some(Some(e))),
        ],
        prop_oneof![20 => 0u8..=7, 1 => Just(8u8)],
        prop_oneof![2 => Just(None), 6 => (0u8..3).prop_map(Some), 1 => Just(Some(3u8))],
        prop::bool::weighted(0.3),
    )
        .prop_map(|(delay, expiry, level, key, replace)| Op::PushOpts {
            delay,
            expiry,
            level,
            key,
            replace,
        })
}

pub(super) fn op() -> impl Strategy<Value = Op> {
    let idx = any::<Index>;
    prop_oneof![
        5 => push_opts(),
        2 => (idx(), any::<bool>()).prop_map(|(i, l)| Op::Cancel(i, l)),
        6 => Just(Op::Push),
        2 => dur().prop_map(Op::PushDelayed),
        3 => (dur(), prop_oneof![
            4 => prop::sample::select(vec![-5i64, 0, 5, 10, 10, 20, 40]).prop_map(Some),
            1 => Just(None),
        ]).prop_map(|(d, e)| Op::PushWith(d, e)),
        6 => Just(Op::Receive),
        2 => (0usize..4).prop_map(Op::ReceiveMany),
        5 => idx().prop_map(Op::Ack),
        1 => prop::collection::vec(idx(), 0..4).prop_map(Op::AckMany),
        3 => (idx(), fail_kind(), prop::option::of(dur())).prop_map(|(i, k, r)| Op::Nack(i, k, r)),
        3 => (idx(), dur()).prop_map(|(i, d)| Op::Extend(i, d)),
        2 => idx().prop_map(Op::Release),
        1 => (idx(), any::<bool>()).prop_map(|(i, e)| Op::DeadLetter(i, e)),
        2 => Just(Op::HandleTimeout),
        3 => prop::bool::weighted(0.1).prop_map(Op::Wake),
        1 => Just(Op::PollTimeout),
        2 => (1usize..5).prop_map(Op::PollEvents),
        2 => idx().prop_map(Op::Redrive),
        1 => Just(Op::RedriveAll),
        1 => idx().prop_map(Op::TakeDeadLetter),
        1 => Just(Op::TakeDeadLetters),
        1 => Just(Op::Foreign),
    ]
}

pub(super) fn config() -> impl Strategy<Value = MConfig> {
    let vis = prop_oneof![
        12 => prop::sample::select(vec![5u64, 10, 10, 20]).prop_map(Duration::from_nanos),
        1 => Just(Duration::MAX),
    ];
    let backoff = prop_oneof![
        Just(MBackoff::None),
        prop::sample::select(vec![0u64, 5, 10])
            .prop_map(|n| MBackoff::Fixed(Duration::from_nanos(n))),
        Just(MBackoff::Fixed(Duration::MAX)),
        (
            prop::sample::select(vec![0u64, 1, 5, 10]),
            1u32..4,
            prop::option::of(prop::sample::select(vec![1u64, 2, 4, 8])),
        )
            .prop_map(|(base, factor, mul)| MBackoff::Exp {
                base: Duration::from_nanos(base),
                factor,
                max: mul.map_or(Duration::MAX, |m| Duration::from_nanos(base * m)),
            }),
    ];
    (
        vis,
        1u32..=4,
        backoff,
        prop::option::of(prop::sample::select(vec![0u64, 5, 20])),
        prop::option::of(1usize..=5),
        prop::sample::select(vec![0usize, 1, 3, 8, 4096]),
    )
        .prop_map(
            |(visibility, max_attempts, backoff, extra, capacity, event_capacity)| MConfig {
                visibility,
                max_attempts,
                backoff,
                max_lease: extra.map(|e| visibility.saturating_add(Duration::from_nanos(e))),
                capacity,
                event_capacity,
            },
        )
}

pub(super) fn case() -> impl Strategy<Value = Case> {
    (
        config(),
        any::<bool>(),
        prop::collection::vec((time(), op()), 1..60),
    )
        .prop_map(|(cfg, poll_every_step, steps)| Case {
            cfg,
            poll_every_step,
            steps,
        })
}
