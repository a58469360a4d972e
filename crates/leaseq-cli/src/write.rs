//! The commands that change a queue, once for every store, through its
//! [`Operator`]: redrive one or many, purge, purge dead letters, pause and resume, cancel.
//! Each checks its arguments ([`is_write`]) before anything is opened.

use leaseq_async::operator::{DeadQuery, LiveQuery, Operator};
use leaseq_async::MessageId;
use serde_json::json;

use crate::args::{Cancel, Command, Filter};
use crate::error::CliError;
use crate::operate::Failed;
use crate::output::Shown;

/// Whether `command` changes the queue; refused (usage) when it is destructive without
/// `--yes`.
pub(crate) fn is_write(command: &Command) -> Result<bool, CliError> {
    let unconfirmed = |what: &str| {
        Err(CliError::Usage(format!(
            "{what} deletes items for good: add --yes to do it"
        )))
    };
    match command {
        Command::Purge(c) if !c.yes => unconfirmed("purge"),
        Command::PurgeDead(p) if !p.confirm.yes => unconfirmed("purge-dead"),
        Command::Cancel(c) if !c.confirm.yes => unconfirmed("cancel"),
        Command::CancelWorkflow(c) if !c.yes => Err(CliError::Usage(
            "cancel-workflow cancels every step left: add --yes to do it".into(),
        )),
        Command::Redrive(_)
        | Command::Purge(_)
        | Command::PurgeDead(_)
        | Command::Cancel(_)
        | Command::Pause(_)
        | Command::Resume(_)
        | Command::CancelWorkflow(_)
        | Command::RetryStep(_) => Ok(true),
        _ => Ok(false),
    }
}

/// The dead letters the arguments name.
pub(crate) fn dead_query(f: &Filter) -> DeadQuery {
    let mut query = DeadQuery::all();
    query.reason = f.reason;
    query.kind = f.kind.clone();
    query
}

/// The waiting items `cancel`'s arguments name.
fn live_query(c: &Cancel) -> LiveQuery {
    let mut query = LiveQuery::all();
    query.kind = c.kind.clone();
    query.min_id = c.min_id.map(MessageId::new);
    query.max_id = c.max_id.map(MessageId::new);
    query
}

/// Runs a write `command` on `queue` through `op`.
pub(crate) async fn run<O: Operator>(
    op: &O,
    queue: &str,
    command: &Command,
) -> Result<Shown, Failed> {
    match command {
        Command::Redrive(r) => match r.id {
            Some(id) => {
                op.redrive(queue, MessageId::new(id))
                    .await
                    .map_err(|e| match e {
                        leaseq_async::operator::OperatorError::Refused(_) => {
                            Failed::doing(format!("cannot redrive {id}"), e)
                        }
                        e => Failed::doing(format!("redrive {id}"), e),
                    })?;
                Ok(Shown::new(
                    format!("redriven: {id} is ready again, its attempts reset\n"),
                    json!({ "redriven": 1, "id": id }),
                ))
            }
            None => {
                let n = op
                    .redrive_dead(queue, &dead_query(&r.filter))
                    .await
                    .map_err(|e| Failed::doing("redrive", e))?;
                Ok(Shown::new(
                    format!("redriven: {n} dead letters are ready again\n"),
                    json!({ "redriven": n }),
                ))
            }
        },
        Command::Purge(_) => {
            let n = op
                .purge(queue)
                .await
                .map_err(|e| Failed::doing("purge", e))?;
            Ok(Shown::new(
                format!("purged: {n} ready and delayed items deleted\n"),
                json!({ "purged": n }),
            ))
        }
        Command::PurgeDead(p) => {
            let n = op
                .purge_dead(queue, &dead_query(&p.filter))
                .await
                .map_err(|e| Failed::doing("purge-dead", e))?;
            Ok(Shown::new(
                format!("purged: {n} dead letters deleted\n"),
                json!({ "purged": n }),
            ))
        }
        Command::Cancel(c) => {
            let n = op
                .cancel(queue, &live_query(c))
                .await
                .map_err(|e| Failed::doing("cancel", e))?;
            Ok(Shown::new(
                format!("cancelled: {n} ready and delayed items\n"),
                json!({ "cancelled": n }),
            ))
        }
        Command::Pause(_) | Command::Resume(_) => {
            let pause = matches!(command, Command::Pause(_));
            let (what, done) = if pause {
                ("pause", "paused")
            } else {
                ("resume", "running")
            };
            let changed = op
                .set_paused(queue, pause)
                .await
                .map_err(|e| Failed::doing(what, e))?;
            let was = if changed { "" } else { " (it already was)" };
            Ok(Shown::new(
                format!("{done}: the queue is {done}{was}\n"),
                json!({ "paused": pause, "changed": changed }),
            ))
        }
        _ => Err(Failed::not_this_command()),
    }
}
