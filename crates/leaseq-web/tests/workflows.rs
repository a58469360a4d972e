//! Workflows and batches on the dashboard, through the router, over a memory queue of this
//! process with its dependency graph (`LocalOperator::with_graph`): the queue page links
//! them; the workflows page lists each workflow's status and steps; a workflow's page shows
//! each step's state, what it waits for, attempts, result size and last error; the batches
//! page the exact counts; retry and cancel act with the CSRF token only (and not at all
//! read-only); an operator without workflows says so.

mod common;

use axum::http::StatusCode;
use common::graph::{fixture, operator};
use common::*;
use leaseq_async::dependencies::DependencyStore;
use leaseq_async::operator::Operator;
use leaseq_web::{Dashboard, LocalOperator};

/// The markup of the first `<tr>` carrying `attr`, to its end.
fn row<'h>(html: &'h str, attr: &str) -> &'h str {
    let at = html
        .find(attr)
        .unwrap_or_else(|| panic!("no {attr} in {html}"));
    let rest = &html[at..];
    &rest[..rest.find("</tr>").unwrap()]
}

#[tokio::test]
async fn a_person_sees_each_workflow_its_steps_and_the_batches_counts() {
    let g = fixture().await;
    let app = Dashboard::new(operator(&g)).router();

    let (status, _, html) = get(&app, "/queues/media", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains("href=\"/queues/media/workflows\">Workflows</a>"),
        "{html}"
    );
    assert!(
        html.contains("href=\"/queues/media/batches\">Batches</a>"),
        "{html}"
    );

    let (status, _, html) = get(&app, "/queues/media/workflows", &[]).await;
    assert_eq!(status, StatusCode::OK, "{html}");
    let failed = row(&html, &format!("data-workflow=\"{}\"", g.failed.get()));
    assert!(
        failed.contains("<td class=\"wf-status\">failed</td>"),
        "{failed}"
    );
    assert!(failed.contains(">1/4<"), "{failed}");
    for (step, status) in [
        ("resize", "done"),
        ("upload", "dead-lettered"),
        ("thumbs", "running"),
        ("notify", "cancelled"),
    ] {
        let chip = format!("data-status=\"{status}\" title=\"{status}\">{step}</span>");
        assert!(failed.contains(&chip), "{chip} in {failed}");
    }
    let done = row(&html, &format!("data-workflow=\"{}\"", g.done.get()));
    assert!(
        done.contains(">done</td>") && done.contains(">3/3<"),
        "{done}"
    );
    let started = row(&html, &format!("data-workflow=\"{}\"", g.started.get()));
    assert!(started.contains(">running</td>"), "{started}");
    assert!(
        started.contains("data-status=\"waiting\" title=\"waiting\">mail<"),
        "{started}"
    );

    let page = format!("/queues/media/workflows/{}", g.failed.get());
    let (status, _, html) = get(&app, &page, &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains("<span id=\"wf-status\">failed</span>, 1 of 4 steps done"),
        "{html}"
    );
    let upload = row(&html, "data-step=\"upload\"");
    assert!(
        upload.contains("data-status=\"dead-lettered\">dead-lettered<"),
        "{upload}"
    );
    assert!(
        upload.contains("<td>resize</td>"),
        "waits for resize: {upload}"
    );
    assert!(
        upload.contains("<td class=\"n attempts\">1</td>"),
        "{upload}"
    );
    assert!(upload.contains("s3: 503 slow down"), "{upload}");
    assert!(
        upload.contains("<button type=\"submit\">Retry</button>"),
        "{upload}"
    );
    let resize = row(&html, "data-step=\"resize\"");
    assert!(resize.contains(">20 B<"), "its result's size: {resize}");
    assert!(!resize.contains("Retry"), "done: nothing to retry");
    let notify = row(&html, "data-step=\"notify\"");
    assert!(notify.contains("<td>upload, thumbs</td>"), "{notify}");
    assert!(html.contains("Cancel workflow"), "steps left to cancel");
    let dag = &html[html.find("id=\"dag\"").unwrap()..html.find("id=\"steps\"").unwrap()];
    assert_eq!(
        dag.matches("class=\"level\"").count(),
        3,
        "three depths: {dag}"
    );

    let (_, _, html) = get(
        &app,
        &format!("/queues/media/workflows/{}", g.done.get()),
        &[],
    )
    .await;
    assert!(!html.contains("Cancel workflow"), "nothing left to cancel");
    let (status, _, _) = get(&app, "/queues/media/workflows/99", &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _, _) = get(&app, "/queues/media/workflows/x", &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    let (status, _, html) = get(&app, "/queues/media/batches", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let b = row(&html, &format!("data-batch=\"{}\"", g.batch.get()));
    for (count, n) in [
        ("total", 5),
        ("open", 1),
        ("acked", 3),
        ("dead", 1),
        ("cancelled", 0),
    ] {
        assert_eq!(
            text_after(b, &format!("data-count=\"{count}\"")),
            n.to_string(),
            "{count}: {b}"
        );
    }
    assert!(b.contains("on complete") && b.contains(">waiting<"), "{b}");
}

#[tokio::test]
async fn retry_and_cancel_act_with_the_token_only() {
    let g = fixture().await;
    let app = Dashboard::new(operator(&g)).router();
    let page = format!("/queues/media/workflows/{}", g.failed.get());
    let (_, _, html) = get(&app, &page, &[]).await;
    let token = csrf_of(&html).unwrap();

    let (status, _) = post(&app, &format!("{page}/retry"), &[("step", "upload")]).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "no token");
    let (status, body) = post(
        &app,
        &format!("{page}/retry"),
        &[("csrf", &token), ("step", "upload")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("step upload runs again"), "{body}");
    let steps = g
        .queue
        .store()
        .workflow_steps(g.failed)
        .await
        .unwrap()
        .unwrap();
    let upload = steps.iter().find(|s| s.name == "upload").unwrap();
    assert!(
        matches!(
            upload.state,
            leaseq_async::dependencies::StepState::Queued(_)
        ),
        "{upload:?}"
    );
    let (_, _, html) = get(&app, &page, &[]).await;
    assert!(
        row(&html, "data-step=\"upload\"").contains(">ready<"),
        "{html}"
    );
    assert!(
        row(&html, "data-step=\"notify\"").contains(">waiting<"),
        "{html}"
    );

    let (status, body) = post(
        &app,
        &format!("{page}/retry"),
        &[("csrf", &token), ("step", "resize")],
    )
    .await;
    assert_eq!(
        status,
        StatusCode::CONFLICT,
        "a done step is not retried: {body}"
    );

    let (status, body) = post(&app, &format!("{page}/cancel"), &[("csrf", &token)]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("steps cancelled"), "{body}");
    let (_, _, html) = get(&app, &page, &[]).await;
    assert!(
        row(&html, "data-step=\"upload\"").contains(">cancelled<"),
        "{html}"
    );
    assert!(
        row(&html, "data-step=\"notify\"").contains(">cancelled<"),
        "{html}"
    );

    // Read-only: no button, every POST refused.
    let ro = Dashboard::new(operator(&g)).read_only().router();
    let started = format!("/queues/media/workflows/{}", g.started.get());
    let (_, _, html) = get(&ro, &started, &[]).await;
    assert!(!html.contains("<form"), "{html}");
    let (status, _) = post(&ro, &format!("{started}/cancel"), &[("csrf", &token)]).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let states = operator(&g)
        .workflow("media", g.started)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(states.status(), "running", "nothing cancelled");
}

#[tokio::test]
async fn an_operator_without_workflows_says_so() {
    let g = fixture().await;
    let op = LocalOperator::new().with(g.queue.clone());
    assert!(!op.capabilities().workflows);
    let app = Dashboard::new(op).router();
    let (_, _, html) = get(&app, "/queues/media", &[]).await;
    assert!(!html.contains("/workflows\""), "no tab: {html}");
    let (status, _, html) = get(&app, "/queues/media/workflows", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains("This store does not offer workflows and batches."),
        "{html}"
    );
    let (status, _) = post(&app, "/queues/media/workflows/0/cancel", &[("csrf", "x")]).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}
