//! `/`: every queue with its counts by state, the age of its oldest ready item where the
//! store says it cheaply, paused or running, and a bar of their shares.

use std::sync::Arc;
use std::time::SystemTime;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use leaseq_async::StoredCounts;

use crate::chart;
use crate::html::Html;
use crate::layout::relative;
use crate::layout::App;
use crate::operator::Operator;

/// The overview page.
pub(crate) async fn overview<O: Operator>(State(app): State<Arc<App<O>>>) -> Response {
    let queues = match app.op.queues().await {
        Ok(q) => q,
        Err(e) => return app.error(&e),
    };
    let mut h = Html::new();
    h.raw("<h1>Queues</h1>");
    if queues.is_empty() {
        h.raw("<p class=\"muted\" id=\"no-queues\">No queue with items in this store.</p>");
        return app.page(StatusCode::OK, "Queues", &h);
    }
    let names: Vec<String> = queues.iter().map(|c| c.queue.clone()).collect();
    let ages = match app.op.oldest_ready_ages(&names).await {
        Ok(a) => a,
        Err(e) => return app.error(&e),
    };
    h.raw("<table id=\"queues\"><thead><tr><th>Queue</th><th class=\"n\">Ready</th><th class=\"n\">Delayed</th><th class=\"n\">In flight</th><th class=\"n\">Dead</th><th class=\"n\">Total</th>");
    if ages.is_some() {
        h.raw("<th class=\"n\">Oldest ready</th>");
    }
    h.raw("<th>Status</th><th>Share</th></tr></thead><tbody>");
    let mut total = StoredCounts::new("", 0, 0, 0, 0);
    for c in &queues {
        h.raw("<tr data-queue=\"")
            .text(&c.queue)
            .raw("\"><td><a href=\"")
            .text(&app.queue_link(&c.queue, ""))
            .raw("\">")
            .text(&c.queue)
            .raw("</a></td>");
        counts_cells(&mut h, c);
        if let Some(ages) = &ages {
            let age = ages.iter().find(|(q, _)| *q == c.queue).map(|(_, d)| *d);
            h.raw("<td class=\"n\" data-oldest-ready=\"")
                .show(age.map_or(0.0, |d| d.as_secs_f64()))
                .raw("\">")
                .text(&age.map_or("-".to_string(), |d| {
                    relative(SystemTime::UNIX_EPOCH, SystemTime::UNIX_EPOCH + d)
                }))
                .raw("</td>");
        }
        h.raw(if c.paused {
            "<td data-paused=\"true\" class=\"paused\">paused</td><td>"
        } else {
            "<td data-paused=\"false\">running</td><td>"
        });
        chart::stacked(&mut h, c);
        h.raw("</td></tr>");
        total.ready += c.ready;
        total.delayed += c.delayed;
        total.in_flight += c.in_flight;
        total.dead += c.dead;
    }
    h.raw("</tbody><tfoot><tr><th>All ")
        .show(queues.len())
        .raw("</th>");
    counts_cells(&mut h, &total);
    if ages.is_some() {
        h.raw("<td></td>");
    }
    let paused = queues.iter().filter(|c| c.paused).count();
    h.raw("<td id=\"paused-count\">")
        .show(paused)
        .raw(" paused</td><td></td></tr></tfoot></table>");
    h.raw("<p class=\"muted\">Counts as of this page's load; reload for newer ones.</p>");
    if let Err(e) = crate::pages::activity::section(&app, &mut h, &names).await {
        return app.error(&e);
    }
    app.page(StatusCode::OK, "Queues", &h)
}

/// The ready, delayed, in-flight, dead and total cells of a row.
fn counts_cells(h: &mut Html, c: &StoredCounts) {
    for (name, n) in [
        ("ready", c.ready),
        ("delayed", c.delayed),
        ("in-flight", c.in_flight),
        ("dead", c.dead),
        ("total", c.ready + c.delayed + c.in_flight + c.dead),
    ] {
        h.raw("<td class=\"n\" data-count=\"")
            .raw(name)
            .raw("\">")
            .show(n)
            .raw("</td>");
    }
}
