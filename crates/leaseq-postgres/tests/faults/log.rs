//! The append-only log of what callers were told during a fault run: each push's answer,
//! each delivery (id and attempt), each settle's answer.

use parking_lot::Mutex;

/// A settle operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Ack,
    Nack,
    DeadLetter,
    Extend,
}

/// What a caller was told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Told {
    /// Done (`dead`: a nack that made a dead letter).
    Ok { dead: bool },
    /// Refused for its receipt (the lease was lost: taken over, run out, settled).
    Stale,
    /// The store failed; the outcome is unknown.
    Unknown,
    /// The store failed; nothing was done.
    NotDone,
}

/// One line of the log.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Entry {
    /// A push answered: `id`, and whether it was confirmed (`false`: outcome unknown).
    Pushed {
        id: u64,
        ok: bool,
    },
    /// A push refused before it was accepted (the item handed back).
    Refused,
    Delivered {
        id: u64,
        attempt: u32,
    },
    Settled {
        id: u64,
        attempt: u32,
        op: Op,
        told: Told,
    },
}

/// The log: entries in the order they were told.
#[derive(Default)]
pub(crate) struct Log(Mutex<Vec<Entry>>);

impl Log {
    pub(crate) fn add(&self, e: Entry) {
        self.0.lock().push(e);
    }

    pub(crate) fn entries(&self) -> Vec<Entry> {
        self.0.lock().clone()
    }
}

/// How a settle's error reads.
pub(crate) trait Classify {
    fn told(&self) -> Told;
}

impl Classify for leaseq_async::SettleError {
    fn told(&self) -> Told {
        match (self.stale(), self.store()) {
            (Some(_), _) => Told::Stale,
            (None, Some(e)) if e.is_outcome_unknown() => Told::Unknown,
            _ => Told::NotDone,
        }
    }
}

/// The answer of a settle, as logged.
pub(crate) fn told<T, E: Classify>(r: &Result<T, E>) -> Told {
    match r {
        Ok(_) => Told::Ok { dead: false },
        Err(e) => e.told(),
    }
}
