//! The routes: each job kind's handler and rules, and the dispatch of one envelope to its
//! kind's handler.

use std::fmt;
use std::future::{ready, Future};
use std::pin::Pin;

use leaseq_core::{ConfigError, KindPolicy};

use crate::job_error::JobError;
use crate::pool::{HandlerResult, Job};
use crate::router::{Envelope, JobKind};

/// A handling's future, as the pool's workers run it.
type Running = Pin<Box<dyn Future<Output = HandlerResult> + Send>>;

/// One kind's route: its name, rules and handler (which decodes the args first).
struct Route {
    kind: &'static str,
    policy: KindPolicy,
    run: Box<dyn Fn(Job<Envelope>) -> Running + Send + Sync>,
}

/// Job kinds and their handlers, for a pool over one queue of [`Envelope`]s: each item is
/// dispatched to its kind's handler, with the kind's own [`KindPolicy`], by
/// [`PoolBuilder::spawn_router`](crate::PoolBuilder::spawn_router).
///
/// - An item whose kind has no route is dead-lettered at once, with reason
///   [`Reason::Rejected`](leaseq_core::Reason::Rejected) and the error "unknown job kind
///   \`x\`: no handler registered"; bytes that are no envelope likewise ("not a job
///   envelope"). Neither is retried.
/// - An item whose args do not decode as its kind's is dead-lettered at once too, with the
///   decode error ("bad args for job kind \`x\`: ...").
/// - Every other failure follows the kind's rules (see
///   [`PoolBuilder::kind_policy`](crate::PoolBuilder::kind_policy)).
///
/// See the [module docs](crate::router) for an example.
#[derive(Default)]
pub struct Router {
    /// In kind order, for a binary search.
    routes: Vec<Route>,
}

impl Router {
    /// No routes yet.
    pub fn new() -> Self {
        Router::default()
    }

