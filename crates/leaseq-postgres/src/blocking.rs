//! `try_take` (`try_receive`, `receive_blocking`'s first look): a claim that must answer
//! without awaiting. It runs on a thread of its own, with its own connection and a small
//! runtime, started on first use, so it works from any thread and any runtime flavour
//! (a current-thread runtime cannot block on its own tasks). The caller's thread blocks
//! for one round trip.

use std::sync::mpsc;
use std::sync::Arc;

use leaseq_async::Taken;
use parking_lot::Mutex;

use crate::store::{PgStore, PgTicket, Shared};

type Reply<T> = mpsc::Sender<Vec<Taken<T, PgTicket>>>;
/// The thread's request line: how many to claim, and where to answer.
type Line<T> = mpsc::Sender<(usize, Reply<T>)>;

/// The thread's request line (`None` until first used).
pub(crate) struct BlockingTaker<T> {
    line: Mutex<Option<Line<T>>>,
}

impl<T> Default for BlockingTaker<T> {
    fn default() -> Self {
        BlockingTaker {
            line: Mutex::new(None),
        }
    }
}

impl<T: Clone + Send + Sync + 'static> PgStore<T> {
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
        let (reply, answer) = mpsc::channel();
        {
            let mut line = self.blocking.line.lock();
            let sender = line.get_or_insert_with(|| start(self.shared.clone()));
            if sender.send((max, reply.clone())).is_err() {
                // The thread is gone (it could not start its runtime): start another.
                *sender = start(self.shared.clone());
                if sender.send((max, reply)).is_err() {
                    return 0;
                }
            }
        }
        let mut got = answer.recv().unwrap_or_default();
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

/// Starts the claiming thread; it ends when its line is dropped (with the store).
fn start<T: Send + Sync + 'static>(shared: Arc<Shared<T>>) -> Line<T> {
    let (line, requests) = mpsc::channel::<(usize, Reply<T>)>();
    let _ = std::thread::Builder::new()
        .name("leaseq-pg-try-take".into())
        .spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            let pool =
                rt.block_on(async { crate::open::make_pool(&shared.pg_config, &shared.tls, 1) });
            while let Ok((max, reply)) = requests.recv() {
                let got = rt.block_on(async {
                    let client = pool.get().await.map_err(|e| e.to_string())?;
                    crate::claim::claim(&shared, &client, max.min(shared.options.max_claim))
                        .await
                        .map_err(|e| e.to_string())
                });
                let got = got.unwrap_or_else(|e| {
                    shared.failed("try_take", e);
                    Vec::new()
                });
                if let Err(back) = reply.send(got) {
                    // The caller went away: the leases run out and come back.
                    drop(back);
                }
            }
        });
    line
}
