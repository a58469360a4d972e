//! The `leaseq` binary prints a refusal with its whole cause chain (issue 30, "Errors lose
//! their cause"): a refused port, a user and a database that do not exist (the Postgres
//! cases skip loudly without a server, fail with `LEASEQ_PG_REQUIRED=1`), and a SQLite file
//! in a directory that does not exist. Each exits 1 with one line that says what failed,
//! where, and what the server or the system said under it.

use std::path::PathBuf;
use std::process::Output;

const DEFAULT_URL: &str = "host=127.0.0.1 port=5432 user=postgres dbname=test";

/// The server's connection string, or `None` after a loud note (a failure with
/// `LEASEQ_PG_REQUIRED=1`).
fn server() -> Option<String> {
    let url = std::env::var("LEASEQ_PG_URL").unwrap_or_else(|_| DEFAULT_URL.to_string());
    let probe = leaseq(&["postgres", &url, "--schema", "leaseq_cli_probe", "queues"]);
    let err = String::from_utf8_lossy(&probe.stderr).to_string();
    if !err.contains("cannot connect") {
        return Some(url);
    }
    if std::env::var("LEASEQ_PG_REQUIRED").as_deref() == Ok("1") {
        panic!("LEASEQ_PG_REQUIRED=1 but PostgreSQL at {url:?} cannot be reached: {err}");
    }
    eprintln!(
        "\n!!! SKIPPED: PostgreSQL at {url:?} cannot be reached ({err}).\n\
         !!! Point LEASEQ_PG_URL at a server to run the CLI's Postgres tests.\n"
    );
    None
}

fn leaseq(args: &[&str]) -> Output {
    leaseq_test_kit::output::run(env!("CARGO_BIN_EXE_leaseq"), args)
}

/// Exit 1 and one line on stderr, which it returns.
fn failed(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(1), "stderr: {err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(o.stdout.is_empty(), "nothing on stdout");
    err
}

/// A name no role or database has.
fn nobody(prefix: &str) -> String {
    format!("{prefix}_{}", std::process::id())
}

#[test]
fn a_refused_port_says_where_and_why() {
    let url = "host=127.0.0.1 port=1 user=postgres dbname=test";
    let err = failed(&leaseq(&["postgres", url, "queues"]));
    assert!(
        err.starts_with(
            "leaseq: cannot connect to PostgreSQL: no server answers at 127.0.0.1:1 (check \
             the host, the port, and that the server runs and listens there): error \
             connecting to server: "
        ),
        "{err}"
    );
    assert!(err.contains("refused"), "the system's words: {err}");
    let err = failed(&leaseq(&["postgres", url, "purge", "jobs", "--yes"]));
    assert!(err.contains("no server answers at 127.0.0.1:1"), "{err}");
}

#[test]
fn a_user_that_does_not_exist_says_so() {
    let Some(url) = server() else { return };
    let user = nobody("leaseq_cli_no_such_user");
    let wrong = format!("{url} user={user}");
    let err = failed(&leaseq(&["postgres", &wrong, "queues"]));
    assert_eq!(
        err.trim_end(),
        format!(
            "leaseq: cannot connect to PostgreSQL: authentication failed for user \"{user}\": \
             db error: FATAL: role \"{user}\" does not exist"
        )
    );
    let err = failed(&leaseq(&["postgres", &wrong, "redrive", "jobs", "--all"]));
    assert!(
        err.contains(&format!("authentication failed for user \"{user}\"")),
        "{err}"
    );
}

#[test]
fn a_database_that_does_not_exist_says_so() {
    let Some(url) = server() else { return };
    let db = nobody("leaseq_cli_no_such_db");
    let wrong = format!("{url} dbname={db}");
    let err = failed(&leaseq(&["postgres", &wrong, "stats", "jobs"]));
    assert_eq!(
        err.trim_end(),
        format!(
            "leaseq: cannot connect to PostgreSQL: database \"{db}\" does not exist (create \
             it, or name another with dbname): db error: FATAL: database \"{db}\" does not \
             exist"
        )
    );
}

#[test]
fn a_sqlite_file_in_a_missing_directory_is_named() {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let dir: PathBuf = std::env::temp_dir().join(format!("leaseq-cli-nodir-{n}"));
    let file = dir.join("q.db");
    let path = file.to_str().unwrap();
    for args in [
        vec!["sqlite", path, "stats"],
        vec!["sqlite", path, "redrive", "--all"],
    ] {
        let err = failed(&leaseq(&args));
        assert!(
            err.starts_with(&format!(
                "leaseq: there is no queue file {path} (its directory {} does not exist): ",
                dir.display()
            )),
            "{err}"
        );
        assert!(err.contains("No such file or directory"), "{err}");
    }
    assert!(!dir.exists(), "nothing made");
}
