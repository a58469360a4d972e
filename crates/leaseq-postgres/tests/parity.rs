//! Postgres parity with the memory store (issue 18): unique keys (a held key refused with
//! its holder's id, free again after an ack, `replace_pending`), a capacity across
//! processes (`try_push` refused as full, a waiting push that goes once an ack makes room),
//! and the operator calls on the queue (peek, dead letters, redrive, purge).

use leaseq_test_kit::pg as common;

use std::time::Duration;

use leaseq_async::{AdminError, Config, ItemState, Page, Push, PushError, RedriveError};
use leaseq_postgres::PgQueue;

use common::{process, receive, unique, PATIENCE};

fn config() -> Config {
    Config::new(Duration::from_secs(30))
}

#[test]
fn held_key_is_refused_with_its_holder_and_free_again_after_the_ack() {
    common::with_server(|url| async move {
        let q: PgQueue<Vec<u8>> = process(&url, &unique("keys"), config()).await;
        let key = Push::new().key("invoice:1");
        let holder = q
            .try_push_with(b"first".to_vec(), key.clone())
            .expect("keyed");
        match q.try_push_with(b"second".to_vec(), key.clone()) {
            Err(PushError::DuplicateKey { item, existing }) => {
                assert_eq!((item, existing), (b"second".to_vec(), holder));
            }
            other => panic!("expected DuplicateKey, got {other:?}"),
        }
        // Leased, it still holds the key.
        let d = receive(&q).await;
        assert_eq!(d.id(), holder);
        assert!(matches!(
            q.push_with(b"third".to_vec(), key.clone()).await,
            Err(PushError::DuplicateKey { existing, .. }) if existing == holder
        ));
        d.ack().await.expect("ack");
        let next = q
            .push_with(b"fourth".to_vec(), key)
            .await
            .expect("free again");
        assert_ne!(next, holder);
        let s = q.refresh_stats().await.expect("stats");
        assert_eq!((s.duplicates, s.live()), (2, 1));
    });
}

#[test]
fn replace_pending_replaces_a_waiting_item_but_never_a_leased_one() {
    common::with_server(|url| async move {
        let q: PgQueue<Vec<u8>> = process(&url, &unique("replace"), config()).await;
        let replace = Push::new().key("thumb:7").replace_pending();
        let old = q
            .push_with(
                b"v1".to_vec(),
                replace.clone().delay(Duration::from_secs(60)),
            )
            .await
            .expect("push");
        let new = q
            .push_with(b"v2".to_vec(), replace.clone())
            .await
            .expect("replace");
        assert_ne!(new, old);
        let live = q.peek(Page::ALL).await.expect("peek");
        assert_eq!(live.len(), 1, "{live:?}");
        assert_eq!((live[0].id, live[0].state), (new, ItemState::Ready));
        assert_eq!(
            live[0].key.map(|k| k.as_bytes().to_vec()),
            Some(b"thumb:7".to_vec())
        );
        let d = receive(&q).await;
        assert_eq!((d.id(), d.item().as_slice()), (new, &b"v2"[..]));
        // In flight: never replaced.
        match q.try_push_with(b"v3".to_vec(), replace) {
            Err(PushError::DuplicateKey { existing, .. }) => assert_eq!(existing, new),
            other => panic!("expected DuplicateKey, got {other:?}"),
        }
        let live = q.peek(Page::ALL).await.expect("peek");
        assert!(
            matches!(live[0].state, ItemState::InFlight { .. }),
            "{live:?}"
        );
        d.ack().await.expect("ack");
        let s = q.refresh_stats().await.expect("stats");
        assert_eq!((s.replaced, s.live()), (1, 0));
    });
}

#[test]
fn full_queue_refuses_try_push_and_a_waiting_push_goes_after_an_ack() {
    common::with_server(|url| async move {
        let name = unique("capacity");
        let q: PgQueue<Vec<u8>> = process(&url, &name, config().with_capacity(3)).await;
        for i in 0..3u8 {
            q.push(vec![i]).await.expect("room");
        }
        match q.try_push(vec![3]) {
            Err(PushError::Full(back)) => assert_eq!(back, vec![3]),
            other => panic!("expected Full, got {other:?}"),
        }
        // A second process sees the same bound (its count is the table's).
        let other: PgQueue<Vec<u8>> = process(&url, &name, config().with_capacity(3)).await;
        assert!(matches!(other.try_push(vec![9]), Err(PushError::Full(_))));
        let waiting = {
            let q = q.clone();
            tokio::spawn(async move { q.push(vec![4]).await })
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!waiting.is_finished(), "a push into a full queue waits");
        let d = receive(&q).await;
        d.ack().await.expect("ack");
        let id = tokio::time::timeout(PATIENCE, waiting)
            .await
            .expect("the waiting push went once the ack made room")
            .expect("task")
            .expect("push");
        let live = q.peek(Page::ALL).await.expect("peek");
        assert_eq!(live.len(), 3, "never more than the capacity: {live:?}");
        assert!(live.iter().any(|v| v.id == id));
        assert_eq!(q.refresh_stats().await.expect("stats").rejected, 1);
    });
}

