//! Counters and gauges, and the conservation law they obey.

use alloc::boxed::Box;
use core::fmt;

/// A snapshot of the queue's gauges and lifetime totals.
///
/// After every operation these obey **conservation**: every item pushed (or restored from a
/// durable store) is in exactly one place, `pushed + restored + restored_dead = acked +
/// ready + delayed + in_flight + dead + taken + cancelled`, and equivalently `pushed +
/// restored + redriven = acked + ready + delayed + in_flight + dead_lettered + cancelled`.
/// [`Stats::check_conservation`] checks both.
///
/// The totals count what happened to this queue value since it was made: items a durable
/// store put back when it was opened are counted in `restored` and `restored_dead`, not as
/// pushed or dead-lettered again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default))]
#[non_exhaustive]
pub struct Stats {
    /// Items visible and waiting for a receive.
    pub ready: u64,
    /// Items waiting for a delay or backoff to pass.
    pub delayed: u64,
    /// Items leased to a holder.
    pub in_flight: u64,
    /// Dead letters currently kept.
    pub dead: u64,

    /// Items accepted by push.
    pub pushed: u64,
    /// Pushes refused and returned to the caller as refused (full, already expired, id out
    /// of order, level out of range, key too long, key held: every
    /// [`PushError`](crate::PushError)). A push that waits for room when the queue is full
    /// ([`PushOptions::waits_for_room`](crate::PushOptions::waits_for_room): the async
    /// layer's awaited push) is not counted while it waits, only if it is finally refused.
    pub rejected: u64,
    /// Deliveries, first ones and repeats.
    pub delivered: u64,
    /// Deliveries after the first.
    pub redelivered: u64,
    /// Items acked.
    pub acked: u64,
    /// Items sent to the dead letters (expired ones included).
    pub dead_lettered: u64,
    /// Items whose own deadline passed (also counted in `dead_lettered`).
    pub expired: u64,
    /// Leases that ran out before an ack.
    pub lease_expired: u64,
    /// Acks refused because the receipt was stale (redelivered, dead-lettered, acked,
    /// released).
    pub late_acks_stale: u64,
    /// Acks accepted after the deadline because nobody had leased the item again.
    pub late_acks_unclaimed: u64,
    /// Receipts not recognized at all (another queue, forged, or long gone).
    pub unknown_receipts: u64,
    /// Successful extends.
    pub extends: u64,
    /// Extends cut short by the max lease lifetime or the item's expiry.
    pub extends_capped: u64,
    /// Attempts handed back early (nack, release, timeout, drop).
    pub nacks: u64,
    /// Dead letters put back into the queue.
    pub redriven: u64,
    /// Leases given back unstarted with [`Queue::put_back`](crate::Queue::put_back) (taken
    /// ahead for a worker, then not needed): their attempt not counted. Also counted in
    /// `delivered`, as the deliveries they were.
    pub put_back: u64,
    /// Dead letters removed by their owner.
    pub taken: u64,
    /// Events dropped because nobody polled them.
    pub events_dropped: u64,
    /// Live items put back by [`Queue::restore`](crate::Queue::restore): pushed by an earlier
    /// run of a durable store, not by this one (so not in `pushed`).
    pub restored: u64,
    /// Dead letters put back by
    /// [`Queue::restore_dead_letter`](crate::Queue::restore_dead_letter): dead-lettered by an
    /// earlier run (so in neither `pushed` nor `dead_lettered`; in the `dead` gauge).
    pub restored_dead: u64,
    /// Items removed before they were acked or dead-lettered: by
    /// [`cancel`](crate::Queue::cancel), [`cancel_leased`](crate::Queue::cancel_leased), or
    /// replaced by a push ([`replace_pending`](crate::PushOptions::replace_pending)).
    pub cancelled: u64,
    /// Items replaced by a push with the same unique key (also counted in `cancelled`).
    pub replaced: u64,
    /// Pushes refused because their unique key was held by a live item (also counted in
    /// `rejected`).
    pub duplicates: u64,
    /// Leases snoozed with [`Queue::snooze`](crate::Queue::snooze) within the item's bound:
    /// put back for a while, their attempt not counted. Also counted in `delivered`, as the
    /// deliveries they were. A snooze beyond the bound is counted in `nacks` instead.
    pub snoozed: u64,

    /// Whether the queue is paused ([`Queue::pause`](crate::Queue::pause)): no lease is
    /// handed out until it is resumed; pushes are still accepted.
    pub paused: bool,
}

impl Stats {
    /// Items the queue is responsible for: ready, delayed and in flight.
    /// Saturating: any snapshot, however built, answers without overflow.
    pub const fn live(&self) -> u64 {
        self.ready
            .saturating_add(self.delayed)
            .saturating_add(self.in_flight)
    }

