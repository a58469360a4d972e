//! The core's events as `tracing` events (feature `tracing`), emitted by the queue's
//! driver, the one place that drains them.
//!
//! Every event carries the queue's name as its `queue` field. Levels: dead letters and
//! dropped events at `warn`, lost leases, late acks and capped extensions at `info`,
//! redeliveries, cancellations and replacements at `debug`, first deliveries (recorded only
//! when asked for) at `trace`.

use leaseq_core::{Event, LateAckKind};

/// Emits one core event.
pub(crate) fn event(queue: &'static str, event: &Event) {
    match event {
        Event::Delivered { id } => tracing::trace!(queue, %id, "leaseq: delivered"),
        Event::Redelivered { id, attempt } => {
            tracing::debug!(queue, %id, attempt, "leaseq: redelivered")
        }
        Event::LeaseExpired {
            id,
            attempt,
            deadline,
        } => tracing::info!(queue, %id, attempt, %deadline, "leaseq: lease expired"),
        Event::DeadLettered {
            id,
            attempts,
            reason,
        } => tracing::warn!(queue, %id, attempts, %reason, "leaseq: dead-lettered"),
        Event::LateAck { id, kind, late_by } => {
            let kind = late_ack_kind(*kind);
            tracing::info!(queue, %id, kind, late_by = ?late_by, "leaseq: late ack")
        }
        Event::ExtensionCapped { id, deadline } => {
            tracing::info!(queue, %id, %deadline, "leaseq: extension capped")
        }
        Event::Cancelled { id, in_flight } => {
            tracing::debug!(queue, %id, in_flight, "leaseq: cancelled")
        }
        Event::Replaced { id, by } => {
            tracing::debug!(queue, %id, by = %by, "leaseq: replaced")
        }
        _ => tracing::debug!(queue, event = ?event, "leaseq: event"),
    }
}

/// Reports events lost to a full event buffer: `dropped` since the last report, `total`
/// in the queue's life.
pub(crate) fn events_dropped(queue: &'static str, dropped: u64, total: u64, capacity: usize) {
    tracing::warn!(
        queue,
        dropped,
        total,
        capacity,
        "leaseq: events dropped (the event buffer was full)"
    );
}

/// How a late ack was judged, in one word: `unclaimed` (accepted) or why it was refused.
fn late_ack_kind(kind: LateAckKind) -> &'static str {
    match kind {
        LateAckKind::Unclaimed => "unclaimed",
        LateAckKind::Redelivered => "redelivered",
        LateAckKind::DeadLettered => "dead_lettered",
        LateAckKind::AlreadyAcked => "already_acked",
        LateAckKind::Released => "released",
        LateAckKind::Cancelled => "cancelled",
        _ => "other",
    }
}
