//! What waits for the settler: acks of all workers, hand-backs of dropped deliveries, and
//! leases to put back, with the settler's wake-up. The settling job (`settler.rs`) owns it
//! and takes everything queued at once; others hold it to queue work and ring
//! [`Settles::wake`]:
//!
//! - `acks`: the seam's `ack` / `ack_many` (`seam.rs`); a failed batch's acks are put back
//!   in front by the settler;
//! - `hand_backs`, `put_backs`: the seam's `hand_back` and `put_back`;
//! - `unclaims`: leases claimed for receives that went away or are no longer wanted: the
//!   claimer (leftovers), a receive (stale leases ahead, a withdrawn slot's leases), and
//!   the store when it closes or stops (the leases ahead).
//!
//! The driver rings the wake-up once a tick (an ack whose future was dropped before it ran
//! a batch is then settled). A leaf but for the ticket.

use event_listener::Event;
use leaseq_async::SettleError;
use leaseq_core::Acked;
use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::ticket::PgTicket;

/// An ack waiting for the settler.
pub(crate) struct AckOp {
    pub(crate) id: i64,
    pub(crate) lease: i64,
    /// The claim read the row without a node ([`PgTicket::plain`]): tried first with the
    /// bare ack (`ack_plain.rs`).
    pub(crate) plain: bool,
    /// An earlier try of this ack may have been made (its reply was lost): a refusal with
    /// the row gone is then no proof that someone else removed it.
    pub(crate) resent: bool,
    /// When the ack was queued (it gives up after `Options::commit_timeout` of failures).
    pub(crate) since: std::time::Instant,
    pub(crate) reply: oneshot::Sender<Result<Acked, SettleError>>,
}

/// What waits for the settler.
#[derive(Default)]
pub(crate) struct SettleQueue {
    pub(crate) acks: Vec<AckOp>,
    pub(crate) hand_backs: Vec<PgTicket>,
    /// Leases claimed for receives that went away before taking them: `(id, lease)`.
    pub(crate) unclaims: Vec<(i64, i64)>,
    /// Leases delivered and given back unstarted (`Store::put_back`): `(id, lease)`.
    pub(crate) put_backs: Vec<(i64, i64)>,
}

impl SettleQueue {
    /// Whether nothing is queued.
    pub(crate) fn is_empty(&self) -> bool {
        self.acks.is_empty()
            && self.hand_backs.is_empty()
            && self.unclaims.is_empty()
            && self.put_backs.is_empty()
    }
}

/// The settler's queue and wake-up (see the file's header).
#[derive(Default)]
pub(crate) struct Settles {
    pub(crate) queue: Mutex<SettleQueue>,
    /// Wakes the settler.
    pub(crate) wake: Event,
}

impl Settles {
    /// Queues leases `(id, lease)` to go back, their attempt not counted, and wakes the
    /// settler (nothing if there are none).
    pub(crate) fn unclaim(&self, leases: Vec<(i64, i64)>) {
        if !leases.is_empty() {
            self.queue.lock().unclaims.extend(leases);
            self.wake.notify(1);
        }
    }
}
