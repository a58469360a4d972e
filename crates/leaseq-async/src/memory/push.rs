//! Pushing into the memory store: a plain push to an unbounded queue through the inbox
//! (no state lock), the others under the state lock.

use leaseq_core::MessageId;

use super::MemoryStore;
use crate::error::PushError;
use crate::push::Push;
use crate::runtime::Runtime;

impl<T: Clone + Send + 'static, R: Runtime> MemoryStore<T, R> {
    /// [`Store::try_push`](crate::Store::try_push). Inlined: a caller's `Push::new()` is
    /// then known plain at compile time, and a keyed push with nothing else
    /// ([`Push::is_bare_keyed`]) takes its own copy of the locked push, which tests nothing
    /// of windows, flow keys or delays; every other push goes out of line.
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
        if push.is_bare_keyed() {
            return self.push_locked::<true>(item, push);
        }
        self.push_locked_any(item, push)
    }

    /// A push under the state lock, of any kind.
    #[inline(never)]
    fn push_locked_any(&self, item: T, push: &Push) -> Result<MessageId, PushError<T>> {
        self.push_locked::<false>(item, push)
    }

    /// A push under the state lock; `BARE`: `push` is known [bare
    /// keyed](Push::is_bare_keyed).
    #[inline(always)]
    fn push_locked<const BARE: bool>(
        &self,
        item: T,
        push: &Push,
    ) -> Result<MessageId, PushError<T>> {
        if let (false, Some(what)) = (BARE, push.flow_conflict()) {
            return Err(PushError::Unsupported { item, what });
        }
        // A plain push needs no fresh clock reading: it becomes visible "now" whatever the
        // time, so the queue's own latest time serves (one clock read saved per item).
        let clock = (!BARE && push.needs_clock()).then(|| self.rt.now());
        let mut st = self.lock();
        if !BARE {
            // Flow keys: a place freed may now let a held-back item go (see `flow.rs`).
            st.flow |= push.flowed();
        }
        let now = match clock {
            Some(now) => now,
            // A key meets its holder's window at the push's time (`Push::keyed`).
            None if push.keyed() && st.core.key_windows_in_use() => self.rt.now(),
            None => st.core.now(),
        };
        // (A bare keyed push has no delay or time to live to set.)
        let options = if BARE {
            push.options
        } else {
            push.options_at(now)
        };
        let mut replaced = None;
        let pushed = self.inbox.push_direct(&mut st.core, |core, id| {
            let pushed = if BARE || push.unflowed() {
                core.push_with_id_take(id, item, now, options)
            } else {
                push.push_into(core, id, item, now, options)
            };
            pushed.map(|p| {
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
        if let Some(what) = push.flow_conflict() {
            return match items.next() {
                Some(item) => Err((ids, PushError::Unsupported { item, what })),
                None => Ok(ids),
            };
        }
        // (A delay, an expiry or a key's window is measured from the clock's time.)
        let clock = push.needs_clock().then(|| self.rt.now());
        let mut st = self.lock();
        st.flow |= push.flowed();
        let now = match clock {
            Some(now) => now,
            // A key meets its holder's window at the push's time (`Push::keyed`).
            None if push.keyed() && st.core.key_windows_in_use() => self.rt.now(),
            None => st.core.now(),
        };
        let options = push.options_at(now);
        for item in items {
            let pushed = self.inbox.push_direct(&mut st.core, |core, id| {
                if push.unflowed() {
                    core.push_with_id(id, item, now, options)
                } else {
                    push.push_into(core, id, item, now, options).map(|p| p.id)
                }
            });
            match pushed {
                Ok(id) => ids.push(id),
                Err(e) => return Err((ids, PushError::from_core(e))),
            }
        }
        Ok(ids)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use leaseq_core::{Config, PushOptions};

    use crate::{LeaseQueue, SimRuntime};

    /// A push made under the state lock while plain pushes wait in the inbox (pushed after
    /// the lock's holder drained it, as another thread can): those go into the core first,
    /// under their ids, and none is lost.
    #[test]
    fn a_locked_push_lets_the_inbox_pushes_before_it_in_first() {
        let rt = SimRuntime::new();
        rt.block_on({
            let rt = rt.clone();
            async move {
                let q = LeaseQueue::with_runtime(rt.clone(), Config::new(Duration::from_secs(9)))
                    .unwrap();
                let store = q.store();
                let mut st = store.lock();
                let plain = store.inbox.push(1u32);
                let now = st.core.now();
                let direct = store
                    .inbox
                    .push_direct(&mut st.core, |core, id| {
                        core.push_with_id(id, 2, now, PushOptions::new().priority(1))
                    })
                    .unwrap();
                drop(st);
                assert!(direct > plain);
                assert_eq!(q.stats().ready, 2, "both pushes are in");
                let first = q.try_receive().unwrap();
                assert_eq!((first.id(), *first.item()), (direct, 2), "level 1 first");
                let second = q.try_receive().unwrap();
                assert_eq!((second.id(), *second.item()), (plain, 1));
            }
        });
    }
}
