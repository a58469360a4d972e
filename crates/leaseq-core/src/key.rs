//! Unique keys: the key type, and the table that finds the live item holding a key.
//!
//! The table is a power of two of 64-byte buckets, each one cache line holding seven
//! entries and an overflow count; at most half of the entries are used. An entry is a tag,
//! the upper 32 bits of the key's hash (low bit set; 0 is a free entry), whose top bits also
//! pick its home bucket, and the slot. An entry goes to the first free entry of the first
//! bucket from its home with room; every full bucket it passes counts it in `overflow`, so a
//! lookup stops at the first bucket with `overflow == 0`. A lookup compares all eight lanes
//! of a bucket at once, so the branches a push takes are the same whatever the keys
//! (predicted).
//!
//! The key bytes and the full hash live beside the slots (`by_slot`), read only when the
//! upper 32 bits match, so a lookup touches one table line and, for a real match, one key.
//! Each keyed slot also records its entry's bucket (`bucket_of`, 4 bytes), so that a removal
//! goes straight to that bucket: one table line, no key and no hash read.
//!
//! Nothing here is touched by an item without a key.

use alloc::vec::Vec;
use core::fmt;
use core::hash::{Hash, Hasher};

/// A unique key: at most [`UniqueKey::MAX_LEN`] bytes, kept inline (no allocation).
///
/// While an item pushed with a key is ready, delayed or in flight, another push with the
/// same key is refused (or replaces the pending one, see
/// [`PushOptions::replace_pending`](crate::PushOptions::replace_pending)). Keys compare by
/// their bytes. Hash longer identities to fit (a SHA-256 is 32 bytes, 64 in hex).
#[derive(Clone, Copy)]
pub struct UniqueKey {
    len: u8,
    bytes: [u8; UniqueKey::MAX_LEN],
}

impl UniqueKey {
    /// The longest key, in bytes.
    pub const MAX_LEN: usize = 64;

    /// `bytes` as a key, or `None` if it is longer than [`MAX_LEN`](Self::MAX_LEN).
    pub fn new(bytes: impl AsRef<[u8]>) -> Option<UniqueKey> {
        let b = bytes.as_ref();
        if b.len() > Self::MAX_LEN {
            return None;
        }
        let mut key = UniqueKey {
            len: b.len() as u8,
            bytes: [0; Self::MAX_LEN],
        };
        key.bytes[..b.len()].copy_from_slice(b);
        Some(key)
    }

    /// The key's bytes.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// Its length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether it is the empty key (a valid key like any other).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The table hash of the key: a multiply-fold over 8-byte words with a fixed seed.
    /// Deterministic; not keyed against chosen collisions (they would slow pushes, never
    /// change a result).
    #[inline]
    pub(crate) fn hash64(&self) -> u64 {
        const K: u64 = 0x9E37_79B9_7F4A_7C15;
        const SEED: u64 = 0x243F_6A88_85A3_08D3;
        let n = self.len as usize;
        let mut h = SEED ^ (n as u64).wrapping_mul(K);
        // Bytes past `len` are zero, so whole words can be read.
        let words = n.div_ceil(8);
        for w in 0..words {
            let mut word = [0u8; 8];
            word.copy_from_slice(&self.bytes[w * 8..w * 8 + 8]);
            h = fold(h ^ u64::from_le_bytes(word), K);
        }
        fold(h, 0xD6E8_FEB8_6659_FD93)
    }
}

#[inline]
fn fold(a: u64, b: u64) -> u64 {
    let p = (a as u128).wrapping_mul(b as u128);
    (p as u64) ^ ((p >> 64) as u64)
}

impl PartialEq for UniqueKey {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for UniqueKey {}

impl Hash for UniqueKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

impl PartialOrd for UniqueKey {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for UniqueKey {
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl fmt::Debug for UniqueKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UniqueKey({self})")
    }
}

/// Printable ASCII as is, other bytes as `\xNN`.
impl fmt::Display for UniqueKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for &b in self.as_bytes() {
            if b.is_ascii_graphic() || b == b' ' {
                write!(f, "{}", b as char)?;
            } else {
                write!(f, "\\x{b:02x}")?;
            }
        }
        Ok(())
    }
}

