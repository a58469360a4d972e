//! The bulk cancel every store's operator runs (`leaseq_async::operator::cancel_matching`),
//! on the memory store behind a minimal `Operator` (virtual time): it reads the operator's
//! pages past the first (1,000 items each), takes the id range whole and nothing beyond it,
//! leaves an item in flight to its holder and skips one cancelled since it was listed; a kind
//! never matches an item whose payload was not read. `Operator::count_live` counts the same.

use std::time::Duration;

use leaseq_async::operator::{cancel_matching, DeadQuery, LiveQuery, Operator, OperatorError};
use leaseq_async::{
    Config, ItemState, LeaseQueue, MessageId, Page, ScheduleState, SimRuntime, StoredCounts,
    StoredItem, StoredState,
};
use leaseq_test_kit::sim;

type Queue = LeaseQueue<Vec<u8>, SimRuntime>;

/// The queue's live items as an operator shows them (no payload: `peek` reads none).
struct Peeking(Queue);

impl Operator for Peeking {
    fn store_kind(&self) -> &'static str {
        "memory"
    }

    async fn queues(&self) -> Result<Vec<StoredCounts>, OperatorError> {
        Ok(Vec::new())
    }

    async fn counts(&self, queue: &str) -> Result<StoredCounts, OperatorError> {
        Err(OperatorError::NoSuchQueue(queue.into()))
    }

    async fn items(&self, _: &str, page: Page) -> Result<Vec<StoredItem>, OperatorError> {
        let views = self
            .0
            .peek(page)
            .await
            .map_err(|e| OperatorError::store(&e))?;
        Ok(views
            .into_iter()
            .map(|v| {
                let state = match v.state {
                    ItemState::Ready => StoredState::Ready,
                    ItemState::Delayed => StoredState::Delayed,
                    ItemState::InFlight { .. } => StoredState::InFlight,
                };
                StoredItem::new(v.id, state, 0)
            })
            .collect())
    }

    async fn dead_letters(
        &self,
        _: &str,
        _: Page,
        _: &DeadQuery,
    ) -> Result<Vec<StoredItem>, OperatorError> {
        Ok(Vec::new())
    }

    async fn schedules(&self, _: &str) -> Result<Vec<ScheduleState>, OperatorError> {
        Ok(Vec::new())
    }
}

#[test]
fn a_bulk_cancel_reads_every_page_and_keeps_to_its_range() {
    sim::run(|rt| async move {
        let q: Queue = LeaseQueue::builder(Config::new(Duration::from_secs(30)))
            .runtime(rt.clone())
            .build()
            .unwrap();
        let mut ids = Vec::new();
        for n in 0..2500u32 {
            ids.push(q.push(n.to_be_bytes().to_vec()).await.unwrap());
        }
        // The first item in flight; the one at index 1,800 already cancelled by hand.
        let held = q.receive().await.unwrap();
        assert_eq!(held.id(), ids[0]);
        q.cancel(ids[1800]).await.unwrap();
        let op = Peeking(q.clone());

        let range = LiveQuery::all().ids(ids[0], ids[2099]);
        assert_eq!(
            op.count_live("q", &range).await,
            Ok(2098),
            "not held, not gone"
        );
        assert_eq!(cancel_matching(&op, "q", &range, &q).await, Ok(2098));
        let left: Vec<MessageId> = q
            .peek(Page::ALL)
            .await
            .unwrap()
            .iter()
            .map(|v| v.id)
            .collect();
        assert_eq!(
            left.len(),
            1 + 400,
            "the held item and those past the range"
        );
        assert_eq!(left[0], ids[0]);
        assert_eq!(left[1], ids[2100]);

        // No payload read: no kind to match.
        let email = LiveQuery::all().kind("email");
        assert_eq!(cancel_matching(&op, "q", &email, &q).await, Ok(0));
        // The rest; the holder still acks its item.
        assert_eq!(
            cancel_matching(&op, "q", &LiveQuery::all(), &q).await,
            Ok(400)
        );
        held.ack().await.unwrap();
        assert_eq!(q.stats().cancelled, 1 + 2098 + 400);
    });
}
