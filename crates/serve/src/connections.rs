//! The accept loop and what bounds a connection before any route sees it:
//!
//! * **a connection cap**: at most `max_connections` open at once; one
//!   more is answered `503` with `Retry-After` and closed at once (never
//!   left waiting in the backlog while idle sockets hold every slot);
//! * **a header-read and idle timeout** (hyper's `header_read_timeout`,
//!   which runs from the moment a connection waits for a request head: a
//!   socket that sends nothing, half a header, or idles between keep-alive
//!   requests is closed after it);
//! * the **body-read timeout** is the routes' (see `routes::read_body`),
//!   the request deadline the admission's.
//!
//! On shutdown the listener closes, every connection is told to finish its
//! request in flight and close, and the caller bounds the wait (the grace).

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

/// What bounds the connections.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectionLimits {
    pub(crate) max_connections: usize,
    pub(crate) header_timeout: Duration,
}

/// The answer a connection over the cap gets before it is closed.
const OVER_CAP: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: 82\r\n\r\n{\"error\":{\"code\":\"overloaded\",\"message\":\"too many open connections; retry later\"}}";

/// Accepts connections and serves `router` on each until `shutdown`
/// completes; then stops accepting and waits for the open connections to
/// finish (the caller bounds that wait).
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) {
    let open = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    accept_failed(&e).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(slot) = open.clone().try_acquire_owned() else {
            refuse(&stream);
            continue;
        };
        metrics::gauge!("treenav_connections_open").increment(1.0);
        let service = TowerToHyperService::new(router.clone());
        let connection = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "connection closed with an error");
            }
            metrics::gauge!("treenav_connections_open").decrement(1.0);
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// A connection over the cap: one short 503 written without waiting (the
/// socket's buffer is empty), then closed.
fn refuse(stream: &TcpStream) {
    metrics::counter!("treenav_connections_refused_total").increment(1);
    let _ = stream.try_write(OVER_CAP);
}

/// An accept error: the process is out of descriptors or the peer left
/// before it was accepted. Waits a little on the first kind, so a full
/// descriptor table does not spin the loop.
async fn accept_failed(e: &std::io::Error) {
    use std::io::ErrorKind as K;
    if matches!(
        e.kind(),
        K::ConnectionAborted | K::ConnectionReset | K::ConnectionRefused | K::Interrupted
    ) {
        return;
    }
    tracing::warn!(error = %e, "accept failed; waiting 100 ms");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_over_cap_answer_is_well_formed() {
        let text = std::str::from_utf8(OVER_CAP).expect("ascii");
        let (head, body) = text.split_once("\r\n\r\n").expect("head and body");
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .and_then(|n| n.parse().ok())
            .expect("a length");
        assert_eq!(body.len(), len);
        let v: serde_json::Value = serde_json::from_str(body.trim_end()).expect("JSON");
        assert_eq!(v["error"]["code"], "overloaded");
    }
}
