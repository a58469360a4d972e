//! Snooze on the SQLite store, native: the attempt not counted, the file keeping the
//! snooze so that a reopened queue has the item at the same attempt and its count, and the
//! bound (`Config::with_max_snoozes`) holding across the reopen: the snooze past it counts.

mod support;

use std::time::Duration;

use leaseq_async::core::{Nacked, Snoozed};
use leaseq_async::{Config, Store};
use leaseq_sqlite::{BytesCodec, Options};
use leaseq_test_kit::sqlite::shut;
use support::{remove, temp, Queue};

fn open(path: &std::path::Path) -> Queue {
    let config = Config::new(Duration::from_secs(30))
        .with_max_attempts(3)
        .with_max_snoozes(2);
    leaseq_test_kit::sqlite::open_with(path, config, BytesCodec, Options::new()).unwrap()
}

#[test]
fn a_snooze_is_not_counted_and_its_bound_holds_across_a_reopen() {
    let path = temp("snooze-native");
    let q = open(&path);
    assert!(q.store().snoozes());
    smol::block_on(async {
        q.push(b"job".to_vec()).await.unwrap();
        for n in 1..=2 {
            let mut d = q.receive().await.unwrap();
            assert_eq!(d.attempt(), 1, "not counted");
            match d.snooze(Duration::from_millis(1)).await.unwrap() {
                Snoozed::Later { snoozes, .. } => assert_eq!(snoozes, n),
                other => panic!("{other:?}"),
            }
        }
    });
    shut(q);
    let q = open(&path);
    smol::block_on(async {
        let mut d = q.receive().await.unwrap();
        assert_eq!(d.attempt(), 1, "the file kept the attempt taken back");
        // The third snooze is past the bound of two: counted as a failed attempt.
        match d.snooze(Duration::from_millis(1)).await.unwrap() {
            Snoozed::Counted(Nacked::Retrying { attempts, .. }) => assert_eq!(attempts, 1),
            other => panic!("{other:?}"),
        }
    });
    shut(q);
    let q = open(&path);
    smol::block_on(async {
        let d = q.receive().await.unwrap();
        assert_eq!(d.attempt(), 2, "the counted snooze is kept");
        d.ack().await.unwrap();
    });
    shut(q);
    remove(&path);
}
