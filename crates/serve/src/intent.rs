//! Requests must come from whom they claim: a web page the user visits can
//! neither write to a served tree (CSRF, a `no-cors` POST) nor read it
//! through a name it points at 127.0.0.1 (DNS rebinding).
//!
//! * `Host` (every route) must be an IP address (a page cannot rebind an
//!   address), `localhost` (or a `*.localhost` name), or a name the user
//!   allowed (`--allow-host`).
//! * A request that changes or costs (any method but `GET`, `HEAD`,
//!   `OPTIONS`) from a browser must come from the server's own origin
//!   (`Origin` is `http://` + its `Host`) or one the user allowed
//!   (`--allow-origin`).
//! * A write (documents, compaction, reload) must carry its body as
//!   `application/json`, which a page cannot send to another origin
//!   without the server's leave (a CORS preflight this server refuses).
//!
//! Refusals are 403 with a JSON error naming the header; nothing is read
//! or changed. Clients that are not browsers (curl, the Python client) send
//! no `Origin` and are unaffected.

use crate::error::ApiError;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method};
use axum::middleware::Next;
use axum::response::Response;
use std::sync::Arc;

/// The names and origins the user allowed beyond the defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowed {
    /// Extra `Host` names (without port), lowercase.
    pub hosts: Vec<String>,
    /// Extra browser origins (`scheme://host[:port]`), lowercase, no
    /// trailing slash.
    pub origins: Vec<String>,
}

impl Allowed {
    /// The allowed names and origins as flags give them, each checked:
    /// a host is a DNS name or address without scheme, path or port; an
    /// origin is `http(s)://host[:port]` without path.
    pub fn new(hosts: &[String], origins: &[String]) -> Result<Allowed, crate::Error> {
        let mut out = Allowed::default();
        for h in hosts {
            let h = h.trim().to_ascii_lowercase();
            let ok = !h.is_empty()
                && h.len() <= 253
                && h.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'));
            if !ok {
                return Err(crate::Error::Config(format!(
                    "--allow-host `{h}`: give a host name such as search.internal (no scheme, port or path)"
                )));
            }
            out.hosts.push(h);
        }
        for o in origins {
            let o = o.trim().trim_end_matches('/').to_ascii_lowercase();
            let rest = o
                .strip_prefix("http://")
                .or_else(|| o.strip_prefix("https://"));
            let ok = rest.is_some_and(|r| {
                !r.is_empty()
                    && r.chars().all(|c| {
                        c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | ':' | '[' | ']')
                    })
            });
            if !ok {
                return Err(crate::Error::Config(format!(
                    "--allow-origin `{o}`: give an origin such as https://app.example.com:8443 (scheme, host, optional port; no path)"
                )));
            }
            out.origins.push(o);
        }
        Ok(out)
    }
}

/// The host part of a `Host` header value (`name:port`, `[v6]:port`).
fn host_name(value: &str) -> &str {
    if let Some(rest) = value.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    value.rsplit_once(':').map_or(value, |(h, _)| h)
}

fn host_allowed(allowed: &Allowed, value: &str) -> bool {
    let name = host_name(value).to_ascii_lowercase();
    let name = name.trim_end_matches('.');
    name.parse::<std::net::IpAddr>().is_ok()
        || name == "localhost"
        || name.ends_with(".localhost")
        || allowed.hosts.iter().any(|h| h == name)
}

fn origin_allowed(allowed: &Allowed, origin: &str, host: Option<&str>) -> bool {
    let origin = origin.trim_end_matches('/').to_ascii_lowercase();
    let same = host.is_some_and(|h| {
        let h = h.to_ascii_lowercase();
        origin == format!("http://{h}") || origin == format!("https://{h}")
    });
    same || allowed.origins.contains(&origin)
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| {
            let t = t.trim().to_ascii_lowercase();
            t == "application/json" || (t.starts_with("application/") && t.ends_with("+json"))
        })
}

/// Whether the request carries a body (declared length above zero, or
/// chunked).
fn has_body(headers: &HeaderMap) -> bool {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match declared {
        Some(n) => n > 0,
        None => headers.contains_key(header::TRANSFER_ENCODING),
    }
}

/// Whether a request to `path` changes what is served.
fn writes(path: &str) -> bool {
    path.starts_with("/v1/trees/") || path.starts_with("/v1/admin/")
}

