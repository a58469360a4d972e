//! Bulk operator calls on the memory store with a `DeadFilter`: redrive and purge by
//! reason, by job kind (the envelope's, through `ItemKind`), both, and all (virtual time).

use std::time::Duration;

use leaseq_async::{Config, DeadFilter, Page, Reason};
use leaseq_test_kit::envelope::envelope;
use leaseq_test_kit::{sim, steps};

/// Visibility 5 s, one attempt: a nack buries the item.
fn one_attempt() -> Config {
    Config::new(Duration::from_secs(5)).with_max_attempts(1)
}

#[test]
fn bulk_calls_take_only_the_dead_letters_their_filter_names() {
    sim::run(|rt| async move {
        let q = sim::queue(&rt, one_attempt());
        // Four dead letters: two kinds and a raw item; nacked (out of attempts) or rejected.
        steps::bury_four(&q).await;
        assert_eq!(q.stats().dead, 4);

        let none = DeadFilter::all().reason(Reason::TimedOut);
        assert_eq!(q.redrive_matching(none.clone()).await, Ok(0));
        assert_eq!(q.purge_dead_matching(none).await, Ok(0));
        assert_eq!(
            q.stats().dead,
            4,
            "a filter that takes none changes nothing"
        );

        let nacked_email = DeadFilter::all().reason(Reason::Nacked).kind("email");
        assert_eq!(q.redrive_matching(nacked_email).await, Ok(1));
        let live = q.peek(Page::ALL).await.unwrap();
        assert_eq!(live.len(), 1);
        let d = q.receive().await.unwrap();
        assert_eq!(d.item(), &envelope("email", "a"));
        d.ack().await.unwrap();

        steps::purge_sms(&q).await;

        // A kind never matches an item with none (the raw one), whatever its reason.
        steps::redrive_rejected(&q).await;
        assert_eq!(q.purge_dead_letters().await, Ok(1), "all: the raw one");
        assert_eq!(q.stats().dead, 0);
        assert_eq!(
            q.peek(Page::ALL).await.unwrap().len(),
            1,
            "b, ready (a was acked)"
        );
    });
}

/// The router's own item: a queue of `Envelope`s is filtered by the kind its stored bytes
/// begin with, the same kind the router dispatched on.
#[test]
fn a_queue_of_envelopes_is_filtered_by_the_envelopes_kind() {
    use leaseq_async::router::Envelope;

    sim::run(|rt| async move {
        let q = sim::queue(&rt, one_attempt());
        for kind in ["email", "sms", "email"] {
            q.push(Envelope::from_parts(kind, b"{}").unwrap())
                .await
                .unwrap();
        }
        q.push(Envelope::from_bytes(b"not an envelope".to_vec()))
            .await
            .unwrap();
        for _ in 0..4 {
            let d = q.receive().await.unwrap();
            d.dead_letter("gave up").await.unwrap();
        }
        assert_eq!(
            q.redrive_matching(DeadFilter::all().kind("email")).await,
            Ok(2)
        );
        let live = q.peek(Page::ALL).await.unwrap();
        assert_eq!(live.len(), 2, "the two email jobs are ready again");
        for _ in 0..2 {
            let d = q.receive().await.unwrap();
            assert_eq!(d.item().kind(), Some("email"));
            d.ack().await.unwrap();
        }
        assert_eq!(
            q.purge_dead_matching(DeadFilter::all().kind("sms")).await,
            Ok(1)
        );
        let left = q.dead_letters(Page::ALL).await.unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(
            left[0].item.as_ref().unwrap().kind(),
            None,
            "bytes with no kind match no kind filter"
        );
    });
}
