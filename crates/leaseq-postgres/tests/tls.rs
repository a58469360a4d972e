//! TLS against a real server: the store over `verify-full` (every connection it makes
//! encrypted), and each refusal typed: an untrusted certificate, a name mismatch, a server
//! without TLS.
//!
//! `.ci/run`'s TLS step turns TLS on at the machine's server with a CA and a certificate
//! for `localhost` and `127.0.0.1` made for the run, and sets [`CA_VAR`] (that CA) and
//! [`WRONG_CA_VAR`] (another CA); then it turns `ssl` off and runs
//! `require_against_a_server_without_tls` with [`OFF_VAR`]`=1`. Without those variables
//! the tests say SKIPPED; with `LEASEQ_PG_REQUIRED=1` a variable set but unusable (a file
//! missing, a server that does not answer as it should) fails them.

use leaseq_test_kit::pg as common;

use std::future::Future;
use std::time::Duration;

use leaseq_async::Config;
use leaseq_postgres::{BytesCodec, OpenError, PgQueue};

/// The CA that signed the server's certificate (a PEM file).
const CA_VAR: &str = "LEASEQ_PG_TLS_CA";
/// A CA that did not.
const WRONG_CA_VAR: &str = "LEASEQ_PG_TLS_WRONG_CA";
/// Set to `1` while the server's `ssl` is off.
const OFF_VAR: &str = "LEASEQ_PG_TLS_OFF";

/// The plain connection string and the value of `var` (a file that exists), or `None`
/// after a loud SKIPPED note.
fn env(var: &str) -> Option<(String, String)> {
    let required = std::env::var(common::REQUIRED_VAR).as_deref() == Ok("1");
    let value = match std::env::var(var) {
        Ok(v) => v,
        Err(_) => {
            eprintln!("\n!!! SKIPPED: the TLS test needs {var} (set by .ci/run's TLS step).\n");
            return None;
        }
    };
    if var != OFF_VAR && std::env::var(OFF_VAR).is_ok() {
        eprintln!("\n!!! SKIPPED: {OFF_VAR} is set: the server's ssl is off now.\n");
        return None;
    }
    if var != OFF_VAR {
        assert!(
            !required || std::path::Path::new(&value).is_file(),
            "{var}={value:?} is not a file"
        );
        if !std::path::Path::new(&value).is_file() {
            eprintln!("\n!!! SKIPPED: {var}={value:?} is not a file.\n");
            return None;
        }
    }
    let url = common::server()?;
    Some((common::plain(&url), value))
}

/// Runs `test` on a runtime with what [`env`] gives for `var`; skips as it says.
fn with_env<F: Future<Output = ()>>(var: &str, test: impl FnOnce(String, String) -> F) {
    if let Some((plain, value)) = env(var) {
        common::runtime().block_on(test(plain, value));
    }
}

