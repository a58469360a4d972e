//! Bulk operator calls on a SQLite queue with a `DeadFilter`: redrive and purge by reason,
//! by job kind (the envelope's), both, and all; what they did is in the file after a
//! reopen.

use std::path::Path;
use std::time::Duration;

use leaseq_async::{Config, DeadFilter, Page, Reason};
use leaseq_sqlite::BytesCodec;
use leaseq_test_kit::envelope::envelope;
use leaseq_test_kit::sqlite::{self, temp, BytesQueue as Queue};
use leaseq_test_kit::steps::{self, dead_items};

fn open(path: &Path) -> Queue {
    let config = Config::new(Duration::from_secs(30)).with_max_attempts(1);
    sqlite::open(path, config, BytesCodec)
}

#[test]
fn bulk_calls_take_only_the_dead_letters_their_filter_names_and_commit_it() {
    let path = temp("dead-filter");
    smol::block_on(async {
        let q = open(&path);
        // Four dead letters: two kinds and a raw item; nacked (out of attempts) or rejected.
        steps::bury_four(&q).await;
        let none = DeadFilter::all().reason(Reason::TimedOut);
        assert_eq!(q.redrive_matching(none.clone()).await, Ok(0));
        assert_eq!(q.purge_dead_matching(none).await, Ok(0));

        let nacked_email = DeadFilter::all().reason(Reason::Nacked).kind("email");
        assert_eq!(q.redrive_matching(nacked_email).await, Ok(1));
        steps::purge_sms(&q).await;
        q.close().await.unwrap();
        drop(q);

        // In the file: a back, c gone, b and the raw item still dead.
        let q = open(&path);
        let live = q.peek(Page::ALL).await.unwrap();
        assert_eq!(live.len(), 1);
        assert_eq!(
            dead_items(&q).await,
            vec![envelope("email", "b"), b"raw".to_vec()]
        );
        assert_eq!(
            q.redrive_matching(DeadFilter::all().reason(Reason::Rejected))
                .await,
            Ok(1)
        );
        assert_eq!(q.purge_dead_letters().await, Ok(1));
        assert_eq!(q.stats().dead, 0);
        assert_eq!(q.stats().live(), 2);
    });
    sqlite::remove(&path);
}
