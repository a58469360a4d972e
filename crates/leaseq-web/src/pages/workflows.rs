//! `/queues/{queue}/workflows`: the queue's workflows, each with its steps' states in the
//! spec's order; `/queues/{queue}/workflows/{id}`: one workflow, its steps laid out by
//! depth (a small DAG: each column waits for the ones before it) and a table of each
//! step's state, what it waits for, attempts, result size and last error, with the cancel
//! and retry buttons (`workflow_actions.rs`); `/queues/{queue}/batches`: the batches'
//! counts and callbacks. Shown where the operator offers workflows
//! (`Capabilities::workflows`), linked from the queue page's tabs.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use leaseq_async::core::graph::{BatchId, WorkflowId};
use leaseq_async::operator::{StepView, WorkflowView};
use leaseq_core::MessageId;

use crate::html::Html;
use crate::layout::{pager, paging, App};
use crate::operator::Operator;
use crate::pages::queue::{head, Tab};

/// The queue's head; or the page to answer instead (an error, or this store offers no
/// workflows). `None`: go on.
async fn start<O: Operator>(app: &App<O>, h: &mut Html, queue: &str, tab: Tab) -> Option<Response> {
    let counts = match app.op.counts(queue).await {
        Ok(c) => c,
        Err(e) => return Some(app.error(&e)),
    };
    head(app, h, &counts, tab);
    if !app.op.capabilities().workflows {
        h.raw("<p class=\"muted\" id=\"not-offered\">This store does not offer workflows and batches.</p>");
        return Some(app.page(StatusCode::OK, &format!("{queue} workflows"), h));
    }
    None
}

/// A step's status as a chip (its name, coloured by its status), a space after it (read
/// as text, the names stay apart).
fn chip(h: &mut Html, s: &StepView) {
    h.raw("<span class=\"step\" data-status=\"")
        .text(s.status.as_str())
        .raw("\" title=\"")
        .text(s.status.as_str())
        .raw("\">")
        .text(&s.name)
        .raw("</span> ");
}

/// The workflows page.
pub(crate) async fn workflows<O: Operator>(
    State(app): State<Arc<App<O>>>,
    Path(queue): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let page = match paging(&q) {
        Ok(p) => p,
        Err(e) => return app.message(StatusCode::BAD_REQUEST, &e),
    };
    let mut h = Html::new();
    if let Some(page) = start(&app, &mut h, &queue, Tab::Workflows).await {
        return page;
    }
    let after = page.after.map(|m| WorkflowId::new(m.get()));
    let all = match app.op.workflows(&queue, after, page.limit).await {
        Ok(all) => all,
        Err(e) => return app.error(&e),
    };
    if all.is_empty() {
        h.raw("<p class=\"muted\" id=\"empty\">No workflows in this queue.</p>");
        return app.page(StatusCode::OK, &format!("{queue} workflows"), &h);
    }
    h.raw("<table id=\"workflows\"><thead><tr><th>Workflow</th><th>Status</th><th class=\"n\">Done</th><th>Steps</th></tr></thead><tbody>");
    for w in &all {
        h.raw("<tr data-workflow=\"")
            .show(w.id.get())
            .raw("\"><td><a href=\"")
            .text(&app.queue_link(&queue, &format!("/workflows/{}", w.id.get())))
            .raw("\">")
            .show(w.id.get())
            .raw("</a></td><td class=\"wf-status\">")
            .text(w.status())
            .raw("</td><td class=\"n\">")
            .show(w.done())
            .raw("/")
            .show(w.steps.len())
            .raw("</td><td class=\"steps\">");
        for s in &w.steps {
            chip(&mut h, s);
        }
        h.raw("</td></tr>");
    }
    h.raw("</tbody></table>");
    let last = all.last().map(|w| MessageId::new(w.id.get()));
    let link = app.queue_link(&queue, "/workflows");
    pager(&mut h, &link, "", page, all.len(), last);
    app.page(StatusCode::OK, &format!("{queue} workflows"), &h)
}

