//! Errors: the service's setup errors ([`Error`]) and the HTTP errors a
//! request gets ([`ApiError`], a status with a JSON body naming the field).

use crate::api::{ErrorBody, ErrorDetail};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use std::path::PathBuf;

/// Why the service could not start (or reload).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A setting is out of range or inconsistent.
    #[error("serve: {0}")]
    Config(String),
    /// A tree file could not be loaded.
    #[error("tree `{name}` ({}): {source}", path.display())]
    Tree {
        /// The tree's name.
        name: String,
        /// Its file.
        path: PathBuf,
        /// Why.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The judge could not be set up.
    #[error(transparent)]
    Judge(#[from] treenav_judge::Error),
    /// The token file could not be read.
    #[error("cannot read the token file {}: {source}", path.display())]
    Tokens {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The address could not be bound (in use, not ours, no permission).
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// Serving failed.
    #[error("serve: {0}")]
    Io(#[from] std::io::Error),
}

/// An HTTP error: a status and `{"error": {"code", "message", "field"?}}`.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The status.
    pub status: StatusCode,
    /// The body.
    pub detail: ErrorDetail,
    /// Seconds to send in `Retry-After` (503).
    pub retry_after: Option<u64>,
}

impl ApiError {
    fn new(status: StatusCode, code: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            detail: ErrorDetail {
                code: code.to_string(),
                message: message.into(),
                field: None,
            },
            retry_after: None,
        }
    }

    /// 400, naming the field at fault.
    pub fn bad_field(field: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message).field(field)
    }

    /// 400 without a field.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// 413, naming the field (or `body`) that is too large.
    pub fn too_large(field: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", message).field(field)
    }

    /// 401, without detail.
    pub fn unauthorized() -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", "unauthorized")
    }

    /// 403, naming the header at fault (a cross-site or rebound request).
    pub fn forbidden(header: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, "forbidden", message).field(header)
    }

    /// 404.
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// 405.
    pub fn method_not_allowed() -> ApiError {
        ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            "this route does not take that method (see /openapi.json)",
        )
    }

    /// 503 with `Retry-After`.
    pub fn overloaded(retry_after: u64) -> ApiError {
        let mut e = ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "overloaded",
            "too many requests in flight; retry later",
        );
        e.retry_after = Some(retry_after);
        e
    }

    /// 503: the tree never loaded (its files are damaged or not its own).
    pub fn tree_not_loaded(name: &str, why: &str) -> ApiError {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "tree_not_loaded",
            format!("tree `{name}` is not loaded: {why}; fix its files (`treenav inspect --verify` names them), then reload it (POST /v1/admin/reload or SIGHUP)"),
        )
        .field("tree")
    }

    /// 503: the tree's files were written over in place while served.
    pub fn tree_changed(name: &str) -> ApiError {
        let mut e = ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "tree_changed",
            format!("tree `{name}` was written over in place or found damaged while served, so its files cannot be trusted; it answers again after a reload of a consistent set of files (replace trees by writing new files and renaming them)"),
        )
        .field("tree");
        e.retry_after = Some(5);
        e
    }

    /// 504: the request's deadline passed.
    pub fn deadline(secs: f64) -> ApiError {
        ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            "deadline",
            format!("the request did not finish within its deadline of {secs} s"),
        )
    }

    /// 408: the request's body did not arrive within the body timeout.
    pub fn body_timeout(secs: f64) -> ApiError {
        ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "body_timeout",
            format!("the request body did not arrive within {secs} s"),
        )
        .field("body")
    }

    /// 502: the judge failed.
    /// The judge's address is not the client's business: every URL in the
    /// message is replaced (the full message goes to the server's log).
    pub fn judge(message: impl Into<String>) -> ApiError {
        let message = message.into();
        tracing::warn!(error = %message, "judge error answered as 502");
        ApiError::new(StatusCode::BAD_GATEWAY, "judge", redact_urls(&message))
    }

    /// 500, URLs redacted as for [`ApiError::judge`].
    pub fn internal(message: impl Into<String>) -> ApiError {
        let message = message.into();
        tracing::error!(error = %message, "internal error answered as 500");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            redact_urls(&message),
        )
    }

    /// 409: another writer is updating the tree.
    pub fn conflict(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, "conflict", message)
    }

    /// 422: an update was refused (what it needs, what it would break).
    pub fn update(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "update", message)
    }

    /// 422: a reload was refused.
    pub fn reload(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "reload", message)
    }

    /// The same error, naming the request field at fault.
    pub fn field(mut self, field: &str) -> ApiError {
        self.detail.field = Some(field.to_string());
        self
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status;
        let retry_after = self.retry_after;
        let mut response = (status, axum::Json(ErrorBody { error: self.detail })).into_response();
        if let Some(secs) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// `message` with every `http://…` or `https://…` (to the next space, quote
/// or closing bracket) replaced by `<judge endpoint>`: answers and probes
/// never show where the judge lives.
pub(crate) fn redact_urls(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = ["http://", "https://"]
        .iter()
        .filter_map(|p| rest.find(p))
        .min()
    {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ')' | ']' | '>' | ','))
            .unwrap_or(tail.len());
        out.push_str("<judge endpoint>");
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn urls_are_redacted() {
        let m = "calling http://10.1.2.3:9/v1/systemone failed (see https://x.example/a?b), again";
        assert_eq!(
            super::redact_urls(m),
            "calling <judge endpoint> failed (see <judge endpoint>), again"
        );
        assert_eq!(super::redact_urls("no url"), "no url");
    }
}
