//! Pushing into the memory store: a plain push to an unbounded queue through the inbox
//! (no state lock), the others under the state lock.

use leaseq_core::MessageId;

use super::MemoryStore;
use crate::error::PushError;
use crate::push::Push;
use crate::runtime::Runtime;

impl<T: Clone + Send + 'static, R: Runtime> MemoryStore<T, R> {
    /// [`Store::try_push`](crate::Store::try_push). Inlined: a caller's `Push::new()` is
    /// then known plain at compile time.
    #[inline]
    pub(super) fn push_one(&self, item: T, push: &Push) -> Result<MessageId, PushError<T>> {
        if self.closed() {
            return Err(PushError::Closed(item));
        }
        if push.is_plain() && self.inbox.enabled {
            // Without the state lock: receivers take the item from the inbox.
            let id = self.inbox.push(item);
            self.available.notify(1);
            #[cfg(feature = "metrics")]
            self.metrics.poke(&self.driver_wake);
            return Ok(id);
        }
        // A plain push needs no fresh clock reading: it becomes visible "now" whatever the
        // time, so the queue's own latest time serves (one clock read saved per item).
        let timed = !push.delay.is_zero() || push.ttl.is_some();
        let clock = timed.then(|| self.rt.now());
        let mut st = self.lock();
        let now = clock.unwrap_or_else(|| st.core.now());
        let options = push.options_at(now);
        let core = &mut st.core;
        let mut replaced = None;
        let pushed = self.inbox.push_direct(|id| {
            core.push_with_id_take(id, item, now, options).map(|p| {
                replaced = p.replaced;
                p.id
            })
        });
        // (Releasing the lock wakes a receiver, or the driver for a delay or an expiry.)
        drop(st);
        // A pending item this push replaced: its `Drop` runs here, outside the lock.
        drop(replaced);
        pushed.map_err(PushError::from_core)
    }

    /// [`Store::try_push_batch`](crate::Store::try_push_batch) (inlined into it: one call
    /// per batch, not two).
    #[inline]
    pub(super) fn push_many(
        &self,
        items: &mut dyn Iterator<Item = T>,
        push: &Push,
    ) -> Result<Vec<MessageId>, (Vec<MessageId>, PushError<T>)> {
        let mut ids = Vec::with_capacity(items.size_hint().0);
        if self.closed() {
            return match items.next() {
                Some(first) => Err((ids, PushError::Closed(first))),
                None => Ok(ids),
            };
        }
        if self.inbox.enabled && push.is_plain() {
            self.inbox.push_all(items, &mut ids);
            self.available.notify(ids.len());
            #[cfg(feature = "metrics")]
            self.metrics.poke(&self.driver_wake);
            return Ok(ids);
        }
        let mut st = self.lock();
        let now = st.core.now();
        let options = push.options_at(now);
        for item in items {
            let core = &mut st.core;
            let pushed = self
                .inbox
                .push_direct(|id| core.push_with_id(id, item, now, options));
            match pushed {
                Ok(id) => ids.push(id),
                Err(e) => return Err((ids, PushError::from_core(e))),
            }
        }
        Ok(ids)
    }
}