#[test]
fn dead_letters_page_redrive_and_purge() {
    common::with_server(|url| async move {
        let q: PgQueue<Vec<u8>> = process(&url, &unique("operator"), config()).await;
        let mut ids = Vec::new();
        for i in 0..3u8 {
            ids.push(q.push(vec![i]).await.expect("push"));
        }
        for _ in 0..3 {
            receive(&q).await.dead_letter("poison").await.expect("bury");
        }
        let first = q.dead_letters(Page::first(2)).await.expect("page 1");
        assert_eq!(first.iter().map(|d| d.id).collect::<Vec<_>>(), ids[..2]);
        assert_eq!(first[0].last_error.as_deref(), Some("poison"));
        assert!(
            first[0].at <= q.now(),
            "dead-lettered on the queue's clock, in the past"
        );
        let rest = q
            .dead_letters(Page::first(2).next(ids[1]))
            .await
            .expect("page 2");
        assert_eq!(rest.iter().map(|d| d.id).collect::<Vec<_>>(), ids[2..]);
        assert_eq!(q.redrive(ids[0]).await, Ok(ids[0]));
        assert_eq!(
            q.redrive(ids[0]).await,
            Err(AdminError::Refused(RedriveError::NotFound(ids[0])))
        );
        assert_eq!(q.redrive_all().await, Ok(2));
        assert_eq!(q.purge_dead_letters().await, Ok(0));
        assert_eq!(q.purge().await, Ok(3));
        assert!(q.peek(Page::ALL).await.expect("peek").is_empty());
    });
}

#[test]
fn a_cancel_the_server_keeps_refusing_is_a_store_error_not_not_found() {
    common::with_server(|url| async move {
        let name = unique("cancel-refused");
        let q: PgQueue<Vec<u8>> = process(&url, &name, config()).await;
        let id = q
            .push_with(b"keep".to_vec(), Push::new().delay(Duration::from_secs(60)))
            .await
            .expect("push");
        // Every delete of this queue's rows fails on the server (an ERROR: rolled back).
        let db = common::sql(&url).await;
        let s = common::SCHEMA;
        let trigger = format!("refuse_{}", std::process::id());
        db.batch_execute(&format!(
            "CREATE FUNCTION {s}.{trigger}() RETURNS trigger LANGUAGE plpgsql AS
               $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$;
             CREATE TRIGGER {trigger} BEFORE DELETE ON {s}.items FOR EACH ROW
               WHEN (OLD.queue = '{name}') EXECUTE FUNCTION {s}.{trigger}();"
        ))
        .await
        .expect("trigger");
        let r = q.cancel(id).await;
        db.batch_execute(&format!("DROP TRIGGER {trigger} ON {s}.items"))
            .await
            .expect("drop trigger");
        match r {
            Err(AdminError::Store(e)) => assert!(!e.is_outcome_unknown(), "{e}"),
            other => panic!("expected a not-done store error, got {other:?}"),
        }
        // Nothing was lost: the item is still there, and cancels now.
        assert_eq!(q.cancel(id).await, Ok(b"keep".to_vec()));
    });
}

#[test]
fn a_dead_letters_key_is_free_and_its_redrive_refused_while_a_live_item_holds_it() {
    common::with_server(|url| async move {
        let q: PgQueue<Vec<u8>> = process(&url, &unique("key-redrive"), config()).await;
        let key = Push::new().key("report:3");
        let dead = q.push_with(b"a".to_vec(), key.clone()).await.expect("push");
        receive(&q).await.dead_letter("poison").await.expect("bury");
        let holder = q
            .push_with(b"b".to_vec(), key)
            .await
            .expect("free as a dead letter");
        assert_eq!(
            q.redrive(dead).await,
            Err(AdminError::Refused(RedriveError::KeyTaken {
                id: dead,
                holder
            }))
        );
        assert_eq!(q.redrive_all().await, Ok(0), "its key is held");
        receive(&q).await.ack().await.expect("ack");
        assert_eq!(q.redrive(dead).await, Ok(dead));
    });
}
