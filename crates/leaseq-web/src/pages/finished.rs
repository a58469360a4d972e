//! `/queues/{queue}/finished`: the record of a queue's finished jobs, where its store keeps
//! one ([`Capabilities::history`](crate::Capabilities)), filtered by job kind and outcome,
//! oldest first, a page at a time (`after`: the last entry number of the page before).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use leaseq_async::{FinishOutcome, Finished, HistoryQuery};
use leaseq_core::MessageId;

use crate::html::{segment, Html};
use crate::layout::{pager, paging, relative, App};
use crate::operator::Operator;
use crate::pages::queue::{head, Tab};

/// The most characters of a last error the table shows.
const PREVIEW: usize = 80;

/// The filter of the page: a job kind, an outcome.
#[derive(Debug, Default)]
struct Filter {
    kind: Option<String>,
    outcome: Option<FinishOutcome>,
}

impl Filter {
    fn parse(q: &HashMap<String, String>) -> Result<Filter, String> {
        let kind = q.get("kind").filter(|s| !s.is_empty()).cloned();
        let outcome = match q.get("outcome").filter(|s| !s.is_empty()) {
            None => None,
            Some(s) => Some(FinishOutcome::from_name(s).ok_or_else(|| {
                let names: Vec<&str> = FinishOutcome::ALL.iter().map(|o| o.as_str()).collect();
                format!("unknown outcome {s:?}; one of: {}", names.join(", "))
            })?),
        };
        Ok(Filter { kind, outcome })
    }

    /// The query string pairs the pager's links keep.
    fn to_query(&self) -> String {
        let mut pairs = Vec::new();
        if let Some(k) = &self.kind {
            pairs.push(format!("kind={}", segment(k)));
        }
        if let Some(o) = self.outcome {
            pairs.push(format!("outcome={}", o.as_str()));
        }
        pairs.join("&")
    }
}

/// The finished jobs page.
pub(crate) async fn finished<O: Operator>(
    State(app): State<Arc<App<O>>>,
    Path(queue): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if !app.op.capabilities().history {
        return app.message(
            StatusCode::NOT_FOUND,
            "this store keeps no record of finished jobs",
        );
    }
    let (page, filter) = match paging(&q).and_then(|p| Ok((p, Filter::parse(&q)?))) {
        Ok(v) => v,
        Err(e) => return app.message(StatusCode::BAD_REQUEST, &e),
    };
    let counts = match app.op.counts(&queue).await {
        Ok(c) => c,
        Err(e) => return app.error(&e),
    };
    let mut query = HistoryQuery::first(page.limit);
    query.after = page.after.map(MessageId::get);
    query.kind = filter.kind.clone();
    query.outcome = filter.outcome;
    let entries = match app.op.history(&queue, &query).await {
        Ok(e) => e,
        Err(e) => return app.error(&e),
    };
    let mut h = Html::new();
    head(&app, &mut h, &counts, Tab::Finished);
    form(&app, &mut h, &queue, &filter);
    if entries.is_empty() {
        h.raw("<p class=\"muted\" id=\"empty\">No finished jobs recorded")
            .raw(if page.after.is_some() {
                " after this entry"
            } else {
                ""
            })
            .raw(" (a store keeps them only when opened with a retention window).</p>");
    } else {
        table(&mut h, &entries);
    }
    pager(
        &mut h,
        &app.queue_link(&queue, "/finished"),
        &filter.to_query(),
        page,
        entries.len(),
        entries.last().map(|f| MessageId::new(f.seq)),
    );
    app.page(StatusCode::OK, &format!("{queue} (finished)"), &h)
}

/// The filter form (a GET: it changes nothing).
fn form<O: Operator>(app: &App<O>, h: &mut Html, queue: &str, filter: &Filter) {
    h.raw("<form method=\"get\" class=\"filter\" action=\"")
        .text(&app.queue_link(queue, "/finished"))
        .raw("\"><label>Outcome <select name=\"outcome\"><option value=\"\">any</option>");
    for o in FinishOutcome::ALL {
        h.raw("<option value=\"")
            .text(o.as_str())
            .raw(if filter.outcome == Some(o) {
                "\" selected>"
            } else {
                "\">"
            })
            .text(o.as_str())
            .raw("</option>");
    }
    h.raw("</select></label> <label>Job kind <input name=\"kind\" value=\"")
        .text(filter.kind.as_deref().unwrap_or(""))
        .raw("\"></label> <button type=\"submit\">Filter</button></form>");
}

fn table(h: &mut Html, entries: &[Finished]) {
    let now = SystemTime::now();
    h.raw("<table id=\"finished\"><thead><tr><th class=\"n\">Entry</th><th class=\"n\">Id</th><th>Kind</th><th>Outcome</th><th>Reason</th><th class=\"n\">Attempts</th><th>Finished</th><th class=\"n\">Took</th><th>Last error</th></tr></thead><tbody>");
    for f in entries {
        let took = match f.duration {
            None => "-".to_string(),
            Some(d) if d.as_secs() == 0 => format!("{}ms", d.as_millis()),
            Some(d) => format!("{:.1}s", d.as_secs_f64()),
        };
        let error = f.last_error.as_deref().unwrap_or("-");
        let error: String = if error.chars().count() > PREVIEW {
            error.chars().take(PREVIEW).chain("...".chars()).collect()
        } else {
            error.to_string()
        };
        h.raw("<tr data-outcome=\"")
            .text(f.outcome.as_str())
            .raw("\"><td class=\"n\">")
            .show(f.seq)
            .raw("</td><td class=\"n\">")
            .show(f.id.get())
            .raw("</td><td>")
            .text(f.kind.as_deref().unwrap_or("-"))
            .raw("</td><td>")
            .text(f.outcome.as_str())
            .raw("</td><td>")
            .text(f.reason.map_or("-", |r| r.as_str()))
            .raw("</td><td class=\"n\">")
            .show(f.attempts)
            .raw("</td><td>")
            .text(&relative(f.finished_at, now))
            .raw("</td><td class=\"n\">")
            .text(&took)
            .raw("</td><td class=\"error\">")
            .text(&error)
            .raw("</td></tr>");
    }
    h.raw("</tbody></table>");
}
