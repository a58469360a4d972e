//! A job's handling in a span that joins the trace it was pushed in (feature `tracing`; the
//! OpenTelemetry parts with feature `opentelemetry`).

use leaseq_core::MessageId;

use crate::router::Envelope;

/// The span a job's handler runs in: `leaseq.job`, with the job's kind, message id,
/// attempt and, when the envelope carries one, its `traceparent` (so logs join the
/// producer's even without OpenTelemetry). With the feature `opentelemetry`, its
/// OpenTelemetry parent is the context of that `traceparent`: the push's span.
pub(crate) fn job_span(
    kind: &'static str,
    envelope: &Envelope,
    id: MessageId,
    attempt: u32,
) -> tracing::Span {
    let traceparent = envelope.traceparent();
    let span = tracing::info_span!("leaseq.job", kind, id = %id, attempt, traceparent);
    #[cfg(feature = "opentelemetry")]
    if let Some(parent) = traceparent.map(otel::context_of) {
        use tracing_opentelemetry::OpenTelemetrySpanExt;
        // Refused only by a span that is disabled or has no OpenTelemetry layer, which then
        // exports nothing to join.
        let _ = span.set_parent(parent);
    }
    span
}

#[cfg(feature = "opentelemetry")]
pub(crate) use otel::current_traceparent;

#[cfg(feature = "opentelemetry")]
mod otel {
    use opentelemetry::trace::{
        SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState,
    };
    use opentelemetry::Context;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    /// The W3C `traceparent` of the current span's OpenTelemetry context, if it is valid.
    pub(crate) fn current_traceparent() -> Option<String> {
        let cx = tracing::Span::current().context();
        let span = cx.span();
        let sc = span.span_context();
        sc.is_valid().then(|| {
            format!(
                "00-{}-{}-{:02x}",
                sc.trace_id(),
                sc.span_id(),
                sc.trace_flags().to_u8()
            )
        })
    }

    /// The remote context of a valid `traceparent` (checked by the envelope); an empty
    /// context if it does not parse after all.
    pub(super) fn context_of(traceparent: &str) -> Context {
        let field = |r: std::ops::Range<usize>| traceparent.get(r).unwrap_or_default();
        let ids = (
            TraceId::from_hex(field(3..35)),
            SpanId::from_hex(field(36..52)),
            u8::from_str_radix(field(53..55), 16),
        );
        match ids {
            (Ok(trace_id), Ok(span_id), Ok(flags)) => {
                Context::new().with_remote_span_context(SpanContext::new(
                    trace_id,
                    span_id,
                    TraceFlags::new(flags),
                    true,
                    TraceState::default(),
                ))
            }
            _ => Context::new(),
        }
    }
}
