//! A push on the SQLite store: refused while commits fail, encoded and size-checked before
//! the memory store takes it, then journaled as one insert (the seam's `try_push` and
//! `try_push_batch`).

use leaseq_async::{Codec, Push, PushError, Runtime, Store};
use leaseq_core::{MessageId, Timestamp};

use crate::op::Op;
use crate::store::SqliteStore;

impl<T: Clone + Send + 'static, R: Runtime, C: Codec<T>> SqliteStore<T, R, C> {
    /// One push, as `Store::try_push` answers it: the item handed back with the refusal.
    pub(crate) fn push_journaled(&self, item: T, push: &Push) -> Result<MessageId, PushError<T>> {
        // Nothing is accepted while commits fail: it could not be made durable.
        if self.journal.failing() {
            let error = self.journal.refusal();
            return Err(PushError::Store { item, error });
        }
        // Encoded before any lock is taken.
        let payload = match self.codec.encode(&item) {
            Ok(p) => p,
            Err(e) => {
                return Err(PushError::Encode {
                    item,
                    error: e.to_string(),
                })
            }
        };
        if payload.len() > self.max_item_size {
            let (size, max) = (payload.len(), self.max_item_size);
            return Err(PushError::TooLarge { item, size, max });
        }
        let (delay, ttl, options) = push.parts();
        let timed = !delay.is_zero() || ttl.is_some();
        let now = if timed {
            self.inner.runtime().now()
        } else {
            Timestamp::ZERO
        };
        let key = options.key_bytes().map(<[u8]>::to_vec);
        let (priority, replace) = (options.priority, options.replace_pending);
        let id = self.inner.try_push(item, push)?;
        // A window's start read after the core's push: on disk it ends no earlier.
        let window = push
            .window()
            .and_then(|w| crate::windows::row_window(w, self.to_disk(self.inner.runtime().now())));
        // A key's taking journaled only while windows are in use (a plain push asks nothing).
        let taken = key
            .as_ref()
            .filter(|_| self.windows_for(push))
            .map(|k| Op::KeyTaken {
                id: id.get(),
                key: k.clone(),
            });
        self.journal.submit(taken.into_iter().chain([Op::Insert {
            id: id.get(),
            payload,
            visible_at: if delay.is_zero() {
                0
            } else {
                self.to_disk(now.saturating_add(delay))
            },
            expires_at: ttl.map(|ttl| self.to_disk(now.saturating_add(ttl))),
            priority,
            key,
            flow: push.flow(),
            window,
        }]));
        if replace {
            self.journal_events();
        }
        Ok(id)
    }

    /// Every item, in order, as `Store::try_push_batch` answers: one by one (each encoded,
    /// then pushed), stopping at the first refusal.
    #[allow(clippy::type_complexity)]
    pub(crate) fn push_each(
        &self,
        items: &mut dyn Iterator<Item = T>,
        push: &Push,
    ) -> Result<Vec<MessageId>, (Vec<MessageId>, PushError<T>)> {
        let mut ids = Vec::new();
        for item in items {
            match self.push_journaled(item, push) {
                Ok(id) => ids.push(id),
                Err(e) => return Err((ids, e)),
            }
        }
        Ok(ids)
    }
}
