//! Work that must answer without awaiting: `try_take` (`try_receive`, `receive_blocking`'s
//! first look, in `receive.rs`) and keyed pushes (`try_push` with a unique key must say at
//! once whether the key is held, `keyed.rs`). It runs on a thread of its own, with its own
//! connection and a small runtime, started on first use, so it works from any thread and any
//! runtime flavour (a current-thread runtime cannot block on its own tasks). The caller's
//! thread blocks for the round trips.
//!
//! The thread's request line is written by the callers of [`BlockingTaker::run`] (under its
//! lock: the first starts the thread, or a new one if it is gone); each thread makes its
//! one-connection pool with the maker given at open (`open.rs`). A leaf: the jobs it runs
//! bring what they use.

use std::sync::mpsc;

use deadpool_postgres::Pool;
use parking_lot::Mutex;

/// A piece of work for the thread: given its runtime and its one-connection pool.
type Job = Box<dyn FnOnce(&tokio::runtime::Runtime, &Pool) + Send>;

/// Makes a thread's one-connection pool.
type MakePool = std::sync::Arc<dyn Fn() -> Pool + Send + Sync>;

/// The thread's request line (`None` until first used) and how it makes its pool.
pub(crate) struct BlockingTaker {
    line: Mutex<Option<mpsc::Sender<Job>>>,
    make_pool: MakePool,
}

impl BlockingTaker {
    /// The taker of a store whose thread connects through the pool `make_pool` makes (on
    /// the thread's runtime).
    pub(crate) fn new(make_pool: impl Fn() -> Pool + Send + Sync + 'static) -> Self {
        BlockingTaker {
            line: Mutex::new(None),
            make_pool: std::sync::Arc::new(make_pool),
        }
    }

    /// Runs `job` on the blocking thread and waits for its answer; `None` if the thread
    /// could not run it (it could not start its runtime).
    pub(crate) fn run<A: Send + 'static>(
        &self,
        job: impl FnOnce(&tokio::runtime::Runtime, &Pool) -> A + Send + 'static,
    ) -> Option<A> {
        let (reply, answer) = mpsc::channel();
        let job: Job = Box::new(move |rt, pool| {
            // The caller went away: nothing to answer.
            let _ = reply.send(job(rt, pool));
        });
        {
            let mut line = self.line.lock();
            let sender = line.get_or_insert_with(|| start(self.make_pool.clone()));
            if let Err(mpsc::SendError(job)) = sender.send(job) {
                // The thread is gone (it could not start its runtime): start another.
                *sender = start(self.make_pool.clone());
                sender.send(job).ok()?;
            }
        }
        answer.recv().ok()
    }
}

/// Starts the thread; it ends when its line is dropped (with the store).
fn start(make_pool: MakePool) -> mpsc::Sender<Job> {
    let (line, jobs) = mpsc::channel::<Job>();
    let _ = std::thread::Builder::new()
        .name("leaseq-pg-blocking".into())
        .spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            let pool = rt.block_on(async { make_pool() });
            while let Ok(job) = jobs.recv() {
                job(&rt, &pool);
            }
        });
    line
}
