//! `leaseq sqlite <FILE> ...`: the file's queue through its operator
//! (`leaseq_sqlite::SqliteOperator`): reads through `FileView` (a read-only connection,
//! nothing written, the owner lock not taken), writes through the file opened as its owner
//! (refused while another process owns it).

use std::path::Path;

use leaseq_sqlite::{FileView, OpenError, UNNAMED};
use leaseq_tokio::TokioRuntime;

use crate::args::Command;
use crate::error::{chain, failed, CliError};
use crate::operate::Failed;
use crate::output::wants_json;

/// The file's operator on tokio.
type SqliteOperator = leaseq_sqlite::SqliteOperator<TokioRuntime>;

/// Runs `command` on the queue in `file`.
pub(crate) async fn run(file: &Path, command: Command) -> Result<(), CliError> {
    let json = wants_json(&command);
    // Usage first (a destructive command without --yes), before anything is opened; then
    // the file checked read-only (a missing, foreign or newer file is refused before an
    // owner's open, which would make a missing one).
    crate::write::is_write(&command)?;
    let view = FileView::open(file).map_err(|e| open_error(file, &e))?;
    // The queue's name as its last open recorded it (none in a file from before names
    // were recorded: shown as "-", `null` in JSON).
    let name = view
        .queue_name()
        .map_err(|e| failed(chain(&e)))?
        .filter(|n| !n.is_empty());
    let op = SqliteOperator::with_actions(view);
    let queue = name.as_deref().unwrap_or(UNNAMED);
    let mut shown = crate::operate::run(&op, Some(queue), &command)
        .await
        .map_err(|f| failure(file, &f))?;
    // The file beside its counts.
    let named = |counts: &mut serde_json::Value| {
        counts["file"] = file.display().to_string().into();
        if name.is_none() {
            counts["queue"] = serde_json::Value::Null;
        }
    };
    match (&command, shown.json_mut()) {
        (Command::Stats(_), counts) => named(counts),
        (Command::Queues(_), serde_json::Value::Array(all)) => all.iter_mut().for_each(named),
        _ => {}
    }
    shown.print(json);
    Ok(())
}

/// A command's failure in words; a file another process owns says what to do.
fn failure(file: &Path, f: &Failed) -> CliError {
    match f.error {
        leaseq_async::operator::OperatorError::InUse => in_use(file),
        _ => failed(f.message("")),
    }
}

/// An open's refusal in words; a file another process owns says what to do.
fn open_error(file: &Path, e: &OpenError) -> CliError {
    match e {
        OpenError::Locked(_) => in_use(file),
        e => failed(chain(e)),
    }
}

fn in_use(file: &Path) -> CliError {
    failed(format!(
        "{}: in use by another process: stop it, or make the change from that process \
         (read-only commands - stats, peek, dead, item, schedules, history, queues - work \
         while it runs)",
        file.display()
    ))
}