/// A key and its hash, by slot.
#[derive(Clone, Copy)]
struct Stored {
    hash: u64,
    key: UniqueKey,
}

const EMPTY_KEY: UniqueKey = UniqueKey {
    len: 0,
    bytes: [0; UniqueKey::MAX_LEN],
};

/// Entries per bucket.
const WAYS: usize = 7;

/// One cache line: seven entries and the count of entries whose probe run started at this
/// bucket or before and that live past it (so a lookup that finds `overflow == 0` stops
/// here). An entry is a tag (the upper 32 bits of its key's hash with the low bit set, so
/// never 0) and its slot; a tag of 0 is a free entry.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Bucket {
    /// Tags of the entries; `tags[WAYS]` stays 0 (so all eight lanes compare as one vector
    /// and it never matches a tag).
    tags: [u32; WAYS + 1],
    /// Slots of the entries (meaningless where the tag is 0); `slots[WAYS]` is the
    /// overflow count.
    slots: [u32; WAYS + 1],
}

impl Bucket {
    /// Whether an entry has tag `tag` (a vector compare of the eight lanes, one branch).
    #[inline]
    fn has_tag(&self, tag: u32) -> bool {
        self.tags.iter().fold(false, |any, &t| any | (t == tag))
    }

    /// The first free entry, or `WAYS` if the bucket is full. Branch-free (a conditional
    /// move per lane): which entries are free is random, a search loop would mispredict.
    #[inline]
    fn first_free(&self) -> usize {
        let mut free = WAYS;
        for lane in (0..WAYS).rev() {
            if self.tags[lane] == 0 {
                free = lane;
            }
        }
        free
    }

    #[inline]
    fn overflow(&self) -> u32 {
        self.slots[WAYS]
    }
}

/// The tag of a hash: its upper half, odd.
#[inline]
fn tag_of(hash: u64) -> u32 {
    (hash >> 32) as u32 | 1
}

/// Which live slot holds each key. See the module docs.
#[derive(Default)]
pub(crate) struct KeyTable {
    buckets: Vec<Bucket>,
    /// `buckets.len() - 1` (a power of two minus one); 0 while there are none.
    mask: usize,
    /// `32 - log2(buckets.len())`: `hi >> shift` is an entry's home bucket.
    shift: u32,
    len: usize,
    /// Grow when `len` would pass this (half the entries), shrink below `shrink_below`.
    grow_above: usize,
    shrink_below: usize,
    by_slot: Vec<Stored>,
    /// Where each keyed slot's entry is: `bucket << 4 | away << 3 | lane`, `away` set if
    /// the bucket is not the entry's home. Entries never move but by a resize, so a removal
    /// is one store into the bucket (no read of it, nor of the key or its hash) unless the
    /// entry lives away from home.
    bucket_of: Vec<u64>,
}

/// Buckets of a table that has ever held a key: never fewer.
const MIN_BUCKETS: usize = 4;
/// The most buckets: homes come from 32 hash bits.
const MAX_BUCKETS: usize = 1 << 31;

