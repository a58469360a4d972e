//! The leases this process's heartbeat keeps alive, by row id, each with its token and its
//! lease-lost signal. The heartbeat (`keeper.rs`) owns the map: it reads every entry each
//! beat and removes (and signals lost) the ones the database refused.
//!
//! Who else writes: a lease taken with a heartbeat is added by whoever hands it out (the
//! claimer, a receive taking a lease claimed ahead, `try_take`: [`Leases::keep_alive`]); a
//! lease being settled or released is removed by its settle ([`Leases::forget`]: the seam's
//! ack, nack, dead letter, hand-back, put-back and `stop_heartbeat`, an extension that
//! releases, `ack_in`, a withdrawn receive). Read by the driver (it is done once the map is
//! empty and no handle is left) and `PgStore::heartbeats`. A leaf but for the ticket.

use std::collections::HashMap;
use std::sync::Arc;

use leaseq_async::{LeaseSignal, Taken};
use parking_lot::Mutex;

use crate::ticket::PgTicket;

/// A lease the heartbeat keeps alive.
#[derive(Debug)]
pub(crate) struct Held {
    pub(crate) lease: i64,
    pub(crate) signal: Arc<LeaseSignal>,
}

/// The heartbeat's leases (see the file's header).
#[derive(Default)]
pub(crate) struct Leases {
    pub(crate) held: Mutex<HashMap<i64, Held>>,
}

impl Leases {
    /// Registers a lease with the heartbeat.
    pub(crate) fn keep_alive<T>(&self, taken: &mut Taken<T, PgTicket>) {
        let signal = Arc::new(LeaseSignal::default());
        self.held.lock().insert(
            taken.ticket.id,
            Held {
                lease: taken.ticket.lease,
                signal: signal.clone(),
            },
        );
        taken.ticket.beat = Some(signal);
    }

    /// The heartbeat lets go of a lease that is being settled: this lease only. A stale
    /// holder settling late must not stop the heartbeat of the item's next lease, taken by
    /// this same process meanwhile (the map is by row id; that lease then ran out under its
    /// holder: the kill -9 test caught it).
    pub(crate) fn forget(&self, ticket: &PgTicket) {
        if ticket.beat.is_some() {
            let mut held = self.held.lock();
            if held
                .get(&ticket.id)
                .is_some_and(|h| h.lease == ticket.lease)
            {
                held.remove(&ticket.id);
            }
        }
    }

    /// How many leases the heartbeat keeps now.
    pub(crate) fn len(&self) -> usize {
        self.held.lock().len()
    }

    /// Whether the heartbeat keeps no lease now.
    pub(crate) fn is_empty(&self) -> bool {
        self.held.lock().is_empty()
    }
}
