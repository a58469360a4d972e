//! The command line, as clap parses it: a store (`sqlite <FILE>` or `postgres <URL>`), then
//! a command. Values clap refuses (an unknown reason, a missing `--id`/`--all`) are usage
//! errors: exit 2.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use leaseq_core::Reason;

/// Operate a leaseq queue: read its stats, items and dead letters (changing nothing), or
/// redrive and purge.
///
/// Exit status: 0 done, 1 failed (the store refused or could not be reached), 2 usage
/// (bad arguments; a destructive command without --yes).
#[derive(Debug, Parser)]
#[command(name = "leaseq", version, about, long_about)]
pub(crate) struct Cli {
    /// The store.
    #[command(subcommand)]
    pub(crate) store: StoreCmd,
}

/// Which store the queue is in.
#[derive(Debug, Subcommand)]
pub(crate) enum StoreCmd {
    /// A SQLite queue file (one queue per file).
    Sqlite {
        /// The queue's file.
        file: PathBuf,
        /// What to do.
        #[command(subcommand)]
        command: Command,
    },
    /// A PostgreSQL schema's queues.
    Postgres {
        /// The server: a connection string (`host=.. user=.. dbname=..`, `sslmode=verify-full`
        /// and `sslrootcert=..` included) or a `postgresql://` URL.
        url: String,
        /// The schema the queues are in.
        #[arg(long, default_value = "leaseq", global = true)]
        schema: String,
        /// What to do.
        #[command(subcommand)]
        command: PgCommand,
    },
    /// Serve a web dashboard of a store's queues on 127.0.0.1:8080 unless --addr says:
    /// counts, items, dead letters, an item's payload, schedules; redrive and delete dead
    /// letters unless --read-only (on SQLite only while no other process owns the file).
    Web {
        /// The store.
        #[command(subcommand)]
        store: WebStore,
    },
}

/// `web`: the dashboard of a store's queues, served until the process is stopped.
#[derive(Debug, Subcommand)]
pub(crate) enum WebStore {
    /// A SQLite queue file's dashboard.
    Sqlite {
        /// The queue's file.
        file: PathBuf,
        #[command(flatten)]
        serve: Serve,
    },
    /// A PostgreSQL schema's dashboard (every queue in it).
    Postgres {
        /// The server: a connection string or a `postgresql://` URL (never shown in a page).
        url: String,
        /// The schema the queues are in.
        #[arg(long, default_value = "leaseq")]
        schema: String,
        #[command(flatten)]
        serve: Serve,
    },
}

/// Where and to whom the dashboard is served.
#[derive(Debug, Args)]
pub(crate) struct Serve {
    /// The address to listen on. Any address but loopback needs credentials: a bearer
    /// token in the environment variable LEASEQ_WEB_TOKEN, or --user with the password in
    /// LEASEQ_WEB_PASSWORD (basic auth, which a browser asks for).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub(crate) addr: std::net::SocketAddr,
    /// Basic auth: the user name (the password from LEASEQ_WEB_PASSWORD).
    #[arg(long)]
    pub(crate) user: Option<String>,
    /// No action (redriving and deleting dead letters are offered otherwise):
    /// every POST refused.
    #[arg(long)]
    pub(crate) read_only: bool,
}

/// A Postgres command: the schema's queues, or a command on one queue.
#[derive(Debug, Subcommand)]
pub(crate) enum PgCommand {
    /// The schema's queues (those with rows) and their counts.
    Queues(Output),
    /// A command on one queue.
    #[command(flatten)]
    Queue(QueueCommand),
}

