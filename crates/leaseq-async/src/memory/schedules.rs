//! Schedules kept in the memory store: each schedule's [`ScheduleState`] in a map beside the
//! core, under the queue's one lock, so that a scheduler step (the cursor compared, its
//! ticks pushed, the stale ones taken back, the new state stored) is one critical section.
//! A durable store built on this one (SQLite) restores the map at open and journals each
//! committed step.
//!
//! No job's `Drop` runs under the lock: the jobs of a refused step, those refused as
//! duplicate keys and those a rollback took back are dropped after it.

use std::collections::BTreeMap;

use leaseq_core::{MessageId, PushError as CorePushError, Timestamp};

use super::MemoryStore;
use crate::error::PushError;
use crate::runtime::Runtime;
use crate::schedule_store::{
    ScheduleCommit, ScheduleCommitError, ScheduleCommitted, ScheduleState,
};

/// The schedules of a queue, by name.
pub(crate) type Schedules = BTreeMap<String, ScheduleState>;

/// An item a step took back: its id, its attempts and when it became a dead letter (on the
/// runtime's clock), for a store built on this one to record.
pub type Withdrawn = (MessageId, u32, Timestamp);

/// How a step ended under the lock; the jobs are handed out after it.
enum Outcome<T> {
    Done(ScheduleCommitted, Vec<Withdrawn>),
    Moved,
    /// Refused as full before anything was pushed.
    Full,
    /// A push refused by the core after others of the step went in (taken back).
    Refused(CorePushError<T>),
}

impl<T: Clone + Send + 'static, R: Runtime> MemoryStore<T, R> {
    /// The stored state of schedule `name` ([`Store::schedule`](crate::Store::schedule)).
    pub fn schedule_state(&self, name: &str) -> Option<ScheduleState> {
        self.lock().schedules.get(name).cloned()
    }

    /// Every schedule's stored state, by name ([`Store::schedules`](crate::Store::schedules)).
    pub fn schedule_states(&self) -> Vec<ScheduleState> {
        self.lock().schedules.values().cloned().collect()
    }

    /// Puts a schedule's state back as a durable store read it at open (replacing any).
    pub fn restore_schedule(&self, state: ScheduleState) {
        self.lock().schedules.insert(state.name.clone(), state);
    }

    /// [`Store::commit_schedule`](crate::Store::commit_schedule), done at once, with each
    /// item taken back (for a store built on this one to record): under the lock, the
    /// stored cursor compared with `step.expected`, the ticks pushed on the runtime's clock
    /// (a bounded queue refuses the step unless there is room for all of them), the waiting
    /// holders of `step.withdraw` dead-lettered as expired, the state stored.
    pub fn commit_schedule_now(
        &self,
        step: ScheduleCommit<T>,
    ) -> Result<(ScheduleCommitted, Vec<Withdrawn>), ScheduleCommitError<T>> {
        let ScheduleCommit {
            expected,
            state,
            ticks,
            withdraw,
            ..
        } = step;
        let mut ticks = ticks.into_iter();
        if self.closed() {
            // A step that pushes nothing may still move the cursor.
            if let Some((job, _)) = ticks.next() {
                return Err(ScheduleCommitError::Push(PushError::Closed(job)));
            }
        }
        let now = self.rt.now();
        // Jobs dropped after the lock.
        let mut out: Vec<T> = Vec::new();
        let outcome = {
            let mut st = self.lock();
            let st = &mut *st;
            let stored = st.schedules.get(&state.name).map(|s| s.cursor);
            let room = st
                .core
                .config()
                .capacity()
                .map(|cap| cap.saturating_sub(st.core.len()));
            if stored != expected {
                Outcome::Moved
            } else if room.is_some_and(|room| room < ticks.len()) {
                Outcome::Full
            } else {
                let mut ids = Vec::with_capacity(ticks.len());
                let mut refused = None;
                for (job, push) in ticks.by_ref() {
                    let options = push.options_at(now);
                    let mut replaced = None;
                    let pushed = self.inbox.push_direct(&mut st.core, |core, id| {
                        push.push_into(core, id, job, now, options).map(|p| {
                            replaced = p.replaced;
                            p.id
                        })
                    });
                    out.extend(replaced.map(|(_, item)| item));
                    match pushed {
                        Ok(id) => ids.push(Some(id)),
                        Err(CorePushError::DuplicateKey { item, .. }) => {
                            out.push(item);
                            ids.push(None);
                        }
                        Err(e) => {
                            refused = Some(e);
                            break;
                        }
                    }
                }
                if let Some(e) = refused {
                    // Nothing of the step stays.
                    for id in ids.into_iter().flatten() {
                        out.extend(st.core.cancel(id, now).ok());
                    }
                    Outcome::Refused(e)
                } else {
                    let mut withdrawn = Vec::new();
                    for key in &withdraw {
                        if let Some(id) = st.core.expire_key(key, now) {
                            let letter = st.core.get_dead_letter(id);
                            withdrawn.push((id, letter.map_or(0, |l| l.attempts), now));
                        }
                    }
                    let committed = ScheduleCommitted {
                        ids,
                        withdrawn: withdrawn.iter().map(|w| w.0).collect(),
                    };
                    st.schedules.insert(state.name.clone(), state);
                    Outcome::Done(committed, withdrawn)
                }
            }
        };
        let result = match outcome {
            Outcome::Done(committed, withdrawn) => Ok((committed, withdrawn)),
            Outcome::Moved => Err(ScheduleCommitError::Moved),
            // (A step with no tick always has room.)
            Outcome::Full => match ticks.next() {
                Some((job, _)) => Err(ScheduleCommitError::Push(PushError::Full(job))),
                None => Err(ScheduleCommitError::Moved),
            },
            Outcome::Refused(e) => Err(ScheduleCommitError::Push(PushError::from_core(e))),
        };
        drop(ticks);
        drop(out);
        result
    }
}
