//! A job kind's retry rules on Postgres, with no store change: the core's `KindPolicy`
//! turns a handler's failure into the `Failure` to nack with, and the store's own policy
//! reaches the same verdict. "Do not retry" dead-letters at once with the reason a poison
//! item gets; "retry after D" is not delivered before D; a kind's lower max attempts
//! dead-letters with the failure's own reason.

use leaseq_test_kit::pg as common;

use std::time::{Duration, Instant};

use common::*;
use leaseq_async::core::{KindPolicy, RetryPolicy};
use leaseq_async::{Backoff, Config, Failure, Page, Reason};

#[test]
fn a_kinds_verdict_is_the_stores() {
    common::with_server(|url| async move {
        let config = Config::new(Duration::from_secs(5))
            .with_max_attempts(10)
            .with_backoff(Backoff::Fixed(Duration::from_secs(60)));
        let q = process(&url, &unique("kind"), config.clone()).await;
        let mut policy = RetryPolicy::new(&config);
        let kind = KindPolicy::new().with_max_attempts(2);

        // A poison item, for its reason; then "do not retry" through the kind.
        let poison = q.push(b"poison".to_vec()).await.expect("push");
        receive(&q)
            .await
            .dead_letter("bad")
            .await
            .expect("dead letter");
        let permanent = q.push(b"permanent".to_vec()).await.expect("push");
        let d = receive(&q).await;
        let f = kind.resolve(
            &mut policy,
            d.attempt(),
            false,
            Failure::permanent("invalid"),
        );
        d.nack_with(f).await.expect("nack");

        // "Retry after 300 ms", exactly: not before, whatever the queue's 60 s backoff.
        let later = q.push(b"later".to_vec()).await.expect("push");
        let d = receive(&q).await;
        let retry = Failure::error("busy").retry_after(Duration::from_millis(300));
        let f = kind.resolve(&mut policy, d.attempt(), false, retry);
        let nacked = Instant::now();
        d.nack_with(f).await.expect("nack");
        let again = receive(&q).await;
        assert!(
            nacked.elapsed() >= Duration::from_millis(300),
            "{:?}",
            nacked.elapsed()
        );
        assert_eq!((again.id(), again.attempt()), (later, 2));
        // Its second failure is the kind's last (2 of the queue's 10): dead, as timed out.
        let f = kind.resolve(&mut policy, again.attempt(), false, Failure::timed_out());
        again.nack_with(f).await.expect("nack");

        let dead = q.dead_letters(Page::first(10)).await.expect("dead letters");
        let reason = |id| {
            dead.iter()
                .find(|x| x.id == id)
                .map(|x| (x.reason, x.attempts))
        };
        let poison_reason = reason(poison).expect("poison dead").0;
        assert_ne!(poison_reason, Reason::Nacked);
        assert_eq!(reason(permanent), Some((poison_reason, 1)));
        assert_eq!(reason(later), Some((Reason::TimedOut, 2)));
    });
}
