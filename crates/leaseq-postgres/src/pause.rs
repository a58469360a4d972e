//! Pausing a queue for every process (migration 9): a row in `queue_pauses` while the queue
//! is paused. The claim statement itself checks it (`NOT EXISTS`, one probe per claim of
//! `claim_flags`, where step 14's triggers copy it in the pause's own transaction:
//! `plain_sql.rs`; planned as a one-time filter), so a pause committed before a claim starts stops
//! that claim and every later one, in every process: the claims already running when it
//! commits are the last. The soonest-visible probe of the claimer answers "none" while
//! paused, so an idle claimer sleeps its poll interval rather than claiming again at once;
//! a resume deletes the row and notifies the schema's channel at commit, waking the
//! claimers of every process. Pushes, settles and the rescuer ignore the row. The
//! statements are in `pause_sql.rs`.

use leaseq_async::StoreError;

use crate::operator::store_error;
use crate::store::PgStore;

impl<T: Clone + Send + Sync + 'static> PgStore<T> {
    /// `Store::set_paused`: one statement; a resume also wakes this process's claimer.
    pub(crate) async fn set_paused_in_db(&self, paused: bool) -> Result<bool, StoreError> {
        let db = &*self.db;
        let what = if paused { "pause" } else { "resume" };
        let client = db.client().await.map_err(|e| {
            StoreError::not_done(format!("{what}: {}", leaseq_async::ErrorChain(&e)))
        })?;
        let (pause, resume) = &db.sql.pause;
        let changed = if paused {
            client.execute(pause, &[&db.queue]).await
        } else {
            client
                .query_one(resume, &[&db.queue, &db.sql.channel])
                .await
                .map(|r| r.get::<_, i64>(0).max(0) as u64)
        }
        .map_err(|e| store_error(what, &e, true))?;
        self.counters.gauges.lock().paused = paused;
        if !paused {
            self.board.wake.notify(usize::MAX);
        }
        Ok(changed > 0)
    }
}
