//! Every command, once for every store, through its [`Operator`]: the reads here (queues,
//! stats, peek, dead, item, schedules, history), the writes in [`crate::write`], the
//! workflows' and batches' commands in [`crate::workflows`]. A store's
//! module opens its operator and words its failures ([`Failed`]).

use leaseq_async::operator::{Operator, OperatorError};
use leaseq_async::{MessageId, Page, StoredState};

use crate::args::{Command, Paged};
use crate::output::Shown;
use crate::show;

/// A command the operator did not do: what it was doing (none: a read) and why.
#[derive(Debug)]
pub(crate) struct Failed {
    /// The command in words ("redrive", "cannot redrive 7"); none for a read.
    pub(crate) doing: Option<String>,
    /// Why.
    pub(crate) error: OperatorError,
}

impl Failed {
    /// A write's failure.
    pub(crate) fn doing(what: impl Into<String>, error: OperatorError) -> Failed {
        Failed {
            doing: Some(what.into()),
            error,
        }
    }

    /// A read's failure.
    pub(crate) fn read(error: OperatorError) -> Failed {
        Failed { doing: None, error }
    }

    /// A command the dispatcher was not meant to get (a bug, said so).
    pub(crate) fn not_this_command() -> Failed {
        Failed::read(OperatorError::Refused(
            "not a command for this store".into(),
        ))
    }

    /// In words, a read's prefixed with `read_prefix` ("postgres: ").
    pub(crate) fn message(&self, read_prefix: &str) -> String {
        let why = match &self.error {
            OperatorError::Store(s) | OperatorError::Refused(s) => s.clone(),
            e => e.to_string(),
        };
        match &self.doing {
            Some(doing) => format!("{doing}: {why}"),
            None => format!("{read_prefix}{why}"),
        }
    }
}

/// The page `--limit` and `--after` name.
fn page(p: &Paged) -> Page {
    let page = Page::first(p.limit);
    match p.after {
        Some(id) => page.next(MessageId::new(id)),
        None => page,
    }
}

/// Runs `command` on `queue` (none: `queues`, the store's every queue) through `op`.
pub(crate) async fn run<O: Operator>(
    op: &O,
    queue: Option<&str>,
    command: &Command,
) -> Result<Shown, Failed> {
    if let Command::Queues(_) = command {
        let counts = op.queues().await.map_err(Failed::read)?;
        let json = serde_json::Value::Array(counts.iter().map(show::counts_json).collect());
        return Ok(Shown::new(show::counts_table(&counts), json));
    }
    let Some(queue) = queue else {
        return Err(Failed::not_this_command());
    };
    Ok(match command {
        Command::Stats(_) => {
            let counts = op.counts(queue).await.map_err(Failed::read)?;
            Shown::new(
                show::counts_table(std::slice::from_ref(&counts)),
                show::counts_json(&counts),
            )
        }
        Command::Peek(p) => {
            let items = op.items(queue, page(p)).await.map_err(Failed::read)?;
            Shown::new(show::items_table(&items), show::items_json(&items))
        }
        Command::Dead(d) => {
            let query = crate::write::dead_query(&d.filter);
            let items = op
                .dead_letters(queue, page(&d.paged), &query)
                .await
                .map_err(Failed::read)?;
            Shown::new(show::dead_table(&items), show::items_json(&items))
        }
        Command::Item(i) => {
            let item = op
                .item(queue, MessageId::new(i.id))
                .await
                .map_err(Failed::read)?;
            let Some(item) = item else {
                return Err(Failed::doing(
                    format!("item {}", i.id),
                    OperatorError::Refused("no live item or dead letter has this id".into()),
                ));
            };
            let one = std::slice::from_ref(&item);
            let table = if item.state == StoredState::Dead {
                show::dead_table(one)
            } else {
                show::items_table(one)
            };
            Shown::new(table, show::item_json(&item))
        }
        Command::Schedules(_) => {
            let states = op.schedules(queue).await.map_err(Failed::read)?;
            Shown::new(
                crate::schedules::schedules_table(&states),
                crate::schedules::schedules_json(&states),
            )
        }
        Command::History(h) => {
            let entries = op.history(queue, &h.query()).await.map_err(Failed::read)?;
            Shown::new(
                crate::history::history_table(&entries),
                crate::history::history_json(&entries),
            )
        }
        Command::Workflows(_)
        | Command::Workflow(_)
        | Command::Batches(_)
        | Command::Batch(_)
        | Command::CancelWorkflow(_)
        | Command::RetryStep(_) => return crate::workflows::run(op, queue, command).await,
        _ => return crate::write::run(op, queue, command).await,
    })
}
