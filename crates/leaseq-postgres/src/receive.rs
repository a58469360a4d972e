//! Receiving and the other waits of a [`PgStore`]: a receive posts a slot on the claim
//! board and waits for the claimer to fill it; a receive dropped before taking what was
//! claimed for it hands it back, its attempt not counted; `try_take` claims on the blocking
//! thread. Also the waits for room to push and for an empty queue.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};

use event_listener::EventListener;
use leaseq_async::Taken;

use crate::board::ClaimSlot;
use crate::error::DbError;
use crate::store::PgStore;
use crate::ticket::PgTicket;

/// A wait on a [`PgStore`]: a receive's slot on the claim board, or a listener.
pub struct PgWaiting<T> {
    slot: Option<Arc<ClaimSlot<T>>>,
    listener: Option<EventListener>,
    counted_empty: bool,
}

impl<T> Default for PgWaiting<T> {
    fn default() -> Self {
        PgWaiting {
            slot: None,
            listener: None,
            counted_empty: false,
        }
    }
}

// Nothing in it is pinned: the slot is shared by `Arc`, the listener is boxed.
impl<T> Unpin for PgWaiting<T> {}

impl<T> std::fmt::Debug for PgWaiting<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgWaiting")
            .field("posted", &self.slot.is_some())
            .finish_non_exhaustive()
    }
}

/// Polls `listener` (made by `listen` if none): ready once it fired.
fn poll_listener(
    listener: &mut Option<EventListener>,
    cx: &mut Context<'_>,
    listen: impl FnOnce() -> EventListener,
) -> Poll<()> {
    let l = listener.get_or_insert_with(listen);
    match Pin::new(l).poll(cx) {
        Poll::Ready(()) => {
            *listener = None;
            Poll::Ready(())
        }
        Poll::Pending => Poll::Pending,
    }
}

