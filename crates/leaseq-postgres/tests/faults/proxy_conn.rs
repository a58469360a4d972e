//! One proxied connection of [`Proxy`](super::Proxy): requests read as PostgreSQL protocol
//! messages, each given its fault, replies forwarded or swallowed.

use super::*;

/// One proxied connection.
pub(super) struct Conn {
    /// Requests forwarded minus `ReadyForQuery` replies seen: replies still due.
    due: AtomicUsize,
    /// Set by a lost reply: the server's bytes are no longer forwarded.
    swallow: AtomicBool,
    /// While set, nothing moves (a stall).
    stalled: tokio::sync::RwLock<()>,
}

impl Conn {
    pub(super) async fn run(proxy: Arc<Proxy>, client: TcpStream, server: TcpStream) {
        for s in [&client, &server] {
            let _ = s.set_nodelay(true);
            // Every close is a reset. (Deprecated as a linger may block on drop; a zero
            // linger never does: it resets at once.)
            #[allow(deprecated)]
            let _ = s.set_linger(Some(Duration::ZERO));
        }
        let conn = Arc::new(Conn {
            due: AtomicUsize::new(0),
            swallow: AtomicBool::new(false),
            stalled: tokio::sync::RwLock::new(()),
        });
        let (mut cr, cw) = client.into_split();
        let (sr, mut sw) = server.into_split();
        let down = tokio::spawn(conn.clone().server_to_client(sr, cw));
        // Client to server: messages parsed, each request's fault decided at its end.
        let mut buf: Vec<u8> = Vec::new();
        let mut startup = true;
        // Prepared statements' texts by name, and whether the request being read runs the
        // writer's insert, or the statement a test targets.
        let mut statements: std::collections::HashMap<Vec<u8>, Vec<u8>> = Default::default();
        let (mut insert, mut targeted) = (false, false);
        // A statement targeted by `lose_commit_after` ran on this connection: its
        // transaction's `COMMIT` is the one whose reply is lost.
        let mut commit_armed = false;
        let mut chunk = vec![0u8; 64 * 1024];
        'outer: loop {
            let n = match cr.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            buf.extend_from_slice(&chunk[..n]);
            // Forward whole messages; decide at each Sync or Query.
            loop {
                let (len, kind) = if startup {
                    if buf.len() < 8 {
                        break;
                    }
                    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
                    let code = u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]);
                    // An SSL or GSS request is followed by the startup message.
                    if code != 80_877_103 && code != 80_877_104 {
                        startup = false;
                    }
                    (len, 0u8)
                } else {
                    if buf.len() < 5 {
                        break;
                    }
                    let len = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize + 1;
                    (len, buf[0])
                };
                if buf.len() < len {
                    break;
                }
                let msg: Vec<u8> = buf.drain(..len).collect();
                let fields = |at: usize| -> Vec<&[u8]> { msg[at..].split(|b| *b == 0).collect() };
                match kind {
                    // Parse: statement name, then its text.
                    b'P' => {
                        let f = fields(5);
                        if f.len() > 1 {
                            statements.insert(f[0].to_vec(), f[1].to_vec());
                        }
                    }
                    // Bind: portal name, then the statement's.
                    b'B' => {
                        let f = fields(5);
                        if let Some(text) = f.get(1).and_then(|name| statements.get(*name)) {
                            insert |= contains(text, b"INSERT INTO") && contains(text, b".items");
                            if *proxy.commit_after.lock() {
                                commit_armed |= proxy.targets(text);
                            } else {
                                targeted |= proxy.targets(text);
                            }
                        }
                    }
                    // Query (the simple protocol: `COMMIT`, `batch_execute`): its text.
                    b'Q' => {
                        let text = fields(5).first().copied().unwrap_or_default();
                        targeted |= proxy.targets(text) || (commit_armed && text == b"COMMIT");
                    }
                    _ => {}
                }
                let request = kind == b'S' || kind == b'Q';
                let fault = if request {
                    let f = if proxy.blocked.load(Ordering::Acquire) {
                        Fault::Reset { forward: false }
                    } else if targeted && proxy.target.lock().take().is_some() {
                        Fault::LostReply
                    } else {
                        proxy.decide(insert)
                    };
                    if targeted {
                        commit_armed = false;
                    }
                    (insert, targeted) = (false, false);
                    f
                } else {
                    Fault::None
                };
                match fault {
                    Fault::None => {
                        let _guard = conn.stalled.read().await;
                        if sw.write_all(&msg).await.is_err() {
                            break 'outer;
                        }
                        if request {
                            conn.due.fetch_add(1, Ordering::AcqRel);
                        }
                    }
                    Fault::Stall(d) => {
                        let guard = conn.stalled.write().await;
                        tokio::time::sleep(d).await;
                        drop(guard);
                        if sw.write_all(&msg).await.is_err() {
                            break 'outer;
                        }
                        conn.due.fetch_add(1, Ordering::AcqRel);
                    }
                    Fault::LostReply => {
                        conn.swallow.store(true, Ordering::Release);
                        if sw.write_all(&msg).await.is_err() {
                            break 'outer;
                        }
                        conn.due.fetch_add(1, Ordering::AcqRel);
                        // Every reply due arrives (and is swallowed), then the reset.
                        for _ in 0..400 {
                            if conn.due.load(Ordering::Acquire) == 0 {
                                break;
                            }
                            tokio::time::sleep(Duration::from_millis(5)).await;
                        }
                        break 'outer;
                    }
                    Fault::Reset { forward } => {
                        if forward {
                            let _ = sw.write_all(&msg).await;
                        }
                        break 'outer;
                    }
                }
            }
        }
        // Both sides closed with a reset (linger zero).
        down.abort();
    }

    /// Server to client: forwarded message by message (`ReadyForQuery` counted), swallowed
    /// after a lost reply.
    async fn server_to_client(
        self: Arc<Self>,
        mut sr: tokio::net::tcp::OwnedReadHalf,
        mut cw: tokio::net::tcp::OwnedWriteHalf,
    ) {
        let mut buf: Vec<u8> = Vec::new();
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            let n = match sr.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            buf.extend_from_slice(&chunk[..n]);
            let mut upto = 0;
            while buf.len() - upto >= 5 {
                let len = u32::from_be_bytes([
                    buf[upto + 1],
                    buf[upto + 2],
                    buf[upto + 3],
                    buf[upto + 4],
                ]) as usize
                    + 1;
                if buf.len() - upto < len {
                    break;
                }
                if buf[upto] == b'Z' {
                    let _ = self
                        .due
                        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |d| d.checked_sub(1));
                }
                upto += len;
            }
            let msgs: Vec<u8> = buf.drain(..upto).collect();
            if self.swallow.load(Ordering::Acquire) {
                continue;
            }
            let _guard = self.stalled.read().await;
            if cw.write_all(&msgs).await.is_err() {
                break;
            }
        }
    }
}
