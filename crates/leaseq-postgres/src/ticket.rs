//! [`PgTicket`]: a lease held from a [`PgStore`](crate::PgStore), as the store's statements
//! fence it (row id and token). A leaf: every part and job of the store may name it.

use std::sync::Arc;

use leaseq_async::LeaseSignal;
use leaseq_core::Timestamp;

/// A lease held from a [`PgStore`](crate::PgStore): the row and its fencing token. Every
/// statement that settles or extends it matches the token, so a holder whose lease was
/// taken over by another worker changes nothing.
#[derive(Debug)]
pub struct PgTicket {
    pub(crate) id: i64,
    pub(crate) lease: i64,
    pub(crate) attempts: u32,
    pub(crate) expires_at: Option<Timestamp>,
    /// The lease-lost signal, while the heartbeat keeps this lease.
    pub(crate) beat: Option<Arc<LeaseSignal>>,
    /// The item's checkpoint as the claim read it, then as this holder recorded it.
    pub(crate) progress: Option<leaseq_async::Progress>,
    /// The claim (plain or flow) read the row without a node (`node IS NULL`): its ack goes to the
    /// bare statement, which pays nothing for the graph (`ack_plain.rs`). A hint only: a
    /// node set since (an adoption) is caught by that statement and the ack told anyway.
    pub(crate) plain: bool,
}

impl PgTicket {
    /// The fencing token: the number of leases issued on the item, this one included (a
    /// redrive from the dead letters counts as one, so that no earlier lease settles it).
    pub fn fencing_token(&self) -> i64 {
        self.lease
    }
}
