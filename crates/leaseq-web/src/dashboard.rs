//! [`Dashboard`]: the routes of the pages over an [`Operator`], as an axum `Router` to
//! mount, or served on a listener of its own.

use std::fmt;
use std::io;
use std::sync::Arc;

use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::Router;
use leaseq_async::{Pool, PoolWatch, Runtime, Store};
use tokio::net::TcpListener;

use crate::auth::{loopback_host, require, secure_headers, Auth};
use crate::layout::App;
use crate::operator::Operator;
use crate::pages;

/// The dashboard's stylesheet, in the binary.
const STYLE: &str = include_str!("style.css");

/// Why [`Dashboard::serve`] did not serve.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServeError {
    /// The listener is on an address other than loopback and no [`Auth`] was given.
    AuthRequired(std::net::SocketAddr),
    /// The listener's address could not be read, or serving failed.
    Io(io::Error),
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServeError::AuthRequired(addr) => write!(
                f,
                "{addr} is not a loopback address: the dashboard serves it only with credentials (a bearer token or basic auth)"
            ),
            ServeError::Io(e) => write!(f, "serving the dashboard: {e}"),
        }
    }
}

impl std::error::Error for ServeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServeError::Io(e) => Some(e),
            ServeError::AuthRequired(_) => None,
        }
    }
}

/// The dashboard over an [`Operator`]: [`router`](Self::router) to mount it in an axum
/// app, [`serve`](Self::serve) to run it alone.
///
/// ```no_run
/// # async fn run(op: leaseq_web::SqliteOperator) -> Result<(), Box<dyn std::error::Error>> {
/// use leaseq_web::{Auth, Dashboard};
/// // Mounted under /admin of the service's own app:
/// let app: axum::Router = axum::Router::new()
///     .nest("/admin", Dashboard::new(op.clone()).base_path("/admin").router());
/// // Or alone, on an address other than loopback: with credentials only.
/// let listener = tokio::net::TcpListener::bind("0.0.0.0:8080").await?;
/// Dashboard::new(op)
///     .auth(Auth::Bearer(std::env::var("DASHBOARD_TOKEN")?))
///     .serve(listener)
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Dashboard<O> {
    op: O,
    base: String,
    auth: Option<Auth>,
    read_only: bool,
    pools: crate::pools::Pools,
}

impl<O: Operator> Dashboard<O> {
    /// The dashboard of `op`, at the root path, without credentials.
    pub fn new(op: O) -> Dashboard<O> {
        Dashboard {
            op,
            base: String::new(),
            auth: None,
            read_only: false,
            pools: crate::pools::Pools::default(),
        }
    }

    /// The path the router is nested at (`"/admin"`), which every link starts with; a
    /// trailing `/` is dropped.
    pub fn base_path(mut self, base: impl Into<String>) -> Dashboard<O> {
        let base = base.into();
        self.base = base.trim_end_matches('/').to_string();
        self
    }

    /// Requires these credentials on every request.
    pub fn auth(mut self, auth: Auth) -> Dashboard<O> {
        self.auth = Some(auth);
        self
    }

    /// Read-only mode: no action shown, every POST refused (403), whatever the operator
    /// can do.
    pub fn read_only(mut self) -> Dashboard<O> {
        self.read_only = true;
        self
    }

    /// Shows `pool` (a pool of this process) on the workers page, under `name`: its busy
    /// workers, the items they hold and for how long, the workers its watchdog reported
    /// stuck, the timeout its advisor suggests per item type (read through
    /// [`Pool::watch`](leaseq_async::Pool::watch) at each page load; the pool's own shutdown
    /// stays the service's). Without a pool the page says it needs one.
    ///
    /// ```no_run
    /// # async fn run(op: leaseq_web::SqliteOperator, queue: leaseq_tokio::LeaseQueue<Vec<u8>>) {
    /// use std::time::Duration;
    /// let pool = leaseq_tokio::Pool::builder(queue)
    ///     .workers(4)
    ///     .watchdog(leaseq_async::Watchdog::default())
    ///     .spawn(|_job| async { Ok(()) });
    /// let app: axum::Router = axum::Router::new().nest(
    ///     "/admin",
    ///     leaseq_web::Dashboard::new(op)
    ///         .base_path("/admin")
    ///         .with_pool("mailer", &pool)
    ///         .router(),
    /// );
    /// // ... serve `app`; at the end, the pool is the service's to shut down:
    /// pool.shutdown(Duration::from_secs(10)).await;
    /// # }
    /// ```
    pub fn with_pool<T, R, S>(
        mut self,
        name: impl Into<String>,
        pool: &Pool<T, R, S>,
    ) -> Dashboard<O>
    where
        T: Clone + Send + Sync + 'static,
        R: Runtime,
        S: Store<T, Runtime = R>,
        PoolWatch<T, R, S>: Send + Sync + 'static,
    {
        self.pools.add(name.into(), pool.watch());
        self
    }

