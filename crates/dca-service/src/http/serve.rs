//! Serving a router over TLS 1.3 with the limits a server facing the Internet needs: a cap on
//! open connections (refused with a 503 the client can read), a cap on the connections of any
//! one peer address (over it, a connection is closed at once: one host holding idle
//! connections cannot take every slot from the others), a time limit on the TLS handshake and
//! on request headers — which is also how long an idle keep-alive connection stays open — and
//! the process's file-descriptor limit raised to its hard limit at start.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
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
    /// Connections open at once from one peer IP address (IPv4-mapped IPv6 addresses count
    /// as their IPv4 address); more from it are closed at once, unanswered, and take no slot
    /// of `max_connections`.
    pub max_connections_per_peer: usize,
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
            max_connections_per_peer: DEFAULT_MAX_CONNECTIONS_PER_PEER,
            handshake_timeout: Duration::from_secs(10),
            header_timeout: Duration::from_secs(30),
        }
    }
}

/// Connections open at once from one peer address unless set otherwise: far more than a
/// client, a node or an aggregator opens (their pools hold a few), far fewer than the cap.
pub const DEFAULT_MAX_CONNECTIONS_PER_PEER: usize = 64;

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
    let peers = PeerSlots::new(limits.max_connections_per_peer);
    tracing::info!(
        max_connections = cap,
        max_connections_per_peer = limits.max_connections_per_peer,
        "serving"
    );
    loop {
        let (tcp, peer) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                // Out of file descriptors, most likely: wait for connections to end.
                tracing::warn!("accept: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // The peer's own cap first: a peer over it takes no slot of the shared cap.
        let Some(slot) = peers.take(peer.ip()) else {
            tracing::debug!(peer = %peer.ip(), "connection closed: the peer is at its cap");
            drop(tcp);
            continue;
        };
        let acceptor = acceptor.clone();
        let Ok(permit) = open.clone().try_acquire_owned() else {
            let Ok(refusal) = refusing.clone().try_acquire_owned() else {
                continue; // dropped: closes the socket
            };
            let timeout = limits.handshake_timeout;
            tokio::spawn(async move {
                let _held = (refusal, slot);
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
            let _held = (permit, slot);
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

/// The connections open per peer address, each at most the cap.
#[derive(Clone)]
struct PeerSlots {
    cap: usize,
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

impl PeerSlots {
    fn new(cap: usize) -> Self {
        PeerSlots {
            cap: cap.max(1),
            open: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// A slot for one more connection of `ip`, or `None` if it has the cap open already.
    fn take(&self, ip: IpAddr) -> Option<PeerSlot> {
        let ip = ip.to_canonical();
        let mut open = self.open.lock().ok()?;
        let n = open.entry(ip).or_insert(0);
        if *n >= self.cap {
            return None;
        }
        *n += 1;
        Some(PeerSlot {
            slots: self.clone(),
            ip,
        })
    }
}

/// One open connection of a peer, given back when dropped.
struct PeerSlot {
    slots: PeerSlots,
    ip: IpAddr,
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        if let Ok(mut open) = self.slots.open.lock()
            && let Some(n) = open.get_mut(&self.ip)
        {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peers_slots_are_counted_per_address_and_given_back() {
        let slots = PeerSlots::new(2);
        let one: IpAddr = "10.0.0.1".parse().unwrap();
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        let other: IpAddr = "10.0.0.2".parse().unwrap();
        let a = slots.take(one).unwrap();
        let b = slots.take(mapped).unwrap();
        assert!(slots.take(one).is_none());
        assert!(slots.take(mapped).is_none());
        let c = slots.take(other).unwrap();
        drop(a);
        let d = slots.take(one).unwrap();
        drop((b, c, d));
        assert!(slots.open.lock().unwrap().is_empty());
    }
}
