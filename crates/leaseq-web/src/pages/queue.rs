//! `/queues/{queue}`: a queue's counts (cards and a bar chart) and its live items, a page
//! at a time; `/queues/{queue}/dead`: its dead letters.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use leaseq_async::{StoredCounts, StoredItem};

use crate::chart;
use crate::html::Html;
use crate::layout::{pager, paging, relative, App};
use crate::operator::Operator;
use crate::pages::bulk::Bulk;
use crate::payload::{preview, split_kind};
use crate::query::{DeadQuery, QueryForm};
use leaseq_core::Reason;

/// The most characters a table's payload cell shows.
const PREVIEW: usize = 80;

/// Which list of a queue's page is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tab {
    Live,
    Dead,
    Schedules,
    Finished,
    Workflows,
    Batches,
}

/// The queue's title, counts and tabs.
pub(crate) fn head<O: Operator>(app: &App<O>, h: &mut Html, c: &StoredCounts, tab: Tab) {
    h.raw("<h1>Queue <span id=\"queue-name\">")
        .text(&c.queue)
        .raw("</span></h1><div class=\"cards\">");
    for (key, label, n) in [
        ("ready", "Ready", c.ready),
        ("delayed", "Delayed", c.delayed),
        ("in-flight", "In flight", c.in_flight),
        ("dead", "Dead", c.dead),
    ] {
        h.raw("<div class=\"card\"><div class=\"k\">")
            .raw(label)
            .raw("</div><div class=\"v\" data-count=\"")
            .raw(key);
        crate::pages::overview::count_text(h, c, n);
        h.raw("</div></div>");
    }
    crate::pages::pause::status(app, h, c);
    h.raw("</div>");
    chart::state_bars(h, c);
    h.raw("<nav class=\"tabs\">");
    let caps = app.op.capabilities();
    for (t, label, rest) in [
        (Tab::Live, "Live items", ""),
        (Tab::Dead, "Dead letters", "/dead"),
        (Tab::Schedules, "Schedules", "/schedules"),
        (Tab::Finished, "Finished jobs", "/finished"),
        (Tab::Workflows, "Workflows", "/workflows"),
        (Tab::Batches, "Batches", "/batches"),
    ] {
        let offered = match t {
            Tab::Finished => caps.history,
            Tab::Workflows | Tab::Batches => caps.workflows,
            _ => true,
        };
        if !offered {
            continue;
        }
        h.raw("<a href=\"")
            .text(&app.queue_link(&c.queue, rest))
            .raw(if t == tab {
                "\" class=\"current\">"
            } else {
                "\">"
            })
            .raw(label)
            .raw("</a>");
    }
    h.raw("</nav>");
}

/// The queue page with its live items.
pub(crate) async fn queue<O: Operator>(
    State(app): State<Arc<App<O>>>,
    Path(queue): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    list(&app, &queue, &q, Tab::Live).await
}

/// The queue page with its dead letters.
pub(crate) async fn dead<O: Operator>(
    State(app): State<Arc<App<O>>>,
    Path(queue): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    list(&app, &queue, &q, Tab::Dead).await
}

async fn list<O: Operator>(
    app: &Arc<App<O>>,
    queue: &str,
    q: &HashMap<String, String>,
    tab: Tab,
) -> Response {
    let page = match paging(q) {
        Ok(p) => p,
        Err(e) => return app.message(StatusCode::BAD_REQUEST, &e),
    };
    let query = match DeadQuery::parse(q) {
        Ok(query) if tab == Tab::Dead => query,
        Ok(_) => DeadQuery::all(),
        Err(e) => return app.message(StatusCode::BAD_REQUEST, &e),
    };
    let counts = match app.op.counts(queue).await {
        Ok(c) => c,
        Err(e) => return app.error(&e),
    };
    let items = match tab {
        Tab::Dead => app.op.dead_letters(queue, page, &query).await,
        _ => app.op.items(queue, page).await,
    };
    let items = match items {
        Ok(i) => i,
        Err(e) => return app.error(&e),
    };
    let mut h = Html::new();
    head(app, &mut h, &counts, tab);
    if tab == Tab::Dead {
        filter_form(app, &mut h, queue, &query);
    }
    if tab == Tab::Dead && !items.is_empty() {
        let mut links = Vec::new();
        for bulk in [Bulk::Redrive, Bulk::Purge] {
            if app.acts(bulk.able(app.op.capabilities())) {
                links.push(bulk);
            }
        }
        if !links.is_empty() {
            h.raw("<p class=\"bulk\">");
            for bulk in links {
                let mut link = app.queue_link(queue, &format!("/{}", bulk.name()));
                if !query.is_all() {
                    link = format!("{link}?{}", query.to_query());
                }
                h.raw("<a id=\"")
                    .raw(bulk.name())
                    .raw("\" href=\"")
                    .text(&link)
                    .raw("\">")
                    .raw(bulk.link_text(query.is_all()))
                    .raw("</a> ");
            }
            h.raw("</p>");
        }
    }
    if tab == Tab::Live && !items.is_empty() {
        crate::pages::cancel::link(app, &mut h, queue);
    }
    if items.is_empty() {
        h.raw("<p class=\"muted\" id=\"empty\">")
            .raw(if tab == Tab::Dead {
                "No dead letters"
            } else {
                "No live items"
            })
            .raw(if page.after.is_some() {
                " after this id."
            } else {
                "."
            })
            .raw("</p>");
    } else if tab == Tab::Dead {
        dead_table(app, &mut h, queue, &items);
    } else {
        live_table(app, &mut h, queue, &items);
    }
    if tab == Tab::Live {
        let queues = [queue.to_string()];
        if let Err(e) = crate::pages::activity::section(app, &mut h, &queues).await {
            return app.error(&e);
        }
    }
    let rest = if tab == Tab::Dead { "/dead" } else { "" };
    pager(
        &mut h,
        &app.queue_link(queue, rest),
        &query.to_query(),
        page,
        items.len(),
        items.last().map(|i| i.id),
    );
    let title = format!(
        "{queue} ({})",
        if tab == Tab::Dead { "dead" } else { "live" }
    );
    app.page(StatusCode::OK, &title, &h)
}

