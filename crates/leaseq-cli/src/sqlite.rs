//! `leaseq sqlite <FILE> ...`: reads through `FileView` (a read-only connection, nothing
//! written, the owner lock not taken), writes through the store's operator API (the file
//! opened as its owner would: refused while another process owns it).

use std::path::Path;
use std::time::Duration;

use leaseq_async::{Config, LeaseQueue, Page};
use leaseq_sqlite::{BytesCodec, FileView, OpenError, Sqlite};

use crate::args::{Command, Paged};
use crate::error::{chain, failed, CliError};
use crate::output::{wants_json, Shown};
use crate::show;

/// Runs `command` on the queue in `file`.
pub(crate) async fn run(file: &Path, command: Command) -> Result<(), CliError> {
    let json = wants_json(&command);
    let shown = if crate::write::is_write(&command)? {
        write(file, &command).await?
    } else {
        read(file, &command)?
    };
    shown.print(json);
    Ok(())
}

fn page(p: &Paged) -> Page {
    let page = Page::first(p.limit);
    match p.after {
        Some(id) => page.next(leaseq_async::MessageId::new(id)),
        None => page,
    }
}

/// A read: nothing in the file changes.
fn read(file: &Path, command: &Command) -> Result<Shown, CliError> {
    let view = FileView::open(file).map_err(|e| open_error(file, &e))?;
    let bad = |e: OpenError| failed(chain(&e));
    Ok(match command {
        Command::Queues(_) | Command::Stats(_) => {
            // The queue's name as its last open recorded it (none in a file from before
            // names were recorded: shown as "-", `null` in JSON), with the file beside it.
            let mut counts = view.counts().map_err(bad)?;
            let mut json = show::counts_json(&counts);
            json["file"] = file.display().to_string().into();
            if counts.queue.is_empty() {
                json["queue"] = serde_json::Value::Null;
                counts.queue = "-".into();
            }
            let json = match command {
                Command::Queues(_) => serde_json::Value::Array(vec![json]),
                _ => json,
            };
            Shown::new(show::counts_table(&[counts]), json)
        }
        Command::Peek(p) => {
            let items = view.items(page(p)).map_err(bad)?;
            Shown::new(show::items_table(&items), show::items_json(&items))
        }
        Command::Dead(d) => {
            let filter = crate::write::filter(&d.filter);
            let items = view
                .dead_letters_matching(page(&d.paged), &filter)
                .map_err(bad)?;
            Shown::new(show::dead_table(&items), show::items_json(&items))
        }
        Command::Schedules(_) => {
            let states = view.schedules().map_err(bad)?;
            Shown::new(
                crate::schedules::schedules_table(&states),
                crate::schedules::schedules_json(&states),
            )
        }
        Command::History(h) => {
            let entries = view.history(&h.query()).map_err(bad)?;
            Shown::new(
                crate::history::history_table(&entries),
                crate::history::history_json(&entries),
            )
        }
        _ => return Err(failed("not a read command")),
    })
}

/// A write, as the file's owner: the leases of a process that died holding the file come
/// back first, as at its next start (attempts unlimited here, so that none is
/// dead-lettered by this open).
async fn write(file: &Path, command: &Command) -> Result<Shown, CliError> {
    // Checked read-only first: a missing, foreign or newer file is refused before the open
    // (which would make a missing one).
    let view = FileView::open(file).map_err(|e| open_error(file, &e))?;
    // Opened under the queue's own name, which an open records in the file.
    let name = view.queue_name().map_err(|e| failed(chain(&e)))?;
    drop(view);
    let config = Config::new(Duration::from_secs(30)).with_max_attempts(u32::MAX);
    let mut builder = LeaseQueue::builder(config);
    if let Some(name) = name {
        builder = builder.name(name);
    }
    let q = builder
        .codec(BytesCodec)
        .open(Sqlite::file(file))
        .await
        .map_err(|e| open_error(file, &e))?;
    let shown = crate::write::run(&q, command).await;
    let closed = q.close().await;
    // The store goes once its driver lets go: its writer then closes the file (removing
    // the WAL it checkpointed) and releases the owner lock, before this process exits.
    let store = q.store().clone();
    drop(q);
    for _ in 0..5000 {
        if std::sync::Arc::strong_count(&store) == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    drop(store);
    let shown = shown?;
    closed.map_err(|e| failed(format!("{}: closing: {}", file.display(), chain(&e))))?;
    Ok(shown)
}

/// An open's refusal in words; a file another process owns says what to do.
fn open_error(file: &Path, e: &OpenError) -> CliError {
    match e {
        OpenError::Locked(_) => failed(format!(
            "{}: in use by another process: stop it, or make the change from that process \
             (read-only commands - stats, peek, dead, schedules, queues - work while it runs)",
            file.display()
        )),
        e => failed(chain(e)),
    }
}
