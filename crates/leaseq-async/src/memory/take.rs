//! Taking leases out of the core: one item, or a batch, under one lock and one clock read;
//! and giving one back untaken (a put-back).
//!
//! The one place an item's `Clone` runs under the lock: the core copies each leased item (its
//! `Clone`) for the holder while it keeps the original for a redelivery. Kept on purpose,
//! for the hot path's cost: see `MemoryStore::lock` and RELIABILITY.md.

use std::sync::Arc;

use leaseq_core::{Lease, ReceiptError, Timestamp};

use super::{MemoryStore, MemoryTicket, State};
use crate::beats::BeatKey;
use crate::lease_lost::LeaseSignal;
use crate::runtime::Runtime;
use crate::store::{TakeHeartbeat, Taken};

impl<T: Clone, R: Runtime> MemoryStore<T, R> {
    /// Leases one visible item, if any: one lock, one clock read. Always inlined into its
    /// one caller, the take's wait loop (a call here costs more than the copy it saves).
    #[inline(always)]
    pub(crate) fn take_one(&self, heartbeat: TakeHeartbeat) -> Option<Taken<T, MemoryTicket>> {
        if self.closed() {
            return None;
        }
        let mut st = self.lock();
        // Read under the lock: the lease is measured from the moment it is taken, so a
        // wait for the lock never shortens it below the visibility.
        let now = self.rt.now();
        let lease = st.core.receive(now)?;
        let beat = self.beat_for(&mut st, &lease, now, heartbeat);
        let more = st.core.stats().ready > 0;
        drop(st);
        if more {
            // Pass the baton: another receiver may take what this one left.
            self.available.notify(1);
        }
        // Shaped last, after the lock's release: built where it is returned, not moved
        // across the release.
        Some(taken(lease, beat))
    }

    /// Leases up to `max` visible items into `out` under one lock and one clock read (taken
    /// under the lock, like `take_one`'s).
    pub(crate) fn take_batch(
        &self,
        max: usize,
        heartbeat: bool,
        out: &mut Vec<Taken<T, MemoryTicket>>,
    ) -> usize {
        self.take_batch_into(max, heartbeat, out, |t| t)
    }

    /// `take_batch` with each lease turned into a `D` by `shape` as it is taken (a batch
    /// receive's deliveries, built in place).
    pub(crate) fn take_batch_into<D>(
        &self,
        max: usize,
        heartbeat: bool,
        out: &mut Vec<D>,
        mut shape: impl FnMut(Taken<T, MemoryTicket>) -> D,
    ) -> usize {
        if self.closed() || max == 0 {
            return 0;
        }
        if !heartbeat {
            return self.take_batch_plain(max, out, shape);
        }
        let mut st = self.lock();
        let now = self.rt.now();
        // One allocation for the batch rather than a few regrowths.
        let ready = usize::try_from(st.core.stats().ready).unwrap_or(usize::MAX);
        out.reserve(max.min(ready));
        let mut n = 0;
        while n < max {
            let Some(taken) = self.lease_locked(&mut st, now, TakeHeartbeat::AtTake) else {
                break;
            };
            out.push(shape(taken));
            n += 1;
        }
        let more = st.core.stats().ready > 0;
        drop(st);
        if n > 0 && more {
            self.available.notify(1);
        }
        n
    }

    /// `take_batch` without heartbeats: each lease shaped into `out` as the core makes it,
    /// written in place (no vector of leases in between: one allocation and one copy of
    /// each item less).
    fn take_batch_plain<D>(
        &self,
        max: usize,
        out: &mut Vec<D>,
        mut shape: impl FnMut(Taken<T, MemoryTicket>) -> D,
    ) -> usize {
        let mut st = self.lock();
        let now = self.rt.now();
        // (The core makes room in `out` for exactly the batch it leases.)
        let n = st
            .core
            .receive_many_as(now, max, out, |lease| shape(taken(lease, None)));
        let more = st.core.stats().ready > 0;
        drop(st);
        if n > 0 && more {
            self.available.notify(1);
        }
        n
    }

    /// Leases the next visible item under the lock the caller holds, registering its
    /// heartbeat if asked (releasing the lock wakes the driver for the beat if it is the
    /// earliest). Always inlined: the `Taken` is then built where it is returned, not
    /// written here and copied out by the caller.
    #[inline(always)]
    fn lease_locked(
        &self,
        st: &mut State<T>,
        now: Timestamp,
        heartbeat: TakeHeartbeat,
    ) -> Option<Taken<T, MemoryTicket>> {
        let lease = st.core.receive(now)?;
        let beat = self.beat_for(st, &lease, now, heartbeat);
        Some(taken(lease, beat))
    }

