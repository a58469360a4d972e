//! The fuzz input: an arbitrary configuration and steps (a time move and an operation),
//! and the `Config` built from it (an invalid one is checked to be refused, typed).

use std::time::Duration;

use arbitrary::Arbitrary;
use leaseq_core::{Backoff, Config, EventMask, Jitter, Queue, Reason, UniqueKey};

#[derive(Arbitrary, Debug, Clone, Copy)]
pub(crate) enum Dur {
    Zero,
    Small(u8),
    Nanos(u64),
    Max,
}

impl Dur {
    pub(crate) fn get(self) -> Duration {
        match self {
            Dur::Zero => Duration::ZERO,
            Dur::Small(n) => Duration::from_nanos(n as u64 % 64),
            Dur::Nanos(n) => Duration::from_nanos(n),
            Dur::Max => Duration::MAX,
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
pub(crate) enum FuzzBackoff {
    None,
    Fixed(Dur),
    Exponential { base: Dur, factor: u8, max: Dur },
}

#[derive(Arbitrary, Debug)]
pub(crate) struct FuzzConfig {
    visibility: Dur,
    max_attempts: u8,
    backoff: FuzzBackoff,
    jitter: Option<(u8, u64)>,
    max_lease_extra: Option<Dur>,
    capacity: Option<u8>,
    events: u8,
    event_capacity: u8,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
pub(crate) enum Time {
    Same,
    Fwd(u8),
    FwdBig(u64),
    Back(u16),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
pub(crate) enum FailKind {
    Error,
    TimedOut,
    Dropped,
    Reason(u8),
    ReasonAndError(u8),
}

#[derive(Arbitrary, Debug, Clone)]
pub(crate) enum Op {
    Push,
    PushDelayed(Dur),
    PushWith {
        delay: Dur,
        expires_in: Option<i16>,
    },
    Receive,
    ReceiveMany(u8),
    Ack(u16),
    AckMany(Vec<u16>),
    Nack(u16, FailKind, Option<Dur>),
    Extend(u16, Dur),
    Release(u16),
    DeadLetter(u16, bool),
    HandleTimeout,
    Wake(bool),
    PollTimeout,
    PollEvents(u8),
    Redrive(u16),
    RedriveAll,
    TakeDeadLetter(u16),
    TakeDeadLetters,
    Foreign,
    /// A push with a level (any `u8`: above 7 is refused), a key (see `key_bytes`),
    /// `replace_pending`, a delay and maybe an expiry.
    PushOpts {
        delay: Dur,
        expires_in: Option<i16>,
        level: u8,
        key: Option<u8>,
        replace: bool,
    },
    /// Cancel a known id (or one past them); the flag: `cancel_leased`.
    Cancel(u16, bool),
}

/// A small key space (duplicates are frequent), plus keys at and past the length limit.
pub(crate) fn key_bytes(k: u8) -> Vec<u8> {
    match k {
        250..=252 => vec![b'L'; UniqueKey::MAX_LEN],
        253..=255 => vec![b'x'; UniqueKey::MAX_LEN + 1 + (k as usize - 253) * 100],
        n => format!("k{}", n % 4).into_bytes(),
    }
}

#[derive(Arbitrary, Debug)]
pub(crate) struct Input {
    pub(crate) config: FuzzConfig,
    pub(crate) steps: Vec<(Time, Op)>,
}

pub(crate) const REASONS: [Reason; 7] = [
    Reason::LeaseExpired,
    Reason::Nacked,
    Reason::TimedOut,
    Reason::Dropped,
    Reason::Released,
    Reason::Rejected,
    Reason::Expired,
];

const EVENT_KINDS: [EventMask; 8] = [
    EventMask::DELIVERED,
    EventMask::REDELIVERED,
    EventMask::LEASE_EXPIRED,
    EventMask::DEAD_LETTERED,
    EventMask::LATE_ACK,
    EventMask::EXTENSION_CAPPED,
    EventMask::CANCELLED,
    EventMask::REPLACED,
];

pub(crate) fn build_config(c: &FuzzConfig) -> Option<Config> {
    let visibility = c.visibility.get();
    let backoff = match c.backoff {
        FuzzBackoff::None => Backoff::None,
        FuzzBackoff::Fixed(d) => Backoff::Fixed(d.get()),
        FuzzBackoff::Exponential { base, factor, max } => Backoff::Exponential {
            base: base.get(),
            factor: factor as u32,
            max: max.get(),
        },
    };
    let mut events = EventMask::NONE;
    for (i, k) in EVENT_KINDS.iter().enumerate() {
        if c.events & (1 << i) != 0 {
            events = events | *k;
        }
    }
    let mut config = Config::new(visibility)
        .with_max_attempts(c.max_attempts as u32 % 6)
        .with_backoff(backoff)
        .with_events(events)
        .with_event_capacity(c.event_capacity as usize % 16);
    if let Some((percent, seed)) = c.jitter {
        config = config.with_jitter(Jitter::new(percent % 128, seed));
    }
    if let Some(extra) = c.max_lease_extra {
        config = config.with_max_lease(visibility.saturating_add(extra.get()));
    }
    if let Some(cap) = c.capacity {
        config = config.with_capacity(cap as usize % 12);
    }
    // Invalid configs must be refused with a typed error, never panic; nothing to run then.
    match config.validate() {
        Ok(()) => Some(config),
        Err(e) => {
            assert!(Queue::<u32>::new(config).err() == Some(e));
            None
        }
    }
}