/// A SQLite command (the file is the queue).
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// The file's queue and its counts (a file holds one queue).
    Queues(Output),
    /// Items counted by state.
    Stats(Output),
    /// The live items (ready, delayed, in flight), in id order.
    Peek(Paged),
    /// The dead letters (all, or those of a reason or job kind), in id order.
    Dead(Dead),
    /// One item, live or dead, by its id.
    Item(ItemId),
    /// The schedules kept in the queue: each one's last and next tick, when its cursor last
    /// moved, its calendar.
    Schedules(Output),
    /// Puts dead letters back, visible at once, attempts reset.
    Redrive(Redrive),
    /// Deletes every ready and delayed item (items in flight stay with their holders).
    Purge(Confirm),
    /// Deletes dead letters: all, or those of a reason or job kind.
    PurgeDead(PurgeDead),
    /// Cancels the waiting (ready and delayed) items: all, or those of a job kind and an id
    /// range (items in flight stay with their holders).
    Cancel(Cancel),
    /// Pauses the queue: no lease is handed out until `resume` (pushes are still accepted;
    /// leases already out run on). The file is opened as its owner: refused while a
    /// process holds it.
    Pause(Output),
    /// Resumes a paused queue.
    Resume(Output),
    /// The record of finished jobs (kept by a queue opened with `Options::retention`):
    /// oldest first, paged, all or those of a job kind and an outcome.
    History(crate::history::History),
    /// The workflows (DAGs of steps) the queue's store keeps, each with its steps' states,
    /// in id order, paged.
    Workflows(crate::workflows::GraphPaged),
    /// One workflow: each step's state, the steps it waits for, attempts, last error,
    /// result size.
    Workflow(crate::workflows::GraphId),
    /// The batches the queue's store keeps: their children counted by outcome, their
    /// callback's state, in id order, paged.
    Batches(crate::workflows::GraphPaged),
    /// One batch: its counts and its callback.
    Batch(crate::workflows::GraphId),
    /// Cancels what is left of a workflow (its waiting and queued steps).
    CancelWorkflow(crate::workflows::CancelWorkflow),
    /// Retries a workflow's failed step (dead-lettered: redriven; cancelled: waiting
    /// again), and the steps its failure cancelled.
    RetryStep(crate::workflows::RetryStep),
}

/// A Postgres command on one queue (the same as a SQLite file's, naming the queue).
#[derive(Debug, Subcommand)]
pub(crate) enum QueueCommand {
    /// Items counted by state.
    Stats(OnQueue<Output>),
    /// The live items (ready, delayed, in flight), in id order.
    Peek(OnQueue<Paged>),
    /// The dead letters (all, or those of a reason or job kind), in id order.
    Dead(OnQueue<Dead>),
    /// One item, live or dead, by its id.
    Item(OnQueue<ItemId>),
    /// The schedules kept in the queue: each one's last and next tick, when its cursor last
    /// moved, its calendar.
    Schedules(OnQueue<Output>),
    /// Puts dead letters back, visible at once, attempts reset.
    Redrive(OnQueue<Redrive>),
    /// Deletes every ready and delayed item (items in flight stay with their holders).
    Purge(OnQueue<Confirm>),
    /// Deletes dead letters: all, or those of a reason or job kind.
    PurgeDead(OnQueue<PurgeDead>),
    /// Cancels the waiting (ready and delayed) items: all, or those of a job kind and an id
    /// range (items in flight stay with their holders).
    Cancel(OnQueue<Cancel>),
    /// Pauses the queue in every process: no claim hands out a lease until `resume`
    /// (pushes are still accepted; leases already out run on).
    Pause(OnQueue<Output>),
    /// Resumes a paused queue; the claimers of every process are woken.
    Resume(OnQueue<Output>),
    /// The record of finished jobs (kept by stores opened with a retention window): oldest
    /// first, paged, all or those of a job kind and an outcome.
    History(OnQueue<crate::history::History>),
    /// The queue's workflows (DAGs of steps), each with its steps' states, in id order,
    /// paged.
    Workflows(OnQueue<crate::workflows::GraphPaged>),
    /// One workflow: each step's state, the steps it waits for, attempts, last error,
    /// result size.
    Workflow(OnQueue<crate::workflows::GraphId>),
    /// The queue's batches: their children counted by outcome, their callback's state.
    Batches(OnQueue<crate::workflows::GraphPaged>),
    /// One batch: its counts and its callback.
    Batch(OnQueue<crate::workflows::GraphId>),
    /// Cancels what is left of a workflow (its waiting and queued steps).
    CancelWorkflow(OnQueue<crate::workflows::CancelWorkflow>),
    /// Retries a workflow's failed step, and the steps its failure cancelled.
    RetryStep(OnQueue<crate::workflows::RetryStep>),
}

