//! `leaseq web sqlite FILE` / `leaseq web postgres URL`: the dashboard of `leaseq-web`
//! (with its actions unless `--read-only`; on a SQLite file each refused while another
//! process owns it), served
//! until the process is stopped. Credentials come from the
//! environment (never from an argument, which `ps` shows): LEASEQ_WEB_TOKEN (a bearer
//! token) or `--user` with LEASEQ_WEB_PASSWORD (basic auth).

use leaseq_postgres::PgInspector;
use leaseq_sqlite::FileView;
use leaseq_web::{Auth, Dashboard, Operator, PgOperator, SqliteOperator};

use crate::args::{Serve, WebStore};
use crate::error::{chain, failed, CliError};

/// Serves the dashboard of `store`.
pub(crate) async fn run(store: WebStore) -> Result<(), CliError> {
    match store {
        WebStore::Sqlite { file, serve } => {
            let view = FileView::open(&file)
                .map_err(|e| failed(format!("{}: {}", file.display(), chain(&e))))?;
            let op = if serve.read_only {
                SqliteOperator::new(view)
            } else {
                SqliteOperator::with_actions(view)
            };
            self::serve(op, &serve).await
        }
        WebStore::Postgres { url, schema, serve } => {
            let inspector = PgInspector::connect(&url, &schema)
                .await
                .map_err(|e| failed(format!("postgres: {}", chain(&e))))?;
            if !inspector.schema_exists() {
                return Err(failed(format!(
                    "postgres: no leaseq schema {schema:?} in this database (--schema names it)"
                )));
            }
            let op = if serve.read_only {
                PgOperator::new(inspector)
            } else {
                PgOperator::with_actions(inspector, url.as_str(), schema.as_str())
            };
            self::serve(op, &serve).await
        }
    }
}

/// The credentials the environment and `--user` give (none: neither).
fn auth(serve: &Serve) -> Result<Option<Auth>, CliError> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    match (&serve.user, var("LEASEQ_WEB_TOKEN")) {
        (Some(_), Some(_)) => Err(CliError::Usage(
            "both LEASEQ_WEB_TOKEN and --user are set: choose a bearer token or basic auth".into(),
        )),
        (None, Some(token)) => Ok(Some(Auth::Bearer(token))),
        (Some(user), None) => match var("LEASEQ_WEB_PASSWORD") {
            Some(password) => Ok(Some(Auth::Basic {
                user: user.clone(),
                password,
            })),
            None => Err(CliError::Usage(
                "--user needs its password in the environment variable LEASEQ_WEB_PASSWORD".into(),
            )),
        },
        (None, None) => Ok(None),
    }
}

async fn serve<O: Operator>(op: O, serve: &Serve) -> Result<(), CliError> {
    let auth = auth(serve)?;
    if auth.is_none() && !serve.addr.ip().is_loopback() {
        return Err(CliError::Usage(format!(
            "{} is not a loopback address: set LEASEQ_WEB_TOKEN (a bearer token) or --user \
             with LEASEQ_WEB_PASSWORD (basic auth) to serve it",
            serve.addr
        )));
    }
    let mut dashboard = Dashboard::new(op);
    if serve.read_only {
        dashboard = dashboard.read_only();
    }
    if let Some(auth) = auth {
        dashboard = dashboard.auth(auth);
    }
    let listener = tokio::net::TcpListener::bind(serve.addr)
        .await
        .map_err(|e| failed(format!("listening on {}: {e}", serve.addr)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| failed(format!("listening on {}: {e}", serve.addr)))?;
    eprintln!("leaseq: dashboard on http://{addr}/ (stop with Ctrl-C)");
    dashboard
        .serve(listener)
        .await
        .map_err(|e| failed(chain(&e)))
}
