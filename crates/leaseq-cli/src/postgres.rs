//! `leaseq postgres <URL> ...`: reads through `PgInspector` (read-only transactions, no
//! store opened, nothing written), writes through the store's operator API on a store
//! opened for the command (its rescuer not due while it runs).

use std::time::Duration;

use leaseq_async::{Config, LeaseQueue, Page};
use leaseq_postgres::{BytesCodec, Options, PgInspector, Postgres};

use crate::args::{Command, OnQueue, Paged, PgCommand, QueueCommand};
use crate::error::{chain, failed, CliError};
use crate::history::History;
use crate::output::{wants_json, Shown};
use crate::show;

/// The command and the queue it names (none: `queues`); `history` apart (read through the
/// inspector, which names the queue).
fn split(command: PgCommand) -> Result<(Option<String>, Command), OnQueue<History>> {
    Ok(match command {
        PgCommand::Queues(o) => (None, Command::Queues(o)),
        PgCommand::Queue(q) => match q {
            QueueCommand::Stats(c) => (Some(c.queue), Command::Stats(c.args)),
            QueueCommand::Peek(c) => (Some(c.queue), Command::Peek(c.args)),
            QueueCommand::Dead(c) => (Some(c.queue), Command::Dead(c.args)),
            QueueCommand::Schedules(c) => (Some(c.queue), Command::Schedules(c.args)),
            QueueCommand::Redrive(c) => (Some(c.queue), Command::Redrive(c.args)),
            QueueCommand::Purge(c) => (Some(c.queue), Command::Purge(c.args)),
            QueueCommand::PurgeDead(c) => (Some(c.queue), Command::PurgeDead(c.args)),
            QueueCommand::Pause(c) => (Some(c.queue), Command::Pause(c.args)),
            QueueCommand::Resume(c) => (Some(c.queue), Command::Resume(c.args)),
            QueueCommand::History(c) => return Err(c),
        },
    })
}

/// Runs `command` on the schema `schema` of the server `url`.
pub(crate) async fn run(url: &str, schema: &str, command: PgCommand) -> Result<(), CliError> {
    let split = split(command);
    // Usage first (a destructive command without --yes), before anything is opened.
    let write = match &split {
        Ok((_, command)) => crate::write::is_write(command)?,
        Err(_) => false,
    };
    let mut inspector = PgInspector::connect(url, schema)
        .await
        .map_err(|e| failed(chain(&e)))?;
    if !inspector.schema_exists() {
        return Err(failed(format!(
            "postgres: no leaseq schema {schema:?} in this database (--schema names it)"
        )));
    }
    let (queue, command) = match split {
        Ok(split) => split,
        Err(h) => {
            known(&mut inspector, schema, &h.queue).await?;
            let entries = inspector
                .history(&h.queue, &h.args.query())
                .await
                .map_err(|e| failed(format!("postgres: {}", chain(&e))))?;
            let shown = Shown::new(
                crate::history::history_table(&entries),
                crate::history::history_json(&entries),
            );
            shown.print(h.args.output.json);
            return Ok(());
        }
    };
    if let Some(queue) = &queue {
        known(&mut inspector, schema, queue).await?;
    }
    let json = wants_json(&command);
    let shown = match (queue, write) {
        (Some(queue), true) => {
            drop(inspector);
            self::write(url, schema, &queue, &command).await?
        }
        (queue, false) => read(&mut inspector, queue.as_deref(), &command).await?,
        (None, true) => return Err(failed("no queue named")),
    };
    shown.print(json);
    Ok(())
}

/// Refuses a queue the schema does not know (no rows, never opened, no schedule): most
/// likely a mistyped name, which would otherwise show zeros and exit 0. The error names
/// the queues there are.
async fn known(inspector: &mut PgInspector, schema: &str, queue: &str) -> Result<(), CliError> {
    let bad = |e: leaseq_postgres::DbError| failed(format!("postgres: {}", chain(&e)));
    if inspector.has_queue(queue).await.map_err(bad)? {
        return Ok(());
    }
    let names: Vec<String> = inspector
        .queues()
        .await
        .map_err(bad)?
        .into_iter()
        .map(|c| c.queue)
        .collect();
    let there = if names.is_empty() {
        "none with rows".to_string()
    } else {
        names.join(", ")
    };
    Err(failed(format!(
        "postgres: no queue {queue:?} in schema {schema:?} (no rows, never opened, no \
         schedule); its queues: {there}"
    )))
}

fn page(p: &Paged) -> Page {
    let page = Page::first(p.limit);
    match p.after {
        Some(id) => page.next(leaseq_async::MessageId::new(id)),
        None => page,
    }
}

/// A read, in read-only transactions.
async fn read(
    inspector: &mut PgInspector,
    queue: Option<&str>,
    command: &Command,
) -> Result<Shown, CliError> {
    let bad = |e: leaseq_postgres::DbError| failed(format!("postgres: {}", chain(&e)));
    Ok(match (command, queue) {
        (Command::Queues(_), _) => {
            let counts = inspector.queues().await.map_err(bad)?;
            let json = serde_json::Value::Array(counts.iter().map(show::counts_json).collect());
            Shown::new(show::counts_table(&counts), json)
        }
        (Command::Stats(_), Some(queue)) => {
            let counts = inspector.counts(queue).await.map_err(bad)?;
            Shown::new(
                show::counts_table(std::slice::from_ref(&counts)),
                show::counts_json(&counts),
            )
        }
        (Command::Peek(p), Some(queue)) => {
            let items = inspector.items(queue, page(p)).await.map_err(bad)?;
            Shown::new(show::items_table(&items), show::items_json(&items))
        }
        (Command::Dead(d), Some(queue)) => {
            let filter = crate::write::filter(&d.filter);
            let items = inspector
                .dead_letters_matching(queue, page(&d.paged), &filter)
                .await
                .map_err(bad)?;
            Shown::new(show::dead_table(&items), show::items_json(&items))
        }
        (Command::Schedules(_), Some(queue)) => {
            let states = inspector.schedules(queue).await.map_err(bad)?;
            Shown::new(
                crate::schedules::schedules_table(&states),
                crate::schedules::schedules_json(&states),
            )
        }
        _ => return Err(failed("not a read command")),
    })
}

/// A write, on a store opened for it: its rescuer not due before the command ends (the
/// queue's own processes rescue leases), attempts unlimited (nothing this store does
/// dead-letters), its limits not recorded (the SQL functions keep the workers').
async fn write(url: &str, schema: &str, queue: &str, command: &Command) -> Result<Shown, CliError> {
    let config = Config::new(Duration::from_secs(30)).with_max_attempts(u32::MAX);
    let options = Options::new()
        .schema(schema)
        .pool_size(2)
        .rescue_every(Duration::from_secs(24 * 3600))
        .record_limits(false);
    let q = LeaseQueue::builder(config)
        .name(queue.to_string())
        .codec(BytesCodec)
        .open(Postgres::url(url).options(options))
        .await
        .map_err(|e| failed(chain(&e)))?;
    let shown = crate::write::run(&q, command).await;
    let closed = q.close().await;
    let shown = shown?;
    closed.map_err(|e| failed(format!("postgres: closing: {}", chain(&e))))?;
    Ok(shown)
}
