//! Workflows and batches as tables (columns as wide as their longest cell) and JSON.

use leaseq_async::operator::{BatchView, StepView, WorkflowView};
use serde_json::{json, Value};

/// Rows under `head`, each column as wide as its longest cell, the last one unpadded.
fn grid(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut out = String::new();
        let cells: Vec<&str> = cells.collect();
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                out.push_str(cell);
            } else {
                let pad = widths[i] - cell.chars().count();
                out.push_str(cell);
                out.push_str(&" ".repeat(pad + 2));
            }
        }
        out.push('\n');
        out
    };
    let mut out = line(&mut head.iter().copied());
    for row in rows {
        out.push_str(&line(&mut row.iter().map(String::as_str)));
    }
    out
}

/// An optional number in a cell, "-" for none.
fn or_dash<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

/// A step's last error on one line.
fn error_cell(s: &StepView) -> String {
    s.last_error
        .as_deref()
        .map_or_else(|| "-".into(), |e| e.replace('\n', " "))
}

/// Each workflow on a row: its status, steps done, each step's status in the spec's order.
pub(crate) fn workflows_table(all: &[WorkflowView]) -> String {
    if all.is_empty() {
        return "no workflows\n".into();
    }
    let rows: Vec<Vec<String>> = all
        .iter()
        .map(|w| {
            let steps: Vec<String> = w
                .steps
                .iter()
                .map(|s| format!("{}: {}", s.name, s.status))
                .collect();
            vec![
                w.id.get().to_string(),
                w.status().into(),
                format!("{}/{}", w.done(), w.steps.len()),
                steps.join(", "),
            ]
        })
        .collect();
    grid(&["workflow", "status", "done", "steps"], &rows)
}

/// One workflow: a title line, then each step on a row.
pub(crate) fn workflow_table(w: &WorkflowView) -> String {
    let rows: Vec<Vec<String>> = w
        .steps
        .iter()
        .map(|s| {
            let after = if s.after.is_empty() {
                "-".into()
            } else {
                s.after.join(", ")
            };
            vec![
                s.name.clone(),
                s.status.to_string(),
                after,
                or_dash(s.attempts),
                or_dash(s.result_size.map(|n| format!("{n} B"))),
                or_dash(s.message.map(|m| m.get())),
                error_cell(s),
            ]
        })
        .collect();
    format!(
        "workflow {}: {}, {} of {} steps done\n{}",
        w.id.get(),
        w.status(),
        w.done(),
        w.steps.len(),
        grid(
            &["step", "status", "after", "attempts", "result", "message", "error"],
            &rows
        )
    )
}

/// Each batch on a row: when its callback runs, its children's counts, its callback.
pub(crate) fn batches_table(all: &[BatchView]) -> String {
    if all.is_empty() {
        return "no batches\n".into();
    }
    let rows: Vec<Vec<String>> = all
        .iter()
        .map(|b| {
            let c = &b.counts;
            vec![
                b.id.get().to_string(),
                b.on_str().into(),
                c.total.to_string(),
                c.open.to_string(),
                c.acked.to_string(),
                c.dead_lettered.to_string(),
                c.cancelled.to_string(),
                b.callback.status.to_string(),
            ]
        })
        .collect();
    grid(
        &[
            "batch",
            "callback runs",
            "children",
            "open",
            "acked",
            "dead-lettered",
            "cancelled",
            "callback",
        ],
        &rows,
    )
}

/// One batch: its row, then its callback's attempts and error.
pub(crate) fn batch_table(b: &BatchView) -> String {
    let cb = &b.callback;
    format!(
        "{}callback: {}, attempts {}, message {}, error {}\n",
        batches_table(std::slice::from_ref(b)),
        cb.status,
        or_dash(cb.attempts),
        or_dash(cb.message.map(|m| m.get())),
        error_cell(cb),
    )
}

/// A step as JSON.
fn step_json(s: &StepView) -> Value {
    json!({
        "name": s.name,
        "node": s.node.get(),
        "status": s.status.as_str(),
        "message": s.message.map(|m| m.get()),
        "after": s.after,
        "attempts": s.attempts,
        "last_error": s.last_error,
        "result_size": s.result_size,
    })
}

/// A workflow as JSON.
pub(crate) fn workflow_json(w: &WorkflowView) -> Value {
    json!({
        "id": w.id.get(),
        "status": w.status(),
        "steps": w.steps.iter().map(step_json).collect::<Vec<_>>(),
    })
}

/// Workflows as JSON, an array.
pub(crate) fn workflows_json(all: &[WorkflowView]) -> Value {
    Value::Array(all.iter().map(workflow_json).collect())
}

/// A batch as JSON.
pub(crate) fn batch_json(b: &BatchView) -> Value {
    let c = &b.counts;
    json!({
        "id": b.id.get(),
        "on": b.on_str(),
        "total": c.total,
        "open": c.open,
        "acked": c.acked,
        "dead_lettered": c.dead_lettered,
        "cancelled": c.cancelled,
        "callback": step_json(&b.callback),
    })
}

/// Batches as JSON, an array.
pub(crate) fn batches_json(all: &[BatchView]) -> Value {
    Value::Array(all.iter().map(batch_json).collect())
}