/// Each step's depth: 0 for a step that waits for nothing, else one more than its
/// deepest parent's (parents come first in a DAG's order; a name not found counts 0).
fn depths(w: &WorkflowView) -> Vec<usize> {
    let mut depth: HashMap<&str, usize> = HashMap::new();
    let mut out = vec![0; w.steps.len()];
    // A workflow's steps are listed in the spec's order, not always parents first: relax
    // until nothing changes (at most one round per step).
    for _ in 0..w.steps.len() {
        let mut changed = false;
        for (i, s) in w.steps.iter().enumerate() {
            let d = s
                .after
                .iter()
                .map(|p| depth.get(p.as_str()).map_or(0, |d| d + 1))
                .max()
                .unwrap_or(0);
            if depth.get(s.name.as_str()) != Some(&d) {
                depth.insert(&s.name, d);
                out[i] = d;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    out
}

/// One workflow's page.
pub(crate) async fn workflow<O: Operator>(
    State(app): State<Arc<App<O>>>,
    Path((queue, id)): Path<(String, String)>,
) -> Response {
    let Ok(n) = id.parse::<u64>() else {
        return app.message(
            StatusCode::BAD_REQUEST,
            &format!("{id:?} is not a workflow id"),
        );
    };
    let mut h = Html::new();
    if let Some(page) = start(&app, &mut h, &queue, Tab::Workflows).await {
        return page;
    }
    let w = match app.op.workflow(&queue, WorkflowId::new(n)).await {
        Ok(Some(w)) => w,
        Ok(None) => return app.message(StatusCode::NOT_FOUND, "no workflow has this id"),
        Err(e) => return app.error(&e),
    };
    h.raw("<h2>Workflow ")
        .show(n)
        .raw(": <span id=\"wf-status\">")
        .text(w.status())
        .raw("</span>, ")
        .show(w.done())
        .raw(" of ")
        .show(w.steps.len())
        .raw(" steps done</h2>");
    crate::pages::workflow_actions::cancel_button(&app, &mut h, &queue, &w);
    let depth = depths(&w);
    let levels = depth.iter().max().map_or(0, |d| d + 1);
    h.raw("<div class=\"dag\" id=\"dag\">");
    for level in 0..levels {
        h.raw("<div class=\"level\">");
        for (s, _) in w.steps.iter().zip(&depth).filter(|(_, d)| **d == level) {
            chip(&mut h, s);
        }
        h.raw("</div>");
    }
    h.raw("</div>");
    h.raw("<table id=\"steps\"><thead><tr><th>Step</th><th>Status</th><th>Waits for</th><th class=\"n\">Attempts</th><th class=\"n\">Result</th><th>Message</th><th>Last error</th><th></th></tr></thead><tbody>");
    for s in &w.steps {
        step_row(&app, &mut h, &queue, &w, s);
    }
    h.raw("</tbody></table>");
    app.page(StatusCode::OK, &format!("{queue} workflow {n}"), &h)
}

/// A step's row in the workflow's table.
fn step_row<O: Operator>(app: &App<O>, h: &mut Html, queue: &str, w: &WorkflowView, s: &StepView) {
    let dash = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    h.raw("<tr data-step=\"")
        .text(&s.name)
        .raw("\"><td>")
        .text(&s.name)
        .raw("</td><td class=\"status\" data-status=\"")
        .text(s.status.as_str())
        .raw("\">")
        .text(s.status.as_str())
        .raw("</td><td>")
        .text(&if s.after.is_empty() {
            "-".into()
        } else {
            s.after.join(", ")
        })
        .raw("</td><td class=\"n attempts\">")
        .text(&dash(s.attempts.map(|a| a.to_string())))
        .raw("</td><td class=\"n\">")
        .text(&dash(s.result_size.map(|n| format!("{n} B"))))
        .raw("</td><td>");
    match s.message {
        Some(m) => {
            h.raw("<a href=\"")
                .text(&app.queue_link(queue, &format!("/items/{}", m.get())))
                .raw("\">")
                .show(m.get())
                .raw("</a>");
        }
        None => {
            h.raw("-");
        }
    }
    h.raw("</td><td class=\"error\">")
        .text(s.last_error.as_deref().unwrap_or("-"))
        .raw("</td><td>");
    crate::pages::workflow_actions::retry_button(app, h, queue, w, s);
    h.raw("</td></tr>");
}

/// The batches page.
pub(crate) async fn batches<O: Operator>(
    State(app): State<Arc<App<O>>>,
    Path(queue): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let page = match paging(&q) {
        Ok(p) => p,
        Err(e) => return app.message(StatusCode::BAD_REQUEST, &e),
    };
    let mut h = Html::new();
    if let Some(page) = start(&app, &mut h, &queue, Tab::Batches).await {
        return page;
    }
    let after = page.after.map(|m| BatchId::new(m.get()));
    let all = match app.op.batches(&queue, after, page.limit).await {
        Ok(all) => all,
        Err(e) => return app.error(&e),
    };
    if all.is_empty() {
        h.raw("<p class=\"muted\" id=\"empty\">No batches in this queue.</p>");
        return app.page(StatusCode::OK, &format!("{queue} batches"), &h);
    }
    h.raw("<table id=\"batches\"><thead><tr><th>Batch</th><th>Callback runs</th><th class=\"n\">Children</th><th class=\"n\">Open</th><th class=\"n\">Acked</th><th class=\"n\">Dead-lettered</th><th class=\"n\">Cancelled</th><th>Callback</th><th class=\"n\">Attempts</th><th>Last error</th></tr></thead><tbody>");
    for b in &all {
        let c = &b.counts;
        h.raw("<tr data-batch=\"").show(b.id.get()).raw("\"><td>");
        h.show(b.id.get()).raw("</td><td>").text(b.on_str());
        for (class, n) in [
            ("total", c.total),
            ("open", c.open),
            ("acked", c.acked),
            ("dead", c.dead_lettered),
            ("cancelled", c.cancelled),
        ] {
            h.raw("</td><td class=\"n\" data-count=\"")
                .raw(class)
                .raw("\">")
                .show(n);
        }
        h.raw("</td><td class=\"status\" data-status=\"")
            .text(b.callback.status.as_str())
            .raw("\">")
            .text(b.callback.status.as_str())
            .raw("</td><td class=\"n\">")
            .text(&b.callback.attempts.map_or("-".into(), |a| a.to_string()))
            .raw("</td><td class=\"error\">")
            .text(b.callback.last_error.as_deref().unwrap_or("-"))
            .raw("</td></tr>");
    }
    h.raw("</tbody></table>");
    let last = all.last().map(|b| MessageId::new(b.id.get()));
    let link = app.queue_link(&queue, "/batches");
    pager(&mut h, &link, "", page, all.len(), last);
    app.page(StatusCode::OK, &format!("{queue} batches"), &h)
}
