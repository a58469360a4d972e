//! A connection that failed, told apart for the operator as a typed [`OpenError`]: a TLS
//! failure by its kind (`tls.rs`); the server's refusal of the login (SQLSTATE `28P01`,
//! `28000`) or of the database (`3D000`); no server reached (an I/O error under
//! `tokio-postgres`'s: refused, unknown host, timed out); anything else `Connect`. Each
//! keeps `tokio-postgres`'s error as its source, and names only the user, the database and
//! the hosts and ports of the connection string, never its password.

use deadpool_postgres::PoolError;
use tokio_postgres::config::Host;
use tokio_postgres::error::SqlState;
use tokio_postgres::Config;

use crate::error::{Because, OpenError};

/// The typed error for `e`, met connecting with `config`.
pub(crate) fn connect_error(e: tokio_postgres::Error, config: &Config) -> OpenError {
    if let Some(tls) = crate::tls::tls_failure(&e) {
        return tls;
    }
    match e.code() {
        Some(c) if *c == SqlState::INVALID_PASSWORD => auth_failed(e, config),
        Some(c) if *c == SqlState::INVALID_AUTHORIZATION_SPECIFICATION => auth_failed(e, config),
        Some(c) if *c == SqlState::INVALID_CATALOG_NAME => OpenError::DatabaseMissing {
            database: config
                .get_dbname()
                .or(config.get_user())
                .unwrap_or_default()
                .to_string(),
            source: e,
        },
        Some(_) => OpenError::Connect(Box::new(e)),
        None if io_under(&e) => OpenError::Unreachable {
            server: servers(config),
            source: e,
        },
        None => OpenError::Connect(Box::new(e)),
    }
}

/// The typed error for a connection the pool could not make: the connection's own error
/// when it has one, else the pool's (none is expected: the pool has no timeouts or hooks
/// and is open).
pub(crate) fn pool_error(e: PoolError, config: &Config) -> OpenError {
    match e {
        PoolError::Backend(e) => connect_error(e, config),
        other => OpenError::Connect(Box::new(Because {
            what: "the connection pool failed",
            cause: Box::new(other),
        })),
    }
}

fn auth_failed(e: tokio_postgres::Error, config: &Config) -> OpenError {
    OpenError::AuthenticationFailed {
        user: config.get_user().unwrap_or_default().to_string(),
        source: e,
    }
}

/// Whether an I/O error is among `e`'s causes (connecting, or the connection lost before
/// the session began).
fn io_under(e: &tokio_postgres::Error) -> bool {
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        if c.is::<std::io::Error>() {
            return true;
        }
        cause = c.source();
    }
    false
}

/// The hosts and ports of `config`, in words: `db1:5432, db2:5433`.
fn servers(config: &Config) -> String {
    let ports = config.get_ports();
    let port = |i: usize| ports.get(i).or(ports.first()).copied().unwrap_or(5432);
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| match host {
            Host::Tcp(name) => format!("{name}:{}", port(i)),
            #[cfg(unix)]
            Host::Unix(dir) => format!("{} (port {})", dir.display(), port(i)),
        })
        .collect();
    if hosts.is_empty() {
        let addrs: Vec<String> = config
            .get_hostaddrs()
            .iter()
            .enumerate()
            .map(|(i, a)| format!("{a}:{}", port(i)))
            .collect();
        return addrs.join(", ");
    }
    hosts.join(", ")
}
