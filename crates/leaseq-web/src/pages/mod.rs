//! The pages, one module each (the queue page holds its live and dead lists).

pub(crate) mod actions;
pub(crate) mod activity;
pub(crate) mod bulk;
pub(crate) mod cancel;
pub(crate) mod finished;
pub(crate) mod item;
pub(crate) mod overview;
pub(crate) mod pause;
pub(crate) mod queue;
pub(crate) mod schedules;
pub(crate) mod workers;
pub(crate) mod workflow_actions;
pub(crate) mod workflows;
