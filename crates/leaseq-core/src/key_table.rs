//! The unique key table: finds the live item holding a key.
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

use crate::key::{UniqueKey, EMPTY_KEY};

/// A key and its hash, by slot.
#[derive(Clone, Copy)]
struct Stored {
    hash: u64,
    key: UniqueKey,
}

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
mod tests;