/// Why a request is refused, if it is.
pub(crate) fn refusal(
    allowed: &Allowed,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
) -> Option<ApiError> {
    let host = match headers.get(header::HOST).map(|v| v.to_str()) {
        None => None,
        Some(Ok(h)) => Some(h),
        Some(Err(_)) => return Some(ApiError::forbidden("Host", "the Host header is not text")),
    };
    if let Some(h) = host {
        if !host_allowed(allowed, h) {
            return Some(ApiError::forbidden(
                "Host",
                "the Host header names a host this server was not told it is (a page may be pointing its own name at this address); start serve with --allow-host NAME to allow it",
            ));
        }
    }
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return None;
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let ok = origin
            .to_str()
            .is_ok_and(|o| origin_allowed(allowed, o, host));
        if !ok {
            return Some(ApiError::forbidden(
                "Origin",
                "a web page of another origin may not send this request; start serve with --allow-origin ORIGIN to allow that page",
            ));
        }
    }
    if writes(path) && has_body(headers) && !is_json(headers) {
        return Some(ApiError::forbidden(
            "Content-Type",
            "send the body as Content-Type: application/json",
        ));
    }
    None
}

/// Middleware: [`refusal`]'s 403, or the request passed on.
pub(crate) async fn require(
    State(allowed): State<Arc<Allowed>>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    match refusal(
        &allowed,
        request.method(),
        request.uri().path(),
        request.headers(),
    ) {
        Some(e) => Err(e),
        None => Ok(next.run(request).await),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(k.clone(), HeaderValue::from_str(v).expect("value"));
        }
        h
    }

    fn field(e: Option<ApiError>) -> Option<String> {
        e.map(|e| e.detail.field.unwrap_or_default())
    }

    const W: &str = "/v1/trees/sample/documents";

    #[test]
    fn only_the_servers_own_names_and_origins_may_write() {
        let none = Allowed::default();
        let post = Method::POST;
        let json = (header::CONTENT_TYPE, "application/json");
        let len = (header::CONTENT_LENGTH, "2");
        // curl and the Python client: no Origin.
        for host in ["127.0.0.1:8080", "localhost:8080", "[::1]:8080", "10.0.0.5"] {
            let h = headers(&[(header::HOST, host), json.clone(), len.clone()]);
            assert!(refusal(&none, &post, W, &h).is_none(), "{host}");
        }
        // DNS rebinding: a foreign name, reads included.
        let h = headers(&[(header::HOST, "evil.example:8080")]);
        assert_eq!(
            field(refusal(&none, &Method::GET, "/v1/trees", &h)).as_deref(),
            Some("Host")
        );
        // CSRF: a foreign origin, or a form's content type.
        let h = headers(&[
            (header::HOST, "127.0.0.1:8080"),
            (header::ORIGIN, "https://evil.example"),
            json.clone(),
            len.clone(),
        ]);
        assert_eq!(
            field(refusal(&none, &post, W, &h)).as_deref(),
            Some("Origin")
        );
        let h = headers(&[
            (header::HOST, "127.0.0.1:8080"),
            (header::CONTENT_TYPE, "text/plain"),
            len.clone(),
        ]);
        assert_eq!(
            field(refusal(&none, &post, W, &h)).as_deref(),
            Some("Content-Type")
        );
        // A search as curl sends it (`-d` without a content type) is no write.
        assert!(refusal(&none, &post, "/v1/retrieve", &h).is_none());
        // The page itself: same origin.
        let h = headers(&[
            (header::HOST, "127.0.0.1:8080"),
            (header::ORIGIN, "http://127.0.0.1:8080"),
            json.clone(),
            len.clone(),
        ]);
        assert!(refusal(&none, &post, W, &h).is_none());
        // An empty POST (compact) needs no content type, but still an origin.
        let h = headers(&[(header::HOST, "127.0.0.1:8080")]);
        assert!(refusal(&none, &post, W, &h).is_none());
        let h = headers(&[(header::HOST, "127.0.0.1:8080"), (header::ORIGIN, "null")]);
        assert!(refusal(&none, &post, W, &h).is_some());
        // What the user allowed.
        let allowed = Allowed::new(
            &["Search.Internal".into()],
            &["https://app.example.com/".into()],
        )
        .expect("allowed");
        let h = headers(&[
            (header::HOST, "search.internal:80"),
            (header::ORIGIN, "https://app.example.com"),
            json,
            len,
        ]);
        assert!(refusal(&allowed, &post, W, &h).is_none());
        assert!(refusal(&none, &post, W, &h).is_some());
        assert!(Allowed::new(&["http://x".into()], &[]).is_err());
        assert!(Allowed::new(&[], &["app.example.com".into()]).is_err());
        assert!(Allowed::new(&[], &["https://a.example/path".into()]).is_err());
    }
}
