//! The notification listener: one connection of its own per store, `LISTEN`ing on the
//! schema's channel; a notification naming this queue wakes the claimer. A hint only: the
//! claimer also polls, so a lost connection or a missed notification delays, never loses.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio_postgres::AsyncMessage;

use crate::tls::MakeRustlsConnect;

use crate::error::DbError;
use crate::store::Shared;

/// Listens until the store is gone, reconnecting after failures.
pub(crate) async fn run<T: Send + 'static>(
    shared: Arc<Shared<T>>,
    config: tokio_postgres::Config,
    tls: MakeRustlsConnect,
) {
    let mut backoff = Duration::from_millis(50);
    while !shared.is_stopped() {
        match listen_once(&shared, &config, &tls).await {
            Ok(()) => backoff = Duration::from_millis(50),
            Err(e) => shared.failed("listen", e),
        }
        // Whatever was missed meanwhile: look.
        shared.claim_wake.notify(usize::MAX);
        if shared.is_stopped() {
            return;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}

async fn listen_once<T>(
    shared: &Shared<T>,
    config: &tokio_postgres::Config,
    tls: &MakeRustlsConnect,
) -> Result<(), DbError> {
    let (client, mut connection) = config.connect(tls.clone()).await?;
    let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
    let statement = format!("LISTEN \"{}\"", shared.sql.channel);
    let listen = client.batch_execute(&statement);
    let mut listen = std::pin::pin!(listen);
    // Drive the connection until the LISTEN is done.
    loop {
        tokio::select! {
            r = &mut listen => { r?; break; }
            m = messages.next() => match m {
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(DbError::Db(e)),
                None => return Err(closed()),
            },
        }
    }
    loop {
        let stop = shared.driver_wake.listen();
        if shared.is_stopped() {
            return Ok(());
        }
        tokio::select! {
            m = messages.next() => match m {
                Some(Ok(AsyncMessage::Notification(n))) => {
                    if n.payload() == shared.queue {
                        shared.claim_wake.notify(usize::MAX);
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(DbError::Db(e)),
                None => return Err(closed()),
            },
            _ = stop => {}
        }
    }
}

/// The notification connection ended without an error.
fn closed() -> DbError {
    DbError::pool("the notification connection closed", "the server ended it")
}
