//! Work that must answer without awaiting: `try_take` (`try_receive`, `receive_blocking`'s
//! first look) and keyed pushes (`try_push` with a unique key must say at once whether the
//! key is held). It runs on a thread of its own, with its own connection and a small
//! runtime, started on first use, so it works from any thread and any runtime flavour (a
//! current-thread runtime cannot block on its own tasks). The caller's thread blocks for
//! the round trips.

use std::sync::mpsc;
use std::sync::Arc;

use deadpool_postgres::Pool;
use leaseq_async::Taken;
use parking_lot::Mutex;

use crate::error::DbError;
use crate::store::{PgStore, PgTicket, Shared};

/// A piece of work for the thread: given its runtime and its one-connection pool.
type Job = Box<dyn FnOnce(&tokio::runtime::Runtime, &Pool) + Send>;

/// The thread's request line (`None` until first used).
pub(crate) struct BlockingTaker<T> {
    line: Mutex<Option<mpsc::Sender<Job>>>,
    _items: std::marker::PhantomData<fn() -> T>,
}

impl<T> Default for BlockingTaker<T> {
    fn default() -> Self {
        BlockingTaker {
            line: Mutex::new(None),
            _items: std::marker::PhantomData,
        }
    }
}

impl<T: Clone + Send + Sync + 'static> PgStore<T> {
    /// Runs `job` on the blocking thread and waits for its answer; `None` if the thread
    /// could not run it (it could not start its runtime).
    pub(crate) fn run_blocking<A: Send + 'static>(
        &self,
        job: impl FnOnce(&tokio::runtime::Runtime, &Pool) -> A + Send + 'static,
    ) -> Option<A> {
        let (reply, answer) = mpsc::channel();
        let job: Job = Box::new(move |rt, pool| {
            // The caller went away: nothing to answer.
            let _ = reply.send(job(rt, pool));
        });
        {
            let mut line = self.blocking.line.lock();
            let sender = line.get_or_insert_with(|| start(&self.shared));
            if let Err(mpsc::SendError(job)) = sender.send(job) {
                // The thread is gone (it could not start its runtime): start another.
                *sender = start(&self.shared);
                sender.send(job).ok()?;
            }
        }
        answer.recv().ok()
    }

    /// Claims up to `max` items visible now, blocking this thread for one round trip;
    /// nothing on any error (reported through `last_error`).
    pub(crate) fn take_blocking(
        &self,
        max: usize,
        heartbeat: bool,
        out: &mut Vec<Taken<T, PgTicket>>,
    ) -> usize {
        if max == 0 || self.shared.is_closed() {
            return 0;
        }
        let shared = self.shared.clone();
        let got = self.run_blocking(move |rt, pool| {
            let got = rt.block_on(async {
                let client = pool
                    .get()
                    .await
                    .map_err(|e| DbError::pool("no connection from the pool", e))?;
                crate::claim::claim(&shared, &client, max.min(shared.options.max_claim))
                    .await
                    .map_err(DbError::Db)
            });
            got.unwrap_or_else(|e| {
                shared.failed("try_take", e);
                Vec::new()
            })
        });
        // An answer the caller never got (the thread gone) leaves its leases to run out.
        let mut got = got.unwrap_or_default();
        if heartbeat {
            for t in &mut got {
                crate::claim::keep_alive(&self.shared, t);
            }
        }
        let n = got.len();
        out.append(&mut got);
        n
    }
}

/// Starts the thread; it ends when its line is dropped (with the store).
fn start<T: Send + Sync + 'static>(shared: &Arc<Shared<T>>) -> mpsc::Sender<Job> {
    let (line, jobs) = mpsc::channel::<Job>();
    let config = shared.pg_config.clone();
    let tls = shared.tls.clone();
    let _ = std::thread::Builder::new()
        .name("leaseq-pg-blocking".into())
        .spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            let pool = rt.block_on(async { crate::open::make_pool(&config, &tls, 1) });
            while let Ok(job) = jobs.recv() {
                job(&rt, &pool);
            }
        });
    line
}
