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

#[cfg(test)]
mod tests {
    use std::fmt;
    use std::sync::{Arc, Mutex};

    use leaseq_core::MessageId;
    use tracing::field::{Field, Visit};
    use tracing_subscriber::layer::{Context, SubscriberExt};
    use tracing_subscriber::Layer;

    use super::job_span;
    use crate::router::Envelope;

    type Recorded = Arc<Mutex<Vec<(String, String)>>>;

    /// A layer that keeps the fields of each new span.
    struct Fields(Recorded);

    struct Record<'a>(&'a mut Vec<(String, String)>);

    impl Visit for Record<'_> {
        fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
            self.0.push((field.name().into(), format!("{value:?}")));
        }
        fn record_str(&mut self, field: &Field, value: &str) {
            self.0.push((field.name().into(), value.into()));
        }
    }

    impl<S: tracing::Subscriber> Layer<S> for Fields {
        fn on_new_span(
            &self,
            attrs: &tracing::span::Attributes<'_>,
            _: &tracing::span::Id,
            _: Context<'_, S>,
        ) {
            attrs.record(&mut Record(&mut self.0.lock().unwrap()));
        }
    }

    /// The fields of the span made for `envelope`, with no OpenTelemetry layer.
    fn fields_of(envelope: &Envelope) -> Vec<(String, String)> {
        let recorded = Recorded::default();
        let subscriber = tracing_subscriber::registry().with(Fields(recorded.clone()));
        tracing::subscriber::with_default(subscriber, || {
            drop(job_span("email", envelope, MessageId::new(3), 2));
        });
        let fields = recorded.lock().unwrap().clone();
        fields
    }

    fn pair(name: &str, value: &str) -> (String, String) {
        (name.into(), value.into())
    }

    #[test]
    fn the_job_span_carries_the_traceparent_as_a_field_without_opentelemetry() {
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let traced = Envelope::from_parts("email", b"{}")
            .unwrap()
            .with_traceparent(tp)
            .unwrap();
        let fields = fields_of(&traced);
        for want in [
            pair("kind", "email"),
            pair("id", "#3"),
            pair("attempt", "2"),
            pair("traceparent", tp),
        ] {
            assert!(fields.contains(&want), "{want:?} not in {fields:?}");
        }
        // Garbage in the trace block, or none: no field, and the span still made.
        for untraced in [&b"\x05email\x01\x03abc{}"[..], b"\x05email{}"] {
            let fields = fields_of(&Envelope::from_bytes(untraced));
            assert!(fields.contains(&pair("kind", "email")), "{fields:?}");
            assert!(
                !fields.iter().any(|(name, _)| name == "traceparent"),
                "{fields:?}"
            );
        }
    }
}
