//! Bulk operator calls on a Postgres queue with a `DeadFilter`: redrive and purge by
//! reason and by job kind in SQL (the envelope's head of the stored bytes), both, and all;
//! another queue of the schema untouched.

mod common;

use std::time::Duration;

use leaseq_async::{Config, DeadFilter, Failure, Page, Reason};
use leaseq_postgres::PgQueue;

use common::{process, receive, server, unique};

/// An envelope's bytes: the kind's length, the kind, the arguments.
fn envelope(kind: &str, args: &str) -> Vec<u8> {
    [&[kind.len() as u8][..], kind.as_bytes(), args.as_bytes()].concat()
}

async fn dead_items(q: &PgQueue<Vec<u8>>) -> Vec<Vec<u8>> {
    let letters = q.dead_letters(Page::ALL).await.expect("dead letters");
    letters
        .into_iter()
        .map(|l| l.item.expect("decoded"))
        .collect()
}

/// Four dead letters in `q`: two kinds and a raw item, nacked out of attempts or rejected.
async fn bury(q: &PgQueue<Vec<u8>>) {
    let items = [
        (envelope("email", "a"), true),
        (envelope("email", "b"), false),
        (envelope("sms", "c"), true),
        (b"raw".to_vec(), true),
    ];
    for (item, _) in &items {
        q.push(item.clone()).await.expect("push");
    }
    for _ in &items {
        let d = receive(q).await;
        let nack = items.iter().find(|(i, _)| i == d.item()).expect("ours").1;
        if nack {
            d.nack_with(Failure::error("503")).await.expect("nack");
        } else {
            d.dead_letter("bad address").await.expect("dead letter");
        }
    }
}

#[test]
fn bulk_calls_take_only_the_dead_letters_their_filter_names() {
    let Some(url) = server() else { return };
    common::runtime().block_on(async {
        let config = Config::new(Duration::from_secs(30)).with_max_attempts(1);
        let q = process(&url, &unique("filter"), config.clone()).await;
        let other = process(&url, &unique("filter-other"), config).await;
        bury(&q).await;
        bury(&other).await;

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
        assert_eq!(
            q.purge_dead_matching(DeadFilter::all().kind("sms")).await,
            Ok(1)
        );
        assert_eq!(
            dead_items(&q).await,
            vec![envelope("email", "b"), b"raw".to_vec()]
        );
        assert_eq!(
            q.redrive_matching(DeadFilter::all().kind("raw")).await,
            Ok(0)
        );
        assert_eq!(
            q.redrive_matching(DeadFilter::all().reason(Reason::Rejected))
                .await,
            Ok(1)
        );
        assert_eq!(q.purge_dead_letters().await, Ok(1));
        assert!(dead_items(&q).await.is_empty());
        assert_eq!(dead_items(&other).await.len(), 4, "another queue untouched");
    });
}