    /// `lease`'s heartbeat as `heartbeat` asks, under the lock the caller holds: registered
    /// now (its first beat at `now` plus the period, never after the lease's deadline), its
    /// signal alone (registered at `Store::start_heartbeat`, if ever), or none.
    #[inline]
    fn beat_for(
        &self,
        st: &mut State<T>,
        lease: &Lease<T>,
        now: Timestamp,
        heartbeat: TakeHeartbeat,
    ) -> Option<(BeatKey, Arc<LeaseSignal>)> {
        match heartbeat {
            TakeHeartbeat::Off => None,
            TakeHeartbeat::AtTake => {
                let signal = st.beats.new_signal();
                let first = now.saturating_add(self.heartbeat_every).min(lease.deadline);
                let key = st.beats.register(lease.receipt, signal.clone(), first);
                Some((key, signal))
            }
            TakeHeartbeat::Later => Some((BeatKey::NOT_YET, st.beats.new_signal())),
        }
    }

    /// [`poll_take_one_as`](Self::poll_take_one_as) made for each kind of heartbeat on its
    /// own (out of line), so that a take without one carries no code (and holds no
    /// registers) for registering a beat.
    #[inline]
    pub(crate) fn poll_take_one_kind<D>(
        &self,
        waiting: &mut super::MemoryWaiting,
        cx: &mut std::task::Context<'_>,
        heartbeat: TakeHeartbeat,
        shape: impl FnOnce(Taken<T, MemoryTicket>) -> D,
    ) -> std::task::Poll<Option<D>> {
        /// One out-of-line copy per kind (`KIND`: 0 off, 1 at the take, 2 later), each
        /// with its kind a constant. (Const generics take no enums yet.)
        #[inline(never)]
        fn of_kind<const KIND: u8, T: Clone, R: Runtime, D>(
            s: &MemoryStore<T, R>,
            waiting: &mut super::MemoryWaiting,
            cx: &mut std::task::Context<'_>,
            shape: impl FnOnce(Taken<T, MemoryTicket>) -> D,
        ) -> std::task::Poll<Option<D>> {
            let heartbeat = match KIND {
                0 => TakeHeartbeat::Off,
                1 => TakeHeartbeat::AtTake,
                _ => TakeHeartbeat::Later,
            };
            s.poll_take_one_as(waiting, cx, heartbeat, shape)
        }
        match heartbeat {
            TakeHeartbeat::Off => of_kind::<0, T, R, D>(self, waiting, cx, shape),
            TakeHeartbeat::AtTake => of_kind::<1, T, R, D>(self, waiting, cx, shape),
            TakeHeartbeat::Later => of_kind::<2, T, R, D>(self, waiting, cx, shape),
        }
    }

    /// [`Store::poll_take_one`](crate::Store::poll_take_one)'s wait loop, for either kind
    /// of heartbeat: the `Taken` shaped (into a delivery, say) and returned as it is made,
    /// not rewrapped (and copied) through `poll_wait`'s closure's `Option<Option<_>>`.
    #[inline(always)]
    fn poll_take_one_as<D>(
        &self,
        waiting: &mut super::MemoryWaiting,
        cx: &mut std::task::Context<'_>,
        heartbeat: TakeHeartbeat,
        shape: impl FnOnce(Taken<T, MemoryTicket>) -> D,
    ) -> std::task::Poll<Option<D>> {
        use std::task::Poll;
        loop {
            if let Some(taken) = self.take_one(heartbeat) {
                self.unlisten(waiting);
                return Poll::Ready(Some(shape(taken)));
            }
            if self.closed() {
                self.unlisten(waiting);
                return Poll::Ready(None);
            }
            if self.wait_on(waiting, super::Wait::Available, cx) {
                return Poll::Pending;
            }
        }
    }
}

fn taken<T>(lease: Lease<T>, beat: Option<(BeatKey, Arc<LeaseSignal>)>) -> Taken<T, MemoryTicket> {
    Taken {
        item: lease.item,
        id: lease.id,
        attempt: lease.attempt,
        deadline: lease.deadline,
        expires_at: lease.expires_at,
        ticket: MemoryTicket {
            receipt: lease.receipt,
            beat,
        },
    }
}

impl<T, R: Runtime> MemoryStore<T, R> {
    /// [`Store::put_back`](crate::Store::put_back) with its answer: `Ok` if the lease was
    /// running and is given back (its attempt not counted), else why not. For a store built
    /// on this one that records the change (leaseq-sqlite journals the attempt count).
    pub fn try_put_back(&self, ticket: MemoryTicket) -> Result<(), ReceiptError> {
        let now = self.rt.now();
        self.settle(ticket, |core, r| core.put_back(r, now))
    }
}
