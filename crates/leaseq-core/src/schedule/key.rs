//! A tick's unique key: the schedule's name and the tick's time, so that a tick pushed by
//! several processes sharing a queue lands once.

use crate::key::UniqueKey;
use crate::time::Timestamp;

/// Digits of a tick time in a key: `u64::MAX` has 20.
pub(super) const TIME_DIGITS: usize = 20;

/// `name@<tick nanoseconds since the UNIX epoch, 20 digits, zero-padded>`: keys of one
/// schedule sort by tick time, and a key reads back to its tick
/// ([`Schedule::tick_of`](super::Schedule::tick_of)). `name` is at most
/// `UniqueKey::MAX_LEN - 21` bytes (checked when the schedule is made).
pub(super) fn tick_key(name: &[u8], at: Timestamp) -> UniqueKey {
    let mut buf = [0u8; UniqueKey::MAX_LEN];
    let n = name.len().min(UniqueKey::MAX_LEN - 1 - TIME_DIGITS);
    buf[..n].copy_from_slice(&name[..n]);
    buf[n] = b'@';
    let mut t = at.as_nanos();
    for i in (0..TIME_DIGITS).rev() {
        buf[n + 1 + i] = b'0' + (t % 10) as u8;
        t /= 10;
    }
    let len = n + 1 + TIME_DIGITS;
    // At most MAX_LEN bytes by construction: `new` cannot refuse it (the empty key only
    // keeps this total, without a panic path).
    UniqueKey::new(&buf[..len]).unwrap_or(crate::key::EMPTY_KEY)
}

/// The tick time in `key` if it is `name`'s tick key.
pub(super) fn tick_of(name: &[u8], key: &UniqueKey) -> Option<Timestamp> {
    let rest = key.as_bytes().strip_prefix(name)?.strip_prefix(b"@")?;
    if rest.len() != TIME_DIGITS {
        return None;
    }
    let mut t: u64 = 0;
    for &b in rest {
        if !b.is_ascii_digit() {
            return None;
        }
        t = t.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some(Timestamp::from_nanos(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_fixed_width_sort_by_time_and_read_back() {
        let a = tick_key(b"report", Timestamp::from_nanos(7));
        let b = tick_key(b"report", Timestamp::from_nanos(60_000_000_000));
        assert_eq!(a.as_bytes(), b"report@00000000000000000007");
        assert!(a < b);
        assert_eq!(
            tick_of(b"report", &b),
            Some(Timestamp::from_nanos(60_000_000_000))
        );
        assert_eq!(tick_of(b"repor", &b), None);
        let max = tick_key(&[b'x'; 43], Timestamp::MAX);
        assert_eq!(max.len(), UniqueKey::MAX_LEN);
        assert_eq!(tick_of(&[b'x'; 43], &max), Some(Timestamp::MAX));
        let bad = UniqueKey::new("report@0000000000000000000x").unwrap();
        assert_eq!(tick_of(b"report", &bad), None);
        let overflow = UniqueKey::new("r@99999999999999999999").unwrap();
        assert_eq!(tick_of(b"r", &overflow), None);
    }
}
