//! A lease as the memory store keeps it alive: extended or released by hand, its heartbeat
//! started late (a pool worker's, at its handler's first wait), and whether it is lost.

use std::time::Duration;

use leaseq_core::{Extended, ReceiptError, Timestamp};

use super::{MemoryStore, MemoryTicket};
use crate::beats::BeatKey;
use crate::runtime::Runtime;

impl<T, R: Runtime> MemoryStore<T, R> {
    /// [`Store::stop_heartbeat`](crate::Store::stop_heartbeat): the lease's beat, if it
    /// has one, is released (the lease then runs to its deadline unless extended).
    #[inline]
    pub(super) fn stop_beat(&self, ticket: &mut MemoryTicket) {
        if let Some((key, signal)) = ticket.beat.take() {
            self.lock().beats.release(key, signal);
        }
    }

    /// [`Store::lease_lost`](crate::Store::lease_lost): the beat's signal when the lease
    /// has a heartbeat, else the deadline on the runtime's clock.
    pub(super) fn lease_lost_of(
        &self,
        ticket: &MemoryTicket,
        deadline: Timestamp,
    ) -> crate::lease_lost::LeaseLost {
        use crate::lease_lost::LeaseLost;
        match &ticket.beat {
            Some((_, signal)) => LeaseLost::from_signal(signal.clone()),
            None => LeaseLost::deadline_on(deadline, self.timing.clone()),
        }
    }

    /// [`Store::extend`](crate::Store::extend), answered at once.
    pub(super) fn extend_now(
        &self,
        ticket: &mut MemoryTicket,
        visibility: Duration,
    ) -> Result<Extended, ReceiptError> {
        let now = self.rt.now();
        let mut st = self.lock();
        let r = st.core.extend(ticket.receipt, now, visibility);
        match r {
            Ok(Extended::Until { deadline, .. }) => {
                // A lease shortened by hand: its heartbeat must beat before the new deadline.
                // (Releasing the lock wakes the driver for it.)
                if let Some((key, _)) = &ticket.beat {
                    let beat_at = now.saturating_add(self.heartbeat_every).min(deadline);
                    st.beats.bring_forward(*key, beat_at);
                }
            }
            Ok(_) => {
                if let Some((key, signal)) = ticket.beat.take() {
                    st.beats.release(key, signal);
                }
            }
            Err(_) => {}
        }
        drop(st);
        r
    }

    /// [`Store::start_heartbeat`](crate::Store::start_heartbeat).
    pub(super) fn start_beat(
        &self,
        ticket: &mut MemoryTicket,
        leased_at: Timestamp,
        deadline: Timestamp,
    ) {
        if let Some((key, signal)) = &mut ticket.beat {
            if *key == BeatKey::NOT_YET {
                let first = leased_at.saturating_add(self.heartbeat_every).min(deadline);
                // (Releasing the lock wakes the driver if this beat is its earliest.)
                *key = self
                    .lock()
                    .beats
                    .register(ticket.receipt, signal.clone(), first);
            }
        }
    }

    /// [`Store::is_lease_lost`](crate::Store::is_lease_lost).
    pub(super) fn lease_is_lost(&self, ticket: &MemoryTicket, deadline: Timestamp) -> bool {
        match &ticket.beat {
            // Not started yet: it cannot have been refused, only outrun.
            Some((key, signal)) if *key == BeatKey::NOT_YET => {
                signal.is_lost() || self.rt.now() >= deadline
            }
            Some((_, signal)) => signal.is_lost(),
            None => self.rt.now() >= deadline,
        }
    }
}
