//! A pool's deliveries inside `leaseq.delivery` spans; cancels and replacements traced.

use super::*;

/// Each handling of a pool runs inside a `leaseq.delivery` span with the item's id,
/// attempt and type: the handler's own events carry them.
#[test]
fn pool_handlers_run_inside_a_delivery_span() {
    let seen = traced(|rt, _| async move {
        let q = queue(&rt, "pool", Config::new(SECOND).with_max_attempts(2));
        q.try_push(1).unwrap();
        q.try_push(2).unwrap();
        let pool = Pool::builder(q.clone())
            .workers(1)
            .item_type(|n: &u32| if n % 2 == 0 { "even" } else { "odd" })
            .spawn(|job| async move {
                tracing::info!(item = job.item, "in handler");
                if job.item == 2 && job.attempt == 1 {
                    return Err(leaseq_async::JobError::retry("once more"));
                }
                Ok(())
            });
        q.wait_empty().await;
        let report = pool.shutdown(SECOND).await;
        assert_eq!((report.stats.ok, report.stats.failed), (2, 1));
    });
    let log = seen.log.lock().unwrap();
    let spans: Vec<&Seen> = log
        .spans
        .iter()
        .filter(|s| s.name == "leaseq.delivery")
        .collect();
    assert_eq!(spans.len(), 3, "{spans:?}");
    let fields = |s: &Seen| {
        (
            s.fields["id"].clone(),
            s.fields["attempt"].clone(),
            s.fields["item_type"].clone(),
            s.fields["queue"].clone(),
        )
    };
    let f = |id: &str, attempt: &str, ty: &str| {
        (
            id.to_string(),
            attempt.to_string(),
            ty.to_string(),
            "pool".to_string(),
        )
    };
    assert_eq!(fields(spans[0]), f("#0", "1", "odd"));
    assert_eq!(fields(spans[1]), f("#1", "1", "even"));
    assert_eq!(fields(spans[2]), f("#1", "2", "even"));
    assert!(spans.iter().all(|s| s.level == Level::INFO));
    // The handler's events happened inside their delivery's span.
    let handled: Vec<&Seen> = log
        .events
        .iter()
        .filter(|e| e.name == "in handler")
        .collect();
    assert_eq!(handled.len(), 3);
    for (event, span) in handled.iter().zip(&spans) {
        assert_eq!(event.parent, span.id, "{event:?} in {span:?}");
    }
    // So did the hand-back of the failed attempt.
    let handed = log
        .events
        .iter()
        .find(|e| e.name == "leaseq: item handed back")
        .expect("the nack is traced");
    assert_eq!(handed.parent, spans[1].id);
}

/// Cancellations and replacements by key are traced too (at debug).
#[test]
fn cancels_and_replacements_are_traced() {
    let seen = traced(|rt, _| async move {
        let q = queue(&rt, "keys", Config::new(SECOND));
        let first = q
            .try_push_with(1, leaseq_async::Push::new().key("k"))
            .unwrap();
        let second = q
            .try_push_with(2, leaseq_async::Push::new().key("k").replace_pending())
            .unwrap();
        q.cancel(second).await.unwrap();
        let_driver_run(&rt).await;
        let s = q.stats();
        assert_eq!((s.cancelled, s.replaced), (2, 1));
        assert_ne!(first, second);
    });
    let replaced = seen.events("leaseq: replaced");
    assert_eq!(replaced.len(), 1, "{replaced:?}");
    assert_eq!(replaced[0].fields["id"], "#0");
    assert_eq!(replaced[0].fields["by"], "#1");
    let cancelled = seen.events("leaseq: cancelled");
    assert_eq!(cancelled.len(), 1, "{cancelled:?}");
    assert_eq!(cancelled[0].fields["id"], "#1");
    assert_eq!(cancelled[0].fields["in_flight"], "false");
    assert_eq!(cancelled[0].level, Level::DEBUG);
}
