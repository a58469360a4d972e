//! The commands that change a queue, through its store's operator API (the same on every
//! store): redrive one or many, purge, purge dead letters. Each checks its arguments before
//! anything is opened.

use leaseq_async::{AdminError, DeadFilter, LeaseQueue, MessageId, Store};
use leaseq_tokio::TokioRuntime;
use serde_json::json;

use crate::args::{Command, Filter};
use crate::error::{chain, failed, CliError};
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
        Command::Redrive(_)
        | Command::Purge(_)
        | Command::PurgeDead(_)
        | Command::Pause(_)
        | Command::Resume(_) => Ok(true),
        _ => Ok(false),
    }
}

/// The filter the arguments name.
pub(crate) fn filter(f: &Filter) -> DeadFilter<Vec<u8>> {
    let mut filter = DeadFilter::all();
    if let Some(reason) = f.reason {
        filter = filter.reason(reason);
    }
    if let Some(kind) = &f.kind {
        filter = filter.kind(kind);
    }
    filter
}

/// Runs a write `command` on `q`.
pub(crate) async fn run<S>(
    q: &LeaseQueue<Vec<u8>, TokioRuntime, S>,
    command: &Command,
) -> Result<Shown, CliError>
where
    S: Store<Vec<u8>, Runtime = TokioRuntime>,
{
    match command {
        Command::Redrive(r) => match r.id {
            Some(id) => match q.redrive(MessageId::new(id)).await {
                Ok(id) => Ok(Shown::new(
                    format!(
                        "redriven: {} is ready again, its attempts reset\n",
                        id.get()
                    ),
                    json!({ "redriven": 1, "id": id.get() }),
                )),
                Err(AdminError::Refused(e)) => {
                    Err(failed(format!("cannot redrive {id}: {}", chain(&e))))
                }
                Err(e) => Err(failed(format!("redrive {id}: {}", chain(&e)))),
            },
            None => {
                let n = q
                    .redrive_matching(filter(&r.filter))
                    .await
                    .map_err(|e| failed(format!("redrive: {}", chain(&e))))?;
                Ok(Shown::new(
                    format!("redriven: {n} dead letters are ready again\n"),
                    json!({ "redriven": n }),
                ))
            }
        },
        Command::Purge(_) => {
            let n = q
                .purge()
                .await
                .map_err(|e| failed(format!("purge: {}", chain(&e))))?;
            Ok(Shown::new(
                format!("purged: {n} ready and delayed items deleted\n"),
                json!({ "purged": n }),
            ))
        }
        Command::PurgeDead(p) => {
            let n = q
                .purge_dead_matching(filter(&p.filter))
                .await
                .map_err(|e| failed(format!("purge-dead: {}", chain(&e))))?;
            Ok(Shown::new(
                format!("purged: {n} dead letters deleted\n"),
                json!({ "purged": n }),
            ))
        }
        Command::Pause(_) | Command::Resume(_) => {
            let pause = matches!(command, Command::Pause(_));
            let (what, done) = if pause {
                ("pause", "paused")
            } else {
                ("resume", "running")
            };
            let result = if pause {
                q.pause().await
            } else {
                q.resume().await
            };
            let changed = result.map_err(|e| failed(format!("{what}: {}", chain(&e))))?;
            let was = if changed { "" } else { " (it already was)" };
            Ok(Shown::new(
                format!("{done}: the queue is {done}{was}\n"),
                json!({ "paused": pause, "changed": changed }),
            ))
        }
        _ => Err(failed("not a command that changes the queue")),
    }
}