impl<T: Clone + Send + Sync + 'static> PgStore<T> {
    /// `poll_take`: ready with `true` once the claimer filled this receive's slot, `false`
    /// once the queue is closed.
    pub(crate) fn poll_claim(
        &self,
        waiting: &mut PgWaiting<T>,
        cx: &mut Context<'_>,
        max: usize,
        heartbeat: bool,
        out: &mut Vec<Taken<T, PgTicket>>,
    ) -> Poll<bool> {
        let life = &*self.life;
        let slot = match &waiting.slot {
            Some(slot) => slot.clone(),
            None => {
                if life.is_closed() {
                    return Poll::Ready(false);
                }
                if self.db.options.prefetch > 0 && self.take_ahead(max.max(1), heartbeat, out) {
                    return Poll::Ready(true);
                }
                let slot = {
                    // Closed is checked again under the board's lock, which `close` takes
                    // after setting it: a slot posted here is one `close` will wake.
                    let mut board = self.board.slots.lock();
                    if life.is_closed() {
                        return Poll::Ready(false);
                    }
                    board.post(max.max(1), heartbeat, Some(cx.waker().clone()))
                };
                self.board.wake.notify(1);
                waiting.slot = Some(slot);
                return Poll::Pending;
            }
        };
        let mut st = slot.state.lock();
        if !st.got.is_empty() {
            out.append(&mut st.got);
            drop(st);
            waiting.slot = None;
            return Poll::Ready(true);
        }
        if life.is_closed() {
            st.abandoned = true;
            drop(st);
            waiting.slot = None;
            return Poll::Ready(false);
        }
        st.waker = Some(cx.waker().clone());
        Poll::Pending
    }

    /// Hands out leases claimed ahead, if any still has half its visibility; true if some.
    fn take_ahead(&self, max: usize, heartbeat: bool, out: &mut Vec<Taken<T, PgTicket>>) -> bool {
        use leaseq_async::Runtime;
        let half = self.db.config.visibility() / 2;
        let fresh_until = self.db.rt.now().saturating_add(half);
        let mut stale = Vec::new();
        let mut got = self
            .board
            .slots
            .lock()
            .take_prefetched(max, fresh_until, &mut stale);
        self.settles.unclaim(stale);
        if got.is_empty() {
            return false;
        }
        if heartbeat {
            for t in &mut got {
                self.leases.keep_alive(t);
            }
        }
        out.append(&mut got);
        // Room ahead again: the claimer may refill it.
        self.board.wake.notify(1);
        true
    }

    /// `try_take`: claims up to `max` items visible now on the blocking thread
    /// (`blocking.rs`), blocking this thread for one round trip; nothing on any error
    /// (reported through `last_error`).
    pub(crate) fn take_blocking(
        &self,
        max: usize,
        heartbeat: bool,
        out: &mut Vec<Taken<T, PgTicket>>,
    ) -> usize {
        if max == 0 || self.life.is_closed() {
            return 0;
        }
        let (db, counters) = (self.db.clone(), self.counters.clone());
        let got = self.blocking.run(move |rt, pool| {
            let got = rt.block_on(async {
                let client = pool
                    .get()
                    .await
                    .map_err(|e| DbError::pool("no connection from the pool", e))?;
                crate::claim::claim(&db, &counters, &client, max.min(db.options.max_claim))
                    .await
                    .map(|(got, _)| got)
                    .map_err(DbError::Db)
            });
            got.unwrap_or_else(|e| {
                db.failed("try_take", e);
                Vec::new()
            })
        });
        // An answer the caller never got (the thread gone) leaves its leases to run out.
        let mut got = got.unwrap_or_default();
        if heartbeat {
            for t in &mut got {
                self.leases.keep_alive(t);
            }
        }
        let n = got.len();
        out.append(&mut got);
        n
    }

    /// `stop_waiting`: a posted slot is withdrawn; leases claimed for it but not taken go
    /// back, their attempt not counted.
    pub(crate) fn stop(&self, waiting: &mut PgWaiting<T>) {
        waiting.listener = None;
        if waiting.counted_empty {
            waiting.counted_empty = false;
            self.driver.empty_waiters.fetch_sub(1, Ordering::Relaxed);
        }
        let Some(slot) = waiting.slot.take() else {
            return;
        };
        let got = {
            let mut st = slot.state.lock();
            st.abandoned = true;
            std::mem::take(&mut st.got)
        };
        if got.is_empty() {
            return;
        }
        let mut q = self.settles.queue.lock();
        for t in got {
            self.leases.forget(&t.ticket);
            q.unclaims.push((t.ticket.id, t.ticket.lease));
        }
        drop(q);
        self.settles.wake.notify(1);
    }

    /// `poll_space`: room while fewer than `max_pending_pushes` rows wait for the writer and,
    /// in a bounded queue, the last count leaves room (`capacity.rs`).
    pub(crate) fn poll_room(&self, waiting: &mut PgWaiting<T>, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            let (db, pushes) = (&*self.db, &*self.pushes);
            let room = {
                let buf = pushes.buf.lock();
                buf.rows.len() < db.options.max_pending_pushes
                    && !crate::capacity::full(db, buf.live, buf.rows.len())
            };
            if self.life.is_closed() || room {
                waiting.listener = None;
                return Poll::Ready(());
            }
            if waiting.listener.is_some() {
                // Registered before the check above: fired means look again.
                match poll_listener(&mut waiting.listener, cx, || pushes.committed.listen()) {
                    Poll::Ready(()) => continue,
                    Poll::Pending => return Poll::Pending,
                }
            }
            waiting.listener = Some(pushes.committed.listen());
            // A bounded queue: the writer counts again when room may have come.
            if db.config.capacity().is_some() {
                crate::capacity::wants_room(pushes);
            }
        }
    }

    /// `poll_empty`: ready once a count of the rows made by the driver shows nothing live
    /// and includes every push this process accepted (one the writer was inserting while
    /// the count ran is in neither the buffer nor the count).
    pub(crate) fn poll_drained(
        &self,
        waiting: &mut PgWaiting<T>,
        cx: &mut Context<'_>,
    ) -> Poll<()> {
        let driver = &*self.driver;
        if !waiting.counted_empty {
            waiting.counted_empty = true;
            driver.empty_waiters.fetch_add(1, Ordering::Relaxed);
            driver.wake.notify(1);
        }
        loop {
            // Each count the driver makes after this wait began fires the listener.
            match poll_listener(&mut waiting.listener, cx, || driver.counted.listen()) {
                Poll::Ready(()) => {
                    let queued = self.pushes.buf.lock().queued;
                    let g = *self.counters.gauges.lock();
                    if g.ready + g.delayed + g.in_flight == 0 && g.pushes_seen >= queued {
                        return Poll::Ready(());
                    }
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}