impl KeyTable {
    /// Keys held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn home(&self, hi: u32) -> usize {
        // `checked_shr`: a shift of 32 (one bucket, never used) would overflow.
        hi.checked_shr(self.shift).unwrap_or(0) as usize
    }

    /// The slot holding `key`, if any. `hash` is `key.hash64()`.
    #[inline]
    pub(crate) fn find(&self, key: &UniqueKey, hash: u64) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        let tag = tag_of(hash);
        let mut b = self.home(tag);
        loop {
            let bucket = &self.buckets[b];
            if bucket.has_tag(tag) {
                if let Some(slot) = self.match_in(bucket, tag, key, hash) {
                    return Some(slot);
                }
            }
            if bucket.overflow() == 0 {
                return None;
            }
            b = (b + 1) & self.mask;
        }
    }

    /// The entry of `bucket` for `key`, among those tagged `tag`.
    #[cold]
    fn match_in(&self, bucket: &Bucket, tag: u32, key: &UniqueKey, hash: u64) -> Option<u32> {
        (0..WAYS)
            .filter(|&i| bucket.tags[i] == tag)
            .map(|i| bucket.slots[i])
            .find(|&slot| {
                let s = &self.by_slot[slot as usize];
                s.hash == hash && s.key == *key
            })
    }

    /// Enters `key` (not held by any slot) as held by `slot`.
    #[inline]
    pub(crate) fn insert(&mut self, slot: u32, key: &UniqueKey, hash: u64) {
        // At most half of the entries used.
        if self.len >= self.grow_above {
            self.resize(self.buckets.len() * 2);
        }
        let at = slot as usize;
        if at >= self.by_slot.len() {
            self.grow_by_slot(at);
        }
        let stored = &mut self.by_slot[at];
        stored.hash = hash;
        stored.key = *key;
        self.place(tag_of(hash), slot);
        self.len += 1;
    }

    #[cold]
    fn grow_by_slot(&mut self, at: usize) {
        let n = (at + 1).max(self.by_slot.len() * 2);
        self.by_slot.resize(
            n,
            Stored {
                hash: 0,
                key: EMPTY_KEY,
            },
        );
        self.bucket_of.resize(n, 0);
    }

    #[inline]
    fn place(&mut self, tag: u32, slot: u32) {
        let home = self.home(tag);
        let mut b = home;
        loop {
            let bucket = &mut self.buckets[b];
            let lane = bucket.first_free();
            if lane < WAYS {
                bucket.tags[lane] = tag;
                bucket.slots[lane] = slot;
                let away = u64::from(b != home);
                self.bucket_of[slot as usize] = (b as u64) << 4 | away << 3 | lane as u64;
                return;
            }
            bucket.slots[WAYS] += 1;
            b = (b + 1) & self.mask;
        }
    }

    /// The key `slot` holds (it must hold one).
    #[inline]
    pub(crate) fn key_of(&self, slot: u32) -> UniqueKey {
        self.by_slot[slot as usize].key
    }

    /// Removes the key `slot` holds (it must hold one).
    #[inline]
    pub(crate) fn remove(&mut self, slot: u32) {
        let at = self.bucket_of[slot as usize];
        let b = (at >> 4) as usize;
        // A store, with nothing read from the bucket: the CPU need not wait for its line.
        self.buckets[b].tags[at as usize & 7] = 0;
        if at & 8 != 0 {
            self.unwind_overflow(slot, b);
        }
        self.len -= 1;
        if self.len < self.shrink_below {
            self.resize(self.buckets.len() / 2);
        }
    }

    /// The entry of `slot`, just removed from bucket `b` away from its home: the buckets
    /// it passed no longer overflow for it.
    #[cold]
    fn unwind_overflow(&mut self, slot: u32, b: usize) {
        let mut o = self.home(tag_of(self.by_slot[slot as usize].hash));
        while o != b {
            self.buckets[o].slots[WAYS] -= 1;
            o = (o + 1) & self.mask;
        }
    }

    #[cold]
    #[inline(never)]
    fn resize(&mut self, buckets: usize) {
        let buckets = buckets.clamp(MIN_BUCKETS, MAX_BUCKETS);
        let old = core::mem::replace(&mut self.buckets, alloc::vec![Bucket::default(); buckets]);
        self.mask = buckets - 1;
        self.shift = 32 - buckets.trailing_zeros();
        self.grow_above = if buckets < MAX_BUCKETS {
            buckets * WAYS / 2
        } else {
            usize::MAX
        };
        // Below an eighth full, halve (to a quarter full at most).
        self.shrink_below = if buckets > MIN_BUCKETS {
            buckets * WAYS / 8
        } else {
            0
        };
        for bucket in old {
            for lane in 0..WAYS {
                if bucket.tags[lane] != 0 {
                    self.place(bucket.tags[lane], bucket.slots[lane]);
                }
            }
        }
        // The key side tables follow the slab; they are dropped once no key is held.
        if self.len == 0 && buckets == MIN_BUCKETS {
            self.by_slot = Vec::new();
            self.bucket_of = Vec::new();
        }
    }

    /// Table entries (buckets × 7) and key side-table entries (for `index_sizes`).
    pub(crate) fn sizes(&self) -> (usize, usize) {
        (self.buckets.len() * WAYS, self.by_slot.len())
    }

    /// Checks that the table holds exactly `held` (slot, key) pairs, each found by its key,
    /// with exact overflow counts.
    pub(crate) fn check(&self, held: impl Iterator<Item = u32>) -> bool {
        let mut n = 0;
        for slot in held {
            n += 1;
            let Some(s) = self.by_slot.get(slot as usize) else {
                return false;
            };
            if s.hash != s.key.hash64() || self.find(&s.key, s.hash) != Some(slot) {
                return false;
            }
            let at = self.bucket_of[slot as usize];
            let b = &self.buckets[(at >> 4) as usize];
            let lane = at as usize & 7;
            let home = self.home(tag_of(s.hash));
            if lane >= WAYS
                || b.tags[lane] != tag_of(s.hash)
                || b.slots[lane] != slot
                || (at & 8 != 0) != ((at >> 4) as usize != home)
            {
                return false;
            }
        }
        let mut overflow = alloc::vec![0u64; self.buckets.len()];
        let mut occupied = 0;
        let mut lanes_ok = true;
        for (b, bucket) in self.buckets.iter().enumerate() {
            lanes_ok &= bucket.tags[WAYS] == 0 && bucket.tags.iter().all(|&t| t == 0 || t % 2 == 1);
            for &tag in bucket.tags[..WAYS].iter().filter(|&&t| t != 0) {
                occupied += 1;
                let mut o = self.home(tag);
                while o != b {
                    overflow[o] += 1;
                    o = (o + 1) & self.mask;
                }
            }
        }
        let counts_ok = lanes_ok
            && self
                .buckets
                .iter()
                .zip(&overflow)
                .all(|(bucket, &o)| bucket.overflow() as u64 == o);
        n == self.len
            && occupied == self.len
            && counts_ok
            && self.len * 2 <= (self.buckets.len() * WAYS).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u32) -> UniqueKey {
        UniqueKey::new(n.to_le_bytes()).unwrap()
    }

    #[test]
    fn insert_find_remove_with_growth_and_shrink() {
        let mut t = KeyTable::default();
        for n in 0..1000u32 {
            let k = key(n);
            assert_eq!(t.find(&k, k.hash64()), None);
            t.insert(n, &k, k.hash64());
        }
        assert!(t.check(0..1000));
        for n in (0..1000u32).step_by(3) {
            t.remove(n);
        }
        for n in 0..1000u32 {
            let k = key(n);
            let want = (n % 3 != 0).then_some(n);
            assert_eq!(t.find(&k, k.hash64()), want, "{n}");
        }
        assert!(t.check((0..1000).filter(|n| n % 3 != 0)));
        for n in (0..1000u32).filter(|n| n % 3 != 0) {
            t.remove(n);
        }
        assert_eq!(t.len(), 0);
        assert!(t.sizes().0 <= 64);
        assert!(t.check(core::iter::empty()));
    }

    #[test]
    fn colliding_homes_survive_removal_in_any_order() {
        // A tiny table: buckets overflow and runs wrap around the end.
        let mut t = KeyTable::default();
        let keys: Vec<UniqueKey> = (0..13u32).map(key).collect();
        for (i, k) in keys.iter().enumerate() {
            t.insert(i as u32, k, k.hash64());
        }
        for order in [
            [3usize, 0, 6, 1, 5, 12, 2, 4, 11, 7, 10, 9, 8],
            [12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
        ] {
            let mut t2 = KeyTable::default();
            for (i, k) in keys.iter().enumerate() {
                t2.insert(i as u32, k, k.hash64());
            }
            let mut live: Vec<usize> = (0..13).collect();
            for r in order {
                t2.remove(r as u32);
                live.retain(|&x| x != r);
                for &l in &live {
                    assert_eq!(t2.find(&keys[l], keys[l].hash64()), Some(l as u32));
                }
                assert_eq!(t2.find(&keys[r], keys[r].hash64()), None);
                assert!(t2.check(live.iter().map(|&l| l as u32)));
            }
        }
        assert!(t.check(0..13));
    }

    #[test]
    fn overflowing_buckets_wrap_and_unwind() {
        // Keys whose home is the last bucket of a 4-bucket table: the 8th and later spill
        // over, wrapping around to bucket 0.
        let keys: Vec<UniqueKey> = (0u32..)
            .map(key)
            .filter(|k| k.hash64() >> 61 == 0b111)
            .take(12)
            .collect();
        for order in [
            [0usize, 11, 5, 6, 7, 1, 10, 2, 9, 3, 8, 4],
            [11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
        ] {
            let mut t = KeyTable::default();
            for (i, k) in keys.iter().enumerate() {
                t.insert(i as u32, k, k.hash64());
            }
            assert_eq!(t.sizes().0, 4 * WAYS);
            assert!(t.buckets[3].overflow() == 5);
            assert_eq!(t.buckets[0].tags.iter().filter(|&&t| t != 0).count(), 5);
            assert!(t.check(0..12));
            let mut live: Vec<usize> = (0..12).collect();
            for r in order {
                t.remove(r as u32);
                live.retain(|&x| x != r);
                assert_eq!(t.find(&keys[r], keys[r].hash64()), None);
                assert!(
                    t.check(live.iter().map(|&l| l as u32)),
                    "after removing {r}"
                );
            }
        }
    }

    #[test]
    fn keys_compare_by_bytes() {
        let a = UniqueKey::new("ab").unwrap();
        assert_eq!(a, UniqueKey::new(b"ab").unwrap());
        assert!(a < UniqueKey::new("b").unwrap());
        assert_eq!(UniqueKey::new([0u8; 65]), None);
        assert_eq!(UniqueKey::new([7u8; 64]).unwrap().len(), 64);
        assert_eq!(
            alloc::format!("{}", UniqueKey::new(b"a\x01").unwrap()),
            "a\\x01"
        );
        assert_ne!(key(1).hash64(), key(2).hash64());
    }
}

/// Serde for keys (feature `serde`): in human-readable formats a key that is UTF-8 is a
/// string (and any other a sequence of bytes); in compact ones, bytes. Either reads back,
/// refused when longer than [`UniqueKey::MAX_LEN`].
#[cfg(feature = "serde")]
mod serde_impl {
    use core::fmt;

    use serde::de::{self, Deserializer, SeqAccess, Visitor};
    use serde::ser::Serializer;

    use super::UniqueKey;

    impl serde::Serialize for UniqueKey {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            match core::str::from_utf8(self.as_bytes()) {
                Ok(text) if serializer.is_human_readable() => serializer.serialize_str(text),
                _ => serializer.serialize_bytes(self.as_bytes()),
            }
        }
    }

    struct KeyVisitor;

    impl<'de> Visitor<'de> for KeyVisitor {
        type Value = UniqueKey;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "a unique key of at most {} bytes", UniqueKey::MAX_LEN)
        }

        fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<UniqueKey, E> {
            UniqueKey::new(bytes).ok_or_else(|| E::invalid_length(bytes.len(), &self))
        }

        fn visit_str<E: de::Error>(self, text: &str) -> Result<UniqueKey, E> {
            self.visit_bytes(text.as_bytes())
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<UniqueKey, A::Error> {
            let mut bytes = [0u8; UniqueKey::MAX_LEN];
            let mut len = 0;
            while let Some(byte) = seq.next_element::<u8>()? {
                if len == UniqueKey::MAX_LEN {
                    return Err(de::Error::invalid_length(len + 1, &self));
                }
                bytes[len] = byte;
                len += 1;
            }
            Ok(UniqueKey::new(&bytes[..len]).expect("at most MAX_LEN bytes"))
        }
    }

    impl<'de> serde::Deserialize<'de> for UniqueKey {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<UniqueKey, D::Error> {
            if deserializer.is_human_readable() {
                deserializer.deserialize_any(KeyVisitor)
            } else {
                deserializer.deserialize_bytes(KeyVisitor)
            }
        }
    }
}
