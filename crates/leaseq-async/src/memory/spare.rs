//! The room of a batch's vector of deliveries, kept from a batch ack for the next batch
//! receive: a vector of 16 deliveries is too large for the allocator's per-thread cache, so
//! allocating and freeing one per batch cost about 26 instructions per item.

use std::any::Any;

use parking_lot::Mutex;

/// The most deliveries a kept vector has room for: a larger one is freed, not kept.
const MOST: usize = 256;

/// One emptied vector of deliveries (its type erased: the store cannot name its own
/// deliveries' type in its fields), boxed once and kept in its box.
#[derive(Default)]
pub(super) struct Spare(Mutex<Option<Box<dyn Any + Send>>>);

impl Spare {
    /// An empty vector with the kept room, or a new one (none kept, or the lock busy: a
    /// receiver never waits for it).
    pub(super) fn take<D: Send + 'static>(&self) -> Vec<D> {
        let Some(mut kept) = self.0.try_lock() else {
            return Vec::new();
        };
        match kept.as_mut().and_then(|b| b.downcast_mut::<Vec<D>>()) {
            Some(v) => std::mem::take(v),
            None => Vec::new(),
        }
    }

    /// Keeps `v`'s room if it is empty and none is kept (a larger one, or one given while
    /// the lock is busy, is freed after the lock).
    pub(super) fn keep<D: Send + 'static>(&self, mut v: Vec<D>) {
        if !v.is_empty() || v.capacity() == 0 || v.capacity() > MOST {
            return;
        }
        let Some(mut kept) = self.0.try_lock() else {
            return;
        };
        match kept.as_mut() {
            Some(b) => {
                if let Some(k) = b.downcast_mut::<Vec<D>>() {
                    if k.capacity() == 0 {
                        std::mem::swap(k, &mut v);
                    }
                }
            }
            None => *kept = Some(Box::new(std::mem::take(&mut v))),
        }
        drop(kept);
        drop(v);
    }
}
