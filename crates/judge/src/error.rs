use serde::Serialize;
use treenav_http::{ErrorKind as HttpKind, HttpError};

/// Result of the judge crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The class of a decision-model failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The key is missing, wrong or lacks rights (401/403).
    Authentication,
    /// The request is wrong (400/404/422…).
    InvalidRequest,
    /// The request is over the server's limits (413, `max_tokens_exceeded`).
    TooLarge,
    /// Too many requests (429).
    RateLimited,
    /// The server is overloaded (503/529).
    Overloaded,
    /// Another server error (5xx).
    Server,
    /// No answer in time (a call's timeout).
    Timeout,
    /// The connection failed.
    Network,
    /// The reply breaks the protocol: a missing answer, a probability outside
    /// [0, 1], a label not offered, bad JSON.
    MalformedResponse,
    /// The model refused to answer a question.
    Refused,
    /// The judge is misconfigured (unknown option, missing key or model).
    Config,
    /// The operation's overall deadline passed.
    Deadline,
}

impl ErrorKind {
    /// Whether the same request may succeed later.
    pub fn retryable(self) -> bool {
        match self {
            ErrorKind::RateLimited
            | ErrorKind::Overloaded
            | ErrorKind::Server
            | ErrorKind::Timeout
            | ErrorKind::Network => true,
            ErrorKind::Authentication
            | ErrorKind::InvalidRequest
            | ErrorKind::TooLarge
            | ErrorKind::MalformedResponse
            | ErrorKind::Refused
            | ErrorKind::Config
            | ErrorKind::Deadline => false,
        }
    }

    fn from_http(kind: HttpKind) -> ErrorKind {
        match kind {
            HttpKind::Authentication => ErrorKind::Authentication,
            HttpKind::InvalidRequest => ErrorKind::InvalidRequest,
            HttpKind::TooLarge => ErrorKind::TooLarge,
            HttpKind::RateLimited => ErrorKind::RateLimited,
            HttpKind::Overloaded => ErrorKind::Overloaded,
            HttpKind::Server => ErrorKind::Server,
            HttpKind::Timeout => ErrorKind::Timeout,
            HttpKind::Network => ErrorKind::Network,
            HttpKind::MalformedResponse => ErrorKind::MalformedResponse,
            HttpKind::Config => ErrorKind::Config,
        }
    }
}

/// `systemone ` before `judge: …`, nothing for the judge's own settings.
fn backend_prefix(backend: &str) -> String {
    if backend.is_empty() {
        String::new()
    } else {
        format!("{backend} ")
    }
}

/// A decision-model failure: its kind, the backend, and what happened.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}judge: {message}", backend_prefix(backend))]
pub struct Error {
    /// The class of failure.
    pub kind: ErrorKind,
    /// The backend (`lexical`, `systemone`, …); empty for an error of the
    /// judge's own settings.
    pub backend: &'static str,
    /// What happened (never holds an API key).
    pub message: String,
}

impl Error {
    /// Whether the same request may succeed later.
    pub fn retryable(&self) -> bool {
        self.kind.retryable()
    }

    /// A configuration error of the judge's own settings.
    pub fn config(message: impl Into<String>) -> Error {
        Error {
            kind: ErrorKind::Config,
            backend: "",
            message: message.into(),
        }
    }

    pub(crate) fn new(kind: ErrorKind, backend: &'static str, message: impl Into<String>) -> Error {
        Error {
            kind,
            backend,
            message: message.into(),
        }
    }

    /// A reply that does not hold what was asked (wrong answer count, a
    /// value out of range), from `backend`.
    pub fn malformed(backend: &'static str, message: impl Into<String>) -> Error {
        Error::new(ErrorKind::MalformedResponse, backend, message)
    }

    pub(crate) fn http(backend: &'static str, e: HttpError) -> Error {
        Error::new(ErrorKind::from_http(e.kind), backend, e.to_string())
    }
}

/// Checks that a probability from a server is a number in [0, 1].
pub(crate) fn probability(backend: &'static str, what: &str, p: Option<f64>) -> Result<f64> {
    let p = p.ok_or_else(|| Error::malformed(backend, format!("{what}: no probability")))?;
    crate::checked::within("probability", p, 0.0..=1.0)
        .map_err(|e| Error::malformed(backend, format!("{what}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A settings error reads `judge: …` (it read `judge judge: …`); a
    /// backend's error names the backend.
    #[test]
    fn messages_name_the_backend_once() {
        assert_eq!(Error::config("bad").to_string(), "judge: bad");
        assert_eq!(
            Error::malformed("systemone", "no answer").to_string(),
            "systemone judge: no answer"
        );
    }
}
