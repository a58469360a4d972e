//! Receiving from a [`SqliteStore`]: leases are taken from the memory store, their attempts
//! journaled, and handed out only once that commit is done (so a process that dies while
//! handling an item still counts the attempt). A receive dropped in between hands its
//! leases back.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use event_listener::EventListener;
use leaseq_async::{Codec, MemoryTicket, MemoryWaiting, Runtime, Store, Taken};

use crate::op::Op;
use crate::store::{SqliteStore, SqliteTicket};

/// A wait on a [`SqliteStore`]: the memory store's, and leases taken whose attempt is
/// being committed before they are handed out.
pub struct SqliteWaiting<T> {
    pub(crate) inner: MemoryWaiting,
    pub(crate) held: Option<(u64, Vec<Taken<T, SqliteTicket>>)>,
    pub(crate) listener: Option<EventListener>,
}

// Nothing in it is ever pinned (the leases are moved out, never polled).
impl<T> Unpin for SqliteWaiting<T> {}

impl<T> Default for SqliteWaiting<T> {
    fn default() -> Self {
        SqliteWaiting {
            inner: MemoryWaiting::default(),
            held: None,
            listener: None,
        }
    }
}

impl<T> std::fmt::Debug for SqliteWaiting<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteWaiting")
            .field("held", &self.held.as_ref().map(|(s, v)| (*s, v.len())))
            .finish_non_exhaustive()
    }
}

impl<T: Clone + Send + 'static, R: Runtime, C: Codec<T>> SqliteStore<T, R, C> {
    /// Wraps leases just taken and journals their attempts; the sequence to wait for.
    fn record_taken(
        &self,
        taken: impl IntoIterator<Item = Taken<T, MemoryTicket>>,
        out: &mut Vec<Taken<T, SqliteTicket>>,
    ) -> u64 {
        let start = out.len();
        out.extend(taken.into_iter().map(wrap));
        self.journal.submit(out[start..].iter().map(|t| Op::Taken {
            id: t.id.get(),
            attempts: t.attempt,
        }))
    }

    /// The receive step shared by `poll_take` and `poll_take_one`: `take` takes leases
    /// from the memory store (`Ready(None)`: closed and drained); they are held in
    /// `waiting` until their attempts are committed, then handed over. While commits fail
    /// it takes nothing and waits for the writer to recover; leases already held wait for
    /// their commit however long it takes (a dropped receive hands them back).
    pub(crate) fn poll_held(
        &self,
        waiting: &mut SqliteWaiting<T>,
        cx: &mut Context<'_>,
        take: impl FnOnce(
            &mut MemoryWaiting,
            &mut Context<'_>,
        ) -> Poll<Option<Vec<Taken<T, MemoryTicket>>>>,
    ) -> Poll<Option<Vec<Taken<T, SqliteTicket>>>> {
        if waiting.held.is_none() {
            while self.journal.failing() && !self.inner.is_closed() {
                match &mut waiting.listener {
                    Some(l) => {
                        if Pin::new(l).poll(cx).is_pending() {
                            return Poll::Pending;
                        }
                        waiting.listener = None;
                    }
                    None => waiting.listener = Some(self.journal.listen()),
                }
            }
            waiting.listener = None;
            let got = match take(&mut waiting.inner, cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Ready(Some(got)) => got,
            };
            let mut held = Vec::with_capacity(got.len());
            let seq = self.record_taken(got, &mut held);
            waiting.held = Some((seq, held));
        }
        let seq = waiting.held.as_ref().map_or(0, |h| h.0);
        // A delivery is recorded before it is handed out.
        if self
            .journal
            .poll_committed(seq, None, &mut waiting.listener, cx)
            .is_pending()
        {
            return Poll::Pending;
        }
        let (_, held) = waiting.held.take().unwrap_or_default();
        Poll::Ready(Some(held))
    }

    /// `try_take`: never waits for items, but does wait for their attempts to be committed
    /// (up to the commit timeout: then they are handed back and it returns 0). Takes
    /// nothing while commits fail.
    pub(crate) fn take_now(
        self: &Arc<Self>,
        max: usize,
        heartbeat: bool,
        out: &mut Vec<Taken<T, SqliteTicket>>,
    ) -> usize {
        if self.journal.failing() {
            return 0;
        }
        let mut got = Vec::new();
        let n = self.inner.try_take(max, heartbeat, &mut got);
        if n > 0 {
            let start = out.len();
            let seq = self.record_taken(got, out);
            if self.journal.wait_blocking(seq).is_err() {
                for taken in out.drain(start..) {
                    self.hand_back(taken.ticket);
                }
                return 0;
            }
        }
        n
    }

    /// `stop_waiting`: leases taken for a receive that was dropped before their commit go
    /// back uncounted ([`Store::put_back`]): nobody had them, so a fetcher or consumer that
    /// stops while its claim commits costs no item an attempt.
    pub(crate) fn stop(&self, waiting: &mut SqliteWaiting<T>) {
        self.inner.stop_waiting(&mut waiting.inner);
        waiting.listener = None;
        if let Some((_, held)) = waiting.held.take() {
            for taken in held {
                self.put_back(taken.ticket);
            }
        }
    }
}

fn wrap<T>(t: Taken<T, MemoryTicket>) -> Taken<T, SqliteTicket> {
    Taken {
        item: t.item,
        id: t.id,
        attempt: t.attempt,
        deadline: t.deadline,
        expires_at: t.expires_at,
        ticket: SqliteTicket {
            inner: t.ticket,
            id: t.id,
            attempt: t.attempt,
        },
    }
}
