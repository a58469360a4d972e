//! `/workers`: the pools of the dashboard's own process, when it was given them
//! ([`Dashboard::with_pool`](crate::Dashboard::with_pool)): workers busy and running, the
//! item each holds and for how long, the workers the watchdog reported stuck, per item type
//! the outcomes, latencies and the item timeout the advisor suggests.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use crate::html::Html;
use crate::layout::App;
use crate::operator::Operator;
use crate::pools::PoolLook;

/// The most watchdog reports a pool's section lists (the newest).
const REPORTS: usize = 10;

/// The workers page.
pub(crate) async fn workers<O: Operator>(State(app): State<Arc<App<O>>>) -> Response {
    let mut h = Html::new();
    h.raw("<h1>Workers</h1>");
    if app.pools.is_empty() {
        h.raw("<p class=\"muted\" id=\"not-mounted\">Workers are shown only when the dashboard is mounted in the service's own process and given its pools (<code>Dashboard::with_pool</code>); this one reads the store alone.</p>");
        return app.page(StatusCode::OK, "Workers", &h);
    }
    for (name, look) in app.pools.looks() {
        pool(&app, &mut h, name, &look);
    }
    h.raw("<p class=\"muted\">As of this page's load; reload for newer figures.</p>");
    app.page(StatusCode::OK, "Workers", &h)
}

/// A duration as `<1ms`, `15ms`, `1.5s`, `2.0m`, `1.2h`, or `-`.
fn span(d: Option<Duration>) -> String {
    let Some(d) = d else {
        return "-".to_string();
    };
    let s = d.as_secs_f64();
    if d < Duration::from_millis(1) {
        "<1ms".to_string()
    } else if s < 1.0 {
        format!("{}ms", d.as_millis())
    } else if s < 120.0 {
        format!("{s:.1}s")
    } else if s < 7200.0 {
        format!("{:.1}m", s / 60.0)
    } else {
        format!("{:.1}h", s / 3600.0)
    }
}

fn card(h: &mut Html, key: &'static str, label: &'static str, value: &str) {
    h.raw("<div class=\"card\"><div class=\"k\">")
        .raw(label)
        .raw("</div><div class=\"v\" data-k=\"")
        .raw(key)
        .raw("\">")
        .text(value)
        .raw("</div></div>");
}

/// One pool's section.
fn pool<O: Operator>(app: &App<O>, h: &mut Html, name: &str, p: &PoolLook) {
    h.raw("<section class=\"pool\" data-pool=\"")
        .text(name)
        .raw("\"><h2>")
        .text(name)
        .raw(" <span class=\"muted\">on queue <a href=\"")
        .text(&app.queue_link(p.queue, ""))
        .raw("\">")
        .text(p.queue)
        .raw("</a></span></h2><div class=\"cards\">");
    let stuck_now = p.running.iter().filter(|r| r.stuck).count();
    let busy = if p.watched {
        p.running.len().to_string()
    } else {
        "-".to_string()
    };
    card(h, "busy", "Busy", &busy);
    card(
        h,
        "live",
        "Running",
        &format!("{} of {}", p.live, p.workers),
    );
    card(h, "stuck", "Stuck now", &stuck_now.to_string());
    let s = &p.stats;
    card(h, "ok", "Done", &s.ok.to_string());
    card(h, "failed", "Failed", &(s.failed + s.permanent).to_string());
    card(h, "timed-out", "Timed out", &s.timed_out.to_string());
    card(h, "panicked", "Panicked", &s.panicked.to_string());
    h.raw("</div>");
    running(app, h, p);
    types(h, p);
    if !p.stuck.is_empty() {
        h.raw("<h3>Watchdog reports (newest first)</h3><table class=\"stuck\"><thead><tr><th class=\"n\">Worker</th><th class=\"n\">Item</th><th>Type</th><th class=\"n\">Silent for</th></tr></thead><tbody>");
        for r in p.stuck.iter().rev().take(REPORTS) {
            h.raw("<tr><td class=\"n\">")
                .show(r.worker)
                .raw("</td><td class=\"n\">")
                .show(r.holding.id.get())
                .raw("</td><td>")
                .text(r.holding.item_type)
                .raw("</td><td class=\"n\">")
                .text(&span(Some(r.silent_for)))
                .raw("</td></tr>");
        }
        h.raw("</tbody></table>");
    }
    h.raw("</section>");
}

/// The items the workers hold now.
fn running<O: Operator>(app: &App<O>, h: &mut Html, p: &PoolLook) {
    h.raw("<h3>Running now</h3>");
    if !p.watched {
        h.raw("<p class=\"muted\">The items the workers hold are known only for a pool with a watchdog.</p>");
        return;
    }
    if p.running.is_empty() {
        h.raw("<p class=\"muted idle\">Every worker is idle.</p>");
        return;
    }
    h.raw("<table class=\"running\"><thead><tr><th class=\"n\">Worker</th><th class=\"n\">Item</th><th>Type</th><th class=\"n\">Running for</th><th>Watchdog</th></tr></thead><tbody>");
    for r in &p.running {
        let id = r.holding.id.get();
        h.raw("<tr data-worker=\"")
            .show(r.worker)
            .raw("\" data-item=\"")
            .show(id)
            .raw("\" data-stuck=\"")
            .show(r.stuck)
            .raw("\"><td class=\"n\">")
            .show(r.worker)
            .raw("</td><td class=\"n\"><a href=\"")
            .text(&app.queue_link(p.queue, &format!("/items/{id}")))
            .raw("\">")
            .show(id)
            .raw("</a></td><td>")
            .text(r.holding.item_type)
            .raw("</td><td class=\"n\">")
            .text(&span(Some(r.running_for)))
            .raw(if r.stuck {
                "</td><td class=\"stuck\">stuck</td></tr>"
            } else {
                "</td><td>-</td></tr>"
            });
    }
    h.raw("</tbody></table>");
}

/// Per item type: outcomes, latencies, the advisor's suggested item timeout.
fn types(h: &mut Html, p: &PoolLook) {
    if p.stats.types.is_empty() {
        return;
    }
    h.raw("<h3>By item type</h3><table class=\"types\"><thead><tr><th>Type</th><th class=\"n\">Handled</th><th class=\"n\">Done</th><th class=\"n\">Failed</th><th class=\"n\">Timed out</th><th class=\"n\">p50</th><th class=\"n\">p99</th><th class=\"n\">Suggested timeout</th></tr></thead><tbody>");
    for (t, r) in &p.stats.types {
        h.raw("<tr data-type=\"")
            .text(t)
            .raw("\"><td>")
            .text(t)
            .raw("</td><td class=\"n\" data-handled>")
            .show(r.handled)
            .raw("</td><td class=\"n\">")
            .show(r.ok)
            .raw("</td><td class=\"n\">")
            .show(r.failed)
            .raw("</td><td class=\"n\">")
            .show(r.timed_out)
            .raw("</td><td class=\"n\">")
            .text(&span(r.p50))
            .raw("</td><td class=\"n\">")
            .text(&span(r.p99))
            .raw("</td><td class=\"n\" data-suggested-ms=\"")
            .show(r.suggested_timeout.map_or(0, |d| d.as_millis()))
            .raw("\">")
            .text(&span(r.suggested_timeout))
            .raw("</td></tr>");
    }
    h.raw("</tbody></table>");
}
