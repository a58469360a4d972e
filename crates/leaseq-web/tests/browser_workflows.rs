//! Workflows and batches in a real browser (headless Chromium through chromedriver, as
//! `browser.rs`): a memory queue of this process with its graph, served over a
//! `LocalOperator`. A person follows the queue page's Workflows tab, reads each step's
//! status, attempts and error as shown, retries the dead-lettered step with its button and
//! sees it ready again, and reads a batch's counts; screenshots into docs/screenshots/
//! with `LEASEQ_SCREENSHOTS=docs`.
//!
//! Skips with a note when chromium or chromedriver is missing, except with
//! `LEASEQ_BROWSER_REQUIRED=1`.

mod common;

use common::browser::*;
use common::graph::{fixture, operator};
use fantoccini::{Client, Locator};

/// The text of step `step`'s cell `css` in the workflow's table.
async fn cell(c: &Client, step: &str, css: &str) -> String {
    text(c, &format!("tr[data-step=\"{step}\"] {css}")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_reads_a_workflows_steps_and_retries_the_failed_one() {
    let Some((chromium, driver)) = browser() else {
        return;
    };
    let g = fixture().await;
    let addr = serve(operator(&g)).await;
    let (_driver, c) = session(&chromium, &driver).await;
    let base = format!("http://{addr}");

    c.goto(&format!("{base}/queues/media")).await.unwrap();
    click(&c, Locator::LinkText("Workflows")).await;
    let failed = format!("tr[data-workflow=\"{}\"]", g.failed.get());
    assert_eq!(text(&c, &format!("{failed} .wf-status")).await, "failed");
    assert_eq!(
        text(&c, &format!("{failed} .steps")).await,
        "resize upload thumbs notify"
    );
    let done = format!("tr[data-workflow=\"{}\"]", g.done.get());
    assert_eq!(text(&c, &format!("{done} .wf-status")).await, "done");
    no_script(&c).await;
    screenshot(&c, "workflows").await;

    click(&c, Locator::LinkText(&g.failed.get().to_string())).await;
    assert_eq!(text(&c, "#wf-status").await, "failed");
    for (step, status) in [
        ("resize", "done"),
        ("upload", "dead-lettered"),
        ("thumbs", "running"),
        ("notify", "cancelled"),
    ] {
        assert_eq!(cell(&c, step, ".status").await, status, "{step}");
    }
    assert_eq!(cell(&c, "upload", ".attempts").await, "1");
    assert_eq!(cell(&c, "upload", ".error").await, "s3: 503 slow down");
    assert_eq!(
        cell(&c, "notify", "td:nth-child(3)").await,
        "upload, thumbs"
    );
    assert_eq!(cell(&c, "resize", "td:nth-child(5)").await, "20 B");
    no_script(&c).await;
    screenshot(&c, "workflow").await;

    // Retry the failed step with its button: ready again, notify waits again.
    click(
        &c,
        Locator::Css("tr[data-step=\"upload\"] form.action button"),
    )
    .await;
    assert!(text(&c, "#done").await.contains("step upload runs again"));
    click(
        &c,
        Locator::LinkText(&format!("Workflow {}", g.failed.get())),
    )
    .await;
    assert_eq!(cell(&c, "upload", ".status").await, "ready");
    assert_eq!(cell(&c, "notify", ".status").await, "waiting");
    assert_eq!(text(&c, "#wf-status").await, "running");

    click(&c, Locator::LinkText("Batches")).await;
    let b = format!("tr[data-batch=\"{}\"]", g.batch.get());
    for (count, n) in [("total", 5), ("open", 1), ("acked", 3), ("dead", 1)] {
        let shown = text(&c, &format!("{b} [data-count=\"{count}\"]")).await;
        assert_eq!(shown, n.to_string(), "{count}");
    }
    assert_eq!(text(&c, &format!("{b} .status")).await, "waiting");
    screenshot(&c, "batches").await;
    c.close().await.unwrap();
    drop(g);
}
