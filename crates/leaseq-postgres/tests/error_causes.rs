//! Open and connect errors told apart, each with its cause (issue 30, "Errors lose their
//! cause"): a refused port (no server needed), a user that does not exist, a database that
//! does not exist, through an open and through `PgInspector`; each asserts the variant, the
//! `Display` (a sentence an operator acts on) and the `source()` chain down to the
//! `tokio-postgres` error and what is under it (the server's SQLSTATE, the I/O error). The
//! refused login never shows the password. An oversized push names `max_item_size`.

use leaseq_test_kit::pg as common;

use std::error::Error;
use std::time::Duration;

use leaseq_async::Config;
use leaseq_postgres::{BytesCodec, OpenError, Options, PgInspector, PgQueue};
use tokio_postgres::error::SqlState;

async fn open(url: &str, options: Options) -> Result<PgQueue<Vec<u8>>, OpenError> {
    common::try_open(
        url,
        common::unique("causes"),
        Config::new(Duration::from_secs(30)),
        BytesCodec,
        options,
    )
    .await
}

/// The error and its causes, `: ` between them (as the `leaseq` command line prints them).
fn chain(e: &dyn Error) -> String {
    let mut words = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        words = format!("{words}: {c}");
        cause = c.source();
    }
    words
}

/// The `tokio-postgres` error under `e`, and the SQLSTATE it carries.
fn pg_cause(e: &OpenError) -> (&tokio_postgres::Error, Option<&SqlState>) {
    let source = e.source().expect("a source");
    let pg = source
        .downcast_ref::<tokio_postgres::Error>()
        .expect("the source is tokio-postgres's error");
    (pg, pg.code())
}

/// A name no role or database has.
fn nobody(prefix: &str) -> String {
    format!("{prefix}_{}", std::process::id())
}

#[test]
fn a_refused_port_is_unreachable_with_the_io_error_under_it() {
    common::runtime().block_on(async {
        let url = "host=127.0.0.1 port=1 user=postgres dbname=test";
        let quick = || common::options().connect_timeout(Duration::from_secs(5));
        let e = open(url, quick()).await.map(drop).unwrap_err();
        match &e {
            OpenError::Unreachable { server, .. } => assert_eq!(server, "127.0.0.1:1"),
            other => panic!("expected Unreachable, got {other:?}"),
        }
        assert_eq!(
            e.to_string(),
            "cannot connect to PostgreSQL: no server answers at 127.0.0.1:1 (check the host, \
             the port, and that the server runs and listens there)"
        );
        let (pg, code) = pg_cause(&e);
        assert_eq!(code, None);
        let io = pg
            .source()
            .and_then(|s| s.downcast_ref::<std::io::Error>())
            .expect("an io::Error under tokio-postgres's");
        assert_eq!(io.kind(), std::io::ErrorKind::ConnectionRefused, "{io}");
        assert!(chain(&e).contains("refused"), "{}", chain(&e));

        // The inspector (the command line's reads) says the same.
        let e = PgInspector::connect(url, "leaseq").await.unwrap_err();
        assert!(matches!(e, OpenError::Unreachable { .. }), "{e:?}");
        assert!(e.source().is_some());
    });
}

#[test]
fn a_user_that_does_not_exist_is_an_authentication_failure() {
    let Some(url) = common::server() else { return };
    let user = nobody("leaseq_no_such_user");
    let wrong = format!("{url} user={user}");
    common::runtime().block_on(async {
        let e = open(&wrong, common::options()).await.map(drop).unwrap_err();
        match &e {
            OpenError::AuthenticationFailed { user: u, .. } => assert_eq!(u, &user),
            other => panic!("expected AuthenticationFailed, got {other:?}"),
        }
        assert_eq!(
            e.to_string(),
            format!("cannot connect to PostgreSQL: authentication failed for user \"{user}\"")
        );
        let (_, code) = pg_cause(&e);
        assert_eq!(code, Some(&SqlState::INVALID_AUTHORIZATION_SPECIFICATION));
        let words = chain(&e);
        assert!(
            words.contains(&format!("role \"{user}\" does not exist")),
            "{words}"
        );

        let e = PgInspector::connect(&wrong, "leaseq").await.unwrap_err();
        assert!(
            matches!(&e, OpenError::AuthenticationFailed { user: u, .. } if *u == user),
            "{e:?}"
        );
        assert!(e.source().is_some());
    });
}

#[test]
fn a_database_that_does_not_exist_is_named() {
    let Some(url) = common::server() else { return };
    let db = nobody("leaseq_no_such_db");
    let wrong = format!("{url} dbname={db}");
    common::runtime().block_on(async {
        let e = open(&wrong, common::options()).await.map(drop).unwrap_err();
        match &e {
            OpenError::DatabaseMissing { database, .. } => assert_eq!(database, &db),
            other => panic!("expected DatabaseMissing, got {other:?}"),
        }
        assert_eq!(
            e.to_string(),
            format!(
                "cannot connect to PostgreSQL: database \"{db}\" does not exist (create it, or \
                 name another with dbname)"
            )
        );
        let (_, code) = pg_cause(&e);
        assert_eq!(code, Some(&SqlState::INVALID_CATALOG_NAME));
        let words = chain(&e);
        assert!(
            words.contains(&format!("database \"{db}\" does not exist")),
            "{words}"
        );

        let e = PgInspector::connect(&wrong, "leaseq").await.unwrap_err();
        assert!(matches!(e, OpenError::DatabaseMissing { .. }), "{e:?}");
    });
}

#[test]
fn a_refused_login_or_database_never_shows_the_password() {
    let Some(url) = common::server() else { return };
    const SECRET: &str = "hunter2-s3cret";
    let user = format!(
        "{url} user={} password={SECRET}",
        nobody("leaseq_no_such_user")
    );
    let db = format!(
        "{url} dbname={} password={SECRET}",
        nobody("leaseq_no_such_db")
    );
    common::runtime().block_on(async {
        for (wrong, expected) in [(user, "AuthenticationFailed"), (db, "DatabaseMissing")] {
            let e = open(&wrong, common::options()).await.map(drop).unwrap_err();
            assert!(format!("{e:?}").starts_with(expected), "{e:?}");
            let mut texts = vec![chain(&e), format!("{e:?}"), format!("{e:#?}")];
            let mut cause = e.source();
            while let Some(c) = cause {
                texts.push(format!("{c:?}"));
                cause = c.source();
            }
            for t in texts {
                assert!(!t.contains("hunter2"), "the password shows in {t:?}");
            }
        }
    });
}

#[test]
fn an_oversized_push_names_the_option() {
    common::with_server(|url| async move {
        let q = open(&url, common::options().max_item_size(100))
            .await
            .expect("open");
        let e = q.push(vec![0u8; 101]).await.unwrap_err();
        leaseq_test_kit::steps::assert_too_large_101_of_100(&e);
        q.close().await.expect("close");
    });
}
