//! Unique keys: the key type. The table that finds the live item holding a key is in
//! `key_table.rs`.

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

pub(crate) const EMPTY_KEY: UniqueKey = UniqueKey {
    len: 0,
    bytes: [0; UniqueKey::MAX_LEN],
};

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u32) -> UniqueKey {
        UniqueKey::new(n.to_le_bytes()).unwrap()
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
