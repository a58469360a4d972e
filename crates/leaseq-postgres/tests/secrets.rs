//! A connection string's password never shows: not in an [`OpenError`] (its `Display`, its
//! `Debug`, its sources), not in the `Debug` of the options, the store or the queue, not in
//! the store's last error. Every `OpenError` variant that a connection string can reach is
//! made here from strings carrying [`SECRET`], in both libpq forms; the TLS refusals
//! (`UntrustedCertificate`, `NameMismatch`, `ServerWithoutTls`) are checked the same way in
//! `tests/tls.rs`, whose strings carry the password too, and the server's refusals
//! (`AuthenticationFailed`, `DatabaseMissing`) in `tests/error_causes.rs`.

use leaseq_test_kit::pg as common;

use std::time::Duration;

use leaseq_async::Config;
use leaseq_postgres::{BytesCodec, OpenError, Options};

/// The password in every string of this file.
const SECRET: &str = "hunter2-s3cret";

/// Panics if any rendering of `e` (Display, Debug, each source) holds the password.
fn assert_hidden(e: &OpenError) {
    let mut texts = vec![e.to_string(), format!("{e:?}"), format!("{e:#?}")];
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        texts.push(s.to_string());
        texts.push(format!("{s:?}"));
        source = s.source();
    }
    for t in texts {
        assert!(!t.contains(SECRET), "the password shows in {t:?}");
        assert!(
            !t.contains("hunter2"),
            "part of the password shows in {t:?}"
        );
    }
}

async fn try_open(url: &str, queue: &str, config: Config, options: Options) -> OpenError {
    match common::try_open(url, queue.to_string(), config, BytesCodec, options).await {
        Ok(_) => panic!("{url:?} opened"),
        Err(e) => e,
    }
}

#[test]
fn no_open_error_shows_the_password() {
    let rt = common::runtime();
    let kv = format!("host=127.0.0.1 port=1 user=u password={SECRET} dbname=d");
    let url = format!("postgresql://u:{SECRET}@127.0.0.1:1/d");
    let config = || Config::new(Duration::from_secs(5));
    let quick = || Options::new().connect_timeout(Duration::from_millis(500));
    type Case = (String, fn(&OpenError) -> bool);
    let cases: Vec<Case> = vec![
        // Syntax (our reader): a quote left open right after the password.
        (format!("{kv} application_name='x"), bad_string),
        (format!("password='{SECRET}"), bad_string),
        (format!("{kv} sslmode=verify-{SECRET}"), bad_string),
        (format!("{url}?sslmode={SECRET}"), bad_string),
        // tokio-postgres's parser: an unknown key (named in the error, to show a misspelt
        // one: keys are never secret), a bad value, a bad URL.
        (format!("{kv} sslmdoe=1"), bad_url),
        (format!("{url}?sslmdoe=1"), bad_url),
        (format!("{kv} port={SECRET}"), bad_url),
        (format!("postgresql://u:{SECRET}@[::1/d"), bad_url),
        // TLS settings that cannot be used.
        (
            format!("{kv} sslmode=verify-full sslrootcert=/nonexistent/ca.pem"),
            tls,
        ),
        (format!("{kv} sslmode=require sslcert=/tmp/c.pem"), tls),
        // Nobody listens on port 1.
        (kv.clone(), no_server),
        (url.clone(), no_server),
    ];
    rt.block_on(async {
        for (s, expected) in &cases {
            let e = try_open(s, "q", config(), quick()).await;
            assert!(expected(&e), "{s:?}: unexpected {e:?}");
            assert_hidden(&e);
        }
        // The checks made before connecting.
        let e = try_open(&kv, "", config(), quick()).await;
        assert!(matches!(e, OpenError::InvalidName(_)));
        assert_hidden(&e);
        let e = try_open(&kv, "q", Config::new(Duration::ZERO), quick()).await;
        assert!(matches!(e, OpenError::Config(_)), "{e:?}");
        assert_hidden(&e);
    });
    // Outside a runtime.
    let e = futures_executor(try_open(&kv, "q", config(), quick()));
    assert!(matches!(e, OpenError::NoRuntime));
    assert_hidden(&e);
}

#[test]
fn debug_of_options_store_and_queue_hides_the_password() {
    let Some(url) = common::server() else { return };
    // The test server trusts 127.0.0.1: the password is sent and ignored.
    let url = format!("{url} password={SECRET}");
    common::runtime().block_on(async {
        let options = common::options();
        let q = common::open_bytes(
            &url,
            common::unique("secrets"),
            Config::new(Duration::from_secs(5)),
            options.clone(),
        )
        .await;
        q.push(vec![1]).await.expect("push");
        for text in [
            format!("{options:?}"),
            format!("{:?}", q.store()),
            format!("{q:?}"),
            format!("{:?}", q.store().last_error()),
        ] {
            assert!(!text.contains(SECRET), "{text}");
        }
        q.close().await.expect("close");
    });
}

/// The refusals the cases expect, each a kind of [`OpenError`].
fn bad_string(e: &OpenError) -> bool {
    matches!(e, OpenError::BadConnectionString(_))
}
fn bad_url(e: &OpenError) -> bool {
    matches!(e, OpenError::BadUrl(_))
}
fn tls(e: &OpenError) -> bool {
    matches!(e, OpenError::Tls(_))
}
fn no_server(e: &OpenError) -> bool {
    matches!(e, OpenError::Unreachable { .. })
}

/// Runs `f` to completion on this thread, outside any tokio runtime.
fn futures_executor<F: std::future::Future>(f: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let std::task::Poll::Ready(out) = f.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}
