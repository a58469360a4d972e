//! A claimer that flow control holds back stays quiet until the flow claim's own look
//! again (issue 32: a limited fetcher knows when the next lease becomes eligible and does
//! not spin): a rate of one lease a minute, one item taken, a second waiting, and a receive
//! waiting for it while the store's requests to the server are counted through a loopback
//! proxy. Items visible now once made the claimer claim again at once (the soonest-item
//! probe answered "now"), two requests a round, hundreds a second.

use leaseq_test_kit::pg as common;

#[path = "faults/proxy.rs"]
mod proxy;

use std::num::NonZeroU32;
use std::sync::atomic::Ordering;
use std::time::Duration;

use leaseq_async::Config;
use leaseq_core::{LimitScope, Rate};
use leaseq_postgres::{BytesCodec, Postgres};

/// How long the held receive waits while the store's requests are counted.
const HELD: Duration = Duration::from_secs(1);

/// The most requests the store may send meanwhile: the held receive's one claim (and its
/// transaction's parts), with room for a background statement or two. A claimer that
/// claims again at once sends that many within milliseconds.
const QUIET: u64 = 8;

#[test]
fn a_rate_held_claimer_waits_for_the_next_eligible_lease_without_spinning() {
    common::with_server(|url| async move {
        let direct: tokio_postgres::Config = url.parse().expect("url");
        let proxy = proxy::Proxy::without_faults(&direct).await;
        let options = common::options()
            .poll_interval(Duration::from_secs(60))
            .rescue_every(Duration::from_secs(60));
        let q = leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(Config::new(Duration::from_secs(60)))
            .name(common::unique("held-quiet"))
            .codec(BytesCodec)
            .open(Postgres::config(proxy.config(&direct)).options(options))
            .await
            .expect("open");
        let rate = Rate::per(NonZeroU32::MIN, Duration::from_secs(60));
        q.set_rate(LimitScope::Queue, Some(rate))
            .await
            .expect("rate");
        q.push(b"a".to_vec()).await.expect("push");
        q.push(b"b".to_vec()).await.expect("push");
        let a = common::receive(&q).await;
        // The second waits for the rate's minute: a receive waits, and so does the store.
        let before = proxy.requests.load(Ordering::Relaxed);
        let got = q.receive_timeout(HELD).await;
        let during = proxy.requests.load(Ordering::Relaxed) - before;
        assert!(got.is_err(), "a second lease within the rate's minute");
        assert!(
            during <= QUIET,
            "{during} requests to the server while the rate held the only item for {HELD:?}"
        );
        a.ack().await.expect("ack");
    });
}
