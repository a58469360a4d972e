//! The slot handed over at the ack's commit (issue 32): an ack batch of a queue whose
//! concurrency limit binds also claims, in the same transaction, for the receivers of this
//! process waiting on the claim board, so a slot its acks free is leased again before any
//! other claim can see it free, and a slot's cycle is one round trip (the ack and the next
//! claim together) instead of two (the ack, then the claimer's claim).
//!
//! **Why.** Under a limit that binds, every lease holds a slot for a claim's round trip
//! and an ack's, and a slot an ack freed waited for the process's next claim (about 20 of
//! 64 slots idle, BENCHMARKS.md round 12). Here the settler (`settler.rs`) takes the
//! receivers waiting on the board before its batch (so the claimer does not claim for them
//! meanwhile) and sends `BEGIN`, the bare ack (`ack_plain.rs`), the flow claim
//! (`flow_claim.rs`, whatever the queue's rules: the slot claim for a limit alone) and
//! `COMMIT` at once, pipelined on one connection: one round trip, one commit. The claim sees
//! the ack's deletes (the same transaction), so it takes the slots they freed; the claimed
//! leases go to those receivers as the claimer's do (`handout.rs`).
//!
//! **Faults.** Either both are made or neither: an ack the server refused (or whose reply
//! was lost) fails the batch as a lone ack does (retried; `resent` if the commit may have
//! been made), and its claim's leases are not handed out (if the commit was made after
//! all, they run out and come back, as a lost claim's reply does). A claim the server
//! refused rolls the acks back with it; they are then made alone at once, so a claim's
//! trouble never holds acks up. Only acks claimed without a graph node go this way (the
//! bare ack's); the rest, and rows the bare ack did not delete, are told after, alone.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use deadpool_postgres::Client;
use leaseq_core::Acked;
use tokio_postgres::Row;

use crate::ack_plain::{accepted, ack_rows};
use crate::board::{Board, ClaimSlot};
use crate::counters::Counters;
use crate::db::{pooled, Db};
use crate::flow_claim::{self, Args, Who};
use crate::handout::HandOut;
use crate::life::Life;
use crate::settles::AckOp;

/// Runs the bare ack of the leases `ids`/`leases` and a flow claim of up to `n` items in
/// one transaction, sent at once: the accepted acks by id and the claim's rows (as the
/// statement returned them, for `flow_claim::read`; none if the claim was refused and the
/// acks made alone).
pub(crate) async fn ack_and_claim<T>(
    db: &Db<T>,
    client: &Client,
    ids: &[i64],
    leases: &[i64],
    n: usize,
) -> Result<(HashMap<i64, Acked>, Vec<Row>), tokio_postgres::Error> {
    // Prepared first (cached: no round trip after the first), so that each request below
    // is sent as its future is first polled, in this order.
    let ack = client.prepare_cached(&db.sql.ack_plain).await?;
    let claim = client.prepare_cached(&db.sql.flow_claim).await?;
    let args = Args::new(db, n);
    let params = args.params(db);
    // `join4` polls its futures in order: the four requests leave in this order.
    let (begin, acked, claimed, commit) = futures_util::future::join4(
        client.batch_execute("BEGIN"),
        client.query(&ack, &[&ids, &leases]),
        client.query(&claim, &params),
        client.batch_execute("COMMIT"),
    )
    .await;
    let acked = acked?;
    commit?;
    match claimed {
        Ok(rows) => Ok((accepted(&acked), rows)),
        // The transaction ended in a rollback (`COMMIT` of a failed transaction): the acks
        // were not made; made alone now.
        Err(e) if begin.is_ok() => {
            db.failed("claim with the ack", e);
            let rows = ack_rows(pooled(client), &db.sql.ack_plain, ids, leases).await?;
            Ok((rows, Vec::new()))
        }
        // No transaction (`BEGIN` refused): the ack ran and committed alone.
        Err(e) => {
            db.failed("claim with the ack", e);
            Ok((accepted(&acked), Vec::new()))
        }
    }
}

