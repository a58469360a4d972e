//! The flow claims say whether a row has a graph node (schema step 21, `flow_plain_sql.rs`),
//! as the plain claim does: a row a flow claim leased without one is acked by the bare ack
//! (`ack_plain.rs`), and a row with one still tells its graph. Each of the three flow claims
//! is asserted: a grouped queue's (`flow_claim_groups`), a queue limit's slots
//! (`flow_claim_slots`) and the walk under the queue's lock (`flow_claim`, a grouped queue
//! with a limit).
//!
//! **How a test sees which ack ran.** In a schema of its own, a row trigger on `items`
//! notes, for each row deleted, whether the statement the client sent (`current_query()`)
//! was the bare ack (its rows restricted to `node IS NULL`) or the told one (it calls
//! `graph_told`).

use leaseq_test_kit::pg as common;

use std::time::Duration;

use leaseq_async::dependencies::{DependencyStore, OnFailedParent, Parent, StepState};
use leaseq_async::{Config, MessageId, Push};
use leaseq_core::LimitScope;
use leaseq_postgres::{BytesCodec, PgQueue};

/// The ways a flowed queue is claimed, and how each is set up.
#[derive(Clone, Copy, Debug)]
enum Claim {
    /// Ordered groups, no limit: `flow_claim_groups`.
    Groups,
    /// A queue limit alone: `flow_claim_slots`.
    Slots,
    /// Ordered groups and a queue limit: `flow_claim`'s walk.
    Walk,
}

const CLAIMS: [Claim; 3] = [Claim::Groups, Claim::Slots, Claim::Walk];

async fn open(url: &str, schema: &str, claim: Claim) -> PgQueue<Vec<u8>> {
    let options = common::options()
        .schema(schema)
        .poll_interval(Duration::from_millis(50));
    let q = common::open(
        url,
        common::unique(&format!("flowplain{claim:?}").to_lowercase()),
        Config::new(Duration::from_secs(30)).with_max_attempts(1),
        BytesCodec,
        options,
    )
    .await;
    if matches!(claim, Claim::Slots | Claim::Walk) {
        q.set_limit(LimitScope::Queue, Some(8))
            .await
            .expect("limit");
    }
    q
}

/// A push of `item`, in a group of its own where the queue is grouped.
async fn push(q: &PgQueue<Vec<u8>>, claim: Claim, item: &str) -> MessageId {
    let push = match claim {
        Claim::Groups | Claim::Walk => Push::new().group(format!("g-{item}")),
        Claim::Slots => Push::new(),
    };
    q.push_with(item.as_bytes().to_vec(), push)
        .await
        .expect("push")
}

/// Makes `schema` (migrated first) note each deleted row's ack: `(queue, item, bare, told)`.
async fn watch_acks(url: &str, schema: &str) {
    let mut db = common::sql(url).await;
    leaseq_postgres::migrate(&mut db, schema)
        .await
        .expect("migrate");
    db.batch_execute(&format!(
        r#"CREATE TABLE "{schema}".acks_seen (queue text, item bytea, bare boolean, told boolean);
               CREATE FUNCTION "{schema}".note_ack() RETURNS trigger LANGUAGE plpgsql AS $$
               BEGIN
                   INSERT INTO "{schema}".acks_seen VALUES (OLD.queue, OLD.payload,
                       current_query() LIKE '%i.node IS NULL AND i.id = ANY%',
                       current_query() LIKE '%graph_told%');
                   RETURN OLD;
               END $$;
               CREATE TRIGGER note_ack BEFORE DELETE ON "{schema}".items
                   FOR EACH ROW EXECUTE FUNCTION "{schema}".note_ack();"#
    ))
    .await
    .expect("the acks' trigger");
}

/// The acks noted for `q`: `(item, bare, told)` in item order.
async fn acks(url: &str, schema: &str, q: &PgQueue<Vec<u8>>) -> Vec<(String, bool, bool)> {
    let rows = common::sql(url)
        .await
        .query(
            &format!(
                r#"SELECT item, bare, told FROM "{schema}".acks_seen WHERE queue = $1 ORDER BY item"#
            ),
            &[&q.store().queue_name()],
        )
        .await
        .expect("the acks seen");
    rows.iter()
        .map(|r| {
            let item: Vec<u8> = r.get(0);
            (String::from_utf8(item).expect("utf-8"), r.get(1), r.get(2))
        })
        .collect()
}

#[test]
fn a_flow_claimed_row_without_a_node_takes_the_bare_ack() {
    common::with_scratch_schema("flowplain", |url, schema| {
        common::runtime().block_on(async {
            let url = url.to_string();
            watch_acks(&url, schema).await;
            for claim in CLAIMS {
                let q = open(&url, schema, claim).await;
                for item in ["a", "b", "c"] {
                    let _ = push(&q, claim, item).await;
                }
                for _ in 0..3 {
                    common::receive(&q).await.ack().await.expect("ack");
                }
                let bare = |item: &str| (item.to_string(), true, false);
                assert_eq!(
                    acks(&url, schema, &q).await,
                    vec![bare("a"), bare("b"), bare("c")],
                    "{claim:?}: every ack bare, none told"
                );
                q.close().await.expect("close");
            }
        });
    });
}

#[test]
fn a_flow_claimed_row_with_a_node_still_tells_its_graph() {
    common::with_scratch_schema("flownode", |url, schema| {
        common::runtime().block_on(async {
            let url = url.to_string();
            watch_acks(&url, schema).await;
            for claim in CLAIMS {
                let q = open(&url, schema, claim).await;
                // A plain message (in its group where the queue is grouped) made a job's
                // parent before its claim: both rows have a node when claimed, the child's
                // from its insert.
                let parent = push(&q, claim, "a").await;
                let kid = q
                    .store()
                    .push_after(
                        b"b".to_vec(),
                        &[Parent::Message(parent)],
                        OnFailedParent::Cancel,
                    )
                    .await
                    .expect("push_after");
                let d = common::receive(&q).await;
                assert_eq!(d.id(), parent);
                d.ack().await.expect("ack the parent");
                let s = q.store().job_state(kid).await.expect("job_state");
                assert!(
                    matches!(s, Some(StepState::Queued(_))),
                    "{claim:?}: released: {s:?}"
                );
                let d = common::receive(&q).await;
                assert_eq!(d.item(), b"b");
                d.ack().await.expect("ack the child");
                let s = q.store().job_state(kid).await.expect("job_state");
                assert!(
                    matches!(s, Some(StepState::Acked(_))),
                    "{claim:?}: told: {s:?}"
                );
                let told = |item: &str| (item.to_string(), false, true);
                assert_eq!(
                    acks(&url, schema, &q).await,
                    vec![told("a"), told("b")],
                    "{claim:?}: both acks told"
                );
                q.close().await.expect("close");
            }
        });
    });
}
