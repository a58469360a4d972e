//! What the store asks of its driver (`keeper.rs`, run by the shared layer's driver task
//! through `Store::drive`): its wake-up, and the row counts someone waits for.
//!
//! - `wake`: rung when the last queue handle is dropped (`seam.rs`), when an empty wait
//!   begins (`receive.rs`) and when the store stops or closes (`store.rs`); the driver task
//!   waits on it (`Store::listen_driver`).
//! - `empty_waiters`: written by the empty waits (`receive.rs`: one more while a wait is
//!   counted); read by the driver, which counts rows every rescue tick while there are any.
//! - `stats_wanted`: set by a stats read (`seam.rs`), cleared by the driver when it counts.
//! - `counted`: rung by each count of rows (`keeper.rs`); the empty waits listen to it.
//!
//! A leaf.

use std::sync::atomic::{AtomicBool, AtomicUsize};

use event_listener::Event;

/// The driver's wake-up and requests (see the file's header).
pub(crate) struct DriverWake {
    /// Wakes the driver.
    pub(crate) wake: Event,
    /// Waiters for an empty queue (the driver counts rows while there are any).
    pub(crate) empty_waiters: AtomicUsize,
    /// Set when someone read the stats: the driver counts rows at its next rescue tick.
    pub(crate) stats_wanted: AtomicBool,
    /// Rung by each count of the rows.
    pub(crate) counted: Event,
}

impl Default for DriverWake {
    fn default() -> Self {
        DriverWake {
            wake: Event::new(),
            empty_waiters: AtomicUsize::new(0),
            // Set at open: the keeper counts at its first rescue tick.
            stats_wanted: AtomicBool::new(true),
            counted: Event::new(),
        }
    }
}
