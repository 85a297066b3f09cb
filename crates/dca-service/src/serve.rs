//! Serving a router over TLS 1.3 with the limits a server facing the Internet needs: a cap on
//! open connections (refused with a 503 the client can read), a time limit on the TLS
//! handshake and on request headers — which is also how long an idle keep-alive connection
//! stays open — and the process's file-descriptor limit raised to its hard limit at start.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::Result;

/// What one server accepts.
#[derive(Debug, Clone)]
pub struct ServeLimits {
    /// Connections served at once; more are answered 503 and closed.
    pub max_connections: usize,
    /// Time a client has to finish the TLS handshake.
    pub handshake_timeout: Duration,
    /// Time a client has to send a request's headers, counted from the end of the previous
    /// request on the connection: a connection idle this long is closed.
    pub header_timeout: Duration,
}

impl Default for ServeLimits {
    fn default() -> Self {
        ServeLimits {
            max_connections: 1024,
            handshake_timeout: Duration::from_secs(10),
            header_timeout: Duration::from_secs(30),
        }
    }
}

/// Connections being refused at once at most, beyond which a connection is dropped without
/// an answer (each refusal costs a TLS handshake).
const MAX_REFUSING: usize = 64;

/// File descriptors kept for everything but connections (the store, spool files, logs).
const RESERVED_FDS: u64 = 64;

/// The answer to a connection over the cap.
const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
Content-Type: text/plain\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: 46\r\n\r\n\
too many connections open; retry in a second\n";

/// Raises the soft limit on open files to the hard limit and returns the connection cap that
/// fits under it (`wanted`, or less if the limit leaves less room).
pub fn connection_cap(wanted: usize) -> usize {
    let limit = match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => limit,
        Err(e) => {
            tracing::warn!("cannot read or raise the open-file limit: {e}");
            return wanted;
        }
    };
    let room = limit.saturating_sub(RESERVED_FDS).max(1);
    let cap = (wanted as u64).min(room) as usize;
    if cap < wanted {
        tracing::warn!(
            open_file_limit = limit,
            "serving at most {cap} connections (asked for {wanted}): raise `ulimit -n`"
        );
    }
    cap
}

/// Serves `router` over TLS on `listener` until the process ends. Each connection is one task;
/// a failed handshake or connection drops only that connection.
pub async fn serve_tls(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    router: Router,
    limits: ServeLimits,
) -> Result<()> {
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let cap = connection_cap(limits.max_connections);
    let open = Arc::new(Semaphore::new(cap));
    let refusing = Arc::new(Semaphore::new(MAX_REFUSING));
    tracing::info!(max_connections = cap, "serving");
    loop {
        let (tcp, _) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                // Out of file descriptors, most likely: wait for connections to end.
                tracing::warn!("accept: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let acceptor = acceptor.clone();
        let Ok(permit) = open.clone().try_acquire_owned() else {
            let Ok(refusal) = refusing.clone().try_acquire_owned() else {
                continue; // dropped: closes the socket
            };
            let timeout = limits.handshake_timeout;
            tokio::spawn(async move {
                let _refusal = refusal;
                if let Ok(Ok(mut tls)) = tokio::time::timeout(timeout, acceptor.accept(tcp)).await {
                    let _ = tokio::time::timeout(timeout, async {
                        tls.write_all(BUSY).await?;
                        tls.shutdown().await
                    })
                    .await;
                }
            });
            continue;
        };
        let router = router.clone();
        let limits = limits.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let Ok(Ok(tls)) =
                tokio::time::timeout(limits.handshake_timeout, acceptor.accept(tcp)).await
            else {
                return;
            };
            let service = hyper_util::service::TowerToHyperService::new(router);
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .keep_alive(true)
                .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                .await;
        });
    }
}