/// An ack batch's claim to come: the receivers it is for, taken off the board, and how
/// many items it asks (none if no receiver waited and no lease is missing ahead). While it
/// lives the claimer holds back ([`holds_back`]); dropped, it rings the claimer.
pub(crate) struct Plan<'a, T> {
    board: &'a Board<T>,
    slots: Vec<Arc<ClaimSlot<T>>>,
    /// Items asked (`ClaimBoard::wanted`).
    pub(crate) n: usize,
}

/// Whether the claimer holds back now: a concurrency limit bound this store's claims and
/// an ack batch that claims runs (its commit frees slots and fills them; a claim sent
/// before it would find them full). The batch rings the claimer when it ends.
pub(crate) fn holds_back<T>(db: &Db<T>, board: &Board<T>) -> bool {
    board.acks_claiming.load(Ordering::Acquire) > 0 && db.limit_bound.load(Ordering::Relaxed)
}

/// The claim an ack batch of `acks` makes in its transaction, if it makes one: only once a
/// concurrency limit bound this store's claims (`Db::limit_bound`; a queue without flow
/// control pays one relaxed load here), for acks the bare statement makes, while the
/// store is open; for the receivers waiting on the board and the leases missing ahead,
/// taken off the board now (the claimer does not claim for them meanwhile):
/// [`Plan::hand_over`] gives them back.
pub(crate) fn plan<'a, T>(
    db: &Db<T>,
    life: &Life,
    board: &'a Board<T>,
    acks: &[AckOp],
) -> Option<Plan<'a, T>> {
    if !db.is_flowed()
        || !db.limit_bound.load(Ordering::Relaxed)
        || db.sql.ack_plain.is_empty()
        || !acks.iter().any(|a| a.plain)
        || life.is_stopped()
        || life.is_closed()
    {
        return None;
    }
    board.acks_claiming.fetch_add(1, Ordering::AcqRel);
    let mut slots = board.slots.lock();
    let taken = slots.take_slots(db.options.max_claim);
    let n = slots.wanted(&taken, &db.options);
    drop(slots);
    Some(Plan {
        board,
        slots: taken,
        n,
    })
}

impl<T> Plan<'_, T> {
    /// Hands the leases of the claim's `rows` (committed) to the receivers it was made for
    /// (`handout.rs`, as the claimer's); none if the store closed or stopped meanwhile
    /// (they are put back, unclaimed) or their rows could not be read (undecodable ones
    /// are dead-lettered with `client`; on an error they run out). Receivers not filled
    /// wait again at the front of the board.
    pub(crate) async fn hand_over(
        mut self,
        out: HandOut<'_, T>,
        counters: &Counters,
        client: &Client,
        rows: Vec<Row>,
    ) {
        let slots = std::mem::take(&mut self.slots);
        if self.n == 0 {
            out.requeue(slots);
            return;
        }
        let (rows, _) = flow_claim::read(out.db, rows, Who::Ack);
        match crate::claim::leases(out.db, counters, client, &rows, true).await {
            Ok(got) if !(out.life.is_stopped() || out.life.is_closed()) => out.give(slots, got),
            Ok(got) => {
                out.settles
                    .unclaim(got.iter().map(|t| (t.ticket.id, t.ticket.lease)).collect());
                out.requeue(slots);
            }
            Err(e) => {
                out.db.failed("claim with the ack", e);
                out.requeue(slots);
            }
        }
    }
}

impl<T> Drop for Plan<'_, T> {
    fn drop(&mut self) {
        // Not handed over (the batch's future dropped): the receivers wait again.
        if !self.slots.is_empty() {
            self.board
                .slots
                .lock()
                .put_back(std::mem::take(&mut self.slots));
        }
        self.board.acks_claiming.fetch_sub(1, Ordering::AcqRel);
        self.board.wake.notify(usize::MAX);
    }
}
