//! The fault harness's append-only log of what the caller was told, and the checks made
//! from it after a reopen.

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use leaseq_async::{PushError, SettleError};
use leaseq_core::ReceiptError;

/// One thing an operation answered.
#[derive(Clone, Debug)]
pub(crate) enum Fact {
    /// `push(..).await` returned `Ok(id)`: the item is on disk.
    PushOk(u64),
    /// A push was refused, not done (the item handed back).
    PushRefused,
    /// `push(..).await` answered `Unconfirmed`: accepted, durability unknown.
    PushUnconfirmed(u64),
    /// `try_push` accepted the item (fire and forget).
    TryPushOk(u64),
    /// A delivery of the item, its attempt number.
    Delivered(u64, u32),
    /// An ack returned `Ok`: the item is gone for good.
    AckOk(u64),
    /// An ack, nack or dead letter failed in the store, outcome unknown.
    SettleUnknown(u64),
    /// A nack returned `Ok`.
    NackOk(u64),
    /// A dead letter returned `Ok`.
    DeadOk(u64),
    /// A settle refused for its receipt.
    Stale(u64),
    /// An answer of no expected kind.
    Untyped(String),
    /// The queue was dropped (a clean close, healthy): everything accepted before it is
    /// in the file.
    CleanClose,
}

/// The log: facts in the order the callers were told them.
#[derive(Default)]
pub(crate) struct Log(Mutex<Vec<Fact>>);

impl Log {
    pub(crate) fn add(&self, fact: Fact) {
        self.0.lock().unwrap().push(fact);
    }

    /// Logs a push's answer.
    pub(crate) fn push<T: std::fmt::Debug>(
        &self,
        r: Result<leaseq_core::MessageId, PushError<T>>,
        awaited: bool,
    ) {
        self.add(match r {
            Ok(id) if awaited => Fact::PushOk(id.get()),
            Ok(id) => Fact::TryPushOk(id.get()),
            Err(PushError::Store { error, .. }) if !error.is_outcome_unknown() => Fact::PushRefused,
            Err(PushError::Unconfirmed { id, error }) if error.is_outcome_unknown() && awaited => {
                Fact::PushUnconfirmed(id.get())
            }
            Err(e) => Fact::Untyped(format!("push: {e:?}")),
        })
    }

    /// Logs a settle's answer (`ack`: an `Ok` means the item is gone).
    pub(crate) fn settle<U, E: Any + std::fmt::Debug>(&self, id: u64, r: Result<U, E>, ok: Fact) {
        let fact = match r {
            Ok(_) => ok,
            Err(e) => {
                let any: &dyn Any = &e;
                if let Some(s) = any.downcast_ref::<SettleError>() {
                    if s.is_outcome_unknown() {
                        Fact::SettleUnknown(id)
                    } else if s.stale().is_some() {
                        Fact::Stale(id)
                    } else {
                        Fact::Untyped(format!("settle #{id}: {e:?}"))
                    }
                } else if any.downcast_ref::<ReceiptError>().is_some() {
                    Fact::Stale(id)
                } else {
                    Fact::Untyped(format!("settle #{id}: {e:?}"))
                }
            }
        };
        self.add(fact);
    }

    pub(crate) fn facts(&self) -> Vec<Fact> {
        self.0.lock().unwrap().clone()
    }
}

/// What the checks found.
#[derive(Debug, Default)]
pub(crate) struct Verdict {
    pub(crate) counts: BTreeMap<&'static str, usize>,
    pub(crate) violations: Vec<String>,
}

/// Checks the log against what a reopened file holds: `present` maps each live item to
/// the attempt of its next delivery, `dead` each dead letter to its attempts.
pub(crate) fn check(
    facts: &[Fact],
    present: &BTreeMap<u64, u32>,
    dead: &BTreeMap<u64, u32>,
) -> Verdict {
    let mut v = Verdict::default();
    let mut accepted = BTreeSet::new();
    let mut acked_ok = BTreeSet::new();
    let mut settled_unknown = BTreeSet::new();
    let mut last_attempt: BTreeMap<u64, u32> = BTreeMap::new();
    let mut closed_with = BTreeSet::new();
    for f in facts {
        let name = match f {
            Fact::PushOk(id) | Fact::TryPushOk(id) | Fact::PushUnconfirmed(id) => {
                accepted.insert(*id);
                match f {
                    Fact::PushOk(_) => "push ok",
                    Fact::TryPushOk(_) => "try_push ok",
                    _ => "push unconfirmed",
                }
            }
            Fact::PushRefused => "push refused (not done)",
            Fact::Delivered(id, attempt) => {
                let last = last_attempt.entry(*id).or_insert(0);
                if *attempt <= *last {
                    v.violations
                        .push(format!("#{id}: attempt {attempt} after attempt {last}"));
                }
                *last = *attempt;
                "delivered"
            }
            Fact::AckOk(id) => {
                acked_ok.insert(*id);
                "ack ok"
            }
            Fact::SettleUnknown(id) => {
                settled_unknown.insert(*id);
                "settle outcome unknown"
            }
            Fact::NackOk(_) => "nack ok",
            Fact::DeadOk(_) => "dead letter ok",
            Fact::Stale(_) => "settle stale",
            Fact::CleanClose => {
                closed_with.extend(accepted.iter().copied());
                "clean close"
            }
            Fact::Untyped(what) => {
                v.violations.push(format!("untyped answer: {what}"));
                "untyped"
            }
        };
        *v.counts.entry(name).or_default() += 1;
    }
    for f in facts {
        if let Fact::PushOk(id) = f {
            if !present.contains_key(id)
                && !dead.contains_key(id)
                && !acked_ok.contains(id)
                && !settled_unknown.contains(id)
            {
                v.violations.push(format!("#{id}: push answered Ok, lost"));
            }
        }
    }
    let gone = |id: &u64| {
        !present.contains_key(id)
            && !dead.contains_key(id)
            && !acked_ok.contains(id)
            && !settled_unknown.contains(id)
    };
    for id in closed_with.iter().filter(|id| gone(id)) {
        v.violations
            .push(format!("#{id}: accepted before a clean close, lost"));
    }
    // Accepted but never confirmed (try_push, unconfirmed pushes) and not in the file: a
    // crash may lose those; counted, not a violation.
    let unconfirmed_lost = accepted
        .iter()
        .filter(|id| {
            !present.contains_key(id)
                && !dead.contains_key(id)
                && !acked_ok.contains(id)
                && !settled_unknown.contains(id)
        })
        .count();
    v.counts
        .insert("accepted, unconfirmed, lost at the crash", unconfirmed_lost);
    for id in &acked_ok {
        if present.contains_key(id) || dead.contains_key(id) {
            v.violations
                .push(format!("#{id}: ack answered Ok, came back"));
        }
    }
    for (id, next) in present {
        if let Some(last) = last_attempt.get(id) {
            if next <= last {
                v.violations
                    .push(format!("#{id}: next attempt {next} after attempt {last}"));
            }
        }
    }
    for (id, attempts) in dead {
        if let Some(last) = last_attempt.get(id) {
            if attempts < last {
                v.violations.push(format!(
                    "#{id}: dead letter with {attempts} attempts after attempt {last}"
                ));
            }
        }
    }
    v
}