    /// Checks that every pushed item is accounted for exactly once.
    /// Added up in `u128`: any snapshot, however built, is checked without overflow.
    pub fn check_conservation(&self) -> Result<(), ConservationError> {
        let sum = |counts: &[u64]| counts.iter().map(|&n| u128::from(n)).sum::<u128>();
        let (acked, live) = (self.acked, [self.ready, self.delayed, self.in_flight]);
        let places = sum(&[acked, self.dead, self.taken, self.cancelled]) + sum(&live);
        if sum(&[self.pushed, self.restored, self.restored_dead]) != places {
            return Err(ConservationError {
                stats: Box::new(*self),
                law: "pushed + restored + restored_dead = acked + ready + delayed + in_flight \
                      + dead + taken + cancelled",
            });
        }
        if sum(&[self.pushed, self.restored, self.redriven])
            != sum(&[acked, self.dead_lettered, self.cancelled]) + sum(&live)
        {
            return Err(ConservationError {
                stats: Box::new(*self),
                law: "pushed + restored + redriven = acked + ready + delayed + in_flight \
                      + dead_lettered + cancelled",
            });
        }
        Ok(())
    }
}

/// A short summary for people, the places of the conservation law first:
///
/// ```text
/// pushed 5000, acked 4890, dead 10 (ready 0, delayed 0, in flight 100); redelivered 42, late acks 3 unclaimed / 1 stale
/// ```
///
/// Items restored from a durable store, dead letters taken, items cancelled and events
/// dropped are added when there are any (`pushed 10, restored 40 (2 dead), acked ...`), and
/// `; paused` at the end while the queue is paused.
impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pushed {}", self.pushed)?;
        if self.restored > 0 || self.restored_dead > 0 {
            write!(
                f,
                ", restored {} ({} dead)",
                self.restored.saturating_add(self.restored_dead),
                self.restored_dead
            )?;
        }
        write!(f, ", acked {}, dead {}", self.acked, self.dead)?;
        if self.taken > 0 {
            write!(f, ", taken {}", self.taken)?;
        }
        if self.cancelled > 0 {
            write!(f, ", cancelled {}", self.cancelled)?;
        }
        write!(
            f,
            " (ready {}, delayed {}, in flight {}); redelivered {}, late acks {} unclaimed / {} stale",
            self.ready,
            self.delayed,
            self.in_flight,
            self.redelivered,
            self.late_acks_unclaimed,
            self.late_acks_stale,
        )?;
        if self.events_dropped > 0 {
            write!(f, "; events dropped {}", self.events_dropped)?;
        }
        if self.paused {
            f.write_str("; paused")?;
        }
        Ok(())
    }
}

/// Conservation was broken: an item was lost or counted twice. This is a bug in the queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConservationError {
    /// The snapshot that broke it.
    pub stats: Box<Stats>,
    /// Which law.
    pub law: &'static str,
}

impl fmt::Display for ConservationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "conservation broken: {} in {:?}", self.law, self.stats)
    }
}

impl core::error::Error for ConservationError {}

#[cfg(test)]
mod tests {
    use alloc::string::ToString;

    use super::Stats;

    #[test]
    fn display_is_a_short_summary() {
        let mut s = Stats {
            pushed: 5000,
            acked: 4890,
            dead: 10,
            in_flight: 100,
            redelivered: 42,
            late_acks_unclaimed: 3,
            late_acks_stale: 1,
            ..Stats::default()
        };
        assert_eq!(
            s.to_string(),
            "pushed 5000, acked 4890, dead 10 (ready 0, delayed 0, in flight 100); \
             redelivered 42, late acks 3 unclaimed / 1 stale"
        );
        s.taken = 2;
        s.cancelled = 1;
        s.events_dropped = 7;
        assert_eq!(
            s.to_string(),
            "pushed 5000, acked 4890, dead 10, taken 2, cancelled 1 (ready 0, delayed 0, \
             in flight 100); redelivered 42, late acks 3 unclaimed / 1 stale; events dropped 7"
        );
        s.restored = 40;
        s.restored_dead = 2;
        assert!(
            s.to_string()
                .starts_with("pushed 5000, restored 42 (2 dead), acked 4890, dead 10,"),
            "{s}"
        );
        assert_eq!(
            Stats::default().to_string(),
            "pushed 0, acked 0, dead 0 (ready 0, delayed 0, in flight 0); redelivered 0, \
             late acks 0 unclaimed / 0 stale"
        );
    }

    /// A snapshot a caller built with extreme counts is checked and shown without overflow.
    #[test]
    fn extreme_counts_neither_overflow_nor_pass_for_conserved() {
        // pushed + restored = ready + delayed: 2 × u64::MAX on each side.
        let mut s = Stats {
            pushed: u64::MAX,
            restored: u64::MAX,
            ready: u64::MAX,
            delayed: u64::MAX,
            ..Stats::default()
        };
        assert_eq!(s.live(), u64::MAX);
        assert!(s.check_conservation().is_ok());
        // One dead letter restored is nowhere.
        s.restored_dead = 1;
        assert!(s.check_conservation().is_err());
        assert!(s.to_string().starts_with(&alloc::format!(
            "pushed {0}, restored {0} (1 dead)",
            u64::MAX
        )));
    }
}
