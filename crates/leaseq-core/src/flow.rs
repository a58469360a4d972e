//! Flow control's names: the keys of concurrency limits and what a limit applies to.

/// A job kind or a partition (a customer, a tenant) that concurrency limits count by, given
/// at push ([`FlowKeys`], [`Queue::push_flow`](crate::Queue::push_flow)).
///
/// A 64-bit number: an id the caller assigns ([`new`](Self::new)), or a name hashed to 64
/// bits ([`named`](Self::named), FNV-1a; two names share a key only by a hash collision,
/// about 2^-64 per pair, so assign ids to names an adversary chooses).
///
/// ```
/// use leaseq_core::FlowKey;
/// assert_eq!(FlowKey::named("email"), FlowKey::named("email"));
/// assert_ne!(FlowKey::named("email"), FlowKey::named("sms"));
/// assert_eq!(FlowKey::new(42).get(), 42);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FlowKey(u64);

impl FlowKey {
    /// The key numbered `id`.
    pub const fn new(id: u64) -> Self {
        FlowKey(id)
    }

    /// The key of a name: its bytes hashed to 64 bits (FNV-1a), the same in every process
    /// and version.
    pub fn named(name: impl AsRef<[u8]>) -> Self {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in name.as_ref() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        FlowKey(h)
    }

    /// Its number.
    pub const fn get(self) -> u64 {
        self.0
    }
}

/// What a concurrency limit counts ([`Queue::set_limit`](crate::Queue::set_limit)), or a
/// rate limit paces ([`Queue::set_rate`](crate::Queue::set_rate)): the queue's items, or
/// those pushed with a kind or a partition key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum LimitScope {
    /// Every item in flight.
    Queue,
    /// Items pushed with this [`FlowKeys::kind`].
    Kind(FlowKey),
    /// Items pushed with this [`FlowKeys::partition`].
    Partition(FlowKey),
}

/// The flow keys of a push ([`Queue::push_flow`](crate::Queue::push_flow)): the job kind
/// and the partition the item counts against in concurrency limits, for life (redeliveries
/// and redrives included). Kept apart from [`PushOptions`](crate::PushOptions), so that a
/// push without them carries nothing more.
///
/// ```
/// use leaseq_core::{FlowKey, FlowKeys};
/// let keys = FlowKeys::new().kind(FlowKey::named("email")).partition(FlowKey::new(42));
/// assert_eq!(keys.kind_key(), Some(FlowKey::named("email")));
/// assert_eq!(keys.partition_key(), Some(FlowKey::new(42)));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FlowKeys {
    kind: Option<FlowKey>,
    partition: Option<FlowKey>,
    group: Option<FlowKey>,
}

impl FlowKeys {
    /// No kind, no partition.
    pub const fn new() -> Self {
        FlowKeys {
            kind: None,
            partition: None,
            group: None,
        }
    }
    /// The job kind the item counts against ([`LimitScope::Kind`]).
    pub const fn kind(mut self, kind: FlowKey) -> Self {
        self.kind = Some(kind);
        self
    }
    /// The partition (a customer, a tenant) the item counts against
    /// ([`LimitScope::Partition`]).
    pub const fn partition(mut self, partition: FlowKey) -> Self {
        self.partition = Some(partition);
        self
    }
    /// An ordered group: the group's items are handed out strictly in push order, one at
    /// a time (the next waits until the one before is acked, dead-lettered or cancelled),
    /// and groups take turns (see [`Queue::push_flow`](crate::Queue::push_flow)).
    pub const fn group(mut self, group: FlowKey) -> Self {
        self.group = Some(group);
        self
    }
    /// The group given, if any.
    pub const fn group_key(&self) -> Option<FlowKey> {
        self.group
    }
    /// The kind given, if any.
    pub const fn kind_key(&self) -> Option<FlowKey> {
        self.kind
    }
    /// The partition given, if any.
    pub const fn partition_key(&self) -> Option<FlowKey> {
        self.partition
    }
    /// Whether neither was given.
    pub const fn is_empty(&self) -> bool {
        self.kind.is_none() && self.partition.is_none() && self.group.is_none()
    }
}

/// What a dead letter does to its ordered group ([`FlowKeys::group`]), a choice per queue
/// ([`Config::group_dead_letter`](crate::Config::group_dead_letter)).
///
/// ```
/// use core::time::Duration;
/// use leaseq_core::{Config, FlowKey, FlowKeys, GroupDeadLetter, PushOptions, Queue, Timestamp};
///
/// let config = Config::new(Duration::from_secs(30)).group_dead_letter(GroupDeadLetter::Block);
/// let mut q = Queue::new(config).unwrap();
/// let t = Timestamp::ZERO;
/// let order = FlowKeys::new().group(FlowKey::named("order-17"));
/// q.push_flow("paid", t, PushOptions::new(), order).unwrap();
/// q.push_flow("packed", t, PushOptions::new(), order).unwrap();
/// let paid = q.receive(t).unwrap();
/// q.dead_letter(paid.receipt, t, None).unwrap();
/// assert!(q.receive(t).is_none(), "the group waits for its dead letter");
/// q.redrive(paid.id, t).unwrap();
/// assert_eq!(q.receive(t).unwrap().item, "paid", "the head again");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum GroupDeadLetter {
    /// The dead letter leaves its group: the next item becomes the head and goes (as an SQS
    /// FIFO message moved to its dead-letter queue does). A redrive puts it back at its
    /// place in push order, where it is the head again. The default.
    #[default]
    Release,
    /// The group waits: nothing behind the dead letter is handed out until it is redriven
    /// (back at its place, the head again) or taken out of the dead letters for good (a
    /// purge), which lets the next item go. Strict order, at the price of a stuck group.
    Block,
}
