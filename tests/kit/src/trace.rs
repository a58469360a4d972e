//! A job's trace context checked end to end: spans exported in memory by
//! `opentelemetry_sdk` through the global `tracing` subscriber, and the check that the
//! handler's `leaseq.job` span is the push span's child.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use tracing_subscriber::layer::SubscriberExt;

/// Sets the global subscriber to one that exports every finished span to the returned
/// exporter (global: a pool's workers run on the runtime's threads). Once a process: a
/// test binary that calls it holds that one test.
pub fn export_spans() -> InMemorySpanExporter {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    tracing::subscriber::set_global_default(
        tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("leaseq-test"))),
    )
    .expect("the first global subscriber of this process");
    exporter
}

/// Asserts that the exported `leaseq.job` span is the child of the exported `push` span,
/// in its trace, its parent carried across (remote).
pub fn assert_job_is_child_of_push(exporter: &InMemorySpanExporter) {
    let spans = exporter.get_finished_spans().expect("the exported spans");
    let push = spans
        .iter()
        .find(|s| s.name == "push")
        .expect("the push span");
    let job = spans
        .iter()
        .find(|s| s.name == "leaseq.job")
        .expect("the handler's span");
    assert_eq!(job.span_context.trace_id(), push.span_context.trace_id());
    assert_eq!(job.parent_span_id, push.span_context.span_id());
    assert!(job.parent_span_is_remote);
}