/// A command's arguments and the queue it is on.
#[derive(Debug, Args)]
pub(crate) struct OnQueue<A: Args> {
    /// The queue's name.
    pub(crate) queue: String,
    #[command(flatten)]
    pub(crate) args: A,
}

/// How a read is shown.
#[derive(Debug, Args)]
pub(crate) struct Output {
    /// JSON on stdout instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
}

/// A page of items.
#[derive(Debug, Args)]
pub(crate) struct Paged {
    /// At most this many.
    #[arg(long, default_value_t = 100)]
    pub(crate) limit: usize,
    /// Only ids above this one (the last id of the previous page).
    #[arg(long)]
    pub(crate) after: Option<u64>,
    #[command(flatten)]
    pub(crate) output: Output,
}

/// `dead`: a page of the dead letters a filter takes (what a bulk command with the same
/// filter would take).
#[derive(Debug, Args)]
pub(crate) struct Dead {
    #[command(flatten)]
    pub(crate) paged: Paged,
    #[command(flatten)]
    pub(crate) filter: Filter,
}

/// Which dead letters a bulk command takes.
#[derive(Debug, Args)]
pub(crate) struct Filter {
    /// Only those dead-lettered for this reason: lease-expired, nacked, timed-out,
    /// dropped, released, rejected, panicked, expired, undecodable.
    #[arg(long, value_parser = parse_reason)]
    pub(crate) reason: Option<Reason>,
    /// Only those whose item is a job router envelope of this kind.
    #[arg(long)]
    pub(crate) kind: Option<String>,
}

/// `redrive`: one dead letter, or all (of a reason, of a kind).
#[derive(Debug, Args)]
#[group(id = "which", required = true, multiple = false, args = ["id", "all"])]
pub(crate) struct Redrive {
    /// The dead letter's id.
    #[arg(long, conflicts_with_all = ["reason", "kind"])]
    pub(crate) id: Option<u64>,
    /// Every dead letter that can go back (or those --reason and --kind name).
    #[arg(long)]
    pub(crate) all: bool,
    #[command(flatten)]
    pub(crate) filter: Filter,
    #[command(flatten)]
    pub(crate) output: Output,
}

/// A destructive command's confirmation.
#[derive(Debug, Args)]
pub(crate) struct Confirm {
    /// Really delete (without it, nothing is done and the exit status is 2).
    #[arg(long)]
    pub(crate) yes: bool,
    #[command(flatten)]
    pub(crate) output: Output,
}

/// `purge-dead`.
#[derive(Debug, Args)]
pub(crate) struct PurgeDead {
    #[command(flatten)]
    pub(crate) filter: Filter,
    #[command(flatten)]
    pub(crate) confirm: Confirm,
}

/// `item`: one item by its id.
#[derive(Debug, Args)]
pub(crate) struct ItemId {
    /// The item's id.
    pub(crate) id: u64,
    #[command(flatten)]
    pub(crate) output: Output,
}

/// `cancel`: the waiting items a job kind and an id range take.
#[derive(Debug, Args)]
pub(crate) struct Cancel {
    /// Only those whose item is a job router envelope of this kind.
    #[arg(long)]
    pub(crate) kind: Option<String>,
    /// Only ids from this one on.
    #[arg(long)]
    pub(crate) min_id: Option<u64>,
    /// Only ids up to this one.
    #[arg(long)]
    pub(crate) max_id: Option<u64>,
    #[command(flatten)]
    pub(crate) confirm: Confirm,
}

/// A reason by its name, spaces or dashes or underscores between words.
fn parse_reason(s: &str) -> Result<Reason, String> {
    let want = s.trim().to_ascii_lowercase().replace(['-', '_'], " ");
    Reason::ALL
        .iter()
        .copied()
        .find(|r| r.as_str() == want)
        .ok_or_else(|| {
            let names: Vec<String> = Reason::ALL
                .iter()
                .map(|r| r.as_str().replace(' ', "-"))
                .collect();
            format!("unknown reason {s:?}; one of: {}", names.join(", "))
        })
}
