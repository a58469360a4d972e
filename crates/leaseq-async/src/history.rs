//! The record of finished jobs: what a store keeps of an item once it is finished (acked,
//! dead-lettered, cancelled or expired) while its retention window lasts ([`Finished`]), and
//! how an operator asks for it ([`HistoryQuery`]: paged, filtered by kind and outcome).
//!
//! A store keeps the record only when asked (Postgres: `Options::retention`); its own
//! upkeep removes each entry once the window after its finish has passed.

use std::time::{Duration, SystemTime};

use leaseq_core::{MessageId, Reason};

/// How an item finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FinishOutcome {
    /// Acked: its work was done.
    Acked,
    /// Moved to the dead letters (its reason in [`Finished::reason`]). A dead letter
    /// redriven and finished again has a second entry.
    DeadLettered,
    /// Cancelled by an operator while it waited.
    Cancelled,
    /// Its time to live ran out (it went to the dead letters with reason `Expired`).
    Expired,
}

impl FinishOutcome {
    /// Every outcome, in code order.
    pub const ALL: [FinishOutcome; 4] = [
        FinishOutcome::Acked,
        FinishOutcome::DeadLettered,
        FinishOutcome::Cancelled,
        FinishOutcome::Expired,
    ];

    /// A short lower-case name ("acked", "dead", "cancelled", "expired").
    pub const fn as_str(self) -> &'static str {
        match self {
            FinishOutcome::Acked => "acked",
            FinishOutcome::DeadLettered => "dead",
            FinishOutcome::Cancelled => "cancelled",
            FinishOutcome::Expired => "expired",
        }
    }

    /// The outcome named `name` ([`as_str`](Self::as_str)), if any.
    pub fn from_name(name: &str) -> Option<FinishOutcome> {
        FinishOutcome::ALL.into_iter().find(|o| o.as_str() == name)
    }

    /// Its code as stores keep it (0 acked, 1 dead-lettered, 2 cancelled, 3 expired).
    pub const fn code(self) -> u8 {
        match self {
            FinishOutcome::Acked => 0,
            FinishOutcome::DeadLettered => 1,
            FinishOutcome::Cancelled => 2,
            FinishOutcome::Expired => 3,
        }
    }

    /// The outcome of a stored code, if it is one.
    pub const fn from_code(code: u8) -> Option<FinishOutcome> {
        match code {
            0 => Some(FinishOutcome::Acked),
            1 => Some(FinishOutcome::DeadLettered),
            2 => Some(FinishOutcome::Cancelled),
            3 => Some(FinishOutcome::Expired),
            _ => None,
        }
    }
}

impl std::fmt::Display for FinishOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One finished item as its store recorded it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Finished {
    /// The entry's number in its store, rising in the order entries were written: the
    /// cursor of [`HistoryQuery::next`].
    pub seq: u64,
    /// The item's id.
    pub id: MessageId,
    /// A router job's kind (read from the stored bytes as the router's `kind_of` does);
    /// `None` for a payload that is not an envelope.
    pub kind: Option<String>,
    /// How it finished.
    pub outcome: FinishOutcome,
    /// The reason of its last failure, if it failed (a dead letter's reason).
    pub reason: Option<Reason>,
    /// Deliveries it had (0: never delivered).
    pub attempts: u32,
    /// When it was pushed (`None`: pushed before the store kept this time).
    pub pushed_at: Option<SystemTime>,
    /// When it was first delivered (`None`: never, or before the store kept this time).
    pub started_at: Option<SystemTime>,
    /// When it finished.
    pub finished_at: SystemTime,
    /// How long its last attempt ran: from that delivery to the finish (`None`: never
    /// delivered).
    pub duration: Option<Duration>,
    /// The last error a handler gave, if any.
    pub last_error: Option<String>,
}

impl Finished {
    /// An entry with these fields and no optional one set (stores and tests fill in the rest).
    pub fn new(
        seq: u64,
        id: MessageId,
        outcome: FinishOutcome,
        attempts: u32,
        finished_at: SystemTime,
    ) -> Self {
        Finished {
            seq,
            id,
            kind: None,
            outcome,
            reason: None,
            attempts,
            pushed_at: None,
            started_at: None,
            finished_at,
            duration: None,
            last_error: None,
        }
    }
}

/// Which entries of the record to read: at most [`limit`](Self::limit) after the entry
/// [`after`](Self::after), oldest first, those of one kind and one outcome if asked.
///
/// ```
/// use leaseq_async::{FinishOutcome, HistoryQuery};
///
/// let q = HistoryQuery::first(50).kind("email").outcome(FinishOutcome::DeadLettered);
/// assert_eq!((q.after, q.limit), (None, 50));
/// let next = q.clone().next(41);
/// assert_eq!(next.after, Some(41));
/// assert_eq!(next.kind.as_deref(), Some("email"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HistoryQuery {
    /// Only entries whose [`seq`](Finished::seq) is greater (`None`: from the oldest kept).
    pub after: Option<u64>,
    /// At most this many entries.
    pub limit: usize,
    /// Only jobs of this kind (`None`: any, also items that are no router job).
    pub kind: Option<String>,
    /// Only entries with this outcome (`None`: any).
    pub outcome: Option<FinishOutcome>,
}

impl HistoryQuery {
    /// The oldest `limit` entries kept, of any kind and outcome.
    pub fn first(limit: usize) -> Self {
        HistoryQuery {
            after: None,
            limit,
            kind: None,
            outcome: None,
        }
    }

    /// Only jobs of `kind`.
    pub fn kind(mut self, kind: impl Into<String>) -> Self {
        self.kind = Some(kind.into());
        self
    }

    /// Only entries with `outcome`.
    pub fn outcome(mut self, outcome: FinishOutcome) -> Self {
        self.outcome = Some(outcome);
        self
    }

    /// The page after the entry numbered `last_seq` (the last of this page), with the same
    /// size and filters.
    pub fn next(mut self, last_seq: u64) -> Self {
        self.after = Some(last_seq);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_codes_and_names_round_trip() {
        for o in FinishOutcome::ALL {
            assert_eq!(FinishOutcome::from_code(o.code()), Some(o));
            assert_eq!(FinishOutcome::from_name(o.as_str()), Some(o));
        }
        assert_eq!(FinishOutcome::from_code(4), None);
        assert_eq!(FinishOutcome::from_name("done"), None);
    }
}
