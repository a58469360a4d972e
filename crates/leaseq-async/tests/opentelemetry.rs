//! Trace context through a router's queue (feature `opentelemetry`): a job pushed inside a
//! span carries its W3C `traceparent`, and the handler's `leaseq.job` span is that span's
//! child in the exported trace; a job without one, or with a malformed one, is handled in a
//! trace of its own.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_async::router::{Envelope, JobKind, Router};
use leaseq_async::{Job, LeaseQueue, Pool, SimRuntime};
use leaseq_core::Config;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanId, TraceContextExt, TraceId, TracerProvider as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde::{Deserialize, Serialize};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;

#[derive(Serialize, Deserialize)]
struct Ping {
    n: u32,
}

impl JobKind for Ping {
    const KIND: &'static str = "ping";
}

/// The trace ids the handler saw as its current OpenTelemetry context, by `n`.
type Seen = Arc<Mutex<Vec<(u32, TraceId)>>>;

/// Runs `push` then a router pool over its queue to the end, with `tracing` going to an
/// OpenTelemetry layer that exports into memory; the spans exported and what the handler
/// saw.
fn run(push: impl FnOnce() -> Vec<Envelope>) -> (Vec<SpanData>, Vec<(u32, TraceId)>) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("leaseq-test")));
    let seen = Seen::default();
    tracing::subscriber::with_default(subscriber, || {
        let envelopes = push();
        let rt = SimRuntime::new();
        rt.block_on({
            let (rt, seen) = (rt.clone(), seen.clone());
            async move {
                let queue =
                    LeaseQueue::with_runtime(rt, Config::new(Duration::from_secs(60))).unwrap();
                for e in envelopes {
                    queue.push(e).await.unwrap();
                }
                let router = Router::new().route::<Ping, _>(move |job: Job<Ping>| {
                    let seen = seen.clone();
                    async move {
                        let cx = tracing::Span::current().context();
                        let trace_id = cx.span().span_context().trace_id();
                        seen.lock().unwrap().push((job.item.n, trace_id));
                        Ok(())
                    }
                });
                let pool = Pool::builder(queue.clone()).workers(1).spawn_router(router);
                queue.wait_empty().await;
                let report = pool.shutdown(Duration::from_secs(1)).await;
                assert_eq!((report.stats.failed, report.stats.permanent), (0, 0));
            }
        });
    });
    let spans = exporter.get_finished_spans().unwrap();
    let seen = seen.lock().unwrap().clone();
    (spans, seen)
}

/// The exported spans named `name`.
fn named<'a>(spans: &'a [SpanData], name: &str) -> Vec<&'a SpanData> {
    spans.iter().filter(|s| s.name == name).collect()
}

/// The `traceparent` attribute a `leaseq.job` span was given, if any.
fn traceparent_attribute(span: &SpanData) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == "traceparent")
        .map(|kv| kv.value.as_str().into_owned())
}

#[test]
fn the_handlers_span_is_a_child_of_the_span_that_pushed_the_job() {
    let injected = Arc::new(Mutex::new(String::new()));
    let (spans, seen) = run({
        let injected = injected.clone();
        move || {
            let push = tracing::info_span!("push");
            let _entered = push.enter();
            // The SDK's own W3C propagator writes the same traceparent as the envelope.
            let mut carrier = std::collections::HashMap::new();
            TraceContextPropagator::new().inject_context(&push.context(), &mut carrier);
            *injected.lock().unwrap() = carrier["traceparent"].clone();
            vec![Envelope::new(&Ping { n: 1 }).unwrap()]
        }
    });
    let pushed = named(&spans, "push");
    let jobs = named(&spans, "leaseq.job");
    assert_eq!((pushed.len(), jobs.len()), (1, 1), "{spans:#?}");
    let (push, job) = (pushed[0], jobs[0]);
    let trace_id = push.span_context.trace_id();
    assert_eq!(job.span_context.trace_id(), trace_id);
    assert_eq!(job.parent_span_id, push.span_context.span_id());
    assert!(job.parent_span_is_remote);
    let traceparent = format!("00-{trace_id}-{}-01", push.span_context.span_id());
    assert_eq!(*injected.lock().unwrap(), traceparent);
    assert_eq!(traceparent_attribute(job), Some(traceparent));
    // The handler's code runs inside that span.
    assert_eq!(seen, vec![(1, trace_id)]);
}

#[test]
fn a_job_pushed_outside_any_span_is_handled_in_a_trace_of_its_own() {
    let (spans, seen) = run(|| vec![Envelope::new(&Ping { n: 2 }).unwrap()]);
    let jobs = named(&spans, "leaseq.job");
    assert_eq!(jobs.len(), 1, "{spans:#?}");
    assert_eq!(traceparent_attribute(jobs[0]), None);
    assert!(!jobs[0].parent_span_is_remote);
    assert_eq!(seen, vec![(2, jobs[0].span_context.trace_id())]);
}

#[test]
fn a_traceparent_from_another_producer_is_the_handlers_parent() {
    let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let (spans, _) = run(|| {
        let e = Envelope::from_parts("ping", b"{\"n\":3}").unwrap();
        vec![e.with_traceparent(tp).unwrap()]
    });
    let jobs = named(&spans, "leaseq.job");
    assert_eq!(jobs.len(), 1, "{spans:#?}");
    assert_eq!(
        jobs[0].span_context.trace_id(),
        TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap()
    );
    assert_eq!(
        jobs[0].parent_span_id,
        SpanId::from_hex("00f067aa0ba902b7").unwrap()
    );
}

#[test]
fn a_malformed_trace_block_is_ignored_and_the_job_still_runs() {
    let zero_ids = "00-00000000000000000000000000000000-0000000000000000-01";
    let (spans, seen) = run(|| {
        [&b"not a traceparent"[..], b"", zero_ids.as_bytes()]
            .iter()
            .enumerate()
            .map(|(n, block)| {
                let mut bytes = b"\x04ping\x01".to_vec();
                bytes.push(block.len() as u8);
                bytes.extend_from_slice(block);
                bytes.extend_from_slice(format!("{{\"n\":{}}}", 10 + n).as_bytes());
                Envelope::from_bytes(bytes)
            })
            .collect()
    });
    let jobs = named(&spans, "leaseq.job");
    assert_eq!(jobs.len(), 3, "{spans:#?}");
    for job in jobs {
        assert_eq!(traceparent_attribute(job), None);
        assert!(!job.parent_span_is_remote);
    }
    let mut ns: Vec<u32> = seen.iter().map(|(n, _)| *n).collect();
    ns.sort_unstable();
    assert_eq!(ns, vec![10, 11, 12]);
}
