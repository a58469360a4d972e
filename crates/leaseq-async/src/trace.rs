//! The core's events as `tracing` events (feature `tracing`), emitted by the queue's
//! driver, the one place that drains them.

use leaseq_core::Event;

/// Emits one core event: dead letters and lost work at `warn`, late acks at `info`, the
/// routine rest at `debug`.
pub(crate) fn event(event: &Event) {
    match event {
        Event::Delivered { id } => tracing::trace!(%id, "leaseq: delivered"),
        Event::Redelivered { id, attempt } => {
            tracing::debug!(%id, attempt, "leaseq: redelivered")
        }
        Event::LeaseExpired {
            id,
            attempt,
            deadline,
        } => tracing::info!(%id, attempt, deadline = ?deadline, "leaseq: lease expired"),
        Event::DeadLettered {
            id,
            attempts,
            reason,
        } => tracing::warn!(%id, attempts, %reason, "leaseq: dead-lettered"),
        Event::LateAck { id, kind, late_by } => {
            tracing::info!(%id, kind = ?kind, late_by = ?late_by, "leaseq: late ack")
        }
        Event::ExtensionCapped { id, deadline } => {
            tracing::info!(%id, deadline = ?deadline, "leaseq: extension capped at the max lease")
        }
        _ => tracing::debug!(event = ?event, "leaseq: event"),
    }
}