    /// The routes: `/` (every queue), `/queues/{queue}` (its live items),
    /// `/queues/{queue}/dead`, `/queues/{queue}/schedules`, `/queues/{queue}/finished` (where
    /// the store keeps a record of finished jobs), `/queues/{queue}/workflows`,
    /// `/queues/{queue}/workflows/{id}` and `/queues/{queue}/batches` (where the operator
    /// offers workflows), `/queues/{queue}/items/{id}`, `/workers` (the
    /// pools given with [`with_pool`](Self::with_pool)),
    /// `/metrics` (Prometheus text format) and `/style.css`; where the operator can act and not read-only, the actions: POST
    /// `/queues/{queue}/items/{id}/redrive`, GET (confirm) and POST
    /// `/queues/{queue}/redrive-dead`, `/queues/{queue}/purge-dead` and
    /// `/queues/{queue}/cancel`, POST
    /// `/queues/{queue}/pause` and `/queues/{queue}/resume`,
    /// `/queues/{queue}/workflows/{id}/cancel` and `/queues/{queue}/workflows/{id}/retry`,
    /// each POST with the form's CSRF token.
    pub fn router(self) -> Router {
        let csrf = if self.read_only {
            None
        } else {
            crate::csrf::new_token()
        };
        let app = Arc::new(App {
            op: self.op,
            base: self.base,
            csrf,
            pools: self.pools,
            charts: crate::throughput_cache::Charts::default(),
        });
        let not_found = Arc::clone(&app);
        let router = Router::new()
            .route("/", get(pages::overview::overview::<O>))
            .route("/workers", get(pages::workers::workers::<O>))
            .route("/metrics", get(crate::metrics::metrics::<O>))
            .route("/queues/{queue}", get(pages::queue::queue::<O>))
            .route("/queues/{queue}/dead", get(pages::queue::dead::<O>))
            .route(
                "/queues/{queue}/schedules",
                get(pages::schedules::schedules::<O>),
            )
            .route(
                "/queues/{queue}/finished",
                get(pages::finished::finished::<O>),
            )
            .route("/queues/{queue}/items/{id}", get(pages::item::item::<O>))
            .route(
                "/queues/{queue}/workflows",
                get(pages::workflows::workflows::<O>),
            )
            .route(
                "/queues/{queue}/workflows/{id}",
                get(pages::workflows::workflow::<O>),
            )
            .route(
                "/queues/{queue}/workflows/{id}/cancel",
                post(pages::workflow_actions::cancel::<O>),
            )
            .route(
                "/queues/{queue}/workflows/{id}/retry",
                post(pages::workflow_actions::retry::<O>),
            )
            .route(
                "/queues/{queue}/batches",
                get(pages::workflows::batches::<O>),
            )
            .route(
                "/queues/{queue}/items/{id}/redrive",
                post(pages::actions::redrive::<O>),
            )
            .route("/queues/{queue}/pause", post(pages::pause::pause::<O>))
            .route("/queues/{queue}/resume", post(pages::pause::resume::<O>))
            .route(
                "/queues/{queue}/purge-dead",
                get(pages::bulk::purge_confirm::<O>).post(pages::bulk::purge::<O>),
            )
            .route(
                "/queues/{queue}/redrive-dead",
                get(pages::bulk::redrive_confirm::<O>).post(pages::bulk::redrive::<O>),
            )
            .route(
                "/queues/{queue}/cancel",
                get(pages::cancel::cancel_confirm::<O>).post(pages::cancel::cancel::<O>),
            )
            .with_state(app)
            .route(
                "/style.css",
                get(|| async { ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE) }),
            )
            .fallback(move || async move {
                not_found
                    .message(StatusCode::NOT_FOUND, "no such page")
                    .into_response()
            });
        let router = match self.auth {
            Some(auth) => router.layer(axum::middleware::from_fn_with_state(
                Arc::new(auth),
                require,
            )),
            None => router,
        };
        router.layer(axum::middleware::map_response(secure_headers))
    }

    /// Serves the dashboard on `listener` until the process ends. Refused
    /// ([`ServeError::AuthRequired`]) when the listener is not on a loopback address and no
    /// [`auth`](Self::auth) was given; without credentials, it also answers only requests
    /// for a loopback host name (`localhost`, `127.0.0.1`, `[::1]`; 421 otherwise), so that
    /// another site's page cannot reach it through a name made to resolve to loopback.
    pub async fn serve(self, listener: TcpListener) -> Result<(), ServeError> {
        let addr = listener.local_addr().map_err(ServeError::Io)?;
        let open = self.auth.is_none();
        if open && !addr.ip().is_loopback() {
            return Err(ServeError::AuthRequired(addr));
        }
        let mut router = self.router();
        if open {
            // Without credentials, loopback host names only (DNS rebinding).
            router = router.layer(axum::middleware::from_fn(loopback_host));
        }
        axum::serve(listener, router).await.map_err(ServeError::Io)
    }
}