    /// Routes jobs of kind `J` to `handler`, under the queue's rules.
    ///
    /// # Panics
    ///
    /// If `J::KIND` has a route already (a mistake in the code that builds the router, as
    /// River's `AddWorker` treats it); [`try_route_with`](Self::try_route_with) says it as
    /// an error instead.
    pub fn route<J: JobKind, F>(self, handler: impl Fn(Job<J>) -> F + Send + Sync + 'static) -> Self
    where
        F: Future<Output = Result<(), JobError>> + Send + 'static,
    {
        self.route_with(KindPolicy::new(), handler)
    }

    /// Routes jobs of kind `J` to `handler`, under `policy` (max attempts, backoff and item
    /// timeout of this kind; what it leaves unset is the queue's).
    ///
    /// # Panics
    ///
    /// If `J::KIND` has a route already, or `policy` is invalid (zero attempts, a zero
    /// timeout, a backoff a `Config` would refuse); see
    /// [`try_route_with`](Self::try_route_with).
    pub fn route_with<J: JobKind, F>(
        mut self,
        policy: KindPolicy,
        handler: impl Fn(Job<J>) -> F + Send + Sync + 'static,
    ) -> Self
    where
        F: Future<Output = Result<(), JobError>> + Send + 'static,
    {
        if let Err(e) = self.try_route_with(policy, handler) {
            panic!("{e}");
        }
        self
    }

    /// Routes jobs of kind `J` to `handler` under `policy`, or says why not (for routes
    /// built from configuration): a kind routed already, or an invalid policy. The router
    /// is unchanged on an error.
    pub fn try_route_with<J: JobKind, F>(
        &mut self,
        policy: KindPolicy,
        handler: impl Fn(Job<J>) -> F + Send + Sync + 'static,
    ) -> Result<(), RouteError>
    where
        F: Future<Output = Result<(), JobError>> + Send + 'static,
    {
        policy.validate().map_err(|error| RouteError::Policy {
            kind: J::KIND,
            error,
        })?;
        let at = match self.find(J::KIND) {
            Ok(_) => return Err(RouteError::Duplicate { kind: J::KIND }),
            Err(at) => at,
        };
        let run = move |job: Job<Envelope>| -> Running {
            let (envelope, job) = job.replace_item(());
            match envelope.decode::<J>() {
                Ok(args) => {
                    #[cfg(feature = "tracing")]
                    let span =
                        crate::router::trace::job_span(J::KIND, &envelope, job.id, job.attempt);
                    #[cfg(feature = "tracing")]
                    let running = span.in_scope(|| handler(job.replace_item(args).1));
                    #[cfg(feature = "tracing")]
                    let running = tracing::Instrument::instrument(running, span);
                    #[cfg(not(feature = "tracing"))]
                    let running = handler(job.replace_item(args).1);
                    Box::pin(async move { Ok(running.await) })
                }
                Err(e) => rejected(e.to_string()),
            }
        };
        self.routes.insert(
            at,
            Route {
                kind: J::KIND,
                policy,
                run: Box::new(run),
            },
        );
        Ok(())
    }

    /// The kinds routed, in name order, with their rules.
    pub fn kinds(&self) -> impl Iterator<Item = (&'static str, KindPolicy)> + '_ {
        self.routes.iter().map(|r| (r.kind, r.policy))
    }

    /// Where `kind`'s route is, or where it would go.
    fn find(&self, kind: &str) -> Result<usize, usize> {
        self.routes.binary_search_by(|r| r.kind.cmp(kind))
    }

    /// `envelope`'s route, if its kind has one.
    fn route_of(&self, envelope: &Envelope) -> Option<&Route> {
        let at = self.find(envelope.kind()?).ok()?;
        self.routes.get(at)
    }

    /// Whether any route has rules of its own (else the pool needs no kind rules).
    pub(crate) fn has_policies(&self) -> bool {
        self.routes.iter().any(|r| r.policy != KindPolicy::new())
    }

    /// `envelope`'s item type in the pool's stats: its kind if routed, else `"unknown"`.
    pub(crate) fn type_of(&self, envelope: &Envelope) -> &'static str {
        self.route_of(envelope).map_or(UNKNOWN, |r| r.kind)
    }

    /// `envelope`'s kind rules: its route's, else the queue's.
    pub(crate) fn policy_of(&self, envelope: &Envelope) -> KindPolicy {
        self.route_of(envelope)
            .map_or(KindPolicy::new(), |r| r.policy)
    }

    /// Runs `job` by its kind's handler, or rejects it (unknown kind, no envelope).
    pub(crate) fn dispatch(&self, job: Job<Envelope>) -> Running {
        if let Some(route) = self.route_of(&job.item) {
            return (route.run)(job);
        }
        match job.item.kind() {
            Some(kind) => rejected(format!("unknown job kind `{kind}`: no handler registered")),
            None => rejected(format!(
                "not a job envelope ({} bytes that do not start with a kind)",
                job.item.as_bytes().len()
            )),
        }
    }
}

/// The item type of items with no route.
const UNKNOWN: &str = "unknown";

/// A handling that fails at once, permanently: the item is dead-lettered with `error`.
fn rejected(error: String) -> Running {
    Box::pin(ready(Ok(Err(JobError::permanent(error)))))
}

impl fmt::Debug for Router {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.routes.iter().map(|r| (r.kind, r.policy)))
            .finish()
    }
}

/// Why [`Router::try_route_with`] refused a route.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RouteError {
    /// The kind has a route already.
    Duplicate {
        /// The kind.
        kind: &'static str,
    },
    /// The kind's policy is invalid.
    Policy {
        /// The kind.
        kind: &'static str,
        /// What is wrong with it.
        error: ConfigError,
    },
}

impl fmt::Display for RouteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RouteError::Duplicate { kind } => {
                write!(f, "job kind `{kind}` has a route already")
            }
            RouteError::Policy { kind, error } => {
                write!(f, "job kind `{kind}` has an invalid policy: {error}")
            }
        }
    }
}

impl std::error::Error for RouteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RouteError::Policy { error, .. } => Some(error),
            RouteError::Duplicate { .. } => None,
        }
    }
}
