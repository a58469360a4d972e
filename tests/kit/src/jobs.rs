//! The sample job kinds of the router tests (the same on every store) and what the tests
//! do with them: the failing routes, the envelopes no route takes, the dead letters'
//! kinds and reasons.

use std::time::Duration;

use leaseq_async::router::{Envelope, JobKind, Router};
use leaseq_async::{CodecError, DeadLetter, Job, KindPolicy, Reason};
use serde::{Deserialize, Serialize};

/// A healthy kind: an email to `to`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Email {
    /// The address.
    pub to: String,
}
impl JobKind for Email {
    const KIND: &'static str = "email";
}

/// A kind whose handler panics on every call (see [`with_failing_kinds`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Explode(pub u32);
impl JobKind for Explode {
    const KIND: &'static str = "explode";
}

/// A kind whose handler never returns (see [`with_failing_kinds`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Hang(pub u32);
impl JobKind for Hang {
    const KIND: &'static str = "hang";
}

/// `router` with the failing kinds routed: [`Explode`] panics on every call (`"explode
/// N"`), [`Hang`] never returns; both with `attempts`, and [`Hang`] with `timeout`.
pub fn with_failing_kinds(router: Router, attempts: u32, timeout: Duration) -> Router {
    router
        .route_with::<Explode, _>(
            KindPolicy::new().with_max_attempts(attempts),
            |job: Job<Explode>| async move { panic!("explode {}", job.item.0) },
        )
        .route_with::<Hang, _>(
            KindPolicy::new()
                .with_max_attempts(attempts)
                .with_timeout(timeout),
            |_job: Job<Hang>| std::future::pending(),
        )
}

/// Two envelopes no route handles: kind "fax" (no route) and an "email" whose args do not
/// decode (`{"to":7}`).
pub fn unroutable() -> [Envelope; 2] {
    [
        Envelope::from_parts("fax", b"{}").expect("a short kind"),
        Envelope::from_parts("email", b"{\"to\":7}").expect("a short kind"),
    ]
}

/// The dead letters' `(kind, reason, attempts)`, sorted by kind (each item must decode).
pub fn dead_kinds(dead: &[DeadLetter<Result<Envelope, CodecError>>]) -> Vec<(String, Reason, u32)> {
    let mut seen: Vec<(String, Reason, u32)> = dead
        .iter()
        .map(|d| {
            let e = d.item.as_ref().expect("decodes");
            (e.kind().expect("a kind").to_string(), d.reason, d.attempts)
        })
        .collect();
    seen.sort_by(|a, b| a.0.cmp(&b.0));
    seen
}

/// What [`dead_kinds`] reads after [`unroutable`] and `per_kind` items of each failing kind
/// ran out of `attempts`: both unroutable ones rejected at once, every explode panicked and
/// every hang timed out.
pub fn dead_kinds_expected(per_kind: u32, attempts: u32) -> Vec<(String, Reason, u32)> {
    let mut want = vec![
        ("email".to_string(), Reason::Rejected, 1),
        ("fax".to_string(), Reason::Rejected, 1),
    ];
    want.extend((0..per_kind).map(|_| ("explode".to_string(), Reason::Panicked, attempts)));
    want.extend((0..per_kind).map(|_| ("hang".to_string(), Reason::TimedOut, attempts)));
    want.sort_by(|a, b| a.0.cmp(&b.0));
    want
}

/// Asserts that the "fax" dead letter says no handler takes its kind.
pub fn assert_fax_unknown(dead: &[DeadLetter<Result<Envelope, CodecError>>]) {
    let fax = dead
        .iter()
        .find(|d| d.item.as_ref().expect("decodes").kind() == Some("fax"))
        .expect("the fax dead letter");
    assert_eq!(
        fax.last_error.as_deref(),
        Some("unknown job kind `fax`: no handler registered")
    );
}
