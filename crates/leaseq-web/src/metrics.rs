//! `/metrics`: every queue's gauges in the Prometheus text format (version 0.0.4), read from
//! the store at each scrape through the [`Operator`]:
//!
//! - `leaseq_items{queue,state}`: items by state (`ready`, `delayed`, `in_flight`, `dead`);
//!   on Postgres, a state past 100 items of a table past 3.2 MiB is an estimate from a
//!   sample of the table ([`PgInspector::queue_overview`](leaseq_postgres::PgInspector::queue_overview)),
//!   so that a scrape costs no scan of it;
//! - `leaseq_paused{queue}`: 1 while the queue is paused, else 0;
//! - `leaseq_oldest_ready_age_seconds{queue}`: how long the oldest ready item has waited
//!   since it became ready (0: none ready), where the store says it without a scan
//!   ([`Operator::oldest_ready_ages`]: Postgres, a probe of the claim index per priority
//!   level); left out on a SQLite file, where it would mean reading every ready row.
//!
//! The paused and age gauges have the names the `metrics` feature of `leaseq-async` gives
//! them in a queue's own process.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use leaseq_async::StoredCounts;

use crate::layout::App;
use crate::operator::Operator;

/// The Content-Type of the text format.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// GET `/metrics`.
pub(crate) async fn metrics<O: Operator>(State(app): State<Arc<App<O>>>) -> Response {
    let (status, body) = match app.op.queues().await {
        Ok(queues) => {
            let names: Vec<String> = queues.iter().map(|c| c.queue.clone()).collect();
            match app.op.oldest_ready_ages(&names).await {
                Ok(ages) => (StatusCode::OK, render(&queues, ages.as_deref())),
                Err(e) => {
                    tracing::warn!(error = %e, "leaseq-web: /metrics could not read the store");
                    (
                        StatusCode::SERVICE_UNAVAILABLE,
                        format!(
                            "# the store could not be read: {}\n",
                            one_line(&e.to_string())
                        ),
                    )
                }
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "leaseq-web: /metrics could not read the store");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "# the store could not be read: {}\n",
                    one_line(&e.to_string())
                ),
            )
        }
    };
    let mut response = (status, body).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    response
}

/// The exposition of `queues`, with the oldest ready items' ages where the store gives
/// them (`ages`: those of the queues with one ready).
pub(crate) fn render(queues: &[StoredCounts], ages: Option<&[(String, Duration)]>) -> String {
    let mut out = String::new();
    out.push_str("# HELP leaseq_items Items in the store, by queue and state (ready, delayed, in_flight, dead).\n# TYPE leaseq_items gauge\n");
    for c in queues {
        let q = label(&c.queue);
        for (state, n) in [
            ("ready", c.ready),
            ("delayed", c.delayed),
            ("in_flight", c.in_flight),
            ("dead", c.dead),
        ] {
            let _ = writeln!(out, "leaseq_items{{queue=\"{q}\",state=\"{state}\"}} {n}");
        }
    }
    out.push_str("# HELP leaseq_paused 1 while the queue is paused (no lease handed out), else 0.\n# TYPE leaseq_paused gauge\n");
    for c in queues {
        let _ = writeln!(
            out,
            "leaseq_paused{{queue=\"{}\"}} {}",
            label(&c.queue),
            u8::from(c.paused)
        );
    }
    if let Some(ages) = ages {
        out.push_str("# HELP leaseq_oldest_ready_age_seconds How long the oldest ready item has waited since it became ready (0: none ready).\n# TYPE leaseq_oldest_ready_age_seconds gauge\n");
        for c in queues {
            let age = ages
                .iter()
                .find(|(q, _)| *q == c.queue)
                .map_or(0.0, |(_, d)| d.as_secs_f64());
            let _ = writeln!(
                out,
                "leaseq_oldest_ready_age_seconds{{queue=\"{}\"}} {age}",
                label(&c.queue)
            );
        }
    }
    out
}

/// A label value escaped as the text format asks: `\`, `"` and line feeds.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// `s` on one line (a comment line of the exposition).
fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    #[test]
    fn every_queue_has_its_four_states_and_its_flag() {
        let queues = [
            StoredCounts::new("jobs", 3, 1, 2, 4).with_paused(true),
            StoredCounts::new("q\"x", 0, 0, 0, 0),
        ];
        let ages = [("jobs".to_string(), Duration::from_millis(2500))];
        let text = render(&queues, Some(&ages));
        for line in [
            "leaseq_items{queue=\"jobs\",state=\"ready\"} 3",
            "leaseq_items{queue=\"jobs\",state=\"delayed\"} 1",
            "leaseq_items{queue=\"jobs\",state=\"in_flight\"} 2",
            "leaseq_items{queue=\"jobs\",state=\"dead\"} 4",
            "leaseq_paused{queue=\"jobs\"} 1",
            "leaseq_items{queue=\"q\\\"x\",state=\"ready\"} 0",
            "leaseq_paused{queue=\"q\\\"x\"} 0",
            "leaseq_oldest_ready_age_seconds{queue=\"jobs\"} 2.5",
            "leaseq_oldest_ready_age_seconds{queue=\"q\\\"x\"} 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in {text}");
        }
        // One HELP and one TYPE per family, before its samples.
        assert_eq!(text.matches("# TYPE ").count(), 3);
        assert!(text.ends_with('\n'));
        // A store that cannot say: no such family.
        assert!(!render(&queues, None).contains("oldest"));
    }
}
