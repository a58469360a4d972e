//! What a command prints: a table for people, or JSON with `--json`.

use serde_json::Value;

use crate::args::Command;

/// A command's result, both ways.
#[derive(Debug)]
pub(crate) struct Shown {
    table: String,
    json: Value,
}

impl Shown {
    /// A result shown as `table`, or as `json`.
    pub(crate) fn new(table: String, json: Value) -> Self {
        Shown { table, json }
    }

    /// The table (for tests).
    #[cfg(test)]
    pub(crate) fn table(&self) -> &str {
        &self.table
    }

    /// The JSON (for tests).
    #[cfg(test)]
    pub(crate) fn json(&self) -> &Value {
        &self.json
    }

    /// The JSON, for a store to add what only it knows.
    pub(crate) fn json_mut(&mut self) -> &mut Value {
        &mut self.json
    }

    /// Prints it on stdout, as JSON when `json`.
    pub(crate) fn print(&self, json: bool) {
        if json {
            println!(
                "{}",
                serde_json::to_string_pretty(&self.json).unwrap_or_default()
            );
        } else {
            print!("{}", self.table);
        }
    }
}

/// Whether `command` asked for JSON.
pub(crate) fn wants_json(command: &Command) -> bool {
    match command {
        Command::Queues(o)
        | Command::Stats(o)
        | Command::Schedules(o)
        | Command::Pause(o)
        | Command::Resume(o) => o.json,
        Command::Peek(p) => p.output.json,
        Command::Item(i) => i.output.json,
        Command::Cancel(c) => c.confirm.output.json,
        Command::Dead(d) => d.paged.output.json,
        Command::Redrive(r) => r.output.json,
        Command::Purge(c) => c.output.json,
        Command::PurgeDead(p) => p.confirm.output.json,
        Command::History(h) => h.output.json,
        Command::Workflows(p) | Command::Batches(p) => p.output.json,
        Command::Workflow(i) | Command::Batch(i) => i.output.json,
        Command::CancelWorkflow(c) => c.output.json,
        Command::RetryStep(r) => r.output.json,
    }
}
