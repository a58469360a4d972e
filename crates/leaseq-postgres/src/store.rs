//! [`PgStore`]: the state one process keeps for one queue, composed of parts each with
//! one concern and its writers named in its own header, and the jobs that use them:
//!
//! - `db.rs`: the pool and the settings (read by all; the retry policy and the last error
//!   behind their locks);
//! - `life.rs`: stop and close;
//! - `counters.rs`: this process's counters and the queue's row counts as last read;
//! - `pushes.rs`: the writer's queue and marks; `board.rs`: the claim board;
//!   `settles.rs`: what waits for the settler; `leases.rs`: the heartbeat's leases;
//!   `driver_wake.rs`: what the store asks of its driver;
//! - the jobs: the writer (`writer.rs`), the claimer (`claimer.rs`), the settler
//!   (`settler.rs`), the listener (`listen.rs`), tasks of their own started here, and the
//!   driver's step (`keeper.rs`), run by the shared layer's driver task.
//!
//! No part names a job or another part (but the ticket, `ticket.rs`); no job names this
//! file. The `Store` impl is in `seam.rs`, the rest of `PgStore`'s methods in the files
//! of their concern (`push.rs`, `receive.rs`, `extend.rs`, `operator.rs`, ...).

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::blocking::BlockingTaker;
use crate::board::Board;
use crate::claimer::Claimer;
use crate::counters::Counters;
use crate::db::Db;
use crate::driver_wake::DriverWake;
use crate::keeper::Keeper;
use crate::leases::Leases;
use crate::life::Life;
use crate::listen::Listener;
use crate::pushes::Pushes;
use crate::settler::Settler;
use crate::settles::Settles;
use crate::writer::Writer;

/// A queue's store in one process: many processes on many machines open the same queue
/// (same schema and name) and share its items. Open one with [`Postgres`](crate::Postgres).
pub struct PgStore<T: 'static> {
    pub(crate) db: Arc<Db<T>>,
    pub(crate) life: Arc<Life>,
    pub(crate) counters: Arc<Counters>,
    pub(crate) pushes: Arc<Pushes>,
    pub(crate) board: Arc<Board<T>>,
    pub(crate) settles: Arc<Settles>,
    pub(crate) leases: Arc<Leases>,
    pub(crate) driver: Arc<DriverWake>,
    /// The settling job: acks settle in the acking task through it when a slot is free.
    pub(crate) settler: Arc<Settler<T>>,
    /// The driver's step.
    pub(crate) keeper: Keeper<T>,
    pub(crate) handles: AtomicUsize,
    /// The queue's name as traces and metrics carry it (leaked once per open).
    pub(crate) name: &'static str,
    pub(crate) blocking: BlockingTaker,
}

impl<T: Clone + Send + Sync + 'static> PgStore<T> {
    /// Composes the store from its settings (`db`) and its writer's queue (`pushes`, with
    /// the instance number and first count taken at open), and starts its tasks on the
    /// runtime's handle: the writer, the claimer, the settler, and the listener (on
    /// `listen`, a connection of its own).
    pub(crate) fn start(
        db: Db<T>,
        pushes: Pushes,
        listen: tokio_postgres::Config,
        blocking: BlockingTaker,
        name: &'static str,
    ) -> Arc<Self> {
        let db = Arc::new(db);
        let life = Arc::new(Life::default());
        let counters = Arc::new(Counters::default());
        let pushes = Arc::new(pushes);
        let board = Arc::new(Board::default());
        let settles = Arc::new(Settles::default());
        let leases = Arc::new(Leases::default());
        let driver = Arc::new(DriverWake::default());
        let settler = Arc::new(Settler {
            db: db.clone(),
            life: life.clone(),
            counters: counters.clone(),
            leases: leases.clone(),
            pushes: pushes.clone(),
            board: board.clone(),
            settles: settles.clone(),
            running: AtomicUsize::new(0),
            told_running: AtomicUsize::new(0),
        });
        let handle = db.rt.handle();
        handle.spawn(
            Writer {
                db: db.clone(),
                life: life.clone(),
                counters: counters.clone(),
                pushes: pushes.clone(),
                board: board.clone(),
            }
            .run(),
        );
        handle.spawn(
            Claimer {
                db: db.clone(),
                life: life.clone(),
                counters: counters.clone(),
                board: board.clone(),
                settles: settles.clone(),
                leases: leases.clone(),
            }
            .run(),
        );
        handle.spawn(settler.clone().run());
        let listener = Listener {
            db: db.clone(),
            life: life.clone(),
            board: board.clone(),
        };
        handle.spawn(listener.run(listen, db.tls.clone()));
        let keeper = Keeper {
            db: db.clone(),
            counters: counters.clone(),
            leases: leases.clone(),
            pushes: pushes.clone(),
            board: board.clone(),
            settles: settles.clone(),
            driver: driver.clone(),
            schedule: Mutex::new(Default::default()),
        };
        Arc::new(PgStore {
            db,
            life,
            counters,
            pushes,
            board,
            settles,
            leases,
            driver,
            settler,
            keeper,
            handles: AtomicUsize::new(1),
            name,
            blocking,
        })
    }
}

impl<T: 'static> PgStore<T> {
    /// Queues the leases claimed ahead to go back, their attempt not counted.
    pub(crate) fn put_back_prefetched(&self) {
        let ahead: Vec<(i64, i64)> = {
            let mut board = self.board.slots.lock();
            let ahead = board.prefetched.drain(..);
            ahead.map(|t| (t.ticket.id, t.ticket.lease)).collect()
        };
        self.settles.unclaim(ahead);
    }

    /// Wakes every job so that it notices that the store stopped or closed.
    pub(crate) fn wake_all(&self) {
        self.pushes.queued.notify(usize::MAX);
        self.pushes.committed.notify(usize::MAX);
        self.board.wake.notify(usize::MAX);
        self.settles.wake.notify(usize::MAX);
        self.driver.wake.notify(usize::MAX);
        self.driver.counted.notify(usize::MAX);
    }
}

impl<T: 'static> std::fmt::Debug for PgStore<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("queue", &self.db.queue)
            .field("schema", &self.db.options.schema)
            .finish_non_exhaustive()
    }
}

impl<T: 'static> Drop for PgStore<T> {
    fn drop(&mut self) {
        // The settler drains its queue before it ends.
        self.put_back_prefetched();
        self.life.stop();
        self.wake_all();
    }
}
