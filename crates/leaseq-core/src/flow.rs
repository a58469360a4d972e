//! Flow control's names: the keys of concurrency limits and what a limit applies to.

/// A job kind or a partition (a customer, a tenant) that concurrency limits count by, given
/// at push ([`PushOptions::kind`](crate::PushOptions::kind),
/// [`PushOptions::partition`](crate::PushOptions::partition)).
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

/// What a concurrency limit counts ([`Queue::set_limit`](crate::Queue::set_limit)): the
/// queue's items in flight, or those pushed with a kind or a partition key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum LimitScope {
    /// Every item in flight.
    Queue,
    /// Items pushed with this [`PushOptions::kind`](crate::PushOptions::kind).
    Kind(FlowKey),
    /// Items pushed with this [`PushOptions::partition`](crate::PushOptions::partition).
    Partition(FlowKey),
}
