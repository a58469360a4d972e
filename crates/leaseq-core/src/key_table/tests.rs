//! The key table's own tests: lookups, displacement, growth and removal.

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