/// `url` connecting to the same address under the host name `name` (the name TLS checks).
fn named(url: &str, name: &str) -> String {
    url.split_whitespace()
        .map(|kv| match kv.strip_prefix("host=") {
            Some(addr) => format!("host={name} hostaddr={addr}"),
            None => kv.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Opens a queue on `url` with a password added (the server trusts the tests' address:
/// it is ignored), and checks that no refusal shows it (`tests/secrets.rs` does the rest).
async fn try_open(url: &str) -> Result<PgQueue<Vec<u8>>, OpenError> {
    const SECRET: &str = "hunter2-s3cret";
    leaseq_tokio::LeaseQueue::builder(Config::new(Duration::from_secs(5)))
        .name(common::unique("tls"))
        .codec(BytesCodec)
        .open(
            leaseq_postgres::Postgres::url(format!("{url} password={SECRET}"))
                .options(common::options().connect_timeout(Duration::from_secs(5))),
        )
        .await
        .inspect_err(|e| {
            for text in [e.to_string(), format!("{e:?}")] {
                assert!(!text.contains(SECRET), "the password shows in {text}");
            }
        })
}

/// Whether every connection named `app` on the server is encrypted, and how many there are.
async fn encrypted(plain: &str, app: &str) -> (bool, i64) {
    let sql = common::sql(plain).await;
    let row = sql
        .query_one(
            "SELECT coalesce(bool_and(s.ssl), false), count(*) FROM pg_stat_activity a \
             JOIN pg_stat_ssl s USING (pid) WHERE a.application_name = $1",
            &[&app],
        )
        .await
        .expect("pg_stat_ssl");
    (row.get(0), row.get(1))
}

#[test]
fn verify_full_push_receive_ack_every_connection_encrypted() {
    with_env(CA_VAR, |plain, ca| async move {
        let app = common::unique("tls_app").replace('-', "_");
        let url = format!("{plain} application_name={app} sslmode=verify-full sslrootcert={ca}");
        let q = try_open(&url).await.expect("open over verify-full");
        for i in 0..20u8 {
            q.push(vec![i]).await.expect("push");
        }
        for _ in 0..20 {
            common::receive(&q).await.ack().await.expect("ack");
        }
        // The pool's connections and the listener's (given a moment to connect).
        let mut seen = (false, 0);
        for _ in 0..50 {
            seen = encrypted(&plain, &app).await;
            if seen.1 >= 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(seen.0, "a connection of the store is not encrypted");
        assert!(
            seen.1 >= 2,
            "expected the pool's and the listener's connections"
        );
        q.close().await.expect("close");
    });
}

#[test]
fn disable_is_plain_text() {
    with_env(CA_VAR, |plain, _| async move {
        let app = common::unique("tls_plain").replace('-', "_");
        let q = try_open(&format!("{plain} application_name={app} sslmode=disable"))
            .await
            .expect("open");
        q.push(vec![1]).await.expect("push");
        let (all_tls, n) = encrypted(&plain, &app).await;
        assert!(n >= 1 && !all_tls);
        q.close().await.expect("close");
    });
}

#[test]
fn another_ca_is_an_untrusted_certificate() {
    with_env(WRONG_CA_VAR, |plain, wrong| async move {
        for mode in ["verify-full", "verify-ca", "require"] {
            // `require` with a root certificate checks the chain, as libpq does.
            let url = format!("{plain} sslmode={mode} sslrootcert={wrong}");
            match try_open(&url).await {
                Err(OpenError::UntrustedCertificate(_)) => {}
                other => panic!(
                    "{mode}: expected UntrustedCertificate, got {:?}",
                    other.err()
                ),
            }
        }
    });
}

#[test]
fn another_host_name_is_a_mismatch_under_verify_full_only() {
    with_env(CA_VAR, |plain, ca| async move {
        let other = named(&plain, "not-the-server.invalid");
        match try_open(&format!("{other} sslmode=verify-full sslrootcert={ca}")).await {
            Err(OpenError::NameMismatch(why)) => assert!(!why.is_empty()),
            other => panic!("expected NameMismatch, got {:?}", other.err()),
        }
        // verify-ca checks the chain only; require checks nothing (no sslrootcert).
        for tail in [
            format!("sslmode=verify-ca sslrootcert={ca}"),
            "sslmode=require".into(),
        ] {
            let q = try_open(&format!("{other} {tail}"))
                .await
                .unwrap_or_else(|e| panic!("{tail}: {e}"));
            q.push(vec![7]).await.expect("push");
            q.close().await.expect("close");
        }
        // The certificate's own names pass verify-full.
        let q = try_open(&format!(
            "{} sslmode=verify-full sslrootcert={ca}",
            named(&plain, "localhost")
        ))
        .await
        .expect("localhost");
        q.close().await.expect("close");
    });
}

#[test]
fn require_against_a_server_without_tls() {
    with_env(OFF_VAR, |plain, _| async move {
        // The CA too, if given: the refusal must come from the server, not from missing roots.
        let roots = std::env::var(CA_VAR).map_or(String::new(), |ca| format!("sslrootcert={ca}"));
        for mode in ["require", "verify-ca", "verify-full"] {
            match try_open(&format!("{plain} sslmode={mode} {roots}")).await {
                Err(OpenError::ServerWithoutTls) => {}
                other => panic!("{mode}: expected ServerWithoutTls, got {:?}", other.err()),
            }
        }
        // prefer (the default) goes on in plain text.
        try_open(&plain)
            .await
            .expect("prefer")
            .close()
            .await
            .expect("close");
    });
}
