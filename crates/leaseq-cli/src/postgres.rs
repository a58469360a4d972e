//! `leaseq postgres <URL> ...`: the schema's queues through their operator
//! (`leaseq_postgres::PgOperator`): reads through `PgInspector` (read-only transactions,
//! no store opened, nothing written), writes through a store opened for the command (its
//! rescuer not due while it runs).

use leaseq_async::operator::{Operator, OperatorError};
use leaseq_postgres::{PgInspector, PgOperator};

use crate::args::{Command, PgCommand, QueueCommand};
use crate::error::{chain, failed, CliError};
use crate::operate::Failed;
use crate::output::wants_json;

/// The command and the queue it names (none: `queues`).
fn split(command: PgCommand) -> (Option<String>, Command) {
    match command {
        PgCommand::Queues(o) => (None, Command::Queues(o)),
        PgCommand::Queue(q) => match q {
            QueueCommand::Stats(c) => (Some(c.queue), Command::Stats(c.args)),
            QueueCommand::Peek(c) => (Some(c.queue), Command::Peek(c.args)),
            QueueCommand::Dead(c) => (Some(c.queue), Command::Dead(c.args)),
            QueueCommand::Item(c) => (Some(c.queue), Command::Item(c.args)),
            QueueCommand::Schedules(c) => (Some(c.queue), Command::Schedules(c.args)),
            QueueCommand::Redrive(c) => (Some(c.queue), Command::Redrive(c.args)),
            QueueCommand::Purge(c) => (Some(c.queue), Command::Purge(c.args)),
            QueueCommand::PurgeDead(c) => (Some(c.queue), Command::PurgeDead(c.args)),
            QueueCommand::Cancel(c) => (Some(c.queue), Command::Cancel(c.args)),
            QueueCommand::Pause(c) => (Some(c.queue), Command::Pause(c.args)),
            QueueCommand::Resume(c) => (Some(c.queue), Command::Resume(c.args)),
            QueueCommand::History(c) => (Some(c.queue), Command::History(c.args)),
            QueueCommand::Workflows(c) => (Some(c.queue), Command::Workflows(c.args)),
            QueueCommand::Workflow(c) => (Some(c.queue), Command::Workflow(c.args)),
            QueueCommand::Batches(c) => (Some(c.queue), Command::Batches(c.args)),
            QueueCommand::Batch(c) => (Some(c.queue), Command::Batch(c.args)),
            QueueCommand::CancelWorkflow(c) => (Some(c.queue), Command::CancelWorkflow(c.args)),
            QueueCommand::RetryStep(c) => (Some(c.queue), Command::RetryStep(c.args)),
        },
    }
}

/// Runs `command` on the schema `schema` of the server `url`.
pub(crate) async fn run(url: &str, schema: &str, command: PgCommand) -> Result<(), CliError> {
    let (queue, command) = split(command);
    // Usage first (a destructive command without --yes), before anything is opened.
    crate::write::is_write(&command)?;
    let inspector = PgInspector::connect(url, schema)
        .await
        .map_err(|e| failed(chain(&e)))?;
    if !inspector.schema_exists() {
        return Err(failed(format!(
            "postgres: no leaseq schema {schema:?} in this database (--schema names it)"
        )));
    }
    let op = PgOperator::with_actions(inspector, url, schema);
    let shown = match crate::operate::run(&op, queue.as_deref(), &command).await {
        Ok(shown) => shown,
        Err(f) => return Err(failure(&op, schema, &f).await),
    };
    shown.print(wants_json(&command));
    Ok(())
}

/// A command's failure in words. A queue the schema does not know (no rows, never opened,
/// no schedule) is most likely a mistyped name, which would otherwise show zeros and exit
/// 0: the error names the queues there are.
async fn failure(op: &PgOperator, schema: &str, f: &Failed) -> CliError {
    let OperatorError::NoSuchQueue(queue) = &f.error else {
        return failed(f.message("postgres: "));
    };
    let names: Vec<String> = match op.queues().await {
        Ok(counts) => counts.into_iter().map(|c| c.queue).collect(),
        Err(e) => return failed(Failed::doing("postgres", e).message("")),
    };
    let there = if names.is_empty() {
        "none with rows".to_string()
    } else {
        names.join(", ")
    };
    failed(format!(
        "postgres: no queue {queue:?} in schema {schema:?} (no rows, never opened, no \
         schedule); its queues: {there}"
    ))
}
