use treenav_http::HttpError;

/// Result of the judge crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The class of a decision-model failure: the HTTP client's one
/// classification (`Refused` and `Deadline` are the judges' own).
pub use treenav_http::ErrorKind;

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
        Error::new(e.kind, backend, e.to_string())
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
