//! The notification listener: one connection of its own per store, `LISTEN`ing on the
//! schema's channel; a notification naming this queue wakes the claimer. A hint only: the
//! claimer also polls, so a lost connection or a missed notification delays, never loses.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio_postgres::AsyncMessage;

use crate::board::Board;
use crate::db::Db;
use crate::error::DbError;
use crate::life::Life;
use crate::tls::MakeRustlsConnect;

/// The listener task and the parts it uses: it rings the claimer ([`Board::wake`]) and
/// ends when the store stops ([`Life`]).
pub(crate) struct Listener<T: 'static> {
    pub(crate) db: Arc<Db<T>>,
    pub(crate) life: Arc<Life>,
    pub(crate) board: Arc<Board<T>>,
}

impl<T: Send + 'static> Listener<T> {
    /// Listens until the store is gone, reconnecting after failures.
    pub(crate) async fn run(self, config: tokio_postgres::Config, tls: MakeRustlsConnect) {
        let mut backoff = Duration::from_millis(50);
        while !self.life.is_stopped() {
            match self.listen_once(&config, &tls).await {
                Ok(()) => backoff = Duration::from_millis(50),
                Err(e) => self.db.failed("listen", e),
            }
            // Whatever was missed meanwhile: look.
            self.board.wake.notify(usize::MAX);
            if self.life.is_stopped() {
                return;
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(5));
        }
    }

    async fn listen_once(
        &self,
        config: &tokio_postgres::Config,
        tls: &MakeRustlsConnect,
    ) -> Result<(), DbError> {
        let (client, mut connection) = config.connect(tls.clone()).await?;
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        let statement = format!("LISTEN \"{}\"", self.db.sql.channel);
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
            let stop = self.life.listen();
            if self.life.is_stopped() {
                return Ok(());
            }
            tokio::select! {
                m = messages.next() => match m {
                    Some(Ok(AsyncMessage::Notification(n))) => {
                        if n.payload() == self.db.queue {
                            self.board.wake.notify(usize::MAX);
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
}

/// The notification connection ended without an error.
fn closed() -> DbError {
    DbError::pool("the notification connection closed", "the server ended it")
}