/// The dead letters' filter: a reason, a job kind (a GET form: it changes nothing).
fn filter_form<O: Operator>(app: &App<O>, h: &mut Html, queue: &str, query: &DeadQuery) {
    h.raw("<form method=\"get\" class=\"filter\" action=\"")
        .text(&app.queue_link(queue, "/dead"))
        .raw("\"><label>Reason <select name=\"reason\"><option value=\"\">any</option>");
    for r in Reason::ALL {
        h.raw("<option value=\"")
            .text(&r.as_str().replace(' ', "-"))
            .raw(if query.reason == Some(r) {
                "\" selected>"
            } else {
                "\">"
            })
            .text(r.as_str())
            .raw("</option>");
    }
    h.raw("</select></label> <label>Job kind <input name=\"kind\" value=\"")
        .text(query.kind.as_deref().unwrap_or(""))
        .raw("\"></label> <button type=\"submit\">Filter</button></form>");
}

/// The id cell, a link to the item's page.
fn id_cell<O: Operator>(app: &App<O>, h: &mut Html, queue: &str, item: &StoredItem) {
    h.raw("<td class=\"n\"><a href=\"")
        .text(&app.queue_link(queue, &format!("/items/{}", item.id.get())))
        .raw("\">")
        .show(item.id.get())
        .raw("</a></td>");
}

/// The kind and payload cells.
fn payload_cells(h: &mut Html, item: &StoredItem) {
    match item.payload.as_deref() {
        None => {
            h.raw("<td>-</td><td class=\"payload muted\">(")
                .show(item.size)
                .raw(" bytes, not loaded)</td>");
        }
        Some(p) => {
            let (kind, rest) = split_kind(p);
            h.raw("<td>")
                .text(kind.unwrap_or("-"))
                .raw("</td><td class=\"payload\">")
                .text(&preview(rest, PREVIEW))
                .raw("</td>");
        }
    }
}

fn live_table<O: Operator>(app: &App<O>, h: &mut Html, queue: &str, items: &[StoredItem]) {
    let now = SystemTime::now();
    h.raw("<table id=\"items\"><thead><tr><th class=\"n\">Id</th><th>State</th><th class=\"n\">Attempts</th><th class=\"n\">Priority</th><th>Due</th><th>Kind</th><th>Payload</th></tr></thead><tbody>");
    for item in items {
        h.raw("<tr>");
        id_cell(app, h, queue, item);
        let due = item
            .visible_at
            .or(item.deadline)
            .map_or("-".to_string(), |t| relative(t, now));
        h.raw("<td>")
            .text(item.state.as_str())
            .raw("</td><td class=\"n\">")
            .show(item.attempts)
            .raw("</td><td class=\"n\">")
            .show(item.priority)
            .raw("</td><td>")
            .text(&due)
            .raw("</td>");
        payload_cells(h, item);
        h.raw("</tr>");
    }
    h.raw("</tbody></table>");
}

fn dead_table<O: Operator>(app: &App<O>, h: &mut Html, queue: &str, items: &[StoredItem]) {
    let now = SystemTime::now();
    h.raw("<table id=\"dead\"><thead><tr><th class=\"n\">Id</th><th class=\"n\">Attempts</th><th>Reason</th><th>Dead</th><th>Last error</th><th>Kind</th><th>Payload</th></tr></thead><tbody>");
    for item in items {
        h.raw("<tr>");
        id_cell(app, h, queue, item);
        let error = item.last_error.as_deref().unwrap_or("-");
        let error: String = if error.chars().count() > PREVIEW {
            error.chars().take(PREVIEW).chain("...".chars()).collect()
        } else {
            error.to_string()
        };
        h.raw("<td class=\"n\">")
            .show(item.attempts)
            .raw("</td><td>")
            .text(item.reason.map_or("-", |r| r.as_str()))
            .raw("</td><td>")
            .text(&item.dead_at.map_or("-".to_string(), |t| relative(t, now)))
            .raw("</td><td class=\"error\">")
            .text(&error)
            .raw("</td>");
        payload_cells(h, item);
        h.raw("</tr>");
    }
    h.raw("</tbody></table>");
}
