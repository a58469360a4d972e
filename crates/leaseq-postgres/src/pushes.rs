//! The writer's queue and marks: the rows accepted and not yet committed, the id source,
//! how far the writer got, and a bounded queue's last count of live rows. The writer task
//! (`writer.rs`) owns it; others hold it to queue rows and wake the writer.
//!
//! Who writes what in [`PushBuffer`]:
//! - `rows`, `queued`, `filling`: the pushers (`push.rs`); the writer drains `rows` and
//!   puts back in front what failed or did not fit;
//! - `instance`, `counter`: whoever takes an id (`push.rs`, `keyed.rs`); `spare_instance`:
//!   the writer fetches it, the id source takes it;
//! - `committed`, `failing_since`: the writer only;
//! - `live`, `counted_at`, `wants_room`, `removed`: a bounded queue's count (`capacity.rs`,
//!   run by the writer), `wants_room` also by a push refused or waiting for room, `removed`
//!   by whoever removed a row (`capacity::removed`), `live` also by a keyed push.
//!
//! Read by: `synced` (`queued`), `committed` waits (`committed`, `failing_since`), the
//! waits for room (`receive.rs`), the driver's counts (`committed`, `keeper.rs`) and the
//! empty wait (`queued`). The two events: [`Pushes::queued`] wakes the writer;
//! [`Pushes::committed`] wakes whoever waits for a commit or for room. A leaf.

use event_listener::Event;
use leaseq_core::MessageId;
use parking_lot::Mutex;

/// A row waiting for the writer.
#[derive(Debug)]
pub(crate) struct PushRow {
    pub(crate) id: i64,
    pub(crate) priority: i16,
    pub(crate) delay_us: i64,
    pub(crate) ttl_us: Option<i64>,
    pub(crate) payload: Vec<u8>,
    /// The flow keys (kind, partition, group), if the push gave any.
    pub(crate) flow: Option<[Option<i64>; 3]>,
}

/// The rows accepted and not yet committed, and the id source.
#[derive(Debug, Default)]
pub(crate) struct PushBuffer {
    pub(crate) rows: Vec<PushRow>,
    /// Sequence number of the last row queued (rows are numbered from 1, in order).
    pub(crate) queued: u64,
    /// Sequence number of the last row committed.
    pub(crate) committed: u64,
    /// This process's instance number (ids are `instance << 32 | counter`).
    pub(crate) instance: i64,
    pub(crate) counter: u32,
    /// A fresh instance number fetched ahead, for when the counter runs out.
    pub(crate) spare_instance: Option<i64>,
    /// Batch pushes in progress (the writer waits for them to end).
    pub(crate) filling: usize,
    /// Since when the writer's inserts have failed (none: the last one committed).
    pub(crate) failing_since: Option<std::time::Instant>,
    /// A bounded queue's live rows at the last count, plus the rows inserted since by
    /// this process (`capacity.rs`).
    pub(crate) live: u64,
    /// When `live` was last counted on the server.
    pub(crate) counted_at: Option<std::time::Instant>,
    /// A push was refused, or waits, for room: count again when it may have changed.
    pub(crate) wants_room: bool,
    /// This process removed a row since the last count.
    pub(crate) removed: bool,
}

impl PushBuffer {
    /// The next id, if one is left: ids are unique across every process (each has its own
    /// instance number from a database sequence).
    pub(crate) fn next_id(&mut self) -> Option<MessageId> {
        if self.counter == u32::MAX {
            self.instance = self.spare_instance.take()?;
            self.counter = 0;
        }
        self.counter += 1;
        Some(MessageId::new(
            ((self.instance as u64) << 32) | u64::from(self.counter),
        ))
    }

    /// Whether the writer should fetch a spare instance number now.
    pub(crate) fn wants_spare(&self) -> bool {
        self.spare_instance.is_none() && self.counter > u32::MAX / 2
    }
}

/// The writer's queue and its two events (see the file's header).
pub(crate) struct Pushes {
    pub(crate) buf: Mutex<PushBuffer>,
    /// Wakes the writer (rows queued, a batch push ended, room may have come, or stop).
    pub(crate) queued: Event,
    /// Wakes whoever waits for a commit of pushes or for room to push.
    pub(crate) committed: Event,
}

impl Pushes {
    /// The queue of a store whose writer instance is `instance`, with `live` rows counted
    /// now (a bounded queue's; 0 otherwise).
    pub(crate) fn new(instance: i64, live: u64) -> Self {
        Pushes {
            buf: Mutex::new(PushBuffer {
                instance,
                live,
                counted_at: Some(std::time::Instant::now()),
                ..PushBuffer::default()
            }),
            queued: Event::new(),
            committed: Event::new(),
        }
    }
}
