//! Bulk operator calls on a Postgres queue with a `DeadFilter`: redrive and purge by
//! reason and by job kind in SQL (the envelope's head of the stored bytes), both, and all;
//! another queue of the schema untouched.

use leaseq_test_kit::pg as common;

use std::time::Duration;

use leaseq_async::{Config, DeadFilter, Reason};

use common::{process, receive, unique};
use leaseq_test_kit::envelope::envelope;
use leaseq_test_kit::steps::{self, bury_four, dead_items};

#[test]
fn bulk_calls_take_only_the_dead_letters_their_filter_names() {
    common::with_server(|url| async move {
        let config = Config::new(Duration::from_secs(30)).with_max_attempts(1);
        let q = process(&url, &unique("filter"), config.clone()).await;
        let other = process(&url, &unique("filter-other"), config).await;
        bury_four(&q).await;
        bury_four(&other).await;

        let none = DeadFilter::all().reason(Reason::TimedOut);
        assert_eq!(q.redrive_matching(none.clone()).await, Ok(0));
        assert_eq!(q.purge_dead_matching(none).await, Ok(0));
        let nobody = DeadFilter::all().kind(&"k".repeat(256));
        assert_eq!(
            q.redrive_matching(nobody).await,
            Ok(0),
            "no envelope has it"
        );

        let nacked_email = DeadFilter::all().reason(Reason::Nacked).kind("email");
        assert_eq!(q.redrive_matching(nacked_email).await, Ok(1));
        let d = receive(&q).await;
        assert_eq!(d.item(), &envelope("email", "a"));
        d.ack().await.expect("ack");
        // A kind that is a prefix of another's is not it.
        assert_eq!(
            q.purge_dead_matching(DeadFilter::all().kind("sm")).await,
            Ok(0)
        );
        steps::purge_sms(&q).await;
        steps::redrive_rejected(&q).await;
        assert_eq!(q.purge_dead_letters().await, Ok(1));
        assert!(dead_items(&q).await.is_empty());
        assert_eq!(dead_items(&other).await.len(), 4, "another queue untouched");
    });
}
